"""Where a trace's bytes come from: a file or stdin, hashed as stored, decompressed, cut into lines.

Every layout reads through :func:`opened`, so the things that are the same for all of them are done
once: the sha256 is of the bytes as stored (a compressed file's hash matches ``sha256sum`` of the file
the user has), gzip and zstd are recognised by their magic bytes alone (never by the file name), and
every decompressed stream passes :func:`decompressed`, whose cap bounds what any layout can be made to
read. Bad input is an :class:`~pycert.core.errors.InputError` naming ``file:line``.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import sys
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import zstandard

from pycert.core import strict_json
from pycert.core.errors import InputError
from pycert.core.gate import Source as File
from pycert.core.gate import inflated, named
from pycert.core.limits import MAX_LINE_BYTES, MAX_TRACE_BYTES, json_depth_error

STDIN = "-"
"""The path that reads standard input."""
STDIN_NAME = "<stdin>"
GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_BOM = b"\xef\xbb\xbf"
_CHUNK = 1 << 20


def is_stdin(path: Path | str) -> bool:
    return str(path) == STDIN


def display_name(path: Path | str) -> str:
    """How errors and figures name a source: the path as given, or ``<stdin>``."""
    return STDIN_NAME if is_stdin(path) else str(path)


class _Hashing(io.RawIOBase):
    """A read-through wrapper that feeds every byte it passes on into a sha256."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw, self.hash, self.count = raw, hashlib.sha256(), 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray) -> int:  # type: ignore[override]
        n = self.raw.readinto(b)  # type: ignore[attr-defined]
        if n:
            self.hash.update(memoryview(b)[:n])
            self.count += n
        return n or 0


class _Codec(io.RawIOBase):
    """A decompressor's output, its own errors turned into one line naming the file (the gate's
    :func:`~pycert.core.gate.inflated` caps how much comes out)."""

    def __init__(self, inner: BinaryIO, name: str, codec: str) -> None:
        self.inner, self.name, self.codec = inner, name, codec

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray) -> int:  # type: ignore[override]
        try:
            data = self.inner.read(len(b))
        except _Padding as exc:
            raise InputError(str(exc), where=self.name) from None
        except (EOFError, OSError, zlib.error, zstandard.ZstdError) as exc:
            raise InputError(f"corrupt or truncated {self.codec} data ({exc})", where=self.name) from None
        b[:len(data)] = data
        return len(data)


FREE_FRAMES = 1024
"""Frames (gzip members, zstd frames) a compressed trace may hold whatever they produce, and one more for every
:data:`FRAME_BYTES` bytes they produce. A frame costs some microseconds of Python, so a stream of frames that
produce nothing (12 MB of empty zstd frames took main's verify 20 s, a new decompressor each) is padding,
refused as soon as its frames outrun its output; bgzip's 64 KiB members are far inside."""
FRAME_BYTES = 256


class _Padding(Exception):
    """More frames than the bytes they produced allow (:data:`FRAME_BYTES`)."""


class _Frames(io.RawIOBase):
    """Concatenated gzip members or zstd frames, one decompressor a frame, fed a chunk of input at a time (so
    one call yields at most what a chunk expands to before the gate's cap sees it: a 2 KiB zstd chunk a few
    tens of MiB; gzip's output is asked for by length). zstandard's own readers stop after the first frame
    and end quietly inside a cut one, and the standard library's gzip reads a member's header, and any zero
    padding after it, a byte at a time in Python (0.7 s for a 10 MB comment); here every frame is read, a
    stream that ends inside one is refused, zeros between gzip members (which gzip(1) allows) are skipped in
    one call, and the frames are counted against the bytes they produce (:data:`FREE_FRAMES`)."""

    def __init__(self, raw: BinaryIO, codec: str) -> None:
        self.raw, self.codec = raw, codec
        self.zstd = zstandard.ZstdDecompressor() if codec == "zstd" else None
        self.step = 2048 if self.zstd else _CHUNK
        self.frame: Any = None
        self.pending, self.left = b"", memoryview(b"")
        self.frames = self.produced = 0

    def readable(self) -> bool:
        return True

    def _start(self) -> bool:
        """A decompressor for the frame that starts the pending input; False when only padding was left."""
        if not self.zstd:
            self.pending = self.pending.lstrip(b"\0")  # zero padding between members, as gzip(1) reads it
            if not self.pending:
                return False
        self.frames += 1
        if self.frames > FREE_FRAMES + self.produced // FRAME_BYTES:
            raise _Padding(f"{self.frames:,} {self.codec} frames for {self.produced:,} bytes of data: padding, not a "
                           f"trace (at most {FREE_FRAMES:,} frames and one more every {FRAME_BYTES} bytes)")
        self.frame = self.zstd.decompressobj() if self.zstd else zlib.decompressobj(wbits=31)
        return True

    def _more(self, room: int) -> bytes | None:
        """The next output of at most about ``room`` bytes (gzip; zstd may give more, kept for the next read);
        None at the end of the stream."""
        if not self.pending:
            self.pending = self.raw.read(self.step)
            if not self.pending:
                if self.frame is None:
                    return None
                if not self.zstd and (tail := self.frame.decompress(b"", room)):  # what inflate held back
                    return tail
                if not self.frame.eof:
                    raise EOFError("the stream ends inside a frame")
                self.frame = None
                return None
        if self.frame is None and not self._start():
            return b""
        if self.zstd:
            out = self.frame.decompress(self.pending)
            self.pending = b""
        else:
            out = self.frame.decompress(self.pending, room)
            self.pending = self.frame.unconsumed_tail
        if self.frame.eof:  # the next frame starts in what this one did not use
            self.pending, self.frame = self.frame.unused_data + self.pending, None
        self.produced += len(out)
        return out

    def readinto(self, b: bytearray) -> int:  # type: ignore[override]
        n = len(b)
        while not self.left:
            out = self._more(n)
            if out is None:
                return 0
            self.left = memoryview(out)
        k = min(n, len(self.left))
        b[:k] = self.left[:k]
        self.left = self.left[k:]
        return k


def decompressed(stream: io.BufferedReader, name: str, stored: int | Callable[[], int]) -> BinaryIO:
    """``stream`` as text bytes: gzip and zstd (by their magic bytes) are decompressed through the gate's
    cap (:func:`~pycert.core.gate.inflated`: a multiple of the ``stored`` size, or for a stream of unknown
    size of the bytes read from it so far), anything else is passed
    on as it is. The one place a trace is decompressed."""
    magic = stream.peek(4)[:4]
    if magic.startswith(GZIP_MAGIC):
        codec = "gzip"
    elif magic == ZSTD_MAGIC:
        codec = "zstd"
    else:
        return stream
    inner = io.BufferedReader(_Frames(stream, codec), _CHUNK)
    return inflated(_Codec(inner, name, codec), stored, name)  # type: ignore[arg-type]


class Source:
    """An open trace: ``text`` yields the decompressed bytes, ``sha256()`` the hash of all the stored
    bytes (what the parser did not need is read and hashed first)."""

    def __init__(self, raw: BinaryIO, name: str, stored: int | None) -> None:
        self.name = name
        self._hashing = _Hashing(raw)
        self._stored = io.BufferedReader(self._hashing, _CHUNK)
        # standard input's cap grows with the compressed bytes read so far (its size is not known)
        self.text = decompressed(self._stored, name, (lambda: self._hashing.count) if stored is None else stored)

    def sha256(self) -> str:
        for _ in iter(lambda: self._stored.read(_CHUNK), b""):
            pass
        return self._hashing.hash.hexdigest()


@contextlib.contextmanager
def opened(path: File | Path | str) -> Iterator[Source]:
    """The trace at ``path``, through the gate (a file of a certificate directory, or one the user named;
    ``-``: standard input, which is read but never closed)."""
    name = display_name(path)
    if is_stdin(path):
        yield Source(sys.stdin.buffer, name, None)
        return
    file = path if isinstance(path, File) else named(path)
    with file.open("a trace file", MAX_TRACE_BYTES) as raw:
        yield Source(raw, name, raw.size)


def from_bytes(data: bytes, name: str) -> Source:
    """An in-memory trace, read exactly as a file with these bytes would be."""
    return Source(io.BytesIO(data), name, len(data))


def lines(stream: BinaryIO, name: str) -> Iterator[tuple[int, bytes]]:
    """Numbered lines, each one request (JSON layouts) or one reference (ids).

    Blank lines (empty or whitespace only) are allowed at the end of the file alone: one before a
    later line is an input error naming it, since it stands where a request or a reference should
    be (a line lost in an edit or a merge), and a reader that skipped it would certify a trace
    nobody wrote. A UTF-8 byte-order mark before the first line is dropped (CRLF ends are
    whitespace to every reader); a line longer than :data:`~pycert.core.limits.MAX_LINE_BYTES` is
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


def json_object(lineno: int, line: bytes, name: str) -> dict:
    """One line's JSON object, or an input error naming ``name:lineno`` and why it is none."""
    where = f"{name}:{lineno}"
    if why := json_depth_error(line):
        raise InputError(why, where=where)
    try:
        obj = strict_json.loads(line)
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", where=where) from None
    except json.JSONDecodeError as exc:
        if not line.endswith(b"\n"):
            raise InputError(f"truncated last line (no newline, incomplete JSON: {exc.msg})", where=where) from None
        raise InputError(f"malformed JSON: {exc.msg} at column {exc.colno}", where=where) from None
    except strict_json.DuplicateKey as exc:
        raise InputError(f"the key {json.dumps(exc.key)[:80]} is named twice in one object (which one counts depends "
                         "on the reader)", where=where) from None
    except ValueError:  # int() of a number past 4,300 digits
        raise InputError("a number with more than 4,300 digits (ids stop at 20)", where=where) from None
    if not isinstance(obj, dict):
        raise InputError(f"expected a JSON object, got {type(obj).__name__}", where=where)
    return obj
