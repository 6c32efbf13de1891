"""One reading per certificate: every family that reads a trace states every figure, token figures included,
from the trace read as its parameters say (layout and block size), at prove and at verify. Each family is
proved here at 32 tokens a block (the default is 16) on a prompts trace whose figures differ between the two
block sizes, checked against what the trace read at 32 gives, and a certificate stating the 16-token
reading's figures is rejected.

"Prove" here is the family's producer preparing the certificate and the claim deriving the figures from the
headline's literals in the instance it emitted, as ``pycert prove`` does once the kernel has accepted that
file (the kernel's part is in test_layout_certificates' end-to-end test, and test_fleet's for a fleet, whose
producer checks its parts before it composes them: here they are made in this process and not checked)."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from pycert.analysis import cachesim
from pycert.analysis.requests import ref_tokens, reuse_tokens
from pycert.certify.manifest import write_certificates
from pycert.certify.verify import verify_certificate
from pycert.cli import build_parser
from pycert.data.traces import read_trace
from pycert.families import FAMILIES, producer
from pycert.families.base import Prepared, Setting
from pycert.lean import cluster
from pycert.lean.diagnostics import CheckResult
from pycert.lean.sources import statement_literals, theorem_signatures
from tests.certs import make_cert, make_fleet_cert, trace_input
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


def made_here(works: list[cluster.Work], **_: object) -> list[cluster.Outcome]:
    """A fleet's parts as its producer's Ray tasks make them, made in this process and taken as checked (the
    kernel's verdict on them is not what these tests are about)."""
    out = []
    for w in works:
        source, extra = w.make()
        out.append(cluster.Outcome(module=w.module, source=source, extra=extra, result=CheckResult(
            module=w.module, file=f"{w.module}.lean", ok=True, status="ok", exit_code=0, seconds=0.0)))
    return out


def proved(family: str, out: Path, trace: Path, **options: object) -> Prepared:
    """The family's certificate of ``trace`` read at ``B`` tokens a block, prepared by its producer, with the
    figures the claim derives from its instance's headline (what prove writes once the kernel accepts it)."""
    made = producer(family)
    opts = made.options(trace=[trace], trace_format="prompts", block_tokens=B, **options)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cluster, "check_all", made_here)
        prepared = made.prepare(Setting(out_dir=out, stage=out / ".stage", options=opts))
    [p] = [p for p in prepared if p.claim.name == family]
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
    "fleet": {"capacity_blocks": [2], "hosts": [2], "routing": ["round-robin"], "wanted": True},
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
    if family == "fleet":  # two hosts, round-robin: five prompts each, whose first block is reused four times
        assert p.figures["workload_hits"] == at_b.n_refs - len(set(at_b.refs.tolist())) == 9
        assert [p.figures[f"host_refs_{k}"] for k in (0, 1)] == [PROMPTS] * 2
        assert (p.figures["pooled_hits_tokens"], p.figures["routed_hits_tokens"]) == (9 * B, 8 * B)
        assert p.figures["workload_hits_tokens"] == reuse_tokens(at_b) * ref_tokens(at_b).total == 9 * B  # type: ignore[union-attr, operator]


def certificate(family: str, tmp_path: Path) -> Path:
    """The family's certificate of the prompts trace at ``B`` tokens a block, in a directory with its trace."""
    out = tmp_path / "certs"
    p = proved(family, tmp_path / "proved", prompts_trace(tmp_path / "proved.jsonl"), **CASES[family])
    out.mkdir()
    trace = prompts_trace(out / "p.jsonl")
    if family == "fleet":
        params = p.parameters
        cert, _ = make_fleet_cert(trace, out, params.hosts, params.capacity_blocks, params.routing,  # type: ignore[attr-defined]
                                  trace_format="prompts", block_tokens=B)
        assert cert.parameters == params
    else:
        cert = make_cert(p.id.replace("proved", "p"), family, p.parameters.model_dump(), [trace_input(trace, out)],
                         root=out)
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
    if family == "fleet":
        forged |= {"workload_hits": 27, "workload_hits_tokens": 27 * 16, "host_refs_0": 2 * PROMPTS}

    def edit(doc: dict) -> None:
        for f in doc["figures"]:
            if f["name"] in forged:
                f["numerator"], f["denominator"], f["decimal"] = forged[f["name"]], 1, str(forged[f["name"]])

    forge(path, edit)
    result = verify_certificate(path)
    assert not result.ok and result.failures
    assert any("figures." in r.subject or "refs" in r.subject for r in result.failures), result.failures


def crossed_trace(path: Path) -> Path:
    """Eight prompts of two kinds, x and y (64 tokens: 32 of their kind's, then 32 of their own), interleaved in
    the file (x y x y ...) and timestamped x x x x y y y y; field ``replica`` names each kind's host. Two hosts
    of one block each: round-robin gives each host one kind read in file order (3 hits each) and both kinds in
    timestamp order (2 each); ``field:replica`` gives each host one kind either way."""
    rows = [{"prompt_token_ids": list(range(1000 * (k % 2 + 1), 1000 * (k % 2 + 1) + B)) +
             list(range(5000 + B * k, 5000 + B * (k + 1))), "timestamp": 4 * (k % 2) + k // 2, "replica": k % 2}
            for k in range(8)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("family", list(CASES))
def test_every_reading_flag_reaches_the_family(family: str) -> None:
    argv = ["prove", family, "--trace", "t.jsonl", "--format", "prompts", "--block-tokens", str(B), "--sort"]
    opts = producer(family).options_from(build_parser(argv).parse_args(argv))
    assert (opts.trace_format, opts.block_tokens, opts.sort) == ("prompts", B, True)  # type: ignore[attr-defined]


@pytest.mark.parametrize("family", list(CASES))
def test_prove_records_the_timestamp_order_it_read_in(family: str, tmp_path: Path) -> None:
    p = proved(family, tmp_path / "certs", crossed_trace(tmp_path / "x.jsonl"), sort=True,
               **{**CASES[family], **({"capacity_blocks": [1]} if family == "fleet" else {})})
    assert p.parameters.trace_order == "timestamp"  # type: ignore[attr-defined]
    assert p.figures["refs"] == 16
    if family == "fleet":
        assert (p.figures["host_hits_0"], p.figures["host_hits_1"], p.figures["routed_hits"]) == (2, 2, 4)


def test_a_fleet_in_timestamp_order_routes_each_request_by_its_own_line(tmp_path: Path) -> None:
    """Each request takes its routing field from its own line, not from the line at its place in file order, at
    prove and at verify; a certificate whose parameters say file order names another host list."""
    options = {"capacity_blocks": [1], "hosts": [2], "routing": ["field:replica"], "wanted": True, "sort": True}
    p = proved("fleet", tmp_path / "proved", crossed_trace(tmp_path / "x.jsonl"), **options)
    assert (p.figures["host_hits_0"], p.figures["host_hits_1"], p.figures["routed_hits"]) == (3, 3, 6)
    out = tmp_path / "certs"
    out.mkdir()
    cert, files = make_fleet_cert(crossed_trace(out / "x.jsonl"), out, 2, 1, "field:replica", trace_format="prompts",
                                  block_tokens=B, sort=True)
    assert cert.parameters == p.parameters and {f.name: f.value for f in cert.figures} == p.figures
    assert files[f"inputs/{cert.id}.hosts"] == b"0\n0\n0\n0\n1\n1\n1\n1\n"
    write_certificates([cert], out)
    path = out / cert.filename
    assert verify_certificate(path).ok
    forge(path, lambda doc: doc["parameters"].update(trace_order="file"))
    result = verify_certificate(path)
    assert not result.ok and any("hosts_sha256" in r.subject for r in result.failures), result.failures


def test_every_family_that_reads_a_trace_is_here() -> None:
    """A family whose parameters record a reading (a layout, a block size) is tested above."""
    readers = {name for name, claim in FAMILIES.items() if "block_tokens" in claim.params.model_fields
               and "trace_format" in claim.params.model_fields}
    assert readers == set(CASES), readers
