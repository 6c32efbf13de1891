"""A trace's requests: where each starts, whether the trace is prefix-closed, whether a set of hits is a
prefix of every request, and what each reference weighs in tokens.

A trace is **prefix-closed** when each request is a path from the root of one block tree: every block
has one parent (the block before it in every request that holds it, or none when it starts them), so a
block's id fixes its whole prefix, as chained block hashes do (vLLM's, SGLang's; Mooncake's and
Qwen-Bailian's hash ids are such). A prefix cache hits only the longest cached prefix of a request's
blocks (``lean/Pycert/PrefixCache.lean``): a set of hits it can reach has, in every request, the
reference before each hit a hit too.

Tokens: a block holds ``block_tokens`` tokens, except a request's last block, which holds what is left
of its prompt. By vLLM's rule (it caches full blocks only) a partial block is never reused, so a hit
counts ``block_tokens`` tokens when its block is full and none otherwise.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Literal, NamedTuple

import numpy as np

from pycert.analysis.refs import as_array, prev_next
from pycert.data.traces import Trace

PrefixVerdict = Literal["attained", "no-requests", "not-prefix-closed", "not-a-prefix"]
"""Whether a capacity certificate claims that a prefix cache reaches the optimum with
bypass, or why not."""


def firsts(trace: Trace) -> np.ndarray | None:
    """The references that start a request (flags), None when the format has no requests."""
    if trace.requests is None:
        return None
    out = np.zeros(trace.n_refs, dtype=bool)
    starts = np.asarray(trace.requests[:-1], dtype=np.int64)
    out[starts[starts < trace.n_refs]] = True
    return out


def not_prefix_closed(refs: np.ndarray, first: np.ndarray) -> str | None:
    """Why the trace is not prefix-closed (the first reference whose block has another parent than
    at its previous reference), None when it is."""
    arr = as_array(refs)
    prev, _ = prev_next(arr)
    k = np.flatnonzero(prev >= 0)
    p = prev[k]
    parent_k, parent_p = arr[np.maximum(k - 1, 0)], arr[np.maximum(p - 1, 0)]  # read only where not a root
    bad = k[(first[k] != first[p]) | (~first[k] & (parent_k != parent_p))]
    if not len(bad):
        return None
    j = int(bad[0])

    def where(q: int) -> str:
        return "starts a request" if first[q] else f"follows block {int(arr[q - 1])}"

    return (f"block {int(arr[j])} {where(j)} at reference {j:,} but {where(int(prev[j]))} at reference "
            f"{int(prev[j]):,} (counted from 0): a block id does not fix its prefix")


def prefix_breaks(hits: np.ndarray, first: np.ndarray) -> np.ndarray:
    """The hits whose request's reference before them missed: none when every request's hits are a prefix."""
    h = np.asarray(hits, dtype=bool)
    before = np.concatenate([[False], h[:-1]])
    return np.flatnonzero(h & ~first & ~before)


def prefix_verdict(trace: Trace, hits: np.ndarray) -> tuple[PrefixVerdict, str]:
    """Whether a prefix cache over the trace's requests reaches the hits ``hits`` (Belady's with bypass),
    as pycert claims it: the trace has requests, is prefix-closed (a real prefix cache's ids are), and
    every hit follows a hit in its request. With the reason, in words."""
    first = firsts(trace)
    if first is None:
        return "no-requests", "the trace has no request boundaries (a file of block ids)"
    if (why := not_prefix_closed(trace.refs, first)) is not None:
        return "not-prefix-closed", f"the trace is not prefix-closed: {why}"
    if len(breaks := prefix_breaks(hits, first)):
        return "not-a-prefix", (f"Belady's MIN with bypass hits reference {int(breaks[0]):,} after a miss in its "
                                f"request ({len(breaks):,} such hit{'s' if len(breaks) > 1 else ''})")
    return "attained", "every hit of Belady's MIN with bypass follows a hit in its request"


class Weights(NamedTuple):
    """What each reference weighs in tokens, and what every token rate is over."""

    tokens: np.ndarray
    """Each reference's tokens."""
    full: np.ndarray
    """Whether its block is full (reusable by vLLM's rule: a partial last block is never reused)."""
    total: int
    """The prompt tokens of all requests: the denominator of every token rate."""

    def hit(self, hits: np.ndarray) -> int:
        """The tokens of the references ``hits`` marks, each full block's (a partial block is never reused)."""
        return int(self.tokens[hits & self.full].sum())


def ref_tokens(trace: Trace) -> Weights | None:
    """Each reference's tokens, whether its block is full, and the prompt tokens in all; None when the trace
    does not say (no prompt lengths or block size) or its lengths do not fit its blocks. A prompts trace's
    references (blocks cut from token ids) are its full blocks only: the tail of a prompt shorter than a block is in the total and in no
    reference (it is never reused)."""
    bt, req, prompt = trace.block_tokens, trace.requests, trace.prompt_tokens
    if bt is None or req is None or prompt is None:
        return None
    blocks = np.diff(np.asarray(req, dtype=np.int64))
    prompt = np.asarray(prompt, dtype=np.int64)
    if trace.cut:
        if np.any(blocks != prompt // bt):
            return None
        return Weights(np.full(trace.n_refs, bt, dtype=np.int64), np.ones(trace.n_refs, dtype=bool), int(prompt.sum()))
    last = prompt - bt * (blocks - 1)
    if np.any((blocks > 0) & ((last < 1) | (last > bt))):
        return None
    tokens = np.full(trace.n_refs, bt, dtype=np.int64)
    ends = np.asarray(req[1:], dtype=np.int64)[blocks > 0] - 1
    tokens[ends] = last[blocks > 0]
    return Weights(tokens, tokens == bt, int(tokens.sum()))


def reuse_token_counts(trace: Trace) -> tuple[int, int] | None:
    """The ceiling in tokens as counts: the tokens of the references that reuse a full block, and the prompt
    tokens (None when the trace gives no prompt lengths)."""
    weights = ref_tokens(trace)
    if weights is None:
        return None
    prev, _ = prev_next(as_array(trace.refs))
    return weights.hit(prev >= 0), weights.total


def reuse_tokens(trace: Trace) -> Fraction | None:
    """The ceiling in tokens: :func:`reuse_token_counts` as a share of the prompt tokens."""
    counts = reuse_token_counts(trace)
    return None if counts is None else Fraction(*counts)
