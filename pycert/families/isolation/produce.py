"""Making the isolation-floor certificate: the committed parameters, figures by exact arithmetic."""

from __future__ import annotations

from pycert.families.base import Prepared, Producer, Setting
from pycert.families.isolation import CLAIM, IsolationParams, isolation_figures

DEFAULT = IsolationParams(T=8, n=1024)


class IsolationProducer(Producer):
    claim = CLAIM

    def prepare(self, setting: Setting) -> list[Prepared]:
        T, n = DEFAULT.T, DEFAULT.n
        return [Prepared(claim=CLAIM, id=f"isolation-t{T}-n{n}", parameters=DEFAULT,
                         figures=isolation_figures(T, n), headline=f"{T * n} bits")]


PRODUCER = IsolationProducer()
