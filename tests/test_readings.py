"""One reading per certificate: every family that reads a trace states every figure, token figures included,
from the trace read as its parameters say (layout and block size), at prove and at verify. Each family is
proved here at 32 tokens a block (the default is 16) on a prompts trace whose figures differ between the two
block sizes, checked against what the trace read at 32 gives, and a certificate stating the 16-token
reading's figures is rejected.

"Prove" here is the family's producer preparing the certificate and the claim deriving the figures from the
headline's literals in the instance it emitted, as ``pycert prove`` does once the kernel has accepted that
file (the kernel's part is in test_layout_certificates' end-to-end test)."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from pycert.analysis import cachesim
from pycert.analysis.requests import ref_tokens, reuse_tokens
from pycert.certify.manifest import write_certificates
from pycert.certify.verify import verify_certificate
from pycert.data.traces import read_trace
from pycert.families import FAMILIES, producer
from pycert.families.base import Prepared, Setting
from pycert.lean.sources import statement_literals, theorem_signatures
from tests.certs import make_cert, trace_input
from tests.test_capacity import forge

B = 32
"""The block size every family is proved at here (not the default, 16)."""
SHARED, OWN, PROMPTS = 48, 16, 10


def prompts_trace(path: Path) -> Path:
    """Ten prompts of 64 tokens sharing their first 48: at 16 tokens a block three blocks of each are reused
    (27 reuses, 432 tokens), at 32 one (9 reuses, 288 tokens)."""
    rows = [list(range(1000, 1000 + SHARED)) + list(range(2000 + OWN * k, 2000 + OWN * (k + 1))) for k in range(PROMPTS)]
    path.write_text("".join(json.dumps({"prompt_token_ids": r}) + "\n" for r in rows))
    return path


def proved(family: str, out: Path, trace: Path, **options: object) -> Prepared:
    """The family's certificate of ``trace`` read at ``B`` tokens a block, prepared by its producer, with the
    figures the claim derives from its instance's headline (what prove writes once the kernel accepts it)."""
    made = producer(family)
    opts = made.options(trace=[trace], trace_format="prompts", block_tokens=B, **options)
    [p] = [p for p in made.prepare(Setting(out_dir=out, stage=out / ".stage", options=opts)) if p.claim.name == family]
    inst = p.instance
    signatures = theorem_signatures(p.lean_file.read_text())  # type: ignore[union-attr]
    literals = statement_literals(signatures[inst.headline], p.claim.predicate(p.parameters))  # type: ignore[union-attr]
    kernel = p.claim.kernel_figures(literals, inst.headline, p.parameters)  # type: ignore[union-attr, arg-type]
    p.figures = p.claim.figures(p.parameters, kernel, p.inputs, p)
    return p


CASES = {
    "ceiling": {},
    "capacity": {"capacity_blocks": [2], "required": True},
    "isolation-cost": {"capacity_blocks": [2], "tenant_rule": "round-robin", "tenants": 2, "wanted": True,
                       "required": True},
}


@pytest.mark.parametrize("family", list(CASES))
def test_prove_states_the_figures_of_the_reading_it_records(family: str, tmp_path: Path) -> None:
    trace = prompts_trace(tmp_path / "p.jsonl")
    at_b = read_trace(trace, "prompts", B)
    p = proved(family, tmp_path / "certs", trace, **CASES[family])
    assert (p.parameters.trace_format, p.parameters.block_tokens) == ("prompts", B)  # type: ignore[attr-defined]
    assert p.figures["refs"] == at_b.n_refs == PROMPTS * 2
    if family == "ceiling":
        assert p.figures["max_hits_tokens"] == reuse_tokens(at_b) * ref_tokens(at_b).total == 9 * B  # type: ignore[union-attr, operator]
        assert p.figures["ceiling_tokens"] == Fraction(9 * B, 640)
    if family == "capacity":
        assert p.figures["max_hits"] == cachesim.belady_hits(at_b.refs, 2) == 9
        assert p.figures["max_hits_tokens"] == 9 * B


def certificate(family: str, tmp_path: Path) -> Path:
    """The family's certificate of the prompts trace at ``B`` tokens a block, in a directory with its trace."""
    out = tmp_path / "certs"
    p = proved(family, tmp_path / "proved", prompts_trace(tmp_path / "proved.jsonl"), **CASES[family])
    out.mkdir()
    trace = prompts_trace(out / "p.jsonl")
    cert = make_cert(p.id.replace("proved", "p"), family, p.parameters.model_dump(), [trace_input(trace, out)], root=out)
    assert {f.name: f.value for f in cert.figures} == {k: v for k, v in p.figures.items()}  # prove's figures, made again
    write_certificates([cert], out)
    return out / cert.filename


@pytest.mark.parametrize("family", list(CASES))
def test_verify_reads_the_trace_as_the_certificate_says(family: str, tmp_path: Path) -> None:
    path = certificate(family, tmp_path)
    assert verify_certificate(path).ok
    doc = json.loads(path.read_text())
    assert doc["parameters"]["block_tokens"] == B


@pytest.mark.parametrize("family", list(CASES))
def test_a_figure_of_the_default_reading_is_rejected(family: str, tmp_path: Path) -> None:
    """The certificate's figures replaced by those of the same trace read at 16 tokens a block."""
    path = certificate(family, tmp_path)
    at_16 = read_trace(path.parent / "p.jsonl", "prompts", 16)
    forged = {"refs": at_16.n_refs}
    if family == "ceiling":
        forged["max_hits_tokens"] = int(reuse_tokens(at_16) * ref_tokens(at_16).total)  # type: ignore[union-attr, operator]
        assert forged["max_hits_tokens"] == 27 * 16 != 9 * B

    def edit(doc: dict) -> None:
        for f in doc["figures"]:
            if f["name"] in forged:
                f["numerator"], f["denominator"], f["decimal"] = forged[f["name"]], 1, str(forged[f["name"]])

    forge(path, edit)
    result = verify_certificate(path)
    assert not result.ok and result.failures
    assert any("figures." in r.subject or "refs" in r.subject for r in result.failures), result.failures


def test_every_family_that_reads_a_trace_is_here() -> None:
    """A family whose parameters record a reading (a layout, a block size) is tested above."""
    readers = {name for name, claim in FAMILIES.items() if "block_tokens" in claim.params.model_fields
               and "trace_format" in claim.params.model_fields}
    assert readers == set(CASES), readers
