"""Every figure and check of an engine replay, as pure functions of its log and the trace it replayed.

The checks tie the log to the trace (one line per request, in order, each naming the request's blocks
by their sha256) and to what any prefix cache can do: the engine serves a request's leading blocks, and
only blocks some earlier request computed with the same prefix (transformers hashes a block chained to
its prefix), so a request's count can never pass the run of its leading blocks whose prefix was seen
before (:func:`seen_prefixes`). A count above that, or a total above Belady's MIN with bypass at the
cache's capacity, is not something a cache of that size can do: a defect of the tap, the replay or a proof.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

from pycert.core.errors import InputError, Rejection
from pycert.leak.engines.paged import ENDPOINT
from pycert.leak.replay import ReplayLog, blocks_digest

if TYPE_CHECKING:
    from pycert.families.traces import Trace


def requests_of(trace: Trace) -> list[list[int]]:
    """The trace's requests as lists of block ids; a trace without request boundaries (one id per line)
    is refused: a replay sends requests, and inventing them would measure traffic nobody sent."""
    if trace.requests is None:
        raise InputError("has no request boundaries (one block id per line): an engine replay sends the trace's "
                         "requests; give a trace whose lines are requests (Mooncake, Qwen-Bailian or AIPerf JSONL, "
                         "or prompts)", where=trace.name)
    refs, bounds = trace.refs.tolist(), trace.requests.tolist()
    return [refs[a:b] for a, b in zip(bounds, bounds[1:])]


def oversized(requests: Sequence[Sequence[int]], num_blocks: int) -> tuple[int, int] | None:
    """The first request (its place, its blocks) a cache of ``num_blocks`` cannot run: the engine holds a
    prompt's blocks and its partial last block (the extra token and the generated ones) at once."""
    return next(((i, len(r)) for i, r in enumerate(requests) if len(r) + 1 > num_blocks), None)


def seen_prefixes(requests: Sequence[Sequence[int]]) -> tuple[list[int], int]:
    """For each request, how many of its leading blocks some earlier request had with the same prefix
    (the most any prefix cache, of any size, can serve it), and the number of distinct (prefix, block)
    chains: a trace is prefix-closed when that equals its distinct blocks."""
    chains: dict[tuple[int, int], int] = {}
    seen = []
    for blocks in requests:
        parent, run, leading = -1, True, 0
        for b in blocks:
            key = (parent, b)
            if (chain := chains.get(key)) is None:
                chain = chains[key] = len(chains)
                run = False
            elif run:
                leading += 1
            parent = chain
        seen.append(leading)
    return seen, len(chains)


def log_rejections(log: ReplayLog, requests: Sequence[Sequence[int]], seen: Sequence[int], sha256: str) -> list[Rejection]:
    """What makes ``log`` other than a replay of these requests on a cache of the header's blocks, or
    what no prefix cache could have served (empty when it is a replay)."""
    h, out = log.header, []
    if h.trace_sha256 != sha256:
        out.append(Rejection.mismatch("header.trace_sha256", f"{sha256} (the trace's)", h.trace_sha256))
    server = h.engine == ENDPOINT
    if server and h.engine_blocks * h.page_size > h.num_blocks * h.block_tokens:
        out.append(Rejection(subject="header.engine_blocks", reason="engine-size",
                             detail=f"the server reported {h.engine_blocks} blocks of {h.page_size} tokens, more than "
                                    f"the {h.num_blocks} blocks of {h.block_tokens} the replay compares at: its hits are "
                                    "not bounded by the optimum of a cache of that size"))
    elif not server and (h.engine_blocks, h.page_size) != (h.num_blocks, h.block_tokens):
        out.append(Rejection(subject="header.engine_blocks", reason="engine-size",
                             detail=f"the engine had {h.engine_blocks} blocks of {h.page_size} tokens, not the "
                                    f"{h.num_blocks} of {h.block_tokens} asked: its hits are not a cache of that size's"))
    if (h.requests, h.refs) != (len(requests), sum(map(len, requests))) or len(log.requests) != len(requests):
        return [*out, Rejection.mismatch("log.requests", f"{len(requests)} requests, {sum(map(len, requests))} "
                                         "references (the trace's)", f"{len(log.requests)} lines; the header says "
                                         f"{h.requests} requests, {h.refs} references")]
    if (big := oversized(requests, h.num_blocks)) is not None:
        out.append(Rejection.mismatch(f"request {big[0]}", f"at most {h.num_blocks - 1} blocks beside its partial "
                                      f"block in a cache of {h.num_blocks}", f"{big[1]} blocks"))
    for line, (r, blocks, prior) in enumerate(zip(log.requests, requests, seen), 2):
        where = f"log line {line}"
        if (r.request, r.blocks, r.blocks_sha256) != (line - 2, len(blocks), blocks_digest(blocks)):
            out.append(Rejection.mismatch(where, f"request {line - 2}, {len(blocks)} blocks, sha256 "
                                          f"{blocks_digest(blocks)[:16]}... (the trace's)",
                                          f"request {r.request}, {r.blocks} blocks, sha256 {r.blocks_sha256[:16]}..."))
        elif r.engine_tokens != len(blocks) * h.block_tokens + 1:
            out.append(Rejection.mismatch(f"{where}.engine_tokens", f"{len(blocks)} blocks of {h.block_tokens} tokens "
                                          "and the extra token", str(r.engine_tokens)))
        elif r.cached_tokens % h.block_tokens and not server:  # a server's pages may be smaller: whole blocks count
            out.append(Rejection.mismatch(f"{where}.cached_tokens", f"whole blocks of {h.block_tokens} tokens",
                                          str(r.cached_tokens)))
        elif r.cached_tokens // h.block_tokens > prior:
            out.append(Rejection(subject=f"{where}.cached_tokens", reason="never-computed", expected=f"at most {prior}",
                                 found=str(r.cached_tokens // h.block_tokens),
                                 detail=f"the engine reports {r.cached_tokens // h.block_tokens} of request {r.request}'s "
                                        f"blocks from cache, but only its first {prior} were ever computed before "
                                        "with the same prefix: a defect of the tap or the replay"))
    return out


def observed(log: ReplayLog) -> dict[str, Fraction]:
    """What the engine said, summed over the log."""
    b = log.header.block_tokens
    return {"engine_hits": Fraction(sum(r.cached_tokens // b for r in log.requests)),
            "engine_cached_tokens": Fraction(sum(r.cached_tokens for r in log.requests)),
            "evicted_blocks": Fraction(sum(r.evicted_blocks for r in log.requests))}


def served_tokens(log: ReplayLog, starts: Sequence[int], tokens: Sequence[int], full: Sequence[bool]) -> int:
    """The trace's own tokens of the blocks the engine served: each request's leading ``cached_tokens /
    block_tokens`` references (``starts``: where each request's references begin), a block counting the
    tokens the trace gives it (``tokens``) and a request's partial last block none (``full``: vLLM and
    SGLang never reuse a partial block, and the token bounds count it so)."""
    b = log.header.block_tokens
    return sum(t for r, a in zip(log.requests, starts) for t, f in zip(tokens[a:a + r.cached_tokens // b],
                                                                        full[a:a + r.cached_tokens // b]) if f)


def above_optimum(hits: int, optimum: int, capacity: int, by: str) -> Rejection | None:
    """An engine count above the most any cache of ``capacity`` blocks can hit (``by``: who says so)."""
    if hits <= optimum:
        return None
    return Rejection(subject="figures.engine_hits", reason="above-optimum", expected=f"at most {optimum}", found=str(hits),
                     detail=f"the engine reports {hits} hits at {capacity} blocks, above the {optimum} that {by}: "
                            "a defect of the tap, the replay or the proof")
