"""The KV offload report: how much of the achievable hit rate a GPU-only cache gets at a given
capacity, and how much a host tier behind it adds.

Every figure is an exact :class:`~pycert.core.exact.Ratio` over the trace's ``refs`` references (per
arm, at that arm's block size). With ``G`` = GPU capacity in blocks and ``H`` = host capacity in
blocks (unbounded when not given):

- ``capacity_blocks`` = ``G`` = floor(capacity_tokens / block_tokens): a partial block holds nothing.
- ``working_set_over_capacity`` = distinct / ``G``: how many times over the GPU the working set is.
- ``cold_miss_floor`` = distinct / refs: first references miss at any capacity.
- ``ceiling`` = 1 - cold_miss_floor = (refs - distinct) / refs: the best hit rate at any size (a cache
  of unbounded size).
- ``gpu_only_hit_rate`` = LRU hits at ``G`` / refs.
- ``gpu_only_belady_hit_rate`` = Belady/MIN hits at ``G`` / refs: the best any GPU-only eviction
  policy could do (demand paging, no bypass), read off the one-pass OPT curve
  (:mod:`pycert.analysis.optcurve`).
- ``host_backed_hit_rate`` = hits in either tier / refs. The tiers are exclusive LRU: a block
  evicted from the GPU is demoted to the host, a host hit promotes it back. Their union is then one
  LRU stack of ``G + H`` blocks whose top ``G`` are on the GPU, so this is LRU hits at ``G + H``
  (every reuse, ``refs - distinct``, when the host is unbounded).
- ``host_load_frac`` = (host-backed hits - GPU-only hits) / refs: the fraction of all references
  served from the host tier.
- ``headroom_pp`` = 100 * (ceiling - gpu_only_hit_rate): percentage points of hit
  rate that GPU-only LRU leaves on the table.
- ``gpu_share_of_ceiling`` = gpu_only_hit_rate / ceiling (absent when the ceiling is 0: no block is
  ever reused).
- ``gpu_only_bypass_hit_rate`` = hits of Belady's MIN with bypass at ``G`` / refs: the optimum at ``G``
  blocks with bypass, the best any GPU-only cache could do (bypass: it may skip storing a missed block, so
  it includes every cache above).
- ``policy_headroom_pp`` = 100 * (gpu_only_belady_hit_rate - gpu_only_hit_rate): what a better eviction
  policy can still win at ``G`` (OPT(G) - LRU(G)), and ``tier_headroom_pp`` = 100 *
  (ceiling - gpu_only_belady_hit_rate): what no GPU-only cache that stores every miss can
  win (ceiling - OPT(G)). The two add up to ``headroom_pp``. Bypass alone wins
  ``gpu_only_bypass_hit_rate - gpu_only_belady_hit_rate`` of ``tier_headroom_pp``: what only an extra
  tier can win is the ceiling - the optimum with bypass (the report page's column), which can be far less.

**Tokens.** Where the trace gives prompt lengths, the hit rates are given in tokens too (``..._tokens``):
the tokens of the references each policy hits over the prompt tokens (``refs_tokens``), a block counting
its tokens and a request's partial last block its own length but never a hit (vLLM caches full blocks
only). The policies are the block simulations above, weighed; vLLM and SGLang report their hit rates in
tokens (:data:`ENGINES_REPORT`).

Each figure is computed; ``pycert trace offload --certs DIR`` marks those that certificates in DIR
prove for the same trace (its sha256) as kernel-checked (``OffloadReport.evidence``).

The **granularity control** arm repeats the report on the trace coarsened by ``k``
(:func:`pycert.data.traces.coarsen`: blocks of ``k`` times the tokens) at the same token capacities. A
conclusion that holds in both arms is not an artefact of the block size.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from pydantic import AliasChoices, BaseModel, Field

from pycert.analysis.cachesim import curve_from_distances, stack_distances
from pycert.analysis.requests import ref_tokens
from pycert.core.errors import InputError
from pycert.core.exact import Ratio
from pycert.core.schema import EvidenceState
from pycert.data.traces import Trace, coarsen

ENGINES_REPORT = ("vLLM (vllm:prefix_cache_hits over vllm:prefix_cache_queries) and SGLang (sglang:cache_hit_rate, "
                  "sglang:cached_tokens_total) report prefix-cache hit rates in tokens: compare them with the _tokens "
                  "rows; the block rows are what the certificates prove.")
TOKEN_RATES = ("ceiling", "gpu_only_hit_rate", "gpu_only_belady_hit_rate", "gpu_only_bypass_hit_rate",
               "host_backed_hit_rate")
"""The hit rates the report also gives in tokens (``<name>_tokens``)."""


class OffloadArm(BaseModel):
    """The figures at one block granularity (see the module docstring for each definition). A report written
    before the words of docs/words.md reads too: its ``max_achievable_hit_rate`` is ``ceiling``, its
    ``gpu_only_admission_hit_rate`` is ``gpu_only_bypass_hit_rate``."""

    granularity: int
    block_tokens: int
    refs: int
    distinct: int
    capacity_blocks: int
    host_blocks: int | None
    working_set_over_capacity: Ratio
    cold_miss_floor: Ratio
    ceiling: Ratio = Field(validation_alias=AliasChoices("ceiling", "max_achievable_hit_rate"))
    gpu_only_hit_rate: Ratio
    gpu_only_belady_hit_rate: Ratio
    host_backed_hit_rate: Ratio
    host_load_frac: Ratio
    headroom_pp: Ratio
    gpu_share_of_ceiling: Ratio | None = Field(validation_alias=AliasChoices("gpu_share_of_ceiling",
                                                                            "gpu_share_of_achievable"))
    policy_headroom_pp: Ratio
    tier_headroom_pp: Ratio
    gpu_only_bypass_hit_rate: Ratio = Field(validation_alias=AliasChoices("gpu_only_bypass_hit_rate",
                                                                        "gpu_only_admission_hit_rate"))
    refs_tokens: int | None = None
    ceiling_tokens: Ratio | None = Field(None, validation_alias=AliasChoices("ceiling_tokens",
                                                                           "max_achievable_hit_rate_tokens"))
    gpu_only_hit_rate_tokens: Ratio | None = None
    gpu_only_belady_hit_rate_tokens: Ratio | None = None
    gpu_only_bypass_hit_rate_tokens: Ratio | None = Field(None, validation_alias=AliasChoices(
        "gpu_only_bypass_hit_rate_tokens", "gpu_only_admission_hit_rate_tokens"))
    host_backed_hit_rate_tokens: Ratio | None = None


class EngineLine(BaseModel):
    """A real engine's own hits at the report's GPU capacity, from an engine certificate that verified
    (``trace offload --certs``): its hit rate over the same references, observed, and the sentence that
    puts it beside the kernel-checked optimum (absent, with why, without a verified capacity certificate)."""

    certificate: str
    engine: str
    block_tokens: int
    """The tokens each trace block became in the replay (the engine's page size)."""
    engine_hit_rate: Ratio
    engine_hit_rate_tokens: Ratio | None = None
    """The same in the trace's tokens (a partial last block none), where the trace gives prompt lengths."""
    sentence: str | None
    why_no_sentence: str | None = None


class OffloadReport(BaseModel):
    """The offload report for one trace at one GPU capacity (and optional host capacity) in tokens."""

    name: str
    sha256: str
    capacity_tokens: int
    host_tokens: int | None
    primary: OffloadArm
    control_k: int | None
    control: OffloadArm | None
    evidence: dict[str, EvidenceState] = {}
    """How each figure of the primary arm is known: ``computed`` unless a certificate proves it
    (filled in by ``trace offload --certs``); the control arm's figures are computed."""
    evidence_by: dict[str, str] = {}
    """The certificate each kernel-checked figure comes from."""
    not_used: dict[str, str] = {}
    """Certificates of the directory that would prove a figure but were not used, and why (one that does
    not verify, or could not be verified or read): their figures stay ``computed``."""
    engines: list[EngineLine] = []
    """Engine certificates of this trace at the GPU capacity that verified: a real engine's own hits."""


def offload_arm(trace: Trace, capacity_tokens: int, host_tokens: int | None = None) -> OffloadArm:
    """The report's figures for ``trace`` as it is (its own block size)."""
    if trace.block_tokens is None:
        raise InputError("the trace format does not say how many tokens a block holds: give --block-tokens",
                         where=trace.name)
    bt = trace.block_tokens
    g = capacity_tokens // bt
    if g < 1:
        raise InputError(f"a capacity of {capacity_tokens} tokens holds no whole block of {bt} tokens "
                         f"(granularity {trace.granularity})", where="--capacity-tokens")
    h = None if host_tokens is None else host_tokens // bt
    from pycert.analysis.optcurve import (  # numba loads only when a report is made
        admission_stack_distances,
        opt_stack_distances,
    )

    lru_d, opt_d, adm_d = stack_distances(trace.refs), opt_stack_distances(trace.refs), admission_stack_distances(trace.refs)
    curve, opt, adm = curve_from_distances(lru_d), curve_from_distances(opt_d), curve_from_distances(adm_d)
    refs, distinct = curve.refs, curve.distinct
    achievable = Fraction(refs - distinct, refs)
    gpu_hits = curve.hits(g)
    host_hits = refs - distinct if h is None else curve.hits(g + h)
    gpu = Fraction(gpu_hits, refs)
    return OffloadArm(
        granularity=trace.granularity, block_tokens=bt, refs=refs, distinct=distinct, capacity_blocks=g,
        host_blocks=h,
        working_set_over_capacity=Ratio.of(Fraction(distinct, g)),
        cold_miss_floor=Ratio.of(Fraction(distinct, refs)),
        ceiling=Ratio.of(achievable),
        gpu_only_hit_rate=Ratio.of(gpu),
        gpu_only_belady_hit_rate=Ratio.of(opt.hit_rate(g)),
        gpu_only_bypass_hit_rate=Ratio.of(adm.hit_rate(g)),
        host_backed_hit_rate=Ratio.of(Fraction(host_hits, refs)),
        host_load_frac=Ratio.of(Fraction(host_hits - gpu_hits, refs)),
        headroom_pp=Ratio.of(100 * (achievable - gpu)),
        gpu_share_of_ceiling=Ratio.of(gpu / achievable) if achievable else None,
        policy_headroom_pp=Ratio.of(100 * (opt.hit_rate(g) - gpu)),
        tier_headroom_pp=Ratio.of(100 * (achievable - opt.hit_rate(g))),
        **_in_tokens(trace, {"ceiling": lru_d, "gpu_only_hit_rate": lru_d, "gpu_only_belady_hit_rate":
                             opt_d, "gpu_only_bypass_hit_rate": adm_d, "host_backed_hit_rate": lru_d},
                     {"ceiling": None, "host_backed_hit_rate": None if h is None else g + h}, g),
    )


def _in_tokens(trace: Trace, distances: dict[str, np.ndarray], capacity: dict[str, int | None],
               gpu: int) -> dict[str, object]:
    """The token rates: each policy's hits (stack distance in ``1..capacity``, unbounded for None) weighed by
    their full blocks' tokens, over the prompt tokens; nothing when the trace gives no prompt lengths."""
    weights = ref_tokens(trace)
    if weights is None:
        return {}
    out: dict[str, object] = {"refs_tokens": weights.total}
    for name, d in distances.items():
        cap = capacity.get(name, gpu)
        hit = (d >= 1) & (True if cap is None else d <= cap)
        out[f"{name}_tokens"] = Ratio.of(Fraction(weights.hit(hit), weights.total))
    return out


def offload_report(trace: Trace, capacity_tokens: int, host_tokens: int | None = None,
                   control_k: int | None = 4) -> OffloadReport:
    """The report at ``capacity_tokens`` of GPU (and ``host_tokens`` of host, unbounded if None), with
    the granularity-control arm at ``control_k`` times the block size (none if ``control_k`` is None
    or 1). The default 4 is the factor of the published 16 -> 64 token control."""
    if capacity_tokens < 1 or (host_tokens is not None and host_tokens < 0):
        raise InputError("capacity must be a positive number of tokens (and host capacity non-negative)",
                         where="--capacity-tokens" if capacity_tokens < 1 else "--host-tokens")
    if control_k is not None and control_k < 1:
        raise InputError(f"the control granularity factor must be >= 1, got {control_k}", where="--control-k")
    k = control_k if control_k and control_k > 1 else None
    if k is not None and trace.block_tokens is not None and trace.block_tokens <= capacity_tokens < trace.block_tokens * k:
        raise InputError(f"the x{k} control arm's blocks of {trace.block_tokens * k} tokens do not fit a capacity of "
                         f"{capacity_tokens} tokens: give --control-k 1 (no control arm) or a smaller factor",
                         where="--capacity-tokens")
    return OffloadReport(
        name=trace.name, sha256=trace.sha256, capacity_tokens=capacity_tokens, host_tokens=host_tokens,
        primary=offload_arm(trace, capacity_tokens, host_tokens), control_k=k,
        control=None if k is None else offload_arm(coarsen(trace, k), capacity_tokens, host_tokens),
    )
