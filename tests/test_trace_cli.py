"""``pycert trace ...`` end to end: figures, JSON shapes, bad input (one line, exit 2), the PNG."""

from __future__ import annotations

import gzip
import json
import random
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from pycert.analysis.cachesim import belady_hits, lru_hit_curve
from pycert.analysis.tenants import cross_tenant
from pycert.certify.manifest import write_certificates
from pycert.cli import main
from pycert.data import synthetic
from pycert.data.convert import ConvertedTrace
from pycert.data.traces import read_trace
from pycert.lean.emit import packed_trace
from tests.certs import make_cert, trace_input
from tests.test_verify import tampered_copy

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "traces" / "mooncake-fast25"
MOONCAKE = [SHARED / "conversation_trace.jsonl", SHARED / "synthetic_trace.jsonl"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(["trace", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    rc, out, err = run(capsys, *argv, "--json")
    assert rc == 0, err
    return json.loads(out)


def frac(r: dict) -> Fraction:
    return Fraction(r["numerator"], r["denominator"])


def test_stats_defaults_to_the_embedded_synthetic_trace(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "stats")
    t = synthetic.default_trace()
    assert data["refs"] == t.n_refs and data["sha256"] == t.sha256 and data["name"].startswith("synthetic")
    assert frac(data["ceiling"]) == 1 - Fraction(data["distinct"], data["refs"])
    rc, out, _ = run(capsys, "stats")
    assert rc == 0 and "ceiling" in out and f"{t.n_refs:,}" in out


def test_mrc_figures_and_full_curve(capsys: pytest.CaptureFixture[str]) -> None:
    t = synthetic.default_trace()
    curve = lru_hit_curve(t.refs)
    data = run_json(capsys, "mrc", "-c", "16,64", "-c", "300", "--all")
    assert [p["capacity"] for p in data["points"]] == [16, 64, 300]
    for p in data["points"]:
        assert p["lru_hits"] == curve.hits(p["capacity"])
        assert p["belady_hits"] == belady_hits(t.refs, p["capacity"])
        assert frac(p["lru_hit_rate"]) == Fraction(p["lru_hits"], t.n_refs)
    assert data["lru_hits_at"] == curve.hits_at.tolist() and len(data["lru_hits_at"]) == curve.max_distance + 1
    assert data["unbounded_hits"] == t.n_refs - data["stats"]["distinct"]
    opt = data["opt_hits_at"]
    assert len(opt) == data["max_opt_stack_distance"] + 1 and opt[-1] == data["unbounded_hits"] > opt[-2]
    for c in (0, 1, 2, 5, 64, 300, len(opt) - 2, len(opt) - 1):  # the one-pass curve = one Belady run each
        assert opt[c] == belady_hits(t.refs, c), c
    lru = data["lru_hits_at"]
    assert all(lru[min(c, len(lru) - 1)] <= opt[c] for c in range(len(opt)))
    default = run_json(capsys, "mrc", "--no-belady")
    caps = [p["capacity"] for p in default["points"]]
    assert caps[0] == 1 and caps[-1] >= curve.max_distance > caps[-2]
    assert all(p["belady_hits"] is None for p in default["points"])
    assert default["opt_hits_at"] is None and default["max_opt_stack_distance"] is None
    assert default["lru_hits_at"] is None
    assert default["points"][-1]["lru_hits"] == default["unbounded_hits"]


def test_granularity_flag_coarsens_first(capsys: pytest.CaptureFixture[str]) -> None:
    base, coarse = run_json(capsys, "stats"), run_json(capsys, "stats", "--granularity", "4")
    assert coarse["granularity"] == 4 and coarse["block_tokens"] == 4 * base["block_tokens"]
    assert coarse["refs"] < base["refs"] and coarse["sha256"] == base["sha256"]


def test_offload_report_is_consistent(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "offload", "--capacity-tokens", "65536")
    assert data["control_k"] == 4 and data["host_tokens"] is None
    for arm, k in ((data["primary"], 1), (data["control"], 4)):
        assert arm["granularity"] == k and arm["capacity_blocks"] == 65536 // (512 * k)
        f = {name: frac(v) for name, v in arm.items() if isinstance(v, dict)}
        assert f["ceiling"] == 1 - f["cold_miss_floor"] == f["host_backed_hit_rate"]
        assert f["host_load_frac"] == f["host_backed_hit_rate"] - f["gpu_only_hit_rate"]
        assert f["headroom_pp"] == 100 * (f["ceiling"] - f["gpu_only_hit_rate"])
        assert f["gpu_share_of_ceiling"] == f["gpu_only_hit_rate"] / f["ceiling"]
        assert f["working_set_over_capacity"] == Fraction(arm["distinct"], arm["capacity_blocks"])
        assert f["gpu_only_hit_rate"] <= f["gpu_only_belady_hit_rate"] <= f["ceiling"]
    hosted = run_json(capsys, "offload", "--capacity-tokens", "65536", "--host-tokens", "65536", "--control-k", "1")
    assert hosted["control"] is None and hosted["primary"]["host_blocks"] == 128
    assert frac(hosted["primary"]["host_backed_hit_rate"]) < frac(data["primary"]["host_backed_hit_rate"])
    rc, out, _ = run(capsys, "offload", "--capacity-tokens", "65536")
    assert rc == 0 and "headroom_pp" in out and "x4 (control)" in out


def test_offload_needs_block_size_for_plain_ids(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "ids.txt"
    p.write_text("1\n2\n1\n3\n2\n1\n")
    rc, _, err = run(capsys, "offload", str(p), "--capacity-tokens", "32")
    assert rc == 2 and "--block-tokens" in err
    data = run_json(capsys, "offload", str(p), "--capacity-tokens", "32", "--block-tokens", "16", "--control-k", "1")
    assert data["primary"]["capacity_blocks"] == 2 and data["primary"]["gpu_only_hit_rate"]["numerator"] == 1
    rc, _, err = run(capsys, "offload", "--capacity-tokens", "100")
    assert rc == 2 and "holds no whole block" in err
    # the x4 control arm alone cannot hold a block: say so, and how to drop it
    rc, _, err = run(capsys, "offload", str(p), "--capacity-tokens", "32", "--block-tokens", "16")
    assert rc == 2 and "--capacity-tokens: the x4 control arm's blocks of 64 tokens" in err and "--control-k 1" in err


def test_offload_of_plain_ids_says_its_control_merges_across_requests(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """One id per line has no request boundaries: the control arm merges the whole trace as one request, and the
    table says so (a Mooncake trace of the same ids merges within requests, and says nothing)."""
    jsonl, ids = tmp_path / "t.jsonl", tmp_path / "t.ids"
    jsonl.write_text("".join(json.dumps({"timestamp": 0, "input_length": 512 * len(h), "output_length": 1, "hash_ids": h})
                             + "\n" for h in ([1, 2, 3], [1, 2, 3, 4], [1, 2, 5])))
    ids.write_text("".join(f"{b}\n" for b in (1, 2, 3, 1, 2, 3, 4, 1, 2, 5)))
    said = "(control): the trace has no request boundaries (one id per line)"
    rc, out, _ = run(capsys, "offload", str(ids), "--capacity-tokens", "4096", "--block-tokens", "512")
    assert rc == 0 and f"x4 {said}" in out
    rc, out, _ = run(capsys, "offload", str(jsonl), "--capacity-tokens", "4096")
    assert rc == 0 and said not in out
    rc, out, _ = run(capsys, "offload", str(ids), "--capacity-tokens", "4096", "--block-tokens", "512", "--control-k", "1")
    assert rc == 0 and said not in out


def test_offload_says_why_a_share_of_nothing_has_no_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No block is ever reused, so the ceiling is 0 and the GPU's share of it is undefined: not "unbounded"."""
    p = tmp_path / "ids.txt"
    p.write_text("1\n2\n3\n")
    data = run_json(capsys, "offload", str(p), "--capacity-tokens", "32", "--block-tokens", "16", "--control-k", "1")
    assert data["primary"]["gpu_share_of_ceiling"] is None
    rc, out, _ = run(capsys, "offload", str(p), "--capacity-tokens", "32", "--block-tokens", "16", "--control-k", "1")
    [row] = [line for line in out.splitlines() if line.startswith("gpu_share_of_ceiling")]
    assert rc == 0 and row.split(None, 1)[1] == "n/a (no block is ever reused: the ceiling is 0)", row
    [host] = [line for line in out.splitlines() if line.startswith("host_blocks")]
    assert host.split() == ["host_blocks", "unbounded"]


def test_offload_says_which_certificates_it_did_not_use_and_why(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A ceiling certificate of the trace marks its figures kernel-checked; the same certificate with a
    figure edited (and the manifest forged to match) does not verify: its figures stay computed and the
    report says so, naming it and the first rejection, instead of dropping it in silence."""
    trace = tmp_path / "t.ids"
    trace.write_text("5\n6\n5\n7\n5\n6\n")
    good = tmp_path / "certs"
    write_certificates([make_cert("ceiling-t", "ceiling", {"lean_encoding": packed_trace.ENCODING},
                                  [trace_input(trace, good)], external={"t.ids": trace})], good)
    argv = ["offload", str(trace), "--capacity-tokens", "32", "--block-tokens", "16", "--control-k", "1"]
    data = run_json(capsys, *argv, "--certs", str(good))
    assert data["evidence"]["distinct"] == "kernel-checked" and data["not_used"] == {}

    def edit(doc: dict) -> None:
        doc["figures"][0]["numerator"] += 1

    tampered_copy(good, tmp_path / "bad", "ceiling-t.json", edit, forge_manifest=True)
    (tmp_path / "bad" / "notes.json").write_text("[]")
    data = run_json(capsys, *argv, "--certs", str(tmp_path / "bad"))
    assert set(data["evidence"].values()) == {"computed"}
    assert data["not_used"]["ceiling-t.json"].startswith("does not verify: figures."), data["not_used"]
    assert data["not_used"]["notes.json"].startswith("not read as a certificate: not a certificate"), data["not_used"]
    rc, out, _ = run(capsys, *argv, "--certs", str(tmp_path / "bad"))
    assert rc == 0 and "not used (what it would prove stays computed): ceiling-t.json: does not verify: figures." in out


GOOD = '{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [1]}\n'


@pytest.mark.parametrize("content, expect", [
    (GOOD + '{"timestamp": 0,\n', ":2: malformed JSON"),
    (GOOD + '{"timestamp": 0, "input_length": 1, "hash_ids": [1]}\n', ":2: missing field 'output_length'"),
    (GOOD.replace("[1]", "[1, -1]"), ":1: hash_ids[1] is negative"),
    (GOOD.replace("[1]", '["a"]'), ":1: hash_ids[0] is not an integer"),
    ("", ": empty trace"),
    (GOOD + '{"timestamp": 0, "inp', ":2: truncated last line"),
])
def test_bad_input_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str,
                                      expect: str) -> None:
    p = tmp_path / "bad.jsonl"
    p.write_text(content)
    for action in ("stats", "mrc", "plot"):
        rc, out, err = run(capsys, action, str(p))
        assert rc == 2 and out == ""
        assert err.count("\n") == 1 and err.startswith(f"pycert: {p}{expect}"), err


def test_bad_input_in_a_real_process_has_no_traceback(tmp_path: Path) -> None:
    p = tmp_path / "bad.jsonl.gz"
    p.write_bytes(b"\x1f\x8b\x08\x00 not really gzip")
    proc = subprocess.run([sys.executable, "-m", "pycert", "trace", "stats", str(p)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "gzip" in proc.stderr and "Traceback" not in proc.stderr
    missing = subprocess.run([sys.executable, "-m", "pycert", "trace", "mrc", str(tmp_path / "none.jsonl")], cwd=REPO,
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and missing.stderr.strip().endswith("none.jsonl: no such file")


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["mrc", "-c", "-5"], ["stats", "--granularity", "0"], ["offload"], ["generate"]):
        with pytest.raises(SystemExit) as exc:
            main(["trace", *argv])
        assert exc.value.code == 2


def test_plot_writes_a_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "mrc.png"
    data = run_json(capsys, "plot", "-o", str(out), "--points", "6")
    png = out.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    t = synthetic.default_trace()
    assert all(h == belady_hits(t.refs, int(c)) for c, h in data["belady_hits"].items())
    assert len(data["belady_hits"]) == 6
    (tmp_path / "a-file").write_text("")  # missing parent directories are created; a file in the way is an error
    rc, _, err = run(capsys, "plot", "-o", str(tmp_path / "a-file" / "x.png"))
    assert rc == 2 and err.count("\n") == 1 and "a-file" in err


def test_plot_writes_the_format_its_name_says(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``-o p.svg`` is SVG and ``-o p.pdf`` PDF (they were PNG bytes under another name); the same figure
    drawn twice is the same bytes (no date stamped in); an unknown suffix is a usage error, nothing written."""
    magic = {"p.svg": b"<?xml", "p.PDF": b"%PDF-", "p.png": b"\x89PNG"}
    for name, head in magic.items():
        drawings = []
        for _ in range(2):
            run_json(capsys, "plot", "-o", str(tmp_path / name), "--points", "0")
            drawings.append((tmp_path / name).read_bytes())
        assert drawings[0].startswith(head) and drawings[0] == drawings[1], name
    assert b"<svg" in (tmp_path / "p.svg").read_bytes()[:2000]
    for bad in ("p.jpg", "p"):
        with pytest.raises(SystemExit) as exc:
            main(["trace", "plot", "-o", str(tmp_path / bad)])
        assert exc.value.code == 2 and not (tmp_path / bad).exists()
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "must end in .png, .svg, .pdf" in err and "-o/--output" in err


def test_a_trace_named_like_mathtext_is_plotted_as_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """matplotlib parses ``$...$`` in a title as mathtext: a trace (or a stranger's certificate's trace)
    named ``t$x^^y$`` was a ParseSyntaxException traceback in ``trace plot`` and ``report``."""
    trace = tmp_path / "t$x^^y$.txt"
    trace.write_text("".join(f"{i % 7}\n" for i in range(50)))
    svg = tmp_path / "p.svg"
    run_json(capsys, "plot", str(trace), "-o", str(svg), "--points", "0")
    assert b"<svg" in svg.read_bytes()[:2000]


def test_csv_gives_the_figures_of_json(capsys: pytest.CaptureFixture[str]) -> None:
    import csv

    data = run_json(capsys, "mrc", "-c", "16,300")
    rc, out, _ = run(capsys, "mrc", "-c", "16,300", "--csv")
    rows = list(csv.DictReader(out.splitlines()))
    assert rc == 0 and [int(r["capacity_blocks"]) for r in rows] == [16, 300]
    for r, p in zip(rows, data["points"]):
        assert int(r["lru_hits"]) == p["lru_hits"] and int(r["belady_hits"]) == p["belady_hits"]
        assert Fraction(r["lru_hit_rate_exact"]) == frac(p["lru_hit_rate"])
        assert float(r["belady_hit_rate"]) == p["belady_hit_rate"]["decimal"]
    every = run_json(capsys, "mrc", "--all")
    rc, out, _ = run(capsys, "mrc", "--all", "--csv")
    rows = list(csv.DictReader(out.splitlines()))
    assert len(rows) == max(len(every["lru_hits_at"]), len(every["opt_hits_at"])) - 1  # capacities 1 .. the last change
    assert [int(r["lru_hits"]) for r in rows[:len(every["lru_hits_at"]) - 1]] == every["lru_hits_at"][1:]
    assert [int(r["belady_hits"]) for r in rows][:len(every["opt_hits_at"]) - 1] == every["opt_hits_at"][1:]

    off = run_json(capsys, "offload", "--capacity-tokens", "65536")
    rc, out, _ = run(capsys, "offload", "--capacity-tokens", "65536", "--csv")
    rows = list(csv.DictReader(out.splitlines()))
    assert rc == 0 and {r["arm"] for r in rows} == {"as read", "control"}
    # every figure of --json is a row, the token figures of a trace with prompt lengths included
    assert {r["figure"] for r in rows if r["arm"] == "as read"} == set(off["primary"]) - {"granularity"}
    assert "gpu_only_bypass_hit_rate_tokens" in off["primary"] and off["primary"]["refs_tokens"]
    for r in rows:
        arm = off["primary" if r["arm"] == "as read" else "control"][r["figure"]]
        if isinstance(arm, dict):
            assert Fraction(r["exact"]) == frac(arm) and float(r["value"]) == arm["decimal"]
        else:
            assert r["value"] == ("" if arm is None else str(arm))
        assert r["evidence"] == "computed"
    with pytest.raises(SystemExit) as exc:
        main(["trace", "offload", "--capacity-tokens", "65536", "--csv", "--json"])
    out, err = capsys.readouterr()
    assert exc.value.code == 2 and json.loads(out)["where"] == "--csv" and err.count("\n") == 1


def test_a_closed_pipe_is_no_traceback() -> None:
    """``pycert trace mrc --all --csv | head -c 10``: the reader leaves early; pycert ends quietly."""
    proc = subprocess.run(f"{sys.executable} -m pycert trace mrc --all --csv | head -c 10", shell=True, cwd=REPO,
                          capture_output=True, text=True, timeout=120, executable="/bin/bash")
    assert proc.stdout == "trace,sha2" and "Traceback" not in proc.stderr and proc.stderr == ""


def test_generate_writes_what_the_reader_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "g.jsonl"
    data = run_json(capsys, "generate", "-o", str(p), "--seed", "9", "--requests", "40")
    assert p.read_bytes() == synthetic.to_jsonl(synthetic.generate(9, 40))
    assert data["stats"]["requests"] == 40 and data["seed"] == 9
    again = run_json(capsys, "stats", str(p))
    assert again["sha256"] == data["stats"]["sha256"]


@pytest.mark.slow
@pytest.mark.parametrize("path", MOONCAKE, ids=lambda p: p.stem)
def test_every_command_on_the_mooncake_traces(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if not path.exists():
        pytest.skip(f"Mooncake trace absent: {path}")
    stats = run_json(capsys, "stats", str(path))
    mrc = run_json(capsys, "mrc", str(path), "-c", "128,1024,10000")
    assert mrc["stats"] == stats
    off = run_json(capsys, "offload", str(path), "--capacity-tokens", str(1024 * 512))
    assert off["primary"]["capacity_blocks"] == 1024 and off["control"]["capacity_blocks"] == 256
    lru_1024 = next(p for p in mrc["points"] if p["capacity"] == 1024)
    assert off["primary"]["gpu_only_hit_rate"] == lru_1024["lru_hit_rate"]
    assert off["primary"]["gpu_only_belady_hit_rate"] == lru_1024["belady_hit_rate"]
    png = tmp_path / "p.png"
    run_json(capsys, "plot", str(path), "-o", str(png), "--points", "3")
    assert png.read_bytes()[:4] == b"\x89PNG"
    if path.stem == "conversation_trace":
        rates = {p["capacity"]: round(p["lru_hit_rate"]["decimal"], 6) for p in mrc["points"]}
        assert rates == {128: 0.040988, 1024: 0.044475, 10000: 0.211165}
        assert (stats["refs"], stats["distinct"], round(stats["ceiling"]["decimal"], 6)) == (288_500, 182_790, 0.366412)


TRACES = REPO / "tests" / "traces"


def test_stats_json_keys_block_size_and_tenants(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "stats", str(TRACES / "prompts-sample.jsonl"))
    assert {"refs", "distinct", "block_tokens", "tenants"} <= set(data)
    assert data["block_tokens"] == 16 and data["format"] == "prompts"
    tenants = data["tenants"]
    assert tenants["count"] == 2 and [t["tenant"] for t in tenants["per_tenant"]] == ["acme", "globex"]
    assert sum(t["refs"] for t in tenants["per_tenant"]) == data["refs"]
    assert sum(t["cross_tenant_refs"] for t in tenants["per_tenant"]) == tenants["cross_tenant_refs"]
    assert run_json(capsys, "stats", str(TRACES / "bailian-sample.jsonl"))["tenants"] is None
    rc, out, _ = run(capsys, "stats", str(TRACES / "prompts-sample.jsonl"), "--block-tokens", "8")
    assert rc == 0 and "tenant 'globex'" in out and "8 tokens (prompts cut into blocks of 8 tokens, --block-tokens)" in out


def test_cross_tenant_references_against_their_definition() -> None:
    rng = random.Random(5)
    for _ in range(200):
        n = rng.randint(1, 30)
        refs = [rng.randint(0, 5) for _ in range(n)]
        owner = [rng.randint(0, 2) for _ in range(n)]
        want = [any(refs[j] == refs[i] and owner[j] != owner[i] for j in range(i)) for i in range(n)]
        assert cross_tenant(np.array(refs, dtype=np.uint64), np.array(owner)).tolist() == want


def test_block_tokens_that_contradict_the_trace_is_one_line_naming_both(capsys: pytest.CaptureFixture[str]) -> None:
    for action in ("stats", "offload"):
        rc, out, err = run(capsys, action, str(TRACES / "mooncake-sample.jsonl"), "--block-tokens", "64",
                           *(["--capacity-tokens", "4096"] if action == "offload" else []))
        assert rc == 2 and out == "" and err.count("\n") == 1
        assert err.startswith("pycert: --block-tokens: 64 tokens a block contradicts the trace (the trace says 512)")
    rc, out, _ = run(capsys, "stats", "--block-tokens", "64", "--json")
    assert rc == 2 and json.loads(out)["where"] == "--block-tokens"


def test_convert_writes_an_ids_trace_and_its_source_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = TRACES / "bailian-sample.jsonl"
    out = tmp_path / "canon.ids"
    data = run_json(capsys, "convert", str(src), "-o", str(out))
    record = ConvertedTrace.model_validate_json((tmp_path / "canon.ids.source.json").read_text())
    assert record.model_dump() == data and record.source == src.name and record.format == "bailian"
    canon, orig = read_trace(out), read_trace(src)
    assert canon.format == "ids" and canon.refs.tolist() == orig.refs.tolist()
    assert record.source_sha256 == orig.sha256 and record.output_sha256 == canon.sha256
    with pytest.raises(SystemExit) as exc:
        main(["trace", "convert", str(src)])
    assert exc.value.code == 2 and "-o/--output" in capsys.readouterr().err


def test_stdin_and_a_closed_pipe(tmp_path: Path) -> None:
    """``-`` reads stdin (gzip too); output into a pipe whose reader has gone ends quietly, exit 0."""
    data = gzip.compress((TRACES / "aiperf-sample.jsonl").read_bytes())
    proc = subprocess.run([sys.executable, "-m", "pycert", "trace", "stats", "-", "--json"], input=data, cwd=REPO,
                          capture_output=True, timeout=120)
    assert proc.returncode == 0 and json.loads(proc.stdout)["name"] == "<stdin>"
    shell = subprocess.run(f"set -o pipefail; {sys.executable} -m pycert trace stats --json | head -1",
                           shell=True, executable="/bin/bash", cwd=REPO, capture_output=True, text=True, timeout=120)
    assert shell.returncode == 0 and shell.stdout == "{\n" and shell.stderr == "", shell.stderr
