"""An engine's observed hits beside the certified optimum at its capacity: the one sentence, and the
figures around it, that ``pycert engine replay``, ``trace offload --certs`` and the report page show.

Only certificates that verified in the caller's run may be passed in; each figure says which one it
comes from. The sentence rests on the capacity certificate's kernel-checked ``max_hits`` and names the
caches it bounds as that certificate's headline states them (:meth:`Capacity.widest_bound`): with the
optimum under admission control (issue 37's headlines), "any cache of C blocks that starts empty"; with
an older headline, only the caches that admit every missed block and start empty.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from pydantic import BaseModel

from pycert.core.errors import Rejected, Rejection
from pycert.core.schema import Certificate
from pycert.families.capacity import CLAIM as CAPACITY
from pycert.families.capacity import witnessed
from pycert.families.engine.figures import above_optimum


class Beside(BaseModel):
    """The engine's hits at ``capacity_blocks`` beside LRU, the optimum and the capacity-free ceiling."""

    trace: str
    capacity_blocks: int
    refs: int
    engine_hits: int
    engine_by: str
    lru_hits: int
    optimum: int
    optimum_known: str
    unbounded_hits: int
    unbounded_known: str
    sentence: str | None
    """None when no verified capacity certificate at this capacity was given: the sentence needs its figure."""
    why_no_sentence: str | None = None


def figure(cert: Certificate, name: str) -> int:
    f = next((f for f in cert.figures if f.name == name), None)
    if f is None or f.denominator != 1:
        raise Rejected(Rejection.mismatch(f"{cert.id}: figures.{name}", "a whole number", "absent" if f is None else
                                          f"{f.numerator}/{f.denominator}"))
    return f.numerator


def trace_of(cert: Certificate) -> tuple[str, str]:
    """The file name and sha256 of the trace a certificate names."""
    t = next(i for i in cert.inputs if i.role == "trace")
    return PurePosixPath(t.path).name, t.sha256


def reached(hits: int, optimum: int, capacity: int, caches: str) -> str:
    """The sentence: ``caches`` is the capacity certificate's own words for the caches it bounds."""
    blocks = f"{capacity:,} block{'s' if capacity != 1 else ''}"
    return (f"the engine reached {hits:,} of the {optimum:,} hits any cache of {blocks}{' ' + caches if caches else ''} "
            "can reach on this trace")


def beside(engine: Certificate, capacity: Certificate | None = None, ceiling: Certificate | None = None) -> Beside:
    """The figures and the sentence for ``engine``, with the capacity certificate of the same trace at its
    capacity and the ceiling certificate of the same trace where the caller has verified ones. An engine
    count above the kernel-checked optimum is a defect: :class:`Rejected`."""
    name, sha = trace_of(engine)
    c, hits = engine.parameters.num_blocks, figure(engine, "engine_hits")  # type: ignore[attr-defined]
    for other in (x for x in (capacity, ceiling) if x is not None):
        if trace_of(other)[1] != sha or (other is capacity and other.parameters.capacity_blocks != c):  # type: ignore[attr-defined]
            raise Rejected(Rejection.mismatch(f"{other.id}", f"a certificate of trace {name} at {c} blocks", "another"))
    out = Beside(trace=name, capacity_blocks=c, refs=figure(engine, "refs"), engine_hits=hits, engine_by=engine.id,
                 lru_hits=figure(engine, "lru_hits"), optimum=figure(engine, "belady_hits"),
                 optimum_known=f"Belady's MIN computed by pycert ({engine.id})", unbounded_hits=figure(engine, "unbounded_hits"),
                 unbounded_known=f"computed by pycert ({engine.id})", sentence=None,
                 why_no_sentence=f"no verified capacity certificate of {name} at {c} blocks")
    if ceiling is not None:
        out.unbounded_hits, out.unbounded_known = figure(ceiling, "max_hits"), f"kernel-checked in {ceiling.id}"
    if capacity is not None:
        name_, caches = CAPACITY.widest_bound(capacity.parameters)  # type: ignore[arg-type]
        optimum = figure(capacity, name_)
        both = witnessed(capacity.parameters)  # type: ignore[arg-type]
        if (why := above_optimum(hits, optimum, c, f"the kernel proved for every such cache ({capacity.id})")) is not None:
            raise Rejected(why)
        out.optimum, out.sentence, out.why_no_sentence = optimum, reached(hits, optimum, c, caches), None
        out.optimum_known = f"kernel-checked in {capacity.id}" + ("" if both else " as an upper bound; attained as computed")
    return out
