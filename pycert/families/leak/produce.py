"""Certifying recorded leak runs: every ``inputs/leak-*.jsonl`` under the certificate directory."""

from __future__ import annotations

from fnmatch import fnmatch

from pycert.core.gate import entries, inside
from pycert.families.base import Prepared, Producer, Setting, input_file
from pycert.families.leak import CLAIM, LOG_GLOB, LeakParams, headline, log_figures
from pycert.leak import log as leaklog


class LeakProducer(Producer):
    claim = CLAIM

    def prepare(self, setting: Setting) -> list[Prepared]:
        """Each log ``pycert leak run`` recorded, certified where it lies (prove writes nothing but the
        certificate: the log is the certificate's input, read from the directory)."""
        out = []
        logs = entries(setting.out_dir / "inputs", ".jsonl") if (setting.out_dir / "inputs").is_dir() else []
        for source in (e for e in logs if fnmatch(e.name, LOG_GLOB)):
            log = leaklog.read(inside(setting.out_dir, f"inputs/{source.name}"))  # no link, in --out
            path = source.path
            figures, rejections = log_figures(log)
            setting.progress(f"  {path.name}: {headline(figures) if figures else rejections[0].render()}")
            inp = input_file("log", path, setting.root)
            out.append(Prepared(claim=CLAIM, id=path.stem, parameters=LeakParams.of(log.header), engine=figures,
                                headline=headline(figures) if figures else "not the run of the five arms",
                                inputs=[inp], located={inp.path: path},
                                rejection=rejections[0] if rejections else None))
        return out


PRODUCER = LeakProducer()
