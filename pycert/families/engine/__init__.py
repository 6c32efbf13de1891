"""A real engine's own prefix-cache hits on a trace (``pycert engine replay``), observed, beside what
pycert computes for the same references at the same capacity.

The figures are pure functions of the per-request log and the trace (:mod:`pycert.families.engine.figures`):
the engine's hits with evidence ``observed``; the references, LRU's hits at the capacity (Mattson stack
distances), Belady's MIN with and without bypass (two engines agreeing each) and a cache of
unbounded size's hits (the ceiling) computed from the trace, in blocks and, where the trace gives prompt lengths, in its tokens. An
engine count above Belady's MIN with bypass at its capacity (the most any cache of that many blocks can
hit) is refused as a defect. The kernel-checked optimum
at the same capacity is the capacity family's certificate, which the same command proves; the sentence
that puts the two side by side is :func:`pycert.families.engine.beside.reached`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from pycert.core.errors import Rejection
from pycert.core.limits import MAX_JSON_BYTES
from pycert.core.schema import Certificate, InputFile, Params
from pycert.families.base import Claim, Reader, input_path
from pycert.families.observations import held_to
from pycert.families.traces import PROMPT_TOKENS, slug
from pycert.leak import replay as replaylog

if TYPE_CHECKING:  # numpy and the trace engine: only for a claim that reads a trace
    import numpy as np

    from pycert.data.traces import Trace

LOG_GLOB = "engine-*.jsonl"


class EngineParams(Params):
    engine: str = Field(min_length=1, max_length=300, pattern=r"^[^\n]+$")
    engine_version: str = Field(min_length=1, max_length=300, pattern=r"^[^\n]+$")
    model: str = Field(min_length=1, max_length=300, pattern=r"^[^\n]+$")
    device: str = Field(min_length=1, max_length=40, pattern=r"^[a-z0-9:_-]+$")
    seed: int = Field(ge=-(1 << 63), le=(1 << 63) - 1)
    num_blocks: int = Field(ge=2, le=1 << 20)
    block_tokens: int = Field(ge=4, le=1 << 12)
    scheduler: str = Field(min_length=1, max_length=300, pattern=r"^[^\n]+$")
    safety_margin: str = Field(pattern=r"^[0-9.]{1,12}$")
    generated: int = Field(ge=1, le=64)

    @classmethod
    def of(cls, h: replaylog.ReplayHeader) -> EngineParams:
        return cls(**{name: getattr(h, name) for name in cls.model_fields})

class EngineCertificate(Certificate):
    """A certificate of the engine family."""

    family: Literal["engine"]
    parameters: EngineParams


def names(trace: str, num_blocks: int, block_tokens: int, seed: int) -> str:
    """The certificate id (and log stem) of a replay of ``trace`` (a file name)."""
    return f"engine-{slug(PurePosixPath(trace).stem)}-c{num_blocks}-b{block_tokens}-seed{seed}"


def log_figures(log: replaylog.ReplayLog, trace_path: object) -> tuple[dict[str, Fraction], list[Rejection]]:
    """Every figure of a replay and why it is not one (structure first; then an engine count above Belady's
    MIN with bypass at the capacity, the most any cache of that many blocks can hit). ``trace_path``: the
    trace file it replayed."""
    # numpy and numba: only for a claim that reads a trace
    from pycert.analysis.cachesim import curve_from_distances, stack_distances
    from pycert.data.traces import read_trace
    from pycert.families.capacity.derive import engines
    from pycert.families.engine.figures import above_optimum, log_rejections, observed, requests_of, seen_prefixes

    trace = read_trace(trace_path)  # type: ignore[arg-type]
    requests = requests_of(trace)
    seen, chains = seen_prefixes(requests)
    if bad := log_rejections(log, requests, seen, trace.sha256):
        return {}, bad
    c, refs = log.header.num_blocks, trace.n_refs
    distances = stack_distances(trace.refs)
    curve = curve_from_distances(distances)
    figures = {"requests": Fraction(len(requests)), "refs": Fraction(refs), "distinct": Fraction(curve.distinct),
               **observed(log), "lru_hits": Fraction(curve.hits(c)),
               "belady_hits": Fraction(engines(trace.refs, c, admission=False)),
               "bypass_hits": Fraction(engines(trace.refs, c, admission=True)),
               "unbounded_hits": Fraction(refs - curve.distinct), "prefix_unbounded_hits": Fraction(refs - chains),
               "prefix_closed": Fraction(int(chains == curve.distinct))}
    figures["engine_hit_rate"] = figures["engine_hits"] / refs if refs else Fraction(0)
    figures |= in_tokens(log, trace, distances)
    why = above_optimum(int(figures["engine_hits"]), int(figures["bypass_hits"]), c, "Belady's MIN with bypass "
                        "reaches there, the most any cache of that many blocks that starts empty can hit (pycert's two "
                        "engines agreeing)")
    return figures, [why] if why else []


def in_tokens(log: replaylog.ReplayLog, trace: Trace, distances: np.ndarray) -> dict[str, Fraction]:
    """The hits in the trace's own tokens, where it gives prompt lengths (nothing otherwise): the engine's
    served blocks, LRU's hits at the capacity and every reuse (a cache of unbounded size), each block
    weighed by its tokens and a request's partial last block by none (vLLM caches full blocks only); a
    trace block counts its own tokens, whatever ``block_tokens`` the replay gave it."""
    from pycert.analysis.requests import ref_tokens  # numpy: as above
    from pycert.families.engine.figures import served_tokens

    weights = ref_tokens(trace)
    if weights is None or trace.requests is None:
        return {}
    tokens, full, total = weights
    reuse = distances >= 1
    served = served_tokens(log, trace.requests.tolist()[:-1], tokens.tolist(), full.tolist())
    return {"refs_tokens": Fraction(total), "engine_hits_tokens": Fraction(served),
            "engine_hit_rate_tokens": Fraction(served, total) if total else Fraction(0),
            "lru_hits_tokens": Fraction(weights.hit(reuse & (distances <= log.header.num_blocks))),
            "unbounded_hits_tokens": Fraction(weights.hit(reuse))}


def headline(figures: Mapping[str, Fraction]) -> str:
    return f"{figures['engine_hits']} of {figures['refs']} references from the engine's cache"


def sentence(p: EngineParams, f: Mapping[str, Fraction], trace: str) -> str:
    closed = ("" if f["prefix_closed"] else
              f" The trace is not prefix-closed: some block follows different prefixes, which the engine holds as "
              f"different blocks, so no prefix cache of any size serves more than {f['prefix_unbounded_hits']} of its "
              f"{f['refs']} references.")
    tokens = ("" if "refs_tokens" not in f else
              f" In the trace's own tokens (each block its tokens, a request's partial last block none): of "
              f"{f['refs_tokens']} prompt tokens the engine served {f['engine_hits_tokens']}, LRU hits "
              f"{f['lru_hits_tokens']} and a cache of unbounded size {f['unbounded_hits_tokens']}.")
    return (f"On trace {trace} ({f['requests']} requests, {f['refs']} block references), replayed one request at a "
            f"time in trace order from an empty cache on {p.engine} ({p.engine_version}) with a {p.model} on "
            f"{p.device}, its prefix cache holding {p.num_blocks} blocks of {p.block_tokens} tokens (each trace block "
            f"as {p.block_tokens} token ids seeded by {p.seed}, {p.generated} tokens generated per request), the engine "
            f"served {f['engine_hits']} references ({f['engine_cached_tokens']} of its tokens) from its cache by its "
            f"own count, serving only a request's longest cached prefix of blocks; on the same references pycert "
            f"computes {f['lru_hits']} hits for LRU, {f['belady_hits']} for Belady's MIN (the optimum of caches that "
            f"store every missed block) and {f['bypass_hits']} for Belady's MIN with bypass (the optimum of any cache "
            f"of {p.num_blocks} blocks that starts empty) at {p.num_blocks} blocks, and {f['unbounded_hits']} for a "
            f"cache of unbounded size.{closed}{tokens}")


OBSERVED = ("the engine's own count: the return value of transformers' PagedAttentionCache.search_prefix_match "
            "for each request (tokens, whole blocks of block_tokens), from the per-request log")


class Engine(Claim):
    name = "engine"
    params = EngineParams
    certificate = EngineCertificate
    lean_module = "Pycert.Admission"
    primary = ("log", "trace")
    input_limits = {"log": MAX_JSON_BYTES}
    theorem_names = ("Pycert.Capacity.hits_le_free", "Pycert.Admission.hits_le_freeA")
    limits = (
        "This is an observation, not a proof: one engine, model, device and seed, the trace's requests sent one at a "
        "time; concurrent requests, another engine, version or cache size may behave otherwise.",
        "The random-weight model makes the engine's times no serving figure: only which blocks it served counts.",
        "Each trace block becomes block_tokens seeded token ids, whatever tokens the trace's own blocks held; a "
        "request's partial last block in the trace becomes a whole one, and one extra token ends every prompt.",
        "The counts are what the engine reports (the return value of its search_prefix_match); pycert does not "
        "inspect the KV blocks themselves, and the engine's 64-bit block hashes are trusted not to collide.",
        "The engine evicts every cached block at once when its free blocks fall below its scheduler's safety margin, "
        "or when a request does not fit; it is compared here with caches that evict one block at a time.",
        "Pycert.Admission.hits_le_freeA bounds every cache of capacity_blocks blocks that starts empty (with "
        "bypass, any eviction, offline), so an engine count above Belady's MIN with bypass is refused as a defect; "
        "Pycert.Capacity.hits_le_free bounds those that store every missed block (Belady's MIN). The observation does "
        "not show which of these the engine is, only that its count stays within the bounds.",
        "LRU, Belady's MIN (with and without bypass) and the unbounded cache (the ceiling) are computed by pycert here; the kernel-checked "
        "optima at the same capacity are the capacity certificate of the same trace.",
        "The token figures weigh each trace block by the tokens the trace gives it (a request's partial last block "
        "none); the engine's own cached tokens (engine_cached_tokens) are in its block_tokens-token blocks.",
    )
    evidence_of = {
        "engine_hits": ("observed", OBSERVED + ", over block_tokens, summed"),
        "engine_cached_tokens": ("observed", OBSERVED + ", summed"),
        "evicted_blocks": ("observed", "cached blocks the engine's ledgers held when it evicted them (its "
                                       "evict_cached_blocks), summed over the per-request log"),
        "engine_hit_rate": ("computed", "engine_hits / refs, exact"),
        "lru_hits": ("computed", "LRU at num_blocks from Mattson stack distances (pycert.analysis.cachesim)"),
        "belady_hits": ("computed-cross-checked", "Belady's MIN at num_blocks: pycert's one-pass OPT curve "
                        "(pycert.analysis.optcurve), equal to a direct MIN simulation (pycert.analysis.cachesim)"),
        "bypass_hits": ("computed-cross-checked", "Belady's MIN with bypass at num_blocks: pycert's one-pass curve "
                        "(pycert.analysis.optcurve.admission_hit_curve), equal to a direct simulation "
                        "(pycert.analysis.cachesim.belady_bypass_flags)"),
        "unbounded_hits": ("computed", "refs - distinct: the hits of a cache of unbounded size"),
        "prefix_unbounded_hits": ("computed", "refs - distinct (prefix, block) chains: the hits of a prefix cache of "
                           "unbounded size (pycert.families.engine.figures.seen_prefixes)"),
        "prefix_closed": ("computed", "1 when every block follows one prefix (chains = distinct), else 0"),
        "refs_tokens": ("computed", PROMPT_TOKENS),
        "engine_hits_tokens": ("observed", "the trace's tokens of the leading blocks the engine served each request "
                               "(its own count over block_tokens), a request's partial last block counting none"),
        "engine_hit_rate_tokens": ("computed", "engine_hits_tokens / refs_tokens, exact"),
        "lru_hits_tokens": ("computed", "the trace's tokens of LRU's hits at num_blocks (Mattson stack distances), "
                            "full blocks only"),
        "unbounded_hits_tokens": ("computed", "the trace's tokens of every reference that reuses a full block"),
    }

    def sentence(self, params: EngineParams, figures: Mapping[str, Fraction], inputs: Sequence[InputFile]) -> str:
        trace = next((PurePosixPath(i.path).name for i in inputs if i.role == "trace"), "(none)")
        return sentence(params, figures, trace)

    def figures(self, params: EngineParams, kernel: Mapping[str, int], inputs: Sequence[InputFile],
                read: Reader) -> dict[str, Fraction]:
        """Every figure from the recorded log and the trace; a header that says other parameters is rejected."""
        log = replaylog.read(input_path(inputs, "log", read))
        return held_to(params, EngineParams.of(log.header), *log_figures(log, input_path(inputs, "trace", read)))


CLAIM = Engine()
