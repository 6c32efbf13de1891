"""Input limits, each checked with a one-line message before any work starts (README: Limits).

The limits exist so that no input reaches a place where Python or a library fails in its own words
(``int()`` past 4,300 digits, the JSON decoder's recursion, numpy's int64): a value past one is an
:class:`~pycert.core.errors.InputError` naming the file:line or the flag. The argparse types here are the
one place where numeric flags get their ranges and output paths their checks.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

MAX_ID = (1 << 64) - 1
"""Largest trace block id (ids files, Mooncake ``hash_ids``): any 64-bit hash, 0 … 2^64 - 1."""
MAX_ID_DIGITS = len(str(MAX_ID))
"""20: an id line longer than this is refused before it is converted."""
MAX_INSTANCE_ID = (1 << 63) - 1
"""Largest host, request or block id in a pooling instance (the solvers hold them as signed 64-bit)."""
MAX_JSON_DEPTH = 32
"""Deepest nesting of arrays/objects in any JSON input (a Mooncake line needs 2, an instance 3, a
certificate 4; the decoders themselves fail somewhere near 1,000)."""
MAX_LINE_BYTES = 1 << 20
"""Longest trace line, 1 MiB (the released Mooncake lines are at most 2.7 KB)."""
MAX_JSON_BYTES = 64 << 20
"""Largest certificate or instance file, 64 MiB."""
MAX_PARAM = 1 << 40
"""Largest integer flag (capacities, tokens, granularity and control factors, request counts): about 1.1e12,
so that products of two of them still fit in 64 bits."""
MAX_GENERATE_REQUESTS = 10_000_000
"""``trace generate --requests``: about 185 million references (10 GB of JSONL), streamed to the file."""
MAX_SHARD_REFS = 1 << 40
"""``prove --shard-refs``: references per shard."""
MAX_PIECE_REFS = 1 << 19
"""References per piece of a trace checked at a capacity: ``2 ** 19`` places of fields of at most 32
bits (such a piece has fewer than ``2 ** 31`` blocks) fill the ``2 ** 24`` bits one Lean process sorts
within its heap (:data:`pycert.lean.emit.capacity.MAX_SORT_BITS`)."""
MAX_CURVE = 32
"""The most capacities one instance file checks (:mod:`pycert.lean.emit.curve`). Measured on the conversation
trace (docs/capacity-encodings.md): each capacity adds about 5 s of Lean CPU and no measurable heap to the one
process, so 32 keep a file near three minutes; a longer list is checked in as many files as it takes (each sorts the trace)."""
MAX_SHARDS = 1 << 16
"""The most shards a certificate may name (10^8 references took 31): bounds what verify emits again."""
FEW_PIECES = 16
"""Shards or pieces any trace may be split into, however short (see :func:`most_parts`)."""
REFS_PER_PIECE = 1 << 12
"""And one more for every this many references."""


def most_parts(refs: int) -> int:
    """The most shards, or pieces at a capacity, a trace of ``refs`` references is split into: each is a Lean
    process of its own (1.5-4 s of start even when tiny), so a certificate's count bounds what ``verify
    --kernel`` runs; without it a 256 KB trace in pieces of 3 references made 65,536 (about 27 hours).
    prove's default shard and piece sizes (10^8 references: 31 shards) are far inside it."""
    return min(MAX_SHARDS, max(FEW_PIECES, refs // REFS_PER_PIECE + 1))


def too_many_parts(made: int, refs: int, what: str) -> str | None:
    """Why ``made`` ``what`` (shards, pieces) are refused for a trace of ``refs`` references, or None: the one
    wording prove and verify give, for shards and pieces alike."""
    if made <= (most := most_parts(refs)):
        return None
    return (f"{made:,} {what}, and at most {most:,} are checked for {refs:,} references (each is a Lean process of "
            "its own)")


MAX_BELADY_POINTS = 1_000
"""``trace plot --points``: each is one O(n log n) Belady pass."""
MAX_TENANTS = 1 << 16
"""Tenants of an isolation-cost tenant map (``--tenants``, or a trace's own tenant field): the partitioned arm
runs Belady's MIN once per tenant that gets a block."""
MAX_FAMILY_SIZE = 65_536
"""``pooling solve --family-sizes``: references per capacitated-family case."""
MAX_SECONDS = 86_400.0
"""Timeouts and ``pooling solve --time-limit``: a day."""
MAX_POOL_HOSTS = 64
MAX_POOL_REQUESTS = 512
MAX_POOL_REFS = 16_384
"""A pooling instance, bounded when it is read, before any solver or graph algorithm sees it: the best
routing is a matching over up to hosts x requests edges, and CP-SAT models grow with the references
(the committed instance: 16 hosts, 32 requests, 512 references)."""
MAX_MANIFEST_BYTES = 1 << 20
MAX_KEYS_BYTES = 1 << 20
"""Largest tenant keys file (``pycert leak gateway --keys``, ``leak audit --keys``): one ``TENANT KEY`` a line."""
"""Largest ``MANIFEST.sha256``."""
MAX_TRACE_BYTES = 64 << 30
"""Largest trace file verify or report reads (a day of one fleet's block references is about 2 GB)."""
MAX_INFLATE_RATIO = 128
"""A compressed file decompresses to at most this many times its stored size (the released Mooncake traces
compress about 4 to 1): a 23 KB gzip of 24 MB of one repeated id is refused, not parsed for a minute."""
MAX_INFLATE_BYTES = MAX_TRACE_BYTES
"""And to at most this many bytes, whatever its ratio."""
MAX_TRACE_REFS = 1 << 32
"""Most block references a trace may hold (10^8 were certified in 31 shards): counted as it is read."""
MAX_TRACE_TOKENS = 1 << 62
"""Most prompt tokens a trace's requests may hold in all (``input_length`` summed as it is read): every
token figure is a sum of them in numpy's int64, which would wrap past 2^63 into a negative or a >100% ceiling."""
MAX_NAME_BYTES = 255
"""Longest file name (one path component), the Linux ``NAME_MAX``: a longer one is refused before the
file system is asked (which fails in its own words)."""
MAX_INPUTS = MAX_SHARDS + 64
MAX_FIGURES = 256
"""Most figures (and ``does_not_prove`` lines) a certificate may hold (the families write at most 34 and 8):
each is checked and printed, so 400,000 made verify print 44 MB for 35 s."""
MAX_THEOREMS = MAX_INPUTS
"""Most theorems (statements, audited theorems) a certificate may name: bounded like its inputs."""
"""Most inputs a certificate may name: a trace, its instance, and its shards or pieces and schedule modules."""
MAX_REPLAY_BLOCK_TOKENS = 1 << 12
"""``engine replay --block-tokens``: the engine's page size (transformers needs at least 4)."""
MAX_REPLAY_CACHE_TOKENS = 1 << 17
"""``engine replay``: the engine's whole cache, ``--num-blocks`` x ``--block-tokens`` tokens. transformers
allocates its attention mask for every readable cache token at each batch token (4 bytes x 512 batch
tokens x this: 256 MiB), beside the cache itself (512 bytes a token for the replay's model); at 2^20 the
mask alone was 2 GiB, past what a stranger's certificate may cost (docs/hostile-directories.md)."""
MAX_REPLAY_PROMPT_TOKENS = 1 << 15
"""``engine replay``: the longest prompt a replay sends (a request's blocks x ``--block-tokens``). Measured
(docs/engine-measured.md, the engine on a trace): one request of 32,769 tokens peaked at 681 MiB and took 19 s beyond
the engine's start on this loaded machine; one of 126,977 (the former limit, 2^17) about 90 s and 3.7 GB."""
MAX_STRANGER_REPLAY_TOKENS = 1 << 18
"""``engine replay --replay CERT``: the prompt tokens a replay of a certificate sends in all, unless
``--max-tokens`` allows more; and its prompts' attention, the sum of each prompt's tokens squared, at most
that of one prompt of an eighth as many (32,768 by default). Measured here under load 10: the committed
certificate's 85,674 tokens in short prompts replayed in about 6 s of engine (17 s with the start), one
prompt of 32,769 tokens in 19 s: what a stranger's certificate may cost."""
MAX_REPLAY_BLOCKS = 1 << 20
"""``engine replay --num-blocks``: the most blocks of any engine's cache (a log's header holds no more).
vLLM's cache manager with this many took 648 MiB, 136 MiB more than with 1,024 (docs/engine-measured.md); the
transformers engine is held to :data:`MAX_REPLAY_CACHE_TOKENS` besides."""
MAX_VLLM_PROMPT_TOKENS = 1 << 20
"""``engine replay --engine vllm`` (and ``--endpoint``): the longest prompt a replay sends. vLLM's cache
manager took 0.3 s and about 65 MiB for a prompt of this many tokens (docs/engine-measured.md)."""
MAX_VLLM_REPLAY_TOKENS = 1 << 28
"""``engine replay --engine vllm`` (and ``--endpoint``): the most prompt tokens a whole replay sends, so
that ``--replay`` of a stranger's certificate is bounded before the engine starts: the whole Mooncake
conversation trace at 512 tokens a block is 147.7 million, replayed in 44 s on 2 shared cores at load 9
(BENCHMARKS.md); this bound is about twice that."""


def json_depth_error(text: str | bytes, limit: int = MAX_JSON_DEPTH) -> str | None:
    """Why ``text`` nests deeper than ``limit`` (``None`` when it does not), without parsing it.

    Counting brackets is a cheap upper bound on the depth; only when it exceeds the limit does the
    exact scan run: string literals and everything but brackets dropped (one pass in C each), then the
    depth as a running sum a chunk at a time in numpy. A character-by-character Python loop took 4 s on
    a 64 MiB certificate, which verify scans three times.
    """
    data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    if data.count(b"[") + data.count(b"{") <= limit:
        return None
    import numpy as np  # only a document with more brackets than the limit gets here

    marks = np.frombuffer(_NOT_BRACKET.sub(b"", _STRING.sub(b"", data)), dtype=np.uint8)
    depth = 0
    for at in range(0, len(marks), 1 << 20):
        chunk = marks[at:at + (1 << 20)]
        run = depth + np.cumsum(np.where((chunk == ord("[")) | (chunk == ord("{")), 1, -1), dtype=np.int64)
        if run.max() > limit:
            return f"JSON nested deeper than {limit} levels"
        depth = int(run[-1])
    return None


_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(rb"[^\[\]{}]+")


# ---------------------------------------------------------------------------- argparse types


def int_range(lo: int, hi: int = MAX_PARAM):  # noqa: ANN201 (an argparse type)
    """An argparse type: an integer (``_`` separators allowed) with ``lo <= value <= hi``."""

    def parse(text: str) -> int:
        plain = text.strip().replace("_", "")
        if not re.fullmatch(r"[+-]?[0-9]+", plain):  # ASCII digits only: int() also takes e.g. Arabic-Indic
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}")
        digits = plain.lstrip("+-").lstrip("0") or "0"
        if len(digits) > max(len(str(abs(lo))), len(str(abs(hi)))):  # before int(), which stops at 4,300 digits
            raise argparse.ArgumentTypeError(f"must be between {lo:,} and {hi:,}, got a {len(digits)}-digit number")
        value = int(plain)
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"must be between {lo:,} and {hi:,}, got {value}")
        return value

    parse.__name__ = "integer"  # argparse names the type in its messages
    return parse


def int_list(lo: int, hi: int = MAX_PARAM):  # noqa: ANN201
    """An argparse type: a comma-separated, non-empty list of :func:`int_range` integers."""
    one = int_range(lo, hi)

    def parse(text: str) -> list[int]:
        values = [one(part) for part in text.split(",") if part.strip()]
        if not values:
            raise argparse.ArgumentTypeError(f"no number in {text!r}")
        return values

    parse.__name__ = "list of integers"
    return parse


def seconds(text: str) -> float:
    """A timeout or time limit: a finite number of seconds, above 0, at most a day."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value <= MAX_SECONDS:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"must be > 0 and at most {MAX_SECONDS:g} seconds, got {text}")
    return value


def seed(text: str) -> int:
    """A seed: any integer of at most 64 bits, either sign."""
    return int_range(-(1 << 63), MAX_INSTANCE_ID)(text)


def out_path(text: str) -> Path:
    """An output file: not empty and not an existing directory (the write itself is atomic)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("empty path: give a file name")
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a directory: give a file name")
    return path


def out_dir(text: str) -> Path:
    """An output directory: not empty and not an existing file (created where it is missing)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("empty path: give a directory")
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} exists and is not a directory")
    return path


def in_path(text: str) -> Path:
    """An input file path: not empty (existence is checked where it is read, with its own message)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("empty path: give a file name")
    return Path(text)


def named_path(text: str) -> tuple[str, Path]:
    """``NAME=PATH``: a file a certificate names by its file name, and where it is on this machine."""
    name, sep, path = text.partition("=")
    if not sep or not name or "/" in name or not path.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=PATH with NAME a file name, got {text!r}")
    return name, Path(path)
