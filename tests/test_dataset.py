"""``pycert dataset first-touch`` end to end on the real engine (transformers, CPU) and the real wasm
kernel, on a small dataset made here (one ramp block: four rows; two workloads of a small Mooncake-format
trace), then ``--check`` on it and on tampered copies: each refused with its one-line reason."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from pycert.cli import main
from pycert.dataset.table import CSV_NAME
from tests.test_first_touch_rows import TINY, run, write_trace

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("dataset")
    trace = write_trace(d / "tiny_trace.jsonl", TINY)
    out = d / "first-touch"
    rc = main(["dataset", "first-touch", "--trace", str(trace), "--out", str(out), "--ramp-blocks", "1",
               "--trace-rows", "2", "--json"])
    assert rc == 0
    return out, trace


def rows(root: Path) -> list[dict[str, str]]:
    with open(root / CSV_NAME, newline="") as f:
        return list(csv.DictReader(f))


def test_the_rows_measure_the_engine_beside_the_closed_form(made) -> None:  # noqa: ANN001
    root, _ = made
    got = rows(root)
    assert [r["workload_id"] for r in got] == ["synthetic-001", "synthetic-002", "synthetic-003", "synthetic-004",
                                                "mooncake-001", "mooncake-002"]
    ramp = {int(r["prompt_tokens"]): r for r in got if r["source"] == "synthetic_ramp"}
    # the engine's own counts: a cold cache serves nothing, and the last prompt token is always recomputed
    assert all(r["apc_prefill_computed"] == r["prompt_tokens"] for r in ramp.values())
    assert {n: int(r["cached_tokens"]) for n, r in ramp.items()} == {255: 0, 256: 0, 257: 256, 384: 256}
    assert [n for n, r in ramp.items() if r["first_touch_cut"] != r["closed_form_cut"]] == [256]
    assert all(r["first_touch_cut"] == r["engine_closed_form_cut"] for r in ramp.values())  # the last-token rule
    assert all(r["zero_tenant_leak"] == "true" for r in got)
    assert all(r["closed_form_cut"] == r["engine_closed_form_cut"] == "" for r in got
               if r["source"] == "mooncake_fast25_trace")
    card = (root / "README.md").read_text()
    assert "prints `4 3 of 4`" in card and "at n = 256" in card
    notice = (root / "NOTICE").read_text()
    assert "Copyright (c) kvcache-ai" in notice and "Apache License, Version 2.0" in notice


def test_every_certificate_verifies_with_the_kernel(made, capsys) -> None:  # noqa: ANN001
    root, trace = made
    certs = sorted(str(p) for p in (root / "certificates").glob("*.json"))
    rc, out, err = run(capsys, "verify", *certs, "--kernel", "--input", f"tiny_trace.jsonl={trace}", "--json")
    assert rc == 0, err
    assert all(r["status"] == "ok" and "kernel" in r["checked"] for r in json.loads(out))


def test_check_agrees_on_the_dataset_as_made(made, capsys) -> None:  # noqa: ANN001
    root, trace = made
    rc, out, err = run(capsys, "dataset", "first-touch", "--check", str(root), "--trace", str(trace), "--kernel",
                       "--json")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["ok"] and doc["rows"] == 6
    assert {"engine re-run", "certificates (offline and kernel)"} <= set(doc["checked"]), doc
    assert ("parquet" in doc["checked"]) == (root / "first_touch.parquet").exists(), doc


def tampered(made, tmp_path: Path, edit) -> Path:  # noqa: ANN001
    root, _ = made
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    edit(copy)
    return copy


def replace_in(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize(("edit", "needle"), [
    (lambda d: replace_in(d / CSV_NAME, "synthetic-003,synthetic_ramp,257,257,1,", "synthetic-003,synthetic_ramp,257,257,2,"),
     "first_touch.csv: row synthetic-003, column pooled_prefill_computed: expected '1', found '2'"),
    (lambda d: replace_in(d / CSV_NAME, ",zero_tenant_leak", ""), "first_touch.csv:1: expected the column zero_tenant_leak"),
    (lambda d: (d / CSV_NAME).write_text((d / CSV_NAME).read_text() + (d / CSV_NAME).read_text().splitlines()[2] + "\n"),
     "row synthetic-002 named twice"),
    (lambda d: replace_in(d / "certificates" / "mooncake-001.json", '"numerator": 1536', '"numerator": 2048'),
     "mooncake-001.json"),
    (lambda d: (d / "certificates" / "synthetic-004.json").unlink(), "certificates/synthetic-004.json: expected present"),
    (lambda d: replace_in(d / "README.md", "prints `4 3 of 4`", "prints `4 4 of 4`"), "README.md:"),
])
def test_check_names_the_first_thing_that_differs(made, tmp_path: Path, capsys, edit, needle: str) -> None:  # noqa: ANN001
    copy = tampered(made, tmp_path, edit)
    rc, out, err = run(capsys, "dataset", "first-touch", "--check", str(copy), "--trace", str(made[1]), "--no-engine")
    # progress lines come first (the command says what it is doing); the reason is one line, the last
    errors = [line for line in err.splitlines() if line.startswith("pycert: ")]
    assert rc == 1 and len(errors) == 1 and err.splitlines()[-1] == errors[0] and needle in errors[0], err


def _parquet_with_one_cell_changed(d: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    table = pq.ParquetFile(d / "first_touch.parquet").read(use_threads=False)
    i = table.column_names.index("cached_tokens")
    pq.write_table(table.set_column(i, "cached_tokens", [[v.as_py() + 1 for v in table.column(i)]]),
                   d / "first_touch.parquet")


@pytest.mark.parametrize(("edit", "needle"), [
    (_parquet_with_one_cell_changed, "first_touch.parquet: expected the table the rows make, found another table"),
    (lambda d: (d / "first_touch.parquet").write_bytes(b"PAR1 not a table"), "first_touch.parquet: not a Parquet table"),
])
def test_check_reads_the_parquet_table_against_the_rows(made, tmp_path: Path, capsys, edit, needle: str) -> None:  # noqa: ANN001
    if not (made[0] / "first_touch.parquet").exists():
        pytest.skip("pyarrow was not importable when the dataset was made")
    copy = tampered(made, tmp_path, edit)
    rc, out, err = run(capsys, "dataset", "first-touch", "--check", str(copy), "--trace", str(made[1]), "--no-engine")
    assert rc == 1 and needle in err.splitlines()[-1], err


def test_check_without_the_trace_is_an_input_error(made, capsys) -> None:  # noqa: ANN001
    rc, out, err = run(capsys, "dataset", "first-touch", "--check", str(made[0]), "--no-engine")
    assert rc == 2 and "need the trace tiny_trace.jsonl" in err


def test_the_kernel_refuses_a_served_count_one_block_off(made, capsys, lean_dir: Path) -> None:  # noqa: ANN001
    root, _ = made
    module = next((root / "certificates" / "lean" / "derived").glob("*.lean"))
    text = module.read_text()
    assert "TouchAt prev req 512 1800 3 1536 :=" in text
    bad = lean_dir / "FirstTouchWrong.lean"
    bad.write_text(text.replace("TouchAt prev req 512 1800 3 1536 :=", "TouchAt prev req 512 1800 3 2048 :="))
    rc, out, err = run(capsys, "check", str(bad), "--json")
    assert rc == 1, (out, err)
