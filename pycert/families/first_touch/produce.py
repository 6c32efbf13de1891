"""Making the first-touch certificate: the committed chunk and prompt sizes, the cut by exact arithmetic."""

from __future__ import annotations

from pycert.families.base import Prepared, Producer, Setting
from pycert.families.first_touch import CLAIM, FirstTouchParams, first_touch_figures

DEFAULT = FirstTouchParams(c=256, n=4000)


class FirstTouchProducer(Producer):
    claim = CLAIM

    def prepare(self, setting: Setting) -> list[Prepared]:
        c, n = DEFAULT.c, DEFAULT.n
        figures = first_touch_figures(c, n)
        return [Prepared(claim=CLAIM, id=f"first-touch-c{c}-n{n}", parameters=DEFAULT,
                         figures=figures, headline=f"cut {float(figures['cut']):.4f}")]


PRODUCER = FirstTouchProducer()
