"""Certifying the synthetic rows of a first-touch log: every ``inputs/first-touch-*.jsonl`` under the
certificate directory (``pycert dataset first-touch`` records one there and runs this), one certificate
per ramp row, every row's headline in one emitted module."""

from __future__ import annotations

from pathlib import Path

from pycert.families.base import Prepared, Producer, Setting, input_file
from pycert.families.first_touch.dataset import engine_fields, recorded_logs
from pycert.families.first_touch_ramp import CLAIM, RampParams, engine_figures, ramp_module, workload_id


class RampProducer(Producer):
    summary = ("Prove the synthetic rows of the first-touch dataset recorded in the certificate directory (pycert "
               "dataset first-touch makes them): each prompt length's closed form c·⌊n/c⌋/n kernel-checked beside "
               "what a real engine served, observed.")
    claim = CLAIM

    def prepare(self, setting: Setting) -> list[Prepared]:
        out = []
        for path, log_read in recorded_logs(setting):
            h = log_read.header
            if not h.ramp_blocks or h.page_size is None:
                continue
            log = input_file("log", path, setting.root)
            made: Path | None = None
            for row in range(1, 4 * h.ramp_blocks + 1):
                params = RampParams(**engine_fields(h), c=h.page_size, blocks=h.ramp_blocks, row=row)
                inst = CLAIM.instance(params, [log])
                if made is None:
                    made = setting.emit(Path(inst.path), ramp_module(params.c, params.blocks))
                lean = setting.emitted("lean", Path(inst.path), derived_from="parameters")
                figs = engine_figures(params)
                out.append(Prepared(claim=CLAIM, id=workload_id(row), parameters=params, engine=figs,
                                    headline=f"closed form {int(figs['served'])}", inputs=[log, lean],
                                    lean_file=made, located={log.path: path, inst.path: made}))
            setting.progress(f"  {path.name}: {4 * h.ramp_blocks} ramp rows")
        return out


PRODUCER = RampProducer()
