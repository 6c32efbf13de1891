"""An engine's observed hits beside the certified optimum at its capacity: the one sentence, and the
figures around it, that ``pycert engine replay``, ``trace offload --certs`` and the report page show.

Only certificates that verified in the caller's run may be passed in; each figure says which one it
comes from, and a capacity certificate that read the trace otherwise than the engine's replay (another
layout or block size: other references) is refused. The sentence rests on the capacity certificate's
kernel-checked figure that bounds the most caches and names them as that certificate's headline states
them, with the model's limits (:meth:`Capacity.widest_bound`): with the optimum with bypass
(``bypass_hits``), any cache of C blocks that starts empty, holds blocks of one size and fetches a
block only when it is referenced; with a headline without it (a trace in pieces of the older layout, or an
older layout: ``max_hits``), only those of them that store every missed block. The cache reaching the
optimum is offline and keeps no room for a running request's blocks, and the sentence says so. Where the
headline states the bound alone, the sentence says "at most": that some cache reaches it is computed, not
kernel-checked. In tokens (where the trace gives prompt lengths) the optimum
is a bound, the trace's block size times the block figure, and the engine's hits are the trace's tokens
of the blocks it served.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from pydantic import BaseModel

from pycert.core.errors import Rejected, Rejection
from pycert.core.schema import Certificate
from pycert.families.capacity import CLAIM as CAPACITY
from pycert.families.capacity import attained
from pycert.families.engine.figures import above_optimum
from pycert.families.models import ROOM


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


def reached(hits: int, optimum: int, capacity: int, caches: str, attained: bool,
            tokens: tuple[int, int] | None = None) -> str:
    """The sentence: ``caches`` is the capacity certificate's own words for the caches it bounds, with the
    model's limits; ``attained``: whether its headline states that one of them reaches ``optimum`` (else the
    sentence says "at most"); ``tokens``: the engine's hits and the bound in the trace's tokens, where it
    gives prompt lengths."""
    blocks = f"{capacity:,} block{'s' if capacity != 1 else ''}"
    said = (f"the engine reached {hits:,} of the {optimum:,} hits of the optimum at {blocks}: no cache of {blocks} "
            f"{caches} hits more on this trace, and one (offline, {ROOM}) hits exactly {optimum:,}" if attained else
            f"the engine reached {hits:,} hits, of at most {optimum:,} that any cache of {blocks} {caches} can hit on "
            f"this trace (that one reaches {optimum:,}, offline and {ROOM}, is computed, not kernel-checked)")
    return said + (f" (in tokens: {tokens[0]:,} of at most {tokens[1]:,})" if tokens else "")


def same_reading(engine: Certificate, capacity: Certificate) -> Rejection | None:
    """Why a capacity certificate did not read the trace as the engine's replay did, or None. The replay reads
    a trace as its first line says, at the layout's own block size (a prompts trace: blocks of
    :data:`pycert.data.formats.prompts.DEFAULT_BLOCK_TOKENS`); a certificate read in another layout or at
    another block size speaks of other references, and so, whatever its parameters, does one that counts
    another number of them."""
    from pycert.data.formats.prompts import DEFAULT_BLOCK_TOKENS  # numpy: only where a capacity certificate is compared

    p = capacity.parameters
    fmt, bt = getattr(p, "trace_format", None), getattr(p, "block_tokens", None)
    said = f"{fmt or 'auto'}" + (f", blocks of {bt} tokens" if bt is not None else "")
    if fmt == "prompts" and bt != DEFAULT_BLOCK_TOKENS:
        return Rejection.mismatch(f"{capacity.id}: parameters.block_tokens", f"{DEFAULT_BLOCK_TOKENS} (the block size "
                                  f"the engine's replay {engine.id} read the prompts at)", f"{bt}")
    if (mine := figure(capacity, "refs")) != (theirs := figure(engine, "refs")):
        return Rejection.mismatch(f"{capacity.id}: figures.refs", f"{theirs} (the references the engine's replay "
                                  f"{engine.id} read)", f"{mine} (read as {said})")
    return None


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
    if capacity is not None and (why := same_reading(engine, capacity)) is not None:
        raise Rejected(why)
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
        out.sentence = reached(hits, optimum, c, caches, both, tokens if None not in tokens else None)  # type: ignore[arg-type]
    return out
