"""Certifying the Mooncake rows of a first-touch log: every ``inputs/first-touch-*.jsonl`` under the
certificate directory whose header names a trace, one certificate per row, every row's headline in one
emitted module. The trace is the one ``pycert dataset first-touch`` hands over, else the file of the
header's name beside the certificate directory (where verify looks for it too)."""

from __future__ import annotations

from pathlib import Path

from pycert.core.errors import InputError
from pycert.core.gate import named
from pycert.families.base import Options, Prepared, Producer, Setting, input_file
from pycert.families.first_touch.dataset import engine_fields, recorded_logs
from pycert.families.first_touch_trace import CLAIM, TraceParams, engine_figures, rows_of, trace_module, workload_id
from pycert.leak import first_touch as ftlog


class TraceOptions(Options):
    dataset_trace: Path | None = None
    """The trace the log's Mooncake rows were read off (set by ``pycert dataset first-touch``)."""


class TraceProducer(Producer):
    summary = ("Prove the Mooncake rows of the first-touch dataset recorded in the certificate directory (pycert "
               "dataset first-touch makes them): the leading blocks a conversation's second request finds pre-warmed "
               "by its first, kernel-checked on the two block lists, beside a real engine's replay, observed.")
    claim = CLAIM
    options = TraceOptions

    def _trace(self, setting: Setting, header: ftlog.FtHeader, log: Path) -> Path:
        given = setting.options.dataset_trace  # type: ignore[attr-defined]
        path = given if given is not None else setting.root.parent / str(header.trace)
        if not named(path).exists():
            raise InputError(f"the Mooncake rows of {log.name} need their trace {header.trace}: not beside the "
                             "certificate directory (pycert dataset first-touch --trace hands it over)", where=str(path))
        return path

    def prepare(self, setting: Setting) -> list[Prepared]:
        out = []
        for path, log_read in recorded_logs(setting):
            h = log_read.header
            if not h.trace_rows:
                continue
            trace_path = self._trace(setting, h, path)
            rows = rows_of(trace_path, h.trace_rows)
            trace = input_file("trace", trace_path, setting.root)
            log = input_file("log", path, setting.root)
            made: Path | None = None
            for k, r in enumerate(rows, 1):
                params = TraceParams(**engine_fields(h), rows=h.trace_rows, row=k)
                inst = CLAIM.instance(params, [trace, log])
                if made is None:
                    made = setting.emit(Path(inst.path), trace_module(rows, inst.module, trace.sha256))
                lean = setting.emitted("lean", Path(inst.path), derived_from="trace")
                out.append(Prepared(claim=CLAIM, id=workload_id(k), parameters=params, engine=engine_figures(r),
                                    headline=f"cut {float(r.cut):.4f}: {r.served:,} of {r.n:,} tokens", inputs=[trace, log, lean],
                                    lean_file=made, located={trace.path: trace_path, log.path: path, inst.path: made}))
            setting.progress(f"  {path.name}: {len(rows)} rows of {trace_path.name}")
        return out


PRODUCER = TraceProducer()
