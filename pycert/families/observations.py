"""What the families of recorded observations share (a leak run, an audit of a live endpoint): the
isolation theorems both name and what they do not show, a log's figures held to the certificate's
parameters, and the producer that certifies every recorded log under the certificate directory. Below
both families, so that neither imports the other.
"""

from __future__ import annotations

from abc import abstractmethod
from fnmatch import fnmatch
from fractions import Fraction
from typing import Any, ClassVar

from pycert.core.errors import Rejected, Rejection
from pycert.core.gate import Source, entries, inside
from pycert.core.schema import Params
from pycert.families.base import Prepared, Producer, Setting, input_file

ISOLATION_MODULE = "Pycert.Isolation"
ISOLATION_THEOREMS = (
    "Pycert.Isolation.leak_or_refusal",
    "Pycert.Isolation.owner_floor",
)
"""The theorems an observation of isolation names: the isolation floor's, for the admission state it used."""
THEOREMS_LIMIT = (
    "The named theorems count the states of any manager (Pycert.Isolation.leak_or_refusal: one without "
    "per-tenant state must leak or refuse reuse; Pycert.Isolation.owner_floor: serving each block to its one "
    "owner exactly needs T^n states); the observation does not show that this engine meets their hypotheses "
    "for every rights matrix."
)
"""What the isolation theorems an observation names do not show of the engine observed."""


def held_to(params: Params, found: Params, figures: dict[str, Fraction], rejections: list[Rejection]) -> dict[str, Fraction]:
    """A recorded log's figures, once the certificate's parameters are the log header's (``found``) and the
    log holds; else the first difference or rejection, raised."""
    if found != params:
        field = next(n for n in type(params).model_fields if getattr(found, n) != getattr(params, n))
        raise Rejected(Rejection.mismatch(f"parameters.{field}", f"{getattr(found, field)} (the log's header)",
                                          str(getattr(params, field))))
    if rejections:
        raise Rejected(rejections[0])
    return figures


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
