"""Certifying recorded observations: every log of the family's pattern under the certificate directory's
``inputs/`` (``leak-*.jsonl`` for leak runs; the audit family reuses :class:`RecordedLogs`)."""

from __future__ import annotations

from abc import abstractmethod
from fnmatch import fnmatch
from fractions import Fraction
from typing import Any, ClassVar

from pycert.core.errors import Rejection
from pycert.core.gate import Source, entries, inside
from pycert.core.schema import Params
from pycert.families.base import Prepared, Producer, Setting, input_file
from pycert.families.leak import CLAIM, LOG_GLOB, LeakParams, headline, log_figures
from pycert.leak import log as leaklog


class RecordedLogs(Producer):
    """Each recorded log certified where it lies (prove writes nothing but the certificate: the log is its
    input, read from the directory); a log that does not hold is prepared with its first rejection."""

    glob: ClassVar[str]

    @abstractmethod
    def read(self, source: Source) -> Any: ...

    @abstractmethod
    def parameters(self, log: Any) -> Params: ...

    @abstractmethod
    def figures(self, log: Any) -> tuple[dict[str, Fraction], list[Rejection]]: ...

    @abstractmethod
    def headline(self, figures: dict[str, Fraction]) -> str: ...

    def prepare(self, setting: Setting) -> list[Prepared]:
        out = []
        logs = entries(setting.out_dir / "inputs", ".jsonl") if (setting.out_dir / "inputs").is_dir() else []
        for source in (e for e in logs if fnmatch(e.name, self.glob)):
            log = self.read(inside(setting.out_dir, f"inputs/{source.name}"))  # no link, in --out
            path = source.path
            figures, rejections = self.figures(log)
            said = rejections[0].render() if rejections else self.headline(figures)
            setting.progress(f"  {path.name}: {said}")
            inp = input_file("log", path, setting.root)
            out.append(Prepared(claim=self.claim, id=path.stem, parameters=self.parameters(log), engine=figures,
                                headline=said, inputs=[inp], located={inp.path: path},
                                rejection=rejections[0] if rejections else None))
        return out


class LeakProducer(RecordedLogs):
    claim = CLAIM
    glob = LOG_GLOB

    def read(self, source: Source) -> leaklog.Log:
        return leaklog.read(source)

    def parameters(self, log: leaklog.Log) -> LeakParams:
        return LeakParams.of(log.header)

    def figures(self, log: leaklog.Log) -> tuple[dict[str, Fraction], list[Rejection]]:
        return log_figures(log)

    def headline(self, figures: dict[str, Fraction]) -> str:
        return headline(figures)


PRODUCER = LeakProducer()
