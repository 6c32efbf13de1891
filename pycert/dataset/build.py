"""``pycert dataset first-touch --trace T --out DIR``: the dataset made, in one staged directory that
replaces ``DIR`` only when every row's certificate holds.

1. The workloads: the ramp's prompts and the trace's (:mod:`pycert.analysis.first_touch`).
2. The engine (:mod:`pycert.leak.first_touch`): every arm of every workload, recorded in
   ``certificates/inputs/first-touch-engine.jsonl``.
3. The certificates: ``pycert prove``'s stages over the two row families' producers, which certify that
   log; each family states every row's headline in one Lean module, so the kernel work is two instance
   files, whatever the number of rows.
4. The table (CSV, and Parquet where pyarrow is importable), the README card and the NOTICE, each a
   function of the certificates.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel

from pycert import prove
from pycert.analysis.first_touch import block_prompt, ramp, ramp_prompt
from pycert.certify.documents import load_certificate
from pycert.core.errors import InputError, Rejected, Rejection, ResourcesExhausted
from pycert.core.files import atomic_write_many, replace_dir
from pycert.core.gate import inside, named
from pycert.core.limits import MAX_JSON_BYTES, MAX_TRACE_BYTES
from pycert.dataset.card import Summary, card, summary
from pycert.dataset.table import (CERTIFICATES, CSV_NAME, PARQUET_NAME, Row, parquet_bytes, parquet_writable, render_csv,
                                  row_of)
from pycert.families.base import Options
from pycert.families.first_touch.dataset import LOG
from pycert.families.first_touch_ramp import workload_id as ramp_id
from pycert.families.first_touch_ramp.produce import PRODUCER as RAMP
from pycert.families.first_touch_trace import rows_of
from pycert.families.first_touch_trace import workload_id as trace_id
from pycert.families.first_touch_trace.produce import PRODUCER as TRACE
from pycert.families.first_touch_trace.produce import TraceOptions
from pycert.leak import first_touch as ftlog
from pycert.leak.admission import Admission
from pycert.leak.engines import Engine, transformers_engine

PAGE_TOKENS = 256
"""The engine's page size and the closed form's chunk: LMCache's default chunk of 256 tokens."""
NOTICE_NAME = "NOTICE"
NOTICE = """The first-touch dataset, made by pycert (Apache-2.0).

Its Mooncake rows (source mooncake_fast25_trace) are derived from the Mooncake FAST'25 trace release,
Copyright (c) kvcache-ai, licensed under the Apache License, Version 2.0:
https://github.com/kvcache-ai/Mooncake, folder FAST25-release/traces (USENIX FAST '25).
The rows hold counts only, no block ids. Attribution travels with any data derived from them.
"""

Progress = Callable[[str], None]


class DatasetResult(BaseModel):
    ok: bool
    out: str
    rows: int
    summary: Summary
    seconds: dict[str, float]
    stages: list[prove.Stage]


def workloads(log_or_plan: ftlog.FtHeader | ftlog.Plan, trace: Path | None, vocab: int) -> list[ftlog.Workload]:
    """Every workload's prompts, from the plan (a run's) or a log's header (a re-run's)."""
    h = log_or_plan
    out = [ftlog.Workload(ramp_id(k), p, p, cut=True)
           for k, n in enumerate(ramp(PAGE_TOKENS, h.ramp_blocks), 1) for p in [ramp_prompt(h.seed, n, vocab)]]
    if h.trace_rows:
        assert trace is not None  # the callers refuse a plan with trace rows and no trace
        for k, r in enumerate(rows_of(trace, h.trace_rows), 1):
            p = block_prompt(h.seed, r.req, r.n, vocab)
            out.append(ftlog.Workload(trace_id(k), p, p, cut=False))
    return out


def open_engine(seed: int, lengths: Sequence[int], where: str) -> Engine:
    """The in-process engine, sized so that no arm's blocks are evicted before the next request reads
    them: four prompts' worth of pages (an arm holds two; the engine evicts every cached block when its
    free pages fall below a safety margin), and positions for the longest prompt with its salt."""
    longest = max(lengths) + 16
    pages = -(-longest // PAGE_TOKENS)
    return transformers_engine(where, seed=seed, page_size=PAGE_TOKENS, num_blocks=4 * pages + 16,
                               max_positions=max(4096, longest))


def lengths_of(h: ftlog.FtHeader | ftlog.Plan, trace: Path | None) -> list[int]:
    out = ramp(PAGE_TOKENS, h.ramp_blocks)
    if h.trace_rows and trace is not None:
        out += [r.n for r in rows_of(trace, h.trace_rows)]
    return out


def measure(plan: ftlog.FtHeader | ftlog.Plan, trace: Path | None, where: str, progress: Progress) -> ftlog.FtLog:
    """Every workload of ``plan`` on a fresh engine (a fresh random admission secret: the salts are new
    each run, the counts are not)."""
    run = ftlog.Plan(seed=plan.seed, ramp_blocks=plan.ramp_blocks, trace_rows=plan.trace_rows, trace=plan.trace,
                     trace_sha256=plan.trace_sha256)
    engine = open_engine(plan.seed, lengths_of(plan, trace), where)
    try:
        return ftlog.run_workloads(engine, run, workloads(plan, trace, engine.vocab), Admission(os.urandom(32)),
                                   progress)
    finally:
        engine.close()


def rows_of_certificates(paths: Sequence[Path]) -> list[Row]:
    """The table's rows, ramp rows first, each in workload order."""
    rows = [row_of(load_certificate(p)) for p in paths]
    return sorted(rows, key=lambda r: (not r.workload_id.startswith("synthetic"), r.workload_id))


def table_files(root: Path, rows: Sequence[Row], header: ftlog.FtHeader) -> dict[Path, bytes]:
    """The dataset's own files beside its certificates: the CSV, Parquet where it can be written, the card
    and the NOTICE."""
    files = {root / CSV_NAME: render_csv(rows), root / "README.md": card(rows, header),
             root / NOTICE_NAME: NOTICE.encode()}
    if (pq := parquet_bytes(rows)) is not None:
        files[root / PARQUET_NAME] = pq
    return files


def generate(trace: Path | None, out: Path, *, ramp_blocks: int, trace_rows: int, seed: int,
             backend: str | None = None, timeout: float = 1800.0, progress: Progress = lambda _m: None) -> DatasetResult:
    """The dataset made from scratch: the engine measures, then :func:`publish`."""
    if trace_rows and trace is None:
        raise InputError("the Mooncake rows need the trace: give --trace CONVERSATION (or --trace-rows 0)",
                         where="--trace")
    if trace is not None and trace_rows:
        rows_of(trace, trace_rows)  # a trace with too few workloads is refused before the engine starts
    plan = ftlog.Plan(seed=seed, ramp_blocks=ramp_blocks, trace_rows=trace_rows,
                      trace=trace.name if trace is not None and trace_rows else None,
                      trace_sha256=named(trace).sha256("a trace file", MAX_TRACE_BYTES)
                      if trace is not None and trace_rows else None)

    def measured() -> bytes:
        progress(f"engine: {4 * ramp_blocks} ramp rows, {trace_rows} trace rows")
        return ftlog.render(measure(plan, trace, "pycert dataset first-touch", progress))

    return publish(out, trace, measured, backend=backend, timeout=timeout, progress=progress)


def reprove(root: Path, trace: Path | None, *, backend: str | None = None, timeout: float = 1800.0,
            progress: Progress = lambda _m: None) -> DatasetResult:
    """The dataset's certificates proved again from its recorded log, and its table written again (after a
    change of the Lean library: every certificate names the library's hash); the engine does not run."""
    data = inside(root, f"{CERTIFICATES}/{LOG}").read("a first-touch log", MAX_JSON_BYTES)
    header = ftlog.parse(data, str(root / CERTIFICATES / LOG)).header
    if header.trace_rows and trace is None:
        raise InputError(f"its {header.trace_rows} Mooncake rows need the trace {header.trace}: give --trace PATH",
                         where="--trace")
    return publish(root, trace, lambda: data, backend=backend, timeout=timeout, progress=progress)


def publish(out: Path, trace: Path | None, log_bytes: Callable[[], bytes], *, backend: str | None, timeout: float,
            progress: Progress) -> DatasetResult:
    """Into a staged directory: the log (``log_bytes``), every row's certificate, the table, the card; then
    the staged directory replaces ``out`` in one rename, only if every certificate held."""
    if (out / PARQUET_NAME).is_file() and not parquet_writable():
        # the staged directory replaces out whole: a table it cannot write again would be lost
        raise InputError(f"{PARQUET_NAME} is there and pyarrow is not importable here, so it could not be written "
                         "again: pip install pyarrow, or remove it first", where=str(out))
    seconds: dict[str, float] = {}
    made: list[Row] = []
    stages: list[prove.Stage] = []

    def fill(stage: Path) -> None:
        certs = stage / CERTIFICATES
        t0 = time.monotonic()
        data = log_bytes()
        atomic_write_many({certs / LOG: data})
        seconds["engine"] = round(time.monotonic() - t0, 1)
        t0 = time.monotonic()
        res = prove.prove([(RAMP, Options()), (TRACE, TraceOptions(dataset_trace=trace))], backend=backend,
                          out_dir=certs, timeout=timeout, progress=progress)
        seconds["certificates"] = round(time.monotonic() - t0, 1)
        if not res.ok:
            bad = next((r for r in res.rows if r.status != "holds"), None)
            why = f"{bad.certificate}: {bad.claim}" if bad else "; ".join(s.detail for s in res.stages if s.status != "ok")
            if res.rejected:
                raise Rejected(Rejection(subject="pycert dataset first-touch", reason="certificate", detail=why))
            raise ResourcesExhausted(why, where="pycert dataset first-touch")
        made.extend(rows_of_certificates([Path(w) for w in res.written]))
        stages.extend(res.stages)
        atomic_write_many(table_files(stage, made, ftlog.parse(data, "the log").header))

    replace_dir(out, fill, lambda d: (d / CSV_NAME).is_file())
    return DatasetResult(ok=True, out=str(out), rows=len(made), summary=summary(made, PAGE_TOKENS), seconds=seconds,
                         stages=stages)
