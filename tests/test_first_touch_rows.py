"""The first-touch dataset's parts that need neither the engine nor Lean: the workload definitions, the
log's structure checks, the table's reader and comparison, the emitted Lean text, the command line's
refusals before any work. tests/test_dataset.py runs the whole command on the real engine and kernel."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from pycert.analysis.first_touch import (BLOCK_TOKENS, block_prompt, closed_form_served, last_token_served, lead, ramp,
                                        ramp_prompt, trace_rows)
from pycert.cli import main
from pycert.core.errors import InputError, Rejection
from pycert.core.gate import inside
from pycert.core.schema import decimal_of
from pycert.data.traces import read_trace
from pycert.dataset.card import card, summary
from pycert.dataset.table import COLUMNS, CSV_NAME, Row, first_difference, read_csv, render_csv
from pycert.families.first_touch_ramp import ramp_module
from pycert.families.first_touch_trace import trace_module
from pycert.leak import first_touch as ftlog
from pycert.lean.sources import statement_literals, theorem_signatures
from tests.conftest import SHARED_TRACES

CONVERSATION = SHARED_TRACES / "conversation_trace.jsonl"


def write_trace(path: Path, requests: list[tuple[list[int], int]]) -> Path:
    path.write_text("".join(json.dumps({"timestamp": i, "input_length": n, "output_length": 1, "hash_ids": ids}) + "\n"
                            for i, (ids, n) in enumerate(requests)))
    return path


TINY = [([0, 1, 2], 1300), ([0, 3, 4], 1100), ([0, 1, 2, 5], 1800), ([0, 3, 4, 6, 7], 2400), ([0, 8], 700),
        ([0, 3, 9], 1400)]


# ---------------------------------------------------------------------------- workloads


def test_the_ramp_straddles_every_block_boundary() -> None:
    n = ramp(256, 9)
    assert len(n) == 36 and n[:4] == [255, 256, 257, 384] and n[-1] == 256 * 9 + 128
    assert [x for x in n if x % 256 == 0] == [256 * j for j in range(1, 10)]


def test_prompts_are_seeded_and_blocks_keep_prefixes() -> None:
    assert ramp_prompt(0, 300, 8192) == ramp_prompt(0, 300, 8192) != ramp_prompt(1, 300, 8192)
    a, b = block_prompt(0, [7, 8, 9], 1300, 8192), block_prompt(0, [7, 8, 10], 1500, 8192)
    assert len(a) == 1300 and len(b) == 1500
    assert a[:2 * BLOCK_TOKENS] == b[:2 * BLOCK_TOKENS] and a[2 * BLOCK_TOKENS] != b[2 * BLOCK_TOKENS]
    assert min(a) >= 16 and max(a) < 8192


def test_lead_stops_at_the_first_block_not_held() -> None:
    assert lead({0, 1, 5}, [0, 1, 2, 5]) == 2
    assert lead(set(), [0]) == 0 and lead({0}, []) == 0 and lead({3, 4}, [3, 4]) == 2


def test_trace_rows_are_conversations_second_requests(tmp_path: Path) -> None:
    rows = trace_rows(read_trace(write_trace(tmp_path / "t.jsonl", TINY)), 2)
    # conversations: (0,1) requests 1 and 3; (0,3) requests 2, 4, 6: ordered by their second requests
    assert [(r.first_request, r.request) for r in rows] == [(1, 3), (2, 4)]
    assert [(r.m, r.served, r.n) for r in rows] == [(3, 1536, 1800), (3, 1536, 2400)]
    assert all(r.m == r.whole_trace_m for r in rows)


def test_trace_rows_refusals(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="2 conversations with a second request; 3 rows need 3"):
        trace_rows(read_trace(write_trace(tmp_path / "a.jsonl", TINY)), 3)
    short = [([0, 1, 2], 1300), ([0, 1], 1300)]  # the row's request: 2 blocks for 1,300 tokens
    with pytest.raises(InputError, match="request 2: 2 blocks for input_length 1300"):
        trace_rows(read_trace(write_trace(tmp_path / "b.jsonl", short)), 1)
    # block 7 of the second request was shown by another conversation: these ids are not prefix hashes
    odd = [([0, 4, 7], 1300), ([0, 1, 2], 1300), ([0, 1, 7], 1300)]
    with pytest.raises(InputError, match="not prefix hashes"):
        trace_rows(read_trace(write_trace(tmp_path / "c.jsonl", odd)), 1)


@pytest.mark.skipif(not CONVERSATION.is_file(), reason=f"Mooncake traces absent: {SHARED_TRACES}")
def test_the_conversation_trace_gives_29_workloads_held_by_their_conversation() -> None:
    rows = trace_rows(read_trace(CONVERSATION), 29)
    assert len(rows) == 29 and len({r.request for r in rows}) == 29
    assert all(r.m == r.whole_trace_m and 0 < r.served <= r.n and len(r.req) == -(-r.n // 512) for r in rows)


# ---------------------------------------------------------------------------- the log's structure


def line(workload: str, arm: str, role: str, tenant: str, salt: str, digest: str, cached: int,
         salt_id: str | None = None) -> ftlog.FtRequest:
    return ftlog.FtRequest(workload=workload, arm=arm, role=role, tenant=tenant, salt=salt,
                           salt_id=salt_id if salt == "keyed" else None, prompt_tokens=300, prompt_sha256=digest,
                           engine_tokens=300, cached_tokens=cached, ttft_s=0.0)


HEADER = ftlog.FtHeader(engine="e", engine_version="v", model="m", device="cpu", seed=0, page_size=256,
                        salt_form="s", vocab=8192, ramp_blocks=1, trace_rows=0)
D = "a" * 64


def ramp_lines(**edit: object) -> list[ftlog.FtRequest]:
    out = [line("synthetic-001", "cold", "probe", "pool", "none", D, 0),
           line("synthetic-001", "pooled", "prewarm", "pool", "none", D, 0),
           line("synthetic-001", "pooled", "probe", "pool", "none", D, 256),
           line("synthetic-001", "tenants", "prime", "tenant-a", "keyed", D, 0, "1" * 16),
           line("synthetic-001", "tenants", "cross", "tenant-b", "keyed", D, 0, "2" * 16),
           line("synthetic-001", "tenants", "own", "tenant-a", "keyed", D, 256, "1" * 16)]
    for key, value in edit.items():
        i, field = key.split("_", 1)
        out[int(i[1:])] = out[int(i[1:])].model_copy(update={field: value})
    return out


def counts(lines: list[ftlog.FtRequest]) -> ftlog.Counts | Rejection:
    return ftlog.workload_counts(ftlog.FtLog(header=HEADER, requests=tuple(lines)), "synthetic-001", D, D, cut=True)


def test_workload_counts_read_the_arms() -> None:
    assert counts(ramp_lines()) == ftlog.Counts(cold=0, pooled=256, cross=0, own=256)


@pytest.mark.parametrize(("edit", "needle"), [
    ({"r1_role": "probe"}, "pooled prewarm from pool"),
    ({"r0_cached_tokens": 5}, "(cold probe).cached_tokens"),
    ({"r3_cached_tokens": 5}, "(tenants prime).cached_tokens"),
    ({"r2_prompt_sha256": "b" * 64}, "(pooled probe).prompt_sha256"),
    ({"r4_salt_id": "1" * 16}, "(tenants).salt_id"),
    ({"r5_salt_id": "3" * 16}, "(tenants).salt_id"),
])
def test_workload_counts_refuse_a_log_that_is_not_the_arms(edit: dict, needle: str) -> None:
    got = counts(ramp_lines(**edit))
    assert isinstance(got, Rejection) and needle in got.render(), got


def test_workload_counts_refuse_a_missing_request() -> None:
    got = counts(ramp_lines()[:-1])
    assert isinstance(got, Rejection) and "expected 6 requests" in got.render()


def test_replay_differences_name_the_request() -> None:
    a = ftlog.FtLog(header=HEADER, requests=tuple(ramp_lines()))
    b = ftlog.FtLog(header=HEADER, requests=tuple(ramp_lines(r2_cached_tokens=0)))
    assert ftlog.replay_differences(a, a) == []
    diff = ftlog.replay_differences(b, a)
    assert diff[0].subject == "log line 4 (synthetic-001 pooled probe).cached_tokens"
    assert (diff[0].expected, diff[0].found) == ("256 (the engine, again)", "0 (recorded)")


def test_the_log_round_trips_and_refuses_junk(tmp_path: Path) -> None:
    log = ftlog.FtLog(header=HEADER, requests=tuple(ramp_lines()))
    assert ftlog.parse(ftlog.render(log), "x") == log
    with pytest.raises(InputError, match=r"x:4: a request: cached_tokens: Input should be greater than or equal to 0"):
        ftlog.parse(ftlog.render(log).replace(b'"cached_tokens":256', b'"cached_tokens":-1', 1), "x")


# ---------------------------------------------------------------------------- the table


def row(i: int, cut: str = "0.5", closed: str = "0.5", source: str = "synthetic_ramp", engine: str | None = None) -> Row:
    wid = f"{'synthetic' if source == 'synthetic_ramp' else 'mooncake'}-{i:03d}"
    return Row(workload_id=wid, source=source, prompt_tokens="512", apc_prefill_computed="512",
               pooled_prefill_computed="256", cached_tokens="256", first_touch_cut=cut, closed_form_cut=closed,
               engine_closed_form_cut=closed if engine is None else engine, zero_tenant_leak="true",
               certificate=f"certificates/{wid}.json")


ROWS = [row(1), row(2, "0.75", "1", engine="0.75"), row(1, "0.25", "", "mooncake_fast25_trace")]


def table(tmp_path: Path, text: bytes) -> Rejection | list[Row]:
    (tmp_path / CSV_NAME).write_bytes(text)
    return read_csv(inside(tmp_path, CSV_NAME))


def test_the_table_round_trips(tmp_path: Path) -> None:
    assert table(tmp_path, render_csv(ROWS)) == ROWS
    assert render_csv(ROWS).splitlines()[0].decode() == ",".join(COLUMNS)


@pytest.mark.parametrize(("edit", "reason", "needle"), [
    (lambda t: t.replace(b",closed_form_cut", b"", 1), "missing-column", "the column closed_form_cut"),
    (lambda t: t.replace(b"prompt_tokens,apc_prefill_computed", b"apc_prefill_computed,prompt_tokens", 1), "columns",
     "the columns"),
    (lambda t: t + t.splitlines(keepends=True)[1], "duplicate-row", "synthetic-001 named twice (lines 2 and 5)"),
    (lambda t: t.replace(b",true,", b",yes,", 1), "cell", "zero_tenant_leak"),
    (lambda t: t.replace(b"512,512,", b"512,", 1), "cells", "11 cells"),
    (lambda t: b"\xff\xfe" + t, "not-csv", "UTF-8"),
    (lambda t: b"", "not-csv", "empty"),
])
def test_the_table_reader_gives_one_reason(tmp_path: Path, edit, reason: str, needle: str) -> None:  # noqa: ANN001
    got = table(tmp_path, edit(render_csv(ROWS)))
    assert isinstance(got, Rejection) and got.reason == reason and needle in got.render(), got


def test_first_difference_names_row_column_expected_found() -> None:
    changed = [ROWS[0], ROWS[1].model_copy(update={"pooled_prefill_computed": "255"}), ROWS[2]]
    d = first_difference(ROWS, changed, CSV_NAME)
    assert d is not None and d.render() == ("first_touch.csv: row synthetic-002, column pooled_prefill_computed: "
                                            "expected '256', found '255'")
    assert first_difference(ROWS, ROWS[:2], "t").reason == "missing-row"
    assert first_difference(ROWS[:2], ROWS, "t").reason == "extra-row"
    assert first_difference(ROWS, [ROWS[1], ROWS[0], ROWS[2]], "t").reason == "order"
    assert first_difference(ROWS, ROWS, "t") is None


def test_the_card_counts_the_rows_where_cut_meets_closed_form() -> None:
    s = summary(ROWS, 256)
    assert (s.synthetic, s.equal, s.differ_at, s.mooncake, s.mean_cut, s.below_floor) == (2, 1, [512], 1, "0.250", 1)
    assert s.engine_equal == 2
    text = card(ROWS, HEADER).decode()
    assert "prints `2 1 of 2`" in text and "Apache License, Version 2.0" in text and "kvcache-ai" in text
    assert "kept as published" in text
    # the one line that says where and why the two closed forms differ, on rows where they differ at the multiple
    ramp = [ROWS[0].model_copy(update={"prompt_tokens": "511"}), ROWS[1]]
    text = card(ramp, HEADER).decode()
    assert ("differs from engine_closed_form_cut (and from the measured cut) at n = 512: each of them a multiple of 256, "
            "and every multiple of 256 on the ramp among them, where the engine serves one chunk less because it "
            "computes the prompt's last token again (`Pycert.FirstTouch.lastServed_add`)") in text


def test_the_engines_closed_form_is_the_last_token_rule() -> None:
    """c·⌊(n-1)/c⌋ against c·⌊n/c⌋: one chunk less exactly at a multiple of c, as lastServed_add states."""
    for c in (2, 16, 256):
        for n in range(1, 4 * c + 2):
            gap = closed_form_served(c, n) - last_token_served(c, n)
            assert gap == (c if n % c == 0 else 0), (c, n)


# ---------------------------------------------------------------------------- the Lean modules


def test_the_ramp_module_states_each_rows_closed_form() -> None:
    text = ramp_module(256, 2).decode()
    sigs = theorem_signatures(text)
    for k, n in enumerate(ramp(256, 2), 1):
        name = f"Pycert.Instance.FirstTouchRampC256B2.Synthetic{k:03d}.headline"
        assert statement_literals(sigs[name], "Pycert.FirstTouch.RampAt") == [256, n, 256 * (n // 256),
                                                                              256 * ((n - 1) // 256)]
        assert f"#check @{name}" in text
    assert text.count("set_option Elab.async false") == 1


def test_the_trace_module_states_each_rows_touch(tmp_path: Path) -> None:
    rows = trace_rows(read_trace(write_trace(tmp_path / "t.jsonl", TINY)), 2)
    text = trace_module(rows, "FirstTouchTR2", "0" * 64).decode()
    sig = theorem_signatures(text)["Pycert.Instance.FirstTouchTR2.Mooncake002.headline"]
    assert statement_literals(sig, "Pycert.FirstTouch.TouchAt") == [512, 2400, 3, 1536]
    assert "public noncomputable def req : List Nat :=\n  [0, 3, 4, 6, 7]" in text


# ---------------------------------------------------------------------------- the command line, before any work


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        rc = main(list(argv))
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else 0
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize(("argv", "needle"), [
    (["--out", "{d}/x"], "the Mooncake rows need the trace"),
    (["--out", "{d}/x", "--no-engine"], "--no-engine: only with --check"),
    (["--out", "{d}/x", "--kernel"], "--kernel: only with --check"),
    (["--reprove", "{d}", "--kernel"], "--kernel: only with --check"),
    (["--check", "{d}", "--seed", "3"], "--seed: only with --out"),
    (["--check", "{d}/none"], "no such dataset directory"),
    (["--out", "{d}/x", "--trace", "{d}/none.jsonl"], "none.jsonl"),
    (["--out", "{d}/x", "--ramp-blocks", "0"], "--ramp-blocks"),
    (["--check", "{d}"], "first_touch.csv: no such file"),
    (["--reprove", "{d}"], "first-touch-engine.jsonl: no such file"),
    (["--reprove", "{d}", "--seed", "2"], "--seed: only with --out"),
])
def test_refused_before_any_work(tmp_path: Path, capsys, argv: list[str], needle: str) -> None:  # noqa: ANN001
    args = [a.replace("{d}", str(tmp_path)) for a in argv]
    rc, out, err = run(capsys, "dataset", "first-touch", *args)
    assert rc == 2 and err.count("\n") == 1 and needle in err and "Traceback" not in err, err
    rc, out, err = run(capsys, "dataset", "first-touch", *args, "--json")
    assert rc == 2 and json.loads(out)["exit"] == 2
    assert not (tmp_path / "x").exists()


def test_a_changed_cell_is_named_before_the_certificates_are_read(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    (tmp_path / CSV_NAME).write_bytes(render_csv(ROWS) + render_csv(ROWS).splitlines(keepends=True)[2])
    rc, out, err = run(capsys, "dataset", "first-touch", "--check", str(tmp_path), "--json")
    assert rc == 1 and "synthetic-002 named twice" in err
    doc = json.loads(out)
    assert doc["exit"] == 1 and doc["result"]["rejection"]["reason"] == "duplicate-row"


def test_the_committed_dataset_table_says_what_its_card_says() -> None:
    """The committed 65-row dataset (issue 35), where it is: the table's one-line refutation, as the card
    prints it, and every row naming its own certificate."""
    root = Path(__file__).resolve().parent.parent / "datasets" / "first-touch"
    if not (root / CSV_NAME).is_file():
        pytest.skip("no committed dataset")
    rows = read_csv(inside(root, CSV_NAME))
    assert isinstance(rows, list) and len(rows) == 65
    ramp_rows = [r for r in rows if r.source == "synthetic_ramp"]
    equal = sum(r.first_touch_cut == r.closed_form_cut for r in ramp_rows)
    engine = sum(r.first_touch_cut == r.engine_closed_form_cut for r in ramp_rows)
    assert (engine, equal, len(ramp_rows)) == (36, 27, 36)  # the engine's closed form is the measured cut on every row
    assert f"prints `{engine} {equal} of {len(ramp_rows)}`" in (root / "README.md").read_text()
    docs = (root.parent.parent / "docs" / "dataset.md").read_text()
    s = summary(rows, 256)
    assert f"prints **`{engine} {equal} of {len(ramp_rows)}`**" in docs
    assert f"mean first_touch_cut of\n**{s.mean_cut}** with **{s.below_floor} of 29**" in docs
    assert all((root / r.certificate).is_file() and Path(r.certificate).stem == r.workload_id for r in rows)
    assert all(r.first_touch_cut == decimal_of(1 - Fraction(int(r.pooled_prefill_computed), int(r.apc_prefill_computed)))
               for r in rows)


def test_reprove_without_pyarrow_keeps_the_parquet_table(tmp_path: Path, capsys, monkeypatch) -> None:  # noqa: ANN001
    """The re-proved dataset replaces its directory whole: where pyarrow is not importable, a Parquet table
    already there would be lost (a re-prove on such a machine dropped it), so it is refused before any work."""
    import shutil

    from pycert.dataset import build

    root = Path(__file__).resolve().parent.parent / "datasets" / "first-touch"
    if not (root / "first_touch.parquet").is_file():
        pytest.skip("no committed dataset")
    d = Path(shutil.copytree(root, tmp_path / "d"))
    before = sorted(p.relative_to(d) for p in d.rglob("*"))
    monkeypatch.setattr(build, "parquet_writable", lambda: False)
    rc, out, err = run(capsys, "dataset", "first-touch", "--reprove", str(d), "--trace", str(tmp_path / "t.jsonl"))
    assert rc == 2 and err.count("\n") == 1 and "pyarrow is not importable" in err, err
    assert sorted(p.relative_to(d) for p in d.rglob("*")) == before
