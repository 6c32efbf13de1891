"""Certificates of traces in every layout: the parameters record how the trace was read (its layout, and
for prompts the block size), verify reads it again that way, and a forged reading is a rejection."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pycert.certify.manifest import write_certificates
from pycert.certify.verify import verify_certificate
from pycert.cli import main
from pycert.lean.emit import packed_trace
from tests.certs import make_cert, trace_input
from tests.test_verify import tampered_copy

TRACES = Path(__file__).resolve().parent / "traces"
SAMPLES = {"requests": "requests-sample.jsonl", "mooncake": "mooncake-sample.jsonl", "bailian": "bailian-sample.jsonl", "aiperf": "aiperf-sample.jsonl",
           "prompts": "prompts-sample.jsonl", "ids": "ids-sample.txt"}


def ceiling_dir(tmp_path: Path, layout: str, block_tokens: int | None = None, recorded: str | None = "same",
                source: Path | None = None, order: str | None = None) -> Path:
    """A certificate directory with the ceiling certificate of one sample (or ``source``), its trace copied inside."""
    out = tmp_path / f"certs-{layout}"
    (out / "inputs").mkdir(parents=True)
    trace = out / "inputs" / (source.name if source else SAMPLES[layout])
    shutil.copy(source or TRACES / SAMPLES[layout], trace)
    params = {"lean_encoding": packed_trace.ENCODING, "trace_format": layout if recorded == "same" else recorded,
              "block_tokens": block_tokens, "trace_order": order}
    write_certificates([make_cert(f"ceiling-{layout}", "ceiling", params, [trace_input(trace, out)], root=out)], out)
    return out


@pytest.mark.parametrize("layout", list(SAMPLES))
def test_a_certificate_of_each_layout_verifies(tmp_path: Path, layout: str) -> None:
    out = ceiling_dir(tmp_path, layout, 16 if layout == "prompts" else None)
    assert verify_certificate(out / f"ceiling-{layout}.json").ok


def test_prompts_block_size_is_in_the_claim_and_the_limits(tmp_path: Path) -> None:
    doc = json.loads((ceiling_dir(tmp_path, "prompts", 8) / "ceiling-prompts.json").read_text())
    assert doc["parameters"]["block_tokens"] == 8 and doc["parameters"]["trace_format"] == "prompts"
    assert "(prompts cut into blocks of 8 tokens, full blocks only: " in doc["claim"]
    assert any(line.startswith("A block is 8 consecutive tokens from a prompt's start") for line in doc["does_not_prove"])


def test_a_trace_read_in_timestamp_order_says_so_and_verify_reads_it_so(tmp_path: Path) -> None:
    rows = [{"timestamp": t, "tenant": "a", "hash_ids": ids} for t, ids in ((3, ["x", "y"]), (1, ["x"]), (2, ["y", "z"]))]
    trace = tmp_path / "late.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = ceiling_dir(tmp_path, "requests", source=trace, order="timestamp")
    doc = json.loads((out / "ceiling-requests.json").read_text())
    assert doc["parameters"]["trace_order"] == "timestamp" and "its requests in timestamp order, 5 block" in doc["claim"]
    assert verify_certificate(out / "ceiling-requests.json").ok
    bad = tampered_copy(out, tmp_path / "bad", "ceiling-requests.json",
                        lambda d: d["parameters"].update(trace_order="file"), forge_manifest=True)
    result = verify_certificate(bad)
    assert not result.ok and any(f.subject.startswith(("inputs", "claim")) for f in result.failures), result.failures


def test_a_certificate_made_before_layouts_were_recorded_still_verifies(tmp_path: Path) -> None:
    out = ceiling_dir(tmp_path, "mooncake", recorded=None)
    assert json.loads((out / "ceiling-mooncake.json").read_text())["parameters"]["trace_format"] is None
    assert verify_certificate(out / "ceiling-mooncake.json").ok


@pytest.mark.parametrize("layout, edit, subject", [
    ("bailian", {"trace_format": "ids"}, "parameters.trace_format"),
    ("bailian", {"block_tokens": 16}, "parameters.block_tokens"),
    ("prompts", {"block_tokens": None}, "parameters.block_tokens"),
    ("prompts", {"block_tokens": 8}, "inputs"),  # another block size: another list, another instance
    ("requests", {"block_tokens": 16}, "parameters.block_tokens"),  # its blocks are named, not cut
])
def test_a_forged_reading_is_rejected(tmp_path: Path, layout: str, edit: dict, subject: str) -> None:
    good = ceiling_dir(tmp_path, layout, 16 if layout == "prompts" else None)
    bad = tampered_copy(good, tmp_path / "bad", f"ceiling-{layout}.json",
                        lambda doc: doc["parameters"].update(edit), forge_manifest=True)
    result = verify_certificate(bad)
    assert not result.ok and result.failures, result
    assert any(f.subject.startswith(subject) for f in result.failures), [f.subject for f in result.failures]


def test_prove_refuses_stdin_as_a_certificate_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for family in ("ceiling", "capacity"):
        argv = ["prove", family, "--trace", "-", "--out", str(tmp_path / "out"), "--json"]
        rc = main(argv + (["--capacity-blocks", "4"] if family == "capacity" else []))
        out, err = capsys.readouterr()
        assert rc == 2 and json.loads(out)["where"] == "--trace -"
        assert "a certificate's trace must be a file" in err and not (tmp_path / "out").exists()


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_every_layout_end_to_end_on_the_kernel(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One prove of the six samples, the ceiling and the optimum at 4 blocks each (twelve instances on the
    real kernel), then verify and the report page, from the trace files alone."""
    traces = [TRACES / name for name in SAMPLES.values()]
    out = tmp_path / "certs"
    argv = ["prove", "ceiling", *(a for t in traces for a in ("--trace", str(t))), "--capacity-blocks", "4",
            "--out", str(out), "--backend", "wasm", "--json"]
    assert main(argv) == 0, capsys.readouterr().err
    written = sorted(p.name for p in out.glob("*.json"))
    assert len(written) == 12
    for path in out.glob("*.json"):
        doc = json.loads(path.read_text())
        name = doc["inputs"][0]["path"]  # the prompts sample's lines are the requests layout's too
        layout = "requests" if name == SAMPLES["prompts"] else next(k for k, v in SAMPLES.items() if v == name)
        assert doc["parameters"]["trace_format"] == layout
        assert doc["parameters"]["block_tokens"] == (16 if name == SAMPLES["prompts"] else None)
    inputs = [a for t in traces for a in ("--input", f"{t.name}={t}")]
    capsys.readouterr()
    assert main(["verify", *map(str, sorted(out.glob("*.json"))), *inputs]) == 0, capsys.readouterr().out
    assert main(["report", "--certs", str(out), "--out", str(tmp_path / "r.html"), *inputs]) == 0


def test_offload_counts_a_prompts_certificate_only_at_its_block_size(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The same prompts file cut at another size is another trace: its certificate proves nothing there."""
    out = ceiling_dir(tmp_path, "prompts", 16)
    trace = out / "inputs" / SAMPLES["prompts"]
    for size, state in (("16", "kernel-checked"), ("8", "computed")):
        assert main(["trace", "offload", str(trace), "--capacity-tokens", "64", "--block-tokens", size,
                     "--control-k", "1", "--certs", str(out), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["evidence"]["distinct"] == state
