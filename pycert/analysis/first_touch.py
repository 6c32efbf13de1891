"""The first-touch dataset's workloads, defined: the synthetic ramp of prompt lengths, the workloads of
a Mooncake trace, and the prompts each sends to an engine. Pure functions of their definitions and the
trace; nothing here runs an engine or Lean.

**The ramp.** Around each of the first ``blocks`` multiples of the chunk ``c`` (``j = 1 .. blocks``),
four prompt lengths: one token short of the boundary, on it, one past it and half a chunk past it
(``c·j - 1``, ``c·j``, ``c·j + 1``, ``c·j + c/2``). With ``c = 256`` and 9 blocks: 36 lengths from 255
to 2,432. The boundary itself is on the ramp because that is where an engine that always recomputes a
prompt's last token (transformers does) parts from the closed form ``c·⌊n/c⌋/n``.

**A Mooncake workload.** The trace's requests carry no conversation id, but its block ids are prefix
hashes (equal ids mean equal prefixes), and every request of the conversation trace starts with the
same block. A conversation is read as the requests whose first two blocks are the same (the same first
1,024 tokens). A workload is a conversation with at least two requests; its row is the conversation's
second request, the first touch on an instance that did not serve the first one, against a pooled store
pre-warmed with the first request's blocks (by the instance that served it). The rows are ``rows``
conversations spread evenly over those the trace holds, in the order of their second requests: ranks
``⌊(2k + 1)·M / (2·rows)⌋`` for ``k = 0 .. rows - 1`` of ``M``. The store serves the leading blocks of
the request that it holds, counted in whole blocks (a partial last block is computed): ``served = 512 ·
min(m, ⌊n/512⌋)``; with no pooling a cold instance computes all ``n`` tokens.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from pycert.core.errors import InputError
from pycert.leak.admission import FIRST_ID

if TYPE_CHECKING:
    from pycert.data.traces import Trace

BLOCK_TOKENS = 512
"""Tokens per Mooncake block."""


def ramp(c: int, blocks: int) -> list[int]:
    """The ramp's prompt lengths, in row order (module docstring)."""
    return [c * j + d for j in range(1, blocks + 1) for d in (-1, 0, 1, c // 2)]


def closed_form_served(c: int, n: int) -> int:
    """Tokens a store pre-warmed in whole chunks of ``c`` serves of an ``n``-token prompt: ``c·⌊n/c⌋``."""
    return c * (n // c)


def last_token_served(c: int, n: int) -> int:
    """The same for an engine that computes the prompt's last token again: the whole chunks of the first
    ``n - 1`` tokens, ``c·⌊(n-1)/c⌋`` (``Pycert.FirstTouch.lastServed``)."""
    return c * ((n - 1) // c)


def ramp_prompt(seed: int, n: int, vocab: int) -> tuple[int, ...]:
    """The ramp's ``n``-token prompt: token ids drawn uniformly from ``FIRST_ID .. vocab - 1``, seeded by
    ``seed`` and ``n`` (string seeds are hashed by sha512: the same on every platform)."""
    rng = random.Random(f"pycert-first-touch-ramp/{seed}/{n}")
    return tuple(rng.randrange(FIRST_ID, vocab) for _ in range(n))


def block_prompt(seed: int, ids: Sequence[int], n: int, vocab: int) -> tuple[int, ...]:
    """The ``n`` tokens a request with these block ids stands for: each block's 512 tokens drawn from a
    generator seeded by ``seed`` and the block id, so equal ids give equal tokens and a shared prefix of
    blocks is a shared prefix of tokens; the last block is cut at ``n``."""
    out: list[int] = []
    for b in ids:
        rng = random.Random(f"pycert-first-touch-block/{seed}/{b}")
        out += [rng.randrange(FIRST_ID, vocab) for _ in range(BLOCK_TOKENS)]
    return tuple(out[:n])


def lead(store: set[int] | frozenset[int], req: Sequence[int]) -> int:
    """How many leading blocks of ``req`` the store holds (``Pycert.FirstTouch.lead``)."""
    m = 0
    while m < len(req) and req[m] in store:
        m += 1
    return m


@dataclass(frozen=True)
class TraceRow:
    """One Mooncake workload: the conversation's first and second requests (numbered from 1 in the trace)."""

    first_request: int
    request: int
    n: int
    prev: tuple[int, ...]
    req: tuple[int, ...]
    m: int
    """Leading blocks of ``req`` that ``prev`` holds."""
    whole_trace_m: int
    """Leading blocks of ``req`` that any earlier request of the trace showed: the same ``m`` on a trace
    whose ids are prefix hashes (checked, not assumed: :func:`trace_rows` refuses a difference)."""

    @property
    def served(self) -> int:
        return BLOCK_TOKENS * min(self.m, self.n // BLOCK_TOKENS)

    @property
    def cut(self) -> Fraction:
        return Fraction(self.served, self.n)


def conversations(trace: Trace) -> list[list[int]]:
    """Request indices grouped by their first two block ids, groups of two or more requests only, in the
    order of their second requests."""
    if trace.requests is None or trace.prompt_tokens is None:
        raise InputError("not a Mooncake JSONL trace: the first-touch workloads need its requests and their "
                         "input_length", where=trace.name)
    groups: dict[tuple[int, ...], list[int]] = {}
    bounds = trace.requests.tolist()
    refs = trace.refs
    for r in range(len(bounds) - 1):
        lo, hi = bounds[r], bounds[r + 1]
        groups.setdefault(tuple(int(x) for x in refs[lo:min(hi, lo + 2)]), []).append(r)
    return sorted((g for g in groups.values() if len(g) >= 2), key=lambda g: g[1])


def trace_rows(trace: Trace, rows: int) -> list[TraceRow]:
    """The ``rows`` workloads of the module docstring, or an :class:`InputError` naming why the trace has
    none such (too few conversations, a request whose blocks do not fit its length)."""
    convs = conversations(trace)
    if len(convs) < rows:
        raise InputError(f"{len(convs)} conversations with a second request; {rows} rows need {rows}",
                         where=trace.name)
    chosen = [convs[(2 * k + 1) * len(convs) // (2 * rows)] for k in range(rows)]
    bounds = trace.requests.tolist()
    ids = trace.refs.tolist()
    tokens = trace.prompt_tokens.tolist()

    def blocks(r: int) -> tuple[int, ...]:
        return tuple(ids[bounds[r]:bounds[r + 1]])

    wanted = {g[1] for g in chosen}
    before: dict[int, int] = {}
    seen: set[int] = set()
    for r in range(max(wanted) + 1):
        if r in wanted:
            before[r] = lead(seen, blocks(r))
        seen.update(ids[bounds[r]:bounds[r + 1]])
    out = []
    for first, second, *_ in chosen:
        n, req = tokens[second], blocks(second)
        if len(req) != -(-n // BLOCK_TOKENS):
            raise InputError(f"{len(req)} blocks for input_length {n}: not {BLOCK_TOKENS}-token blocks",
                             where=f"{trace.name} request {second + 1}")
        prev = blocks(first)
        row = TraceRow(first_request=first + 1, request=second + 1, n=n, prev=prev, req=req, m=lead(set(prev), req),
                       whole_trace_m=before[second])
        if row.m != row.whole_trace_m:
            raise InputError(f"the request's leading blocks held by its conversation's first request ({row.m}) "
                             f"differ from those the whole trace showed before it ({row.whole_trace_m}): the ids "
                             "are not prefix hashes", where=f"{trace.name} request {second + 1}")
        out.append(row)
    return out
