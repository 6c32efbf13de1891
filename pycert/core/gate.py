"""The gate: every read of a file pycert did not write itself goes through here.

A certificate directory is a stranger's data: verify may reject it, never be harmed by it. So a file
read from one (a certificate, the manifest, an input, a leak log, a derived Lean file kept beside it)
is a :class:`Source` made by :func:`inside`, and is read only when

- its path stays in the directory: a relative POSIX path, no ``..``, no NUL, no component that is a
  symbolic link (each is opened with ``O_NOFOLLOW`` from the one before, so nothing can swap a link in
  between the check and the read), whatever the link points at;
- it is a regular file (never a FIFO, a device, a socket or a directory: it is opened with
  ``O_NONBLOCK``, so a FIFO cannot block, and refused on ``fstat`` before a byte is read);
- its size, read off the opened file, is within the limit its reader names, and the read stops there.

A file the user names on the command line (``--input NAME=PATH``, ``--trace``, ``--manifest``) is a
:func:`named` source: the user chose it, so a link is followed, but it too must be a regular file of
bounded size. Compressed data is inflated through :func:`inflated`, which caps what comes out
(:data:`~pycert.core.limits.MAX_INFLATE_RATIO`); a reader that grows with what it reads bounds its
count first (:func:`bounded`). Every refusal is a :class:`~pycert.core.errors.Refused` input error naming the
file: "refused, not read".
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import io
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from pycert.core.errors import Refused
from pycert.core.limits import MAX_INFLATE_BYTES, MAX_INFLATE_RATIO, MAX_NAME_BYTES

_CHUNK = 1 << 20
_BASE = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK


def _why(exc: OSError | ValueError, what: str, missing: str = "no such file") -> str:
    if isinstance(exc, ValueError):  # a NUL in a path
        return "a path with a NUL byte: refused, not read"
    if exc.errno == errno.ENOENT:
        return missing
    if exc.errno == errno.ELOOP:
        return f"is a symbolic link, not {what}: refused, not read (a certificate directory holds plain files)"
    if exc.errno == errno.ENOTDIR:
        return f"a path through something that is not a directory (a file, or a symbolic link), not {what}: refused"
    if exc.errno == errno.ENAMETOOLONG:
        return f"a file name longer than {MAX_NAME_BYTES} bytes: refused, not read"
    if exc.errno == errno.EISDIR:
        return f"is a directory, not {what}"
    return f"cannot read {what}: {exc.strerror or exc}"


@dataclass(frozen=True)
class Source:
    """One file to read: ``rel`` inside a stranger's directory ``root`` (:func:`inside`), or a path the
    user named (:func:`named`, ``root`` None). ``path`` names it in messages; it is never opened as such."""

    path: Path
    root: Path | None = None
    rel: PurePosixPath | None = None

    @property
    def name(self) -> str:
        return self.path.name

    def __str__(self) -> str:
        return str(self.path)

    def _fd(self, what: str, missing: str) -> int:
        """The file, opened (non-blocking, no link followed inside a directory) and refused unless regular."""
        try:
            if self.root is None or self.rel is None:
                fd = os.open(self.path, _BASE)
            else:
                fd = os.open(self.root, os.O_RDONLY | os.O_CLOEXEC | os.O_DIRECTORY)
                try:
                    for part in self.rel.parts[:-1]:
                        nxt = os.open(part, os.O_RDONLY | os.O_CLOEXEC | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                        os.close(fd)
                        fd = nxt
                    leaf = os.open(self.rel.name, _BASE | os.O_NOFOLLOW, dir_fd=fd)
                finally:
                    os.close(fd)
                fd = leaf
        except (OSError, ValueError) as exc:
            raise Refused(_why(exc, what, missing), where=str(self.path)) from None
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            if stat.S_ISDIR(mode):
                raise Refused(f"is a directory, not {what}", where=str(self.path))
            raise Refused(f"is not a regular file (a device, a FIFO or a socket), not {what}: refused, not read",
                             where=str(self.path))
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return fd

    def exists(self) -> bool:
        """Whether anything (a file, a link, a FIFO) sits at this path; nothing is opened."""
        try:
            os.lstat(self.path)
            return True
        except (OSError, ValueError):
            return False

    @contextlib.contextmanager
    def open(self, what: str, limit: int, missing: str = "no such file") -> Iterator[Capped]:
        """The file for reading, once it is a regular file of at most ``limit`` bytes (its ``size``); reads
        past ``limit`` (a file that grew) raise :class:`Refused`. ``missing``: the message when there is
        no such file."""
        fd = self._fd(what, missing)
        size = os.fstat(fd).st_size
        if size > limit:
            os.close(fd)
            raise Refused(f"{size:,} bytes, above the limit of {limit:,} for {what}: refused, not read",
                             where=str(self.path))
        with os.fdopen(fd, "rb") as raw:
            yield Capped(raw, limit, f"above the limit of {limit:,} bytes for {what}", str(self.path), size)

    def check(self, what: str, limit: int, missing: str = "no such file") -> None:
        """Refuse now, with the read's one-line error, a file that could not be read, before the work that
        reads it later begins."""
        with self.open(what, limit, missing):
            pass

    def read(self, what: str, limit: int, missing: str = "no such file") -> bytes:
        """The file's bytes (:meth:`open`)."""
        with self.open(what, limit, missing) as f:
            return _read_all(f, what, str(self.path))

    def sha256(self, what: str, limit: int) -> str:
        """Hex sha256 of the file's bytes, read in chunks (:meth:`open`)."""
        h = hashlib.sha256()
        with self.open(what, limit) as f:
            for chunk in iter(lambda: _read(f, _CHUNK, what, str(self.path)), b""):
                h.update(chunk)
        return h.hexdigest()


def _read(f: BinaryIO, n: int, what: str, where: str) -> bytes:
    try:
        return f.read(n)
    except OSError as exc:
        raise Refused(f"cannot read {what}: {exc.strerror or exc}", where=where) from None


def _read_all(f: BinaryIO, what: str, where: str) -> bytes:
    return b"".join(iter(lambda: _read(f, _CHUNK, what, where), b""))


def inside(root: Path, rel: str | PurePosixPath) -> Source:
    """``rel`` in the stranger's directory ``root`` (the directory itself as the user named it). A path
    that is absolute, climbs out (``..``), holds a NUL or a name longer than a file system allows is
    refused here, before anything is opened."""
    text = str(rel)
    where = f"{root}/{text}"
    if "\0" in text:
        raise Refused("a path with a NUL byte: refused, not read", where=where.replace("\0", "\\x00"))
    path = PurePosixPath(text)
    if not text or path.is_absolute() or ".." in path.parts or "\\" in text:
        raise Refused("a path that leaves the certificate's directory ('..', or absolute): refused, not read",
                         where=where)
    if any(len(p.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES for p in path.parts):
        raise Refused(f"a file name longer than {MAX_NAME_BYTES} bytes: refused, not read", where=where)
    return Source(path=Path(root) / path, root=Path(root), rel=path)


def named(path: Path | str) -> Source:
    """A file the user named on the command line (a link is followed: the user chose it)."""
    return Source(path=Path(path))


def recorded(path: str) -> Source:
    """A file at the absolute path a stranger's certificate records (where its trace was when it was proved):
    read like a file of its directory, so a link at that name is refused, and only a regular file of bounded
    size is read. The caller also requires its name and its sha256 to be the certificate's."""
    where = PurePosixPath(path)
    if not where.is_absolute() or ".." in where.parts or "\0" in path:
        raise Refused("not an absolute path without '..': refused, not read", where=path.replace("\0", "\\x00"))
    return inside(Path(where.parent), where.name)


def beside(source: Source) -> Source:
    """A file given as a certificate's own path (``pycert verify DIR/x.json``): read as a file of its
    directory, so that a link planted in the stranger's directory is refused like any other."""
    parent = source.path.parent
    return inside(parent, source.path.name) if source.root is None else source


def entries(root: Path, suffix: str) -> list[Source]:
    """The names in the stranger's directory ``root`` that end in ``suffix``, sorted, each as a
    :class:`Source` (whatever they are: the read refuses what is not a regular file)."""
    try:
        names = sorted(os.listdir(root))
    except OSError as exc:
        raise Refused(_why(exc, "a certificate directory"), where=str(root)) from None
    return [inside(root, n) for n in names if n.endswith(suffix) and len(n.encode(errors="surrogateescape")) <= MAX_NAME_BYTES]


class Capped(io.RawIOBase):
    """A reader that raises :class:`Refused` once more than ``limit`` bytes came through it (``limit``: a
    number, or a function of nothing that says it now, for a cap that grows with what a stream gave);
    ``size``: the file's size when it was opened (None for a stream)."""

    def __init__(self, raw: BinaryIO, limit: int | Callable[[], int], why: str, where: str,
                 size: int | None = None) -> None:
        self.raw, self.limit, self.why, self.where, self.size, self.seen = raw, limit, why, where, size, 0

    def readable(self) -> bool:
        return True

    def _count(self, n: int) -> None:
        self.seen += n
        if self.seen > (self.limit() if callable(self.limit) else self.limit):
            raise Refused(self.why, where=self.where)

    def readinto(self, b: bytearray) -> int:  # type: ignore[override]
        n = self.raw.readinto(b) or 0  # type: ignore[attr-defined]
        self._count(n)
        return n

    def read(self, n: int = -1) -> bytes:  # type: ignore[override]
        if n is None or n < 0:
            return _read_all(self, "a file", self.where)  # type: ignore[arg-type]
        data = self.raw.read(n)
        self._count(len(data))
        return data


def inflated(stream: BinaryIO, stored: int | Callable[[], int], where: str) -> BinaryIO:
    """The output of a decompressor reading ``stored`` bytes (a number, or for a stream of unknown size a
    function saying how many it has read so far), capped at :data:`~pycert.core.limits.MAX_INFLATE_RATIO`
    times that (and :data:`~pycert.core.limits.MAX_INFLATE_BYTES` at most): past it the read stops with an
    input error, so a few kilobytes cannot become gigabytes of work (every compressed reader goes through
    here, standard input included)."""
    def limit() -> int:
        return min(MAX_INFLATE_BYTES, MAX_INFLATE_RATIO * max(stored() if callable(stored) else stored, 1) + _CHUNK)

    told = f"its {stored:,} stored bytes" if isinstance(stored, int) else "the compressed bytes read so far"
    why = (f"decompresses to more than {MAX_INFLATE_RATIO} times {told}: "
           "refused as a compression bomb; decompress it yourself if it is genuine")
    return io.BufferedReader(Capped(stream, limit() if isinstance(stored, int) else limit, why, where), _CHUNK)  # type: ignore[arg-type]


def confined(root: Path, path: Path) -> Path:
    """``path``, once it lies under ``root`` (a directory pycert writes into, such as ``prove --out``) and no
    component of it below ``root`` is a symbolic link: what may be written, replaced or deleted there. A
    received directory whose ``lean/`` is a link to elsewhere would otherwise have pycert write and delete
    files outside it."""
    root, path = Path(root).absolute(), Path(path).absolute()
    if not path.is_relative_to(root):
        raise Refused(f"lies outside {root}: pycert writes only inside the directory it was given", where=str(path))
    at = root
    for part in path.relative_to(root).parts:
        at = at / part
        if at.is_symlink():
            raise Refused("is a symbolic link: pycert never writes or deletes through a link in the directory it "
                             "writes into; refused, nothing written (replace the link with a directory)", where=str(at))
    return path


def bounded(count: int, limit: int, what: str, where: str) -> None:
    """Refuse, before the work that grows with it, a count past ``limit`` (references, inputs, records)."""
    if count > limit:
        raise Refused(f"more than {limit:,} {what}: refused before any work that grows with them", where=where)
