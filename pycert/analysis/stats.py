"""The capacity-free figures of a trace (``pycert trace stats``, the ceiling family): references, distinct blocks,
the cold-miss floor and the ceiling, in blocks and in tokens, and what its requests say (tenants, sessions, hosts,
prefix-closed, order). Above both :mod:`pycert.analysis.cachesim` and :mod:`pycert.analysis.requests`, which it
reads."""

from __future__ import annotations

from fractions import Fraction

from pydantic import BaseModel

from pycert.analysis.refs import distinct_count
from pycert.analysis.requests import firsts, not_prefix_closed, reuse_token_counts
from pycert.analysis.tenants import TenantStats, tenant_stats
from pycert.core.exact import Ratio
from pycert.data.traces import Trace


class TraceStats(BaseModel):
    """The capacity-free figures of a trace.

    ``cold_miss_floor`` = distinct / refs: the fraction of references that miss at any capacity.
    ``ceiling`` = 1 - floor: the best hit rate any cache (of any size) can reach. ``block_rule`` says
    how ``block_tokens`` was read; ``tenants`` is None when the layout names no tenant.
    """

    name: str
    sha256: str
    format: str
    granularity: int
    block_tokens: int | None
    block_rule: str | None = None
    requests: int | None
    refs: int
    distinct: int
    cold_miss_floor: Ratio
    ceiling: Ratio
    tenants: TenantStats | None = None
    ceiling_tokens: Ratio | None = None
    """The ceiling in tokens: the reused blocks' tokens over the prompt tokens, a request's partial last block
    never reused (vLLM caches full blocks only); None when the trace gives no prompt lengths."""
    reused_tokens: int | None = None
    """The count ``ceiling_tokens`` is a share of: the tokens of the references that reuse a full block."""
    prompt_tokens: int | None = None
    """The prompt tokens of the trace, the total ``ceiling_tokens`` is over; None without prompt lengths."""
    prefix_closed: bool | None = None
    """Whether every request is a path from the root of one block tree (a block id fixes the blocks before
    it, as chained block hashes do); None when the trace has no requests."""
    sessions: int | None = None
    """How many distinct sessions the requests name (the requests layout); None when none names one."""
    hosts: int | None = None
    """How many distinct hosts the requests name (the requests layout); None when none names one."""
    order: str | None = None
    """The order the requests were read in: ``file``, ``timestamp`` (``--sort``), or why file order is not
    timestamp order (the first line whose timestamp goes back); None when the trace has no requests."""


def stats_from_counts(refs: int, distinct: int) -> tuple[Fraction, Fraction]:
    """(cold-miss floor, ceiling) as exact fractions."""
    if refs <= 0:
        raise ValueError("a trace with no references has no hit rate")
    floor = Fraction(distinct, refs)
    return floor, 1 - floor


def trace_stats(trace: Trace) -> TraceStats:
    """refs, distinct, floor and ceiling of a trace."""
    distinct = distinct_count(trace.refs)
    floor, ceiling = stats_from_counts(trace.n_refs, distinct)
    first, tokens = firsts(trace), reuse_token_counts(trace)
    return TraceStats(name=trace.name, sha256=trace.sha256, format=trace.format, granularity=trace.granularity,
                      block_tokens=trace.block_tokens, block_rule=trace.block_rule, requests=trace.n_requests,
                      refs=trace.n_refs, distinct=distinct, cold_miss_floor=Ratio.of(floor), ceiling=Ratio.of(ceiling),
                      tenants=tenant_stats(trace), ceiling_tokens=None if tokens is None else Ratio.of(Fraction(*tokens)),
                      reused_tokens=None if tokens is None else tokens[0], prompt_tokens=None if tokens is None else tokens[1],
                      prefix_closed=None if first is None else not_prefix_closed(trace.refs, first) is None,
                      sessions=len(trace.session_names) or None, hosts=len(trace.host_names) or None,
                      order=None if trace.requests is None else "timestamp" if trace.sorted else
                      f"file (out of timestamp order: {trace.disorder})" if trace.disorder else "file")
