"""Making the isolation-floor certificate: the committed parameters, figures by exact arithmetic."""

from __future__ import annotations

from pathlib import Path

from pycert.families.base import Prepared, Producer, Setting
from pycert.families.isolation import CLAIM, IsolationParams, engine_figures, instance_text

DEFAULT = IsolationParams(T=8, n=1024)


class IsolationProducer(Producer):
    summary = ("Prove the isolation floor: sharing a cache across T tenants and n blocks with no cross-tenant reuse "
               "needs T·n bits of isolation state, n·log2 T when each block has one owner (kernel-checked at the "
               "committed T and n).")
    claim = CLAIM

    def prepare(self, setting: Setting) -> list[Prepared]:
        T, n = DEFAULT.T, DEFAULT.n
        instance = CLAIM.instance(DEFAULT, [])
        lean = setting.emit(Path(instance.path), instance_text(DEFAULT).encode())
        return [Prepared(claim=CLAIM, id=f"isolation-t{T}-n{n}", parameters=DEFAULT, headline=f"{T * n} bits",
                         inputs=[setting.emitted("lean", Path(instance.path), derived_from="parameters")],
                         lean_file=lean, engine=engine_figures(T, n), located={instance.path: lean})]


PRODUCER = IsolationProducer()
