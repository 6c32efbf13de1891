"""An engine's observed hits beside the certified optimum at its capacity: the one sentence, and the
figures around it, that ``pycert engine replay``, ``trace offload --certs`` and the report page show.

Only certificates that verified in the caller's run may be passed in; each figure says which one it
comes from. The sentence rests on the capacity certificate's kernel-checked figure that bounds the most
caches and names them as that certificate's headline states them (:meth:`Capacity.widest_bound`): with
the optimum under bypass (``bypass_hits``), "any cache of C blocks that starts empty"; with
a headline without it (a trace in pieces, or an older layout: ``max_hits``), only the caches that store
every missed block and start empty. In tokens (where the trace gives prompt lengths) the optimum is a
bound, the trace's block size times the block figure, and the engine's hits are the trace's tokens of
the blocks it served.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from pydantic import BaseModel

from pycert.core.errors import Rejected, Rejection
from pycert.core.schema import Certificate
from pycert.families.capacity import CLAIM as CAPACITY
from pycert.families.capacity import attained
from pycert.families.engine.figures import above_optimum


class Beside(BaseModel):
    """The engine's hits at ``capacity_blocks`` beside LRU, the optimum and the ceiling, in
    blocks and, where the trace gives prompt lengths, in its tokens (``..._tokens``: None otherwise)."""

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
    refs_tokens: int | None = None
    engine_tokens: int | None = None
    lru_tokens: int | None = None
    optimum_tokens: int | None = None
    """A bound in tokens (the trace's block size times the optimum in blocks): no cache of the capacity hits
    more tokens, none reaches it unless every block it hits is full. None without a capacity certificate."""
    unbounded_tokens: int | None = None

    def rows(self) -> list[tuple[str, str, str, str, str]]:
        """Each cache's hits, hit rate, hits in the trace's tokens ("-" for a trace without prompt lengths;
        the optimum's is a bound: "at most") and how it is known: the table the command and the report
        page show."""
        def pct(hits: int) -> str:
            return f"{100 * hits / self.refs:.2f}%" if self.refs else "-"

        def tokens(n: int | None, bound: bool = False) -> str:
            if n is None or not self.refs_tokens:
                return "-"
            return f"{'at most ' if bound else ''}{n:,} ({100 * n / self.refs_tokens:.2f}%)"

        return [("the engine", f"{self.engine_hits:,}", pct(self.engine_hits), tokens(self.engine_tokens),
                 f"observed ({self.engine_by})"),
                ("LRU", f"{self.lru_hits:,}", pct(self.lru_hits), tokens(self.lru_tokens), "computed by pycert"),
                ("the optimum, OPT", f"{self.optimum:,}", pct(self.optimum), tokens(self.optimum_tokens, True),
                 self.optimum_known),
                ("an unbounded cache", f"{self.unbounded_hits:,}", pct(self.unbounded_hits),
                 tokens(self.unbounded_tokens), self.unbounded_known)]

    def said(self) -> str:
        """The sentence as a sentence, or why there is none."""
        return f"{self.sentence[:1].upper()}{self.sentence[1:]}." if self.sentence else f"No sentence: {self.why_no_sentence}."


def figure(cert: Certificate, name: str) -> int:
    f = next((f for f in cert.figures if f.name == name), None)
    if f is None or f.denominator != 1:
        raise Rejected(Rejection.mismatch(f"{cert.id}: figures.{name}", "a whole number", "absent" if f is None else
                                          f"{f.numerator}/{f.denominator}"))
    return f.numerator


def token_figure(cert: Certificate, name: str) -> int | None:
    """A figure in tokens, which a certificate of a trace without prompt lengths does not have."""
    return figure(cert, name) if any(f.name == name for f in cert.figures) else None


def trace_of(cert: Certificate) -> tuple[str, str]:
    """The file name and sha256 of the trace a certificate names."""
    t = next(i for i in cert.inputs if i.role == "trace")
    return PurePosixPath(t.path).name, t.sha256


def reached(hits: int, optimum: int, capacity: int, caches: str, tokens: tuple[int, int] | None = None) -> str:
    """The sentence: ``caches`` is the capacity certificate's own words for the caches it bounds; ``tokens``:
    the engine's hits and the bound in the trace's tokens, where it gives prompt lengths."""
    blocks = f"{capacity:,} block{'s' if capacity != 1 else ''}"
    return (f"the engine reached {hits:,} of the {optimum:,} hits any cache of {blocks}{' ' + caches if caches else ''} "
            "can reach on this trace" + (f" (in tokens: {tokens[0]:,} of at most {tokens[1]:,})" if tokens else ""))


def beside(engine: Certificate, capacity: Certificate | None = None, ceiling: Certificate | None = None) -> Beside:
    """The figures and the sentence for ``engine``, with the capacity certificate of the same trace at its
    capacity and the ceiling certificate of the same trace where the caller has verified ones. An engine
    count above the kernel-checked optimum is a defect, and so is a kernel-checked optimum other than the
    one the engine certificate computes: :class:`Rejected`."""
    name, sha = trace_of(engine)
    c, hits = engine.parameters.num_blocks, figure(engine, "engine_hits")  # type: ignore[attr-defined]
    for other in (x for x in (capacity, ceiling) if x is not None):
        if trace_of(other)[1] != sha or (other is capacity and other.parameters.capacity_blocks != c):  # type: ignore[attr-defined]
            raise Rejected(Rejection.mismatch(f"{other.id}", f"a certificate of trace {name} at {c} blocks", "another"))
    out = Beside(trace=name, capacity_blocks=c, refs=figure(engine, "refs"), engine_hits=hits, engine_by=engine.id,
                 lru_hits=figure(engine, "lru_hits"), optimum=figure(engine, "bypass_hits"),
                 optimum_known=f"Belady's MIN with bypass computed by pycert ({engine.id})",
                 unbounded_hits=figure(engine, "unbounded_hits"), unbounded_known=f"computed by pycert ({engine.id})",
                 sentence=None, why_no_sentence=f"no verified capacity certificate of {name} at {c} blocks",
                 refs_tokens=token_figure(engine, "refs_tokens"), engine_tokens=token_figure(engine, "engine_hits_tokens"),
                 lru_tokens=token_figure(engine, "lru_hits_tokens"),
                 unbounded_tokens=token_figure(engine, "unbounded_hits_tokens"))
    if ceiling is not None:
        out.unbounded_hits, out.unbounded_known = figure(ceiling, "max_hits"), f"kernel-checked in {ceiling.id}"
    if capacity is not None:
        name_, caches = CAPACITY.widest_bound(capacity.parameters)  # type: ignore[arg-type]
        optimum = figure(capacity, name_)
        if (why := above_optimum(hits, optimum, c, f"the kernel proved for every such cache ({capacity.id})")) is not None:
            raise Rejected(why)
        mine = "bypass_hits" if name_ == "bypass_hits" else "belady_hits"
        if (computed := figure(engine, mine)) != optimum:
            raise Rejected(Rejection.mismatch(f"{engine.id}: figures.{mine}", f"{optimum} (kernel-checked in {capacity.id})",
                                              f"{computed} (computed by pycert)", reason="engine-disagrees"))
        out.optimum, out.why_no_sentence = optimum, None
        out.optimum_tokens = token_figure(capacity, f"{name_}_tokens")
        both = attained(capacity.parameters)  # type: ignore[arg-type]
        out.optimum_known = f"kernel-checked in {capacity.id}" + ("" if both else " as an upper bound; attained as computed")
        tokens = (out.engine_tokens, out.optimum_tokens)
        out.sentence = reached(hits, optimum, c, caches, tokens if None not in tokens else None)  # type: ignore[arg-type]
    return out
