"""Block-reference traces in: the Mooncake FAST'25 JSONL reader, the one-id-per-line reader, and
the granularity transform.

A trace is the in-order sequence of KV-block references. In Mooncake JSONL every line is one request
(``timestamp`` ms, ``input_length``, ``output_length``, ``hash_ids``); each id in ``hash_ids`` is one
reference to a 512-token prefix block, and equal ids are the same reusable block. The plain format
has one non-negative integer id per line and no request structure.

Reading is streaming (one line at a time, hashing the raw bytes as they pass) and exact: nothing is
sampled or dropped. Bad input raises :class:`pycert.core.errors.InputError` naming ``file:line``. Gzip
files (by magic bytes) are decompressed on the fly; their ``sha256`` is of the compressed bytes on
disk, so it matches ``sha256sum`` of the file the user has.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import zlib
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import chain
from pathlib import Path
from typing import BinaryIO, Literal

import numpy as np

from pycert.core.errors import InputError
from pycert.core.gate import Source, bounded, inflated, named
from pycert.core.limits import MAX_ID_DIGITS, MAX_LINE_BYTES, MAX_TRACE_BYTES, MAX_TRACE_REFS, json_depth_error

Format = Literal["mooncake", "ids"]
FormatChoice = Literal["auto", "mooncake", "ids"]

MOONCAKE_BLOCK_TOKENS = 512
"""Tokens per ``hash_ids`` block in the Mooncake release (its README; and on both released traces
``len(hash_ids) == ceil(input_length / 512)`` on every line)."""

MOONCAKE_FIELDS = ("timestamp", "input_length", "output_length", "hash_ids")
_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"
_CHUNK = 1 << 20


@dataclass(frozen=True, eq=False)
class Trace:
    """An exact, in-order block-reference trace.

    ``refs`` holds one uint64 block id per reference (ids are any integers in [0, 2^64)). ``requests`` (Mooncake only) holds request
    boundaries as offsets into ``refs``: request ``r`` is ``refs[requests[r]:requests[r + 1]]``, so
    it has ``n_requests + 1`` entries, starting at 0 and ending at ``len(refs)``. ``granularity`` is
    how many original blocks one id stands for (1 unless :func:`coarsen` made it), and
    ``block_tokens`` the tokens per block at that granularity (``None`` when the format does not say).
    ``prompt_tokens`` (per request, where the format says: Mooncake's ``input_length``) is what a
    token-unit figure counts; ``tenants`` (per request, an index into ``tenant_names``) is the tenant a
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

    @property
    def n_refs(self) -> int:
        return int(len(self.refs))

    @property
    def n_requests(self) -> int | None:
        return None if self.requests is None else int(len(self.requests) - 1)


class _Hashing(io.RawIOBase):
    """A read-through wrapper that feeds every byte it passes on into a sha256."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw, self.hash = raw, hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray) -> int:  # type: ignore[override]
        n = self.raw.readinto(b)  # type: ignore[attr-defined]
        if n:
            self.hash.update(memoryview(b)[:n])
        return n or 0


def read_trace(source: Source | Path, fmt: FormatChoice = "auto") -> Trace:
    """Read a Mooncake JSONL or one-id-per-line trace (optionally gzip-compressed) from ``source``: a file
    of a certificate directory (:func:`pycert.core.gate.inside`) or one the user named (a path). Through the
    gate: a regular file of at most :data:`~pycert.core.limits.MAX_TRACE_BYTES`, its decompressed data
    capped (:func:`pycert.core.gate.inflated`), at most :data:`~pycert.core.limits.MAX_TRACE_REFS` references."""
    source = source if isinstance(source, Source) else named(source)
    with source.open("a trace file", MAX_TRACE_BYTES) as raw:
        hashing = _Hashing(raw)
        buffered = io.BufferedReader(hashing, _CHUNK)
        stream: BinaryIO = buffered
        if buffered.peek(2)[:2] == _GZIP_MAGIC:
            stream = inflated(gzip.GzipFile(fileobj=buffered, mode="rb"), raw.size or 0, str(source))  # type: ignore[arg-type]
        try:
            refs, requests, tokens, found = _parse(stream, str(source), fmt)
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise InputError(f"corrupt or truncated gzip data ({exc})", where=str(source)) from None
        for _ in iter(lambda: buffered.read(_CHUNK), b""):  # hash any bytes the parser did not need
            pass
    return Trace(refs=refs, requests=requests, format=found, sha256=hashing.hash.hexdigest(), name=str(source),
                 path=source.path, block_tokens=MOONCAKE_BLOCK_TOKENS if found == "mooncake" else None,
                 prompt_tokens=tokens)


def trace_from_bytes(data: bytes, name: str, fmt: FormatChoice = "auto") -> Trace:
    """Parse an in-memory trace (e.g. a generated one) exactly as :func:`read_trace` parses a file."""
    refs, requests, tokens, found = _parse(io.BytesIO(data), name, fmt)
    return Trace(refs=refs, requests=requests, format=found, sha256=hashlib.sha256(data).hexdigest(), name=name,
                 block_tokens=MOONCAKE_BLOCK_TOKENS if found == "mooncake" else None, prompt_tokens=tokens)


def _lines(stream: BinaryIO, name: str) -> Iterator[tuple[int, bytes]]:
    """Numbered lines, each one request (Mooncake) or one reference (ids).

    Blank lines (empty or whitespace only) are allowed at the end of the file alone: one before a
    later line is an input error naming it, since it stands where a request or a reference should
    be (a line lost in an edit or a merge), and a reader that skipped it would certify a trace
    nobody wrote. A UTF-8 byte-order mark before the first line is dropped (CRLF ends are
    whitespace to both readers); a line longer than :data:`~pycert.core.limits.MAX_LINE_BYTES` is
    refused before it is parsed.
    """
    lineno, blank = 0, None
    while line := stream.readline(MAX_LINE_BYTES + 1):
        lineno += 1
        if len(line) > MAX_LINE_BYTES:
            raise InputError(f"line longer than the limit of {MAX_LINE_BYTES:,} bytes", where=f"{name}:{lineno}")
        if lineno == 1 and line.startswith(_BOM):
            line = line[len(_BOM):]
        if not line.strip():
            blank = blank or lineno
            continue
        if blank:
            raise InputError(f"blank line in the middle of the trace (line {lineno} follows it): blank lines "
                             "are allowed only at the end of the file", where=f"{name}:{blank}")
        yield lineno, line


def _parse(stream: BinaryIO, name: str,
           fmt: FormatChoice) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None, Format]:
    lines = _lines(stream, name)
    first = next(lines, None)
    if first is None:
        raise InputError("empty trace: no lines", where=name)
    found: Format = fmt if fmt != "auto" else ("mooncake" if first[1].lstrip().startswith(b"{") else "ids")
    if found == "mooncake":
        refs, requests, tokens = _parse_mooncake(first, lines, name)
    else:
        refs, requests, tokens = _parse_ids(first, lines, name), None, None
    if len(refs) == 0:
        raise InputError("empty trace: no block references", where=name)
    return refs, requests, tokens, found


def _json_line(lineno: int, line: bytes, name: str) -> dict:
    where = f"{name}:{lineno}"
    if why := json_depth_error(line):
        raise InputError(why, where=where)
    try:
        obj = json.loads(line)
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", where=where) from None
    except json.JSONDecodeError as exc:
        if not line.endswith(b"\n"):
            raise InputError(f"truncated last line (no newline, incomplete JSON: {exc.msg})", where=where) from None
        raise InputError(f"malformed JSON: {exc.msg} at column {exc.colno}", where=where) from None
    except ValueError:  # int() of a number past 4,300 digits
        raise InputError("a number with more than 4,300 digits (ids stop at 19)", where=where) from None
    if not isinstance(obj, dict):
        raise InputError(f"expected a JSON object, got {type(obj).__name__}", where=where)
    return obj


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_record(obj: dict, where: str) -> tuple[list[int], int]:
    missing = [f for f in MOONCAKE_FIELDS if f not in obj]
    if missing:
        raise InputError(f"missing field {', '.join(repr(m) for m in missing)}", where=where)
    for f in ("timestamp", "input_length", "output_length"):
        v = obj[f]
        if not (_is_int(v) or (isinstance(v, float) and v.is_integer())) or v < 0:
            raise InputError(f"field {f!r} must be a non-negative integer, got {json.dumps(v)}", where=where)
    ids = obj["hash_ids"]
    if not isinstance(ids, list):
        raise InputError(f"field 'hash_ids' must be a list of block ids, got {json.dumps(ids)[:40]}", where=where)
    if set(map(type, ids)) <= {int} and (not ids or (min(ids) >= 0 and max(ids) < 1 << 64)):
        return ids, int(obj["input_length"])  # the common case, checked without a per-id Python branch
    for k, v in enumerate(ids):
        if not _is_int(v):
            raise InputError(f"hash_ids[{k}] is not an integer: {json.dumps(v)[:40]}", where=where)
        if v < 0:
            raise InputError(f"hash_ids[{k}] is negative: {v}", where=where)
        if v >= 1 << 64:
            raise InputError(f"hash_ids[{k}] does not fit in 64 bits: {v}", where=where)
    return ids, int(obj["input_length"])


def _parse_mooncake(first: tuple[int, bytes], rest: Iterator[tuple[int, bytes]],
                    name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    refs, bounds, tokens = array("Q"), array("q", [0]), array("q")
    for lineno, line in chain([first], rest):
        ids, length = _check_record(_json_line(lineno, line, name), f"{name}:{lineno}")
        bounded(len(refs) + len(ids), MAX_TRACE_REFS, "block references", f"{name}:{lineno}")
        refs.extend(ids)
        bounds.append(len(refs))
        tokens.append(length)
    return (np.frombuffer(refs, dtype=np.uint64).copy(), np.frombuffer(bounds, dtype=np.int64).copy(),
            np.frombuffer(tokens, dtype=np.int64).copy())


def _parse_ids(first: tuple[int, bytes], rest: Iterator[tuple[int, bytes]], name: str) -> np.ndarray:
    refs = array("Q")
    for lineno, line in chain([first], rest):
        text = line.strip()
        if not text.isdigit() or not text.isascii():  # isdigit alone admits e.g. superscripts
            try:
                shown = repr(text.decode()[:40])
                binary = any(b < 32 for b in text)
            except UnicodeDecodeError:
                binary = True
            if binary:  # a binary file's bytes, escaped, never echoed raw to the terminal
                shown = repr(text[:40])
            reason = ("negative id" if text.startswith(b"-") and text[1:].isdigit() else
                      "binary data, not a text trace" if binary else "not a non-negative integer id")
            raise InputError(f"{reason}: {shown}", where=f"{name}:{lineno}")
        digits = text.lstrip(b"0") or b"0"
        if len(digits) > MAX_ID_DIGITS:  # before int(), which refuses 4,300 digits
            raise InputError(f"id does not fit in 64 bits: {len(digits)} digits (at most {MAX_ID_DIGITS})",
                             where=f"{name}:{lineno}")
        value = int(digits)
        if value >= 1 << 64:
            raise InputError(f"id does not fit in 64 bits: {value}", where=f"{name}:{lineno}")
        if len(refs) >= MAX_TRACE_REFS:
            bounded(len(refs) + 1, MAX_TRACE_REFS, "block references", f"{name}:{lineno}")
        refs.append(value)
    return np.frombuffer(refs, dtype=np.uint64).copy()


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
