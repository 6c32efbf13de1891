"""Making the first-touch certificate: the committed chunk and prompt sizes, the cut by exact arithmetic."""

from __future__ import annotations

from pathlib import Path

from pycert.families.base import Prepared, Producer, Setting
from pycert.families.first_touch import CLAIM, FirstTouchParams, engine_figures, instance_text

DEFAULT = FirstTouchParams(c=256, n=4000)


class FirstTouchProducer(Producer):
    summary = ("Prove the first-touch cut: a store pre-warmed in chunks of c tokens serves c·⌊n/c⌋ tokens of an "
               "n-token prompt, more than half of every prompt of at least 2c tokens (kernel-checked at the "
               "committed c and n).")
    claim = CLAIM

    def prepare(self, setting: Setting) -> list[Prepared]:
        c, n = DEFAULT.c, DEFAULT.n
        instance = CLAIM.instance(DEFAULT, [])
        lean = setting.emit(Path(instance.path), instance_text(DEFAULT).encode())
        return [Prepared(claim=CLAIM, id=f"first-touch-c{c}-n{n}", parameters=DEFAULT,
                         headline=f"cut {c * (n // c) / n:.4f}", engine=engine_figures(c, n),
                         inputs=[setting.emitted("lean", Path(instance.path), derived_from="parameters")],
                         lean_file=lean, located={instance.path: lean})]


PRODUCER = FirstTouchProducer()
