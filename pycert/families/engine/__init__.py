"""A real engine's own prefix-cache hits on a trace (``pycert engine replay``), observed, beside what
pycert computes for the same references at the same capacity.

The figures are pure functions of the per-request log and the trace (:mod:`pycert.families.engine.figures`):
the engine's hits with evidence ``observed``; the references, LRU's hits at the capacity (Mattson stack
distances), Belady's MIN with and without bypass (two engines agreeing each) and a cache of
unbounded size's hits (the ceiling) computed from the trace, in blocks and, where the trace gives prompt lengths, in
its tokens. An engine count above Belady's MIN with bypass at its capacity (the most any cache of that many blocks
that starts empty, holds blocks of one size and fetches a block only when it is referenced can hit) is refused as
a defect. The kernel-checked optimum
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
from pycert.core.schema import Certificate, EvidenceState, InputFile, Params, SolverInfo
from pycert.families.base import Claim, Reader, input_path
from pycert.families.models import ADMISSION, BYPASS, BYPASS_ANY, caches
from pycert.families.observations import held_to
from pycert.families.traces import AS_FOUND, PROMPT_TOKENS, certified, slug
from pycert.leak import replay as replaylog
from pycert.leak.engines.paged import ENDPOINT, LABELS

if TYPE_CHECKING:  # numpy and the trace engine: only for a claim that reads a trace
    import numpy as np

    from pycert.families.traces import Trace

LOG_GLOB = "engine-*.jsonl"
READING = AS_FOUND
"""How the family reads the trace a replay sent (``engine replay`` takes no layout or block size for it): the
layout by its first line, a prompts trace in blocks of 16 tokens. Its certificates record no other."""


class EngineParams(Params):
    engine: str = Field(min_length=1, max_length=300, pattern=r"^[^\n]+$")
    engine_version: str = Field(min_length=1, max_length=300, pattern=r"^[^\n]+$")
    model: str = Field(min_length=1, max_length=300, pattern=r"^[^\n]+$")
    device: str = Field(min_length=1, max_length=40, pattern=r"^[a-z0-9:_-]+$")
    seed: int = Field(ge=-(1 << 63), le=(1 << 63) - 1)
    num_blocks: int = Field(ge=2, le=1 << 20)
    block_tokens: int = Field(ge=4, le=1 << 12)
    scheduler: str = Field(min_length=1, max_length=300, pattern=r"^[^\n]+$")
    safety_margin: str = Field(pattern=r"^([0-9.]{1,12}|unknown)$")
    generated: int = Field(ge=0, le=64)

    @classmethod
    def of(cls, h: replaylog.ReplayHeader) -> EngineParams:
        return cls(**{name: getattr(h, name) for name in cls.model_fields})

class EngineCertificate(Certificate):
    """A certificate of the engine family."""

    family: Literal["engine"]
    parameters: EngineParams


def names(trace: str, num_blocks: int, block_tokens: int, seed: int, engine: str = LABELS["transformers"]) -> str:
    """The certificate id (and log stem) of a replay of ``trace`` (a file name) on ``engine`` (a log's
    header's name for it): ``engine-vllm-...`` and ``engine-endpoint-...`` beside the transformers engine's
    ``engine-...``, so replays of one trace on several engines share a directory."""
    kind = "endpoint-" if engine == ENDPOINT else "vllm-" if engine == LABELS["vllm"] else ""
    return f"engine-{kind}{slug(PurePosixPath(trace).stem)}-c{num_blocks}-b{block_tokens}-seed{seed}"


def log_figures(log: replaylog.ReplayLog, trace: Trace) -> tuple[dict[str, Fraction], list[Rejection]]:
    """Every figure of a replay and why it is not one (structure first; then an engine count above Belady's
    MIN with bypass at the capacity, the most any cache of that many blocks can hit). ``trace``: the trace
    it replayed, read as the family reads it (:data:`READING`)."""
    # numpy and numba: only for a claim that reads a trace
    from pycert.analysis.cachesim import curve_from_distances, stack_distances
    from pycert.families.capacity.derive import engines
    from pycert.families.engine.figures import above_optimum, log_rejections, observed, requests_of, seen_prefixes

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
                        f"reaches there, the most any cache of that many blocks {caches(BYPASS, plural=False)} can hit "
                        "(pycert's two engines agreeing)")
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
    return f"{int(figures['engine_hits']):,} of {int(figures['refs']):,} refs from the engine's cache"


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
            f"time in trace order {_ran_on(p)}, {_served(p, f)}, serving only a request's longest cached prefix of "
            f"blocks; on the same references pycert "
            f"computes {f['lru_hits']} hits for LRU, {f['belady_hits']} for Belady's MIN (the optimum at "
            f"{p.num_blocks} blocks of caches that store every missed block) and {f['bypass_hits']} for Belady's MIN "
            f"with bypass (the optimum at {p.num_blocks} blocks of {ADMISSION}), and {f['unbounded_hits']} for a cache "
            f"of unbounded size.{closed}{tokens}")


def _ran_on(p: EngineParams) -> str:
    seeded = f"each trace block as {p.block_tokens} token ids seeded by {p.seed}"
    if p.engine == ENDPOINT:
        return (f"through the OpenAI-compatible server {p.engine_version}, model {p.model} ({p.scheduler}), compared at "
                f"{p.num_blocks} blocks of {p.block_tokens} tokens as the replay was told ({seeded}, {p.generated} "
                "tokens generated per request)")
    if p.generated == 0:
        return (f"from an empty cache on {p.engine} ({p.engine_version}) with {p.model} on {p.device}, its prefix cache "
                f"holding {p.num_blocks} blocks of {p.block_tokens} tokens ({seeded}, no token generated: no model)")
    return (f"from an empty cache on {p.engine} ({p.engine_version}) with a {p.model} on {p.device}, its prefix cache "
            f"holding {p.num_blocks} blocks of {p.block_tokens} tokens ({seeded}, {p.generated} tokens generated per "
            "request)")


def _served(p: EngineParams, f: Mapping[str, Fraction]) -> str:
    if p.engine == ENDPOINT:
        return (f"the server reported serving {f['engine_cached_tokens']} prompt tokens from its cache, "
                f"{f['engine_hits']} whole trace blocks")
    return f"the engine served {f['engine_hits']} references ({f['engine_cached_tokens']} of its tokens) from its cache by its own count"


OBSERVED = ("the engine's own count: the return value of transformers' PagedAttentionCache.search_prefix_match "
            "for each request (tokens, whole blocks of block_tokens), from the per-request log")
OBSERVED_BY = {
    LABELS["transformers"]: OBSERVED,
    LABELS["vllm"]: "vLLM's own count: the computed tokens its KVCacheManager.get_computed_blocks returned for each "
                    "request (tokens, whole blocks of block_tokens), from the per-request log",
    ENDPOINT: "the server's own report: usage.prompt_tokens_details.cached_tokens of each response (0 where the field "
              "is absent and the server reported it on other requests), from the per-request log (in blocks: each "
              "response's count rounded down to whole blocks)",
}
"""Where each engine's count comes from (the evidence of its observed figures)."""
EVICTED_BY = {
    LABELS["transformers"]: "cached blocks the engine's ledgers held when it evicted them (its evict_cached_blocks), "
                            "summed over the per-request log",
    LABELS["vllm"]: "the BlockRemoved events of vLLM's KV-cache event stream (one a block hash dropped), summed over "
                    "the per-request log",
    ENDPOINT: "not reported by a server: 0",
}
TRANSFORMERS_ONLY = (
    "The random-weight model makes the engine's times no serving figure: only which blocks it served counts.",
    "The counts are what the engine reports (the return value of its search_prefix_match); pycert does not "
    "inspect the KV blocks themselves, and the engine's 64-bit block hashes are trusted not to collide.",
    "The engine evicts every cached block at once when its free blocks fall below its scheduler's safety margin, "
    "or when a request does not fit; it is compared here with caches that evict one block at a time.",
)
"""The transformers engine's own lines of :attr:`Engine.limits`; other engines have theirs in their place."""
LIMITS_OF = {
    LABELS["vllm"]: (
        "vLLM's cache manager runs without a model: nothing is computed, so its times are no serving figure; only "
        "which blocks it served counts.",
        "The counts are what vLLM's KVCacheManager.get_computed_blocks returned; pycert does not inspect the blocks, "
        "and vLLM's block hashes (its default hash of the parent hash and the block's token ids) are trusted not to "
        "collide.",
        "The manager is driven as vLLM's scheduler drives it for one request alone (lookup, allocation of the prompt, "
        "free): no chunked prefill, decoding, preemption, KV connector or concurrent request, which in a running server "
        "hold blocks or change which blocks are evicted.",
    ),
    ENDPOINT: (
        "The counts are what the server reported; pycert sees neither its cache nor its code, and other clients of the "
        "server may have used or changed its cache during the replay.",
        "The capacity is the one the replay was told, not measured: a server whose cache is larger than it may hit "
        "more than the optimum at it (refused as a defect); one whose cache is smaller is bounded all the more.",
        "A request's cached tokens count as whole trace blocks of block_tokens: tokens of a trace block served only in "
        "part count none.",
    ),
}


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
        TRANSFORMERS_ONLY[0],
        "Each trace block becomes block_tokens seeded token ids, whatever tokens the trace's own blocks held; a "
        "request's partial last block in the trace becomes a whole one, and one extra token ends every prompt.",
        TRANSFORMERS_ONLY[1],
        TRANSFORMERS_ONLY[2],
        f"Pycert.Admission.hits_le_freeA bounds every cache of num_blocks blocks {caches(BYPASS_ANY, plural=False)} "
        "(offline too), so an engine count above Belady's MIN with bypass is refused as a defect; "
        "Pycert.Capacity.hits_le_free bounds those of them that store every missed block (Belady's MIN). The caches "
        "reaching these optima read the whole trace and keep no room for a running request's blocks, which the engine "
        "needs, so the optima may be out of its reach; the observation does not show which of these caches the engine "
        "is, only that its count stays within the bounds.",
        "LRU, Belady's MIN (with and without bypass) and the hits of a cache of unbounded size (the ceiling) are "
        "computed by pycert here; the kernel-checked optima at the same capacity are the capacity certificate of the same trace.",
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

    def does_not_prove(self, params: EngineParams, figures: Mapping[str, Fraction],
                       inputs: Sequence[InputFile]) -> tuple[str, ...]:
        if (own := LIMITS_OF.get(params.engine)) is None:
            return self.limits
        it = iter(own)
        return tuple(next(it) if line in TRANSFORMERS_ONLY else line for line in self.limits)

    def evidence(self, name: str, solver: SolverInfo | None, params: Params | None = None) -> tuple[EvidenceState, str]:
        state, how = super().evidence(name, solver, params)
        label = getattr(params, "engine", None)
        if label in OBSERVED_BY and name in ("engine_hits", "engine_cached_tokens"):
            return state, how.replace(OBSERVED, OBSERVED_BY[label])
        if label in EVICTED_BY and name == "evicted_blocks":
            return state, EVICTED_BY[label]
        return state, how

    def figures(self, params: EngineParams, kernel: Mapping[str, int], inputs: Sequence[InputFile],
                read: Reader) -> dict[str, Fraction]:
        """Every figure from the recorded log and the trace; a header that says other parameters is rejected."""
        log = replaylog.read(input_path(inputs, "log", read))
        return held_to(params, EngineParams.of(log.header), *log_figures(log, certified(inputs, read, READING)))


CLAIM = Engine()
