"""Block-reference traces in: :class:`Trace`, the one type every layout reads into, and the
granularity transform.

A trace is the in-order sequence of KV-block references. The layouts (Mooncake, Qwen-Bailian and
AIPerf JSONL, prompts as token ids, one id per line) are read by :mod:`pycert.data.formats`, one
module each. Reading is streaming (one line at a time, hashing the stored bytes as they pass) and
exact: nothing is sampled or dropped. Bad input raises :class:`pycert.core.errors.InputError` naming
``file:line``. Gzip and zstd files (by magic bytes) are decompressed on the fly; their ``sha256`` is of
the compressed bytes on disk, so it matches ``sha256sum`` of the file the user has.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from pycert.core.gate import Source
from pycert.data import formats
from pycert.data.formats import Format, hash_ids, source

MOONCAKE_BLOCK_TOKENS = hash_ids.MOONCAKE.block_tokens
"""Tokens per ``hash_ids`` block in the Mooncake release (its README; and on both released traces
``len(hash_ids) == ceil(input_length / 512)`` on every line)."""


@dataclass(frozen=True, eq=False)
class Trace:
    """An exact, in-order block-reference trace.

    ``refs`` holds one uint64 block id per reference (ids are any integers in [0, 2^64)).
    ``requests`` (every layout but ids) holds request boundaries as offsets into ``refs``: request
    ``r`` is ``refs[requests[r]:requests[r + 1]]``, so it has ``n_requests + 1`` entries, starting at
    0 and ending at ``len(refs)``. ``granularity`` is how many original blocks one id stands for (1
    unless :func:`coarsen` made it), and ``block_tokens`` the tokens per block at that granularity
    (``None`` when the format does not say). ``prompt_tokens`` (per request, where the format says:
    ``input_length``, or a prompt's length) is what a token-unit figure counts; ``tenants`` (per request, an index into ``tenant_names``) is the tenant a
    request came from where the format names one. Both are ``None`` when the format does not say.
    """

    refs: np.ndarray
    requests: np.ndarray | None
    format: Format
    sha256: str
    name: str
    path: Path | None = None
    granularity: int = 1
    block_tokens: int | None = None
    prompt_tokens: np.ndarray | None = None
    tenants: np.ndarray | None = None
    tenant_names: tuple[str, ...] = ()
    block_rule: str | None = None
    """How ``block_tokens`` was read (the trace's lengths, ``--block-tokens``), for a person."""
    cut: bool = False
    """Whether the blocks were cut here from prompts' token ids (at ``block_tokens``), not named by the trace."""
    sessions: np.ndarray | None = None
    """Per request, an index into ``session_names``, -1 for a request without a session (requests layout)."""
    session_names: tuple[str | int, ...] = ()
    hosts: np.ndarray | None = None
    """Per request, an index into ``host_names``, -1 for a request without a host (requests layout)."""
    host_names: tuple[str | int, ...] = ()
    timestamps: np.ndarray | None = None
    """Per request, its timestamp as a number (seconds for an ISO 8601 one; NaN for a request without one)."""
    lines: np.ndarray | None = None
    """Per request, the line of the file it was read from."""
    disorder: str | None = None
    """Where the timestamps first go back (file:line and why), when they do: the trace is read in file order."""
    sorted: bool = False
    """Whether the requests were put in timestamp order (``--sort``)."""

    @property
    def n_refs(self) -> int:
        return int(len(self.refs))

    @property
    def n_requests(self) -> int | None:
        return None if self.requests is None else int(len(self.requests) - 1)


def read_trace(path: Source | Path | str, fmt: str = "auto", block_tokens: int | None = None,
               sort: bool = False) -> Trace:
    """Read a trace in any layout of :mod:`pycert.data.formats` (gzip or zstd too) from ``path``: a file of
    a certificate directory (:func:`pycert.core.gate.inside`), one the user named (a path), or ``-``
    (standard input); with ``--block-tokens`` (``block_tokens``: how a prompts trace is blocked; for any
    other layout it must agree with what the trace's lengths say), in timestamp order with ``sort``. Through the gate: a regular file of at
    most :data:`~pycert.core.limits.MAX_TRACE_BYTES`, its decompressed data capped, at most
    :data:`~pycert.core.limits.MAX_TRACE_REFS` references."""
    with source.opened(path) as src:
        parsed = formats.parse(src.text, src.name, fmt, block_tokens, sort)
        sha256 = src.sha256()
    where = None if source.is_stdin(path) else path.path if isinstance(path, Source) else Path(path)
    return _trace(parsed, sha256, src.name, where)


def trace_from_bytes(data: bytes, name: str, fmt: str = "auto", block_tokens: int | None = None,
                     sort: bool = False) -> Trace:
    """Parse an in-memory trace (e.g. a generated one) exactly as :func:`read_trace` parses a file."""
    src = source.from_bytes(data, name)
    parsed = formats.parse(src.text, name, fmt, block_tokens, sort)
    return _trace(parsed, src.sha256(), name, None)


def _trace(p: formats.Parsed, sha256: str, name: str, path: Path | None) -> Trace:
    c = p.columns
    per = {} if c is None else dict(
        requests=c.bounds, tenants=c.tenants, tenant_names=c.tenant_names, sessions=c.sessions,
        session_names=c.session_names, hosts=c.hosts, host_names=c.host_names, timestamps=c.timestamps, lines=c.lines)
    return Trace(refs=p.refs, format=p.format, sha256=sha256, name=name, path=path, block_tokens=p.block_tokens,
                 prompt_tokens=p.prompt_tokens, block_rule=p.block_rule, cut=p.cut, disorder=p.disorder,
                 sorted=p.sorted, **{"requests": None, **per})


def coarsen(trace: Trace, k: int) -> Trace:
    """Merge every ``k`` consecutive block ids of a request into one coarser block.

    The merged block's identity is the tuple of the ids it covers (a request's last chunk may be
    shorter, and is then a different block from any full chunk), re-numbered densely in order of
    first appearance. A trace without request structure (plain ids) is chunked as one request. This
    is the granularity control: the same trace seen with ``k`` times larger blocks, so that a change
    in a figure caused by block size is not mistaken for a property of the workload.
    """
    if k < 1:
        raise ValueError(f"granularity factor must be >= 1, got {k}")
    if k == 1:
        return trace
    n = trace.n_refs
    bounds = trace.requests if trace.requests is not None else np.array([0, n], dtype=np.int64)
    lengths = np.diff(bounds)
    # Chunk c of a request starts at offset c*k within it; number chunks globally in order.
    chunks_per = (lengths + k - 1) // k
    new_bounds = np.concatenate(([0], np.cumsum(chunks_per))).astype(np.int64)
    index_in_request = np.arange(int(new_bounds[-1])) - np.repeat(new_bounds[:-1], chunks_per)
    starts = np.repeat(bounds[:-1], chunks_per) + index_in_request * k
    ends = np.minimum(starts + k, np.repeat(bounds[1:], chunks_per))
    ids: dict[tuple[int, ...], int] = {}
    values = trace.refs.tolist()
    out = np.fromiter((ids.setdefault(tuple(values[s:e]), len(ids)) for s, e in zip(starts.tolist(), ends.tolist())),
                      dtype=np.int64, count=len(starts))
    return replace(trace, refs=out, requests=new_bounds if trace.requests is not None else None,
                   granularity=trace.granularity * k,
                   block_tokens=None if trace.block_tokens is None else trace.block_tokens * k)
