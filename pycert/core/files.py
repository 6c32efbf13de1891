"""Files: hashing, how certificates name their inputs, and every write pycert makes (temporary, then rename).

Every file pycert writes is staged beside its target and renamed into place with SIGINT/SIGTERM held
back, so an interrupted run leaves the old file or the new one and never a temporary; a directory
(an unpacked toolchain, a build-cache entry, a mirror) is filled under a temporary name and renamed
into place the same way.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import stat
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from pycert.core.errors import InputError, ResourcesExhausted
from pycert.core.gate import named
from pycert.core.limits import MAX_TRACE_BYTES


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file the user named or pycert wrote (:func:`pycert.core.gate.named`)."""
    return named(path).sha256("a file", MAX_TRACE_BYTES)


def missing_dirs(path: Path) -> list[Path]:
    """``path`` and those of its parents that do not exist yet, deepest first: what writing into
    ``path`` would create."""
    out, p = [], Path(path).absolute()
    while not p.exists() and p != p.parent:
        out.append(p)
        p = p.parent
    return out


def remove_empty(dirs: list[Path]) -> None:
    """Remove each of ``dirs`` (deepest first) that is empty, stopping at the first that is not."""
    for d in dirs:
        try:
            d.rmdir()
        except FileNotFoundError:  # never made (a run may stop before it writes into --out)
            continue
        except OSError:  # not empty: what is left is someone's
            return


@contextlib.contextmanager
def time_box(seconds: float, what: str) -> Iterator[None]:
    """Stop the block after ``seconds`` of wall time with :class:`ResourcesExhausted` naming ``what`` (exit 3:
    a check that did not run to its end; in the main thread, where Python delivers signals; elsewhere the
    block runs unbounded)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expired(signum: int, frame: Any) -> None:
        raise ResourcesExhausted(f"{what} took more than {seconds:g} s: stopped (raise --timeout to allow more)")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def certificate_root(cert_dir: Path) -> Path:
    """The directory a certificate's input paths are relative to: the directory that holds it. What
    ``pycert prove --out DIR`` emits (``lean/``, ``inputs/``) is named inside DIR, so DIR can be
    renamed, moved or sent whole; anything else is an external input, named by its file name."""
    return Path(cert_dir).resolve()


def link_or_copy(src: str | Path, dst: str | Path) -> None:
    """A hard link where the file system allows one, else a copy (``shutil.copytree``'s signature)."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM until the block ends, so Ctrl-C cannot split a batch of renames."""
    if threading.current_thread() is not threading.main_thread():
        yield  # Python runs signal handlers in the main thread only: this one is not interrupted
        return
    caught: list[tuple[int, Any]] = []
    old = {s: signal.signal(s, lambda signum, frame: caught.append((signum, frame)))
           for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        if caught:
            signum, frame = caught[0]
            handler = old[signum]
            if callable(handler):
                handler(signum, frame)
            elif handler == signal.SIG_DFL:
                signal.raise_signal(signum)


def _stage(directory: Path, name: str, data: bytes | Iterable[bytes]) -> Path:
    """Write ``data`` (bytes, or chunks of them as they are made) to a hidden temporary in ``directory``
    (same file system: the rename is atomic)."""
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in [data] if isinstance(data, bytes) else data:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


_KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISBLK, "a block device"))


def special(path: Path) -> str | None:
    """What an existing output that is neither a regular file nor a directory is (``a FIFO``, ``a character
    device``, ...), following links; None for anything else, a missing path included."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return next((what for test, what in _KINDS if test(mode)), None if stat.S_ISREG(mode) or stat.S_ISDIR(mode)
                else "not a regular file")


def _write_through(path: Path, what: str, data: bytes | Iterable[bytes]) -> None:
    """Write into an existing FIFO or character device (``-o /dev/null``, a pipe a reader waits on) as it is,
    never replacing it with a file: temporary-then-rename would have swapped the machine's /dev/null for a
    regular file when run as root. A FIFO with no reader is refused rather than waited on; a socket or a
    block device is refused."""
    if what not in ("a FIFO", "a character device"):
        raise InputError(f"exists and is {what}: refusing to write to it or replace it", where=str(path))
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as exc:
        why = "a FIFO no process reads" if exc.errno == errno.ENXIO else (exc.strerror or str(exc))
        raise InputError(f"cannot write: {why}", where=str(path)) from None
    try:
        os.set_blocking(fd, True)
        with os.fdopen(fd, "wb", closefd=False) as f:
            for chunk in [data] if isinstance(data, bytes) else data:
                f.write(chunk)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", where=str(path)) from None
    finally:
        os.close(fd)


def refuse_special(paths: Iterable[Path]) -> None:
    """Refuse, before anything is written, a batch whose target exists and is not a regular file: a batch is
    published by renames, which would replace a device or a FIFO."""
    for path in paths:
        if (what := special(path)) is not None:
            raise InputError(f"exists and is {what}: refusing to replace it", where=str(path))


def publish_files(moves: dict[Path, Path], writes: dict[Path, bytes]) -> None:
    """Move staged files into place (``moves``: source -> target, on one file system) and write
    ``writes``, as one batch: every temporary is written and flushed before the first rename, and the
    renames run with signals held back, so the set is replaced whole or not at all (in order)."""
    refuse_special([*moves.values(), *writes])
    staged: list[tuple[Path, Path]] = []
    try:
        for path in {*moves.values(), *writes}:
            path.parent.mkdir(parents=True, exist_ok=True)
        for path, data in writes.items():
            staged.append((_stage(path.parent, path.name, data), path))
        with signals_deferred():
            for src, final in [*moves.items(), *staged]:
                os.replace(src, final)
            for directory in {final.parent for final in [*moves.values(), *writes]}:
                _fsync_dir(directory)
    finally:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)


def atomic_write_many(files: dict[Path, bytes]) -> None:
    """Write every file at once (:func:`publish_files` with nothing to move)."""
    publish_files({}, files)


def atomic_write(path: Path, data: bytes | Iterable[bytes]) -> None:
    """Write one file by temporary-then-rename: readers see the old file or the new one, never half.
    ``data`` may be an iterable of chunks, written as it yields them (a file bigger than memory).

    Missing parent directories are created. A path that cannot be written (a directory, no
    permission, disk full) is the caller's input error, named by path. An existing FIFO or character device
    is written into as it is (:func:`_write_through`), never replaced; a socket or a block device is refused.
    """
    path = Path(path)
    if not path.name or path.is_dir():
        raise InputError("is a directory: give a file name", where=str(path))
    if (what := special(path)) is not None:
        _write_through(path, what, data)
        return
    with signals_deferred():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = _stage(path.parent, path.name, data)
        except OSError as exc:
            raise InputError(f"cannot write: {exc.strerror or exc}", where=str(path)) from None
        try:
            os.replace(tmp, path)
        except OSError as exc:
            raise InputError(f"cannot write: {exc.strerror or exc}", where=str(path)) from None
        finally:
            tmp.unlink(missing_ok=True)


def publish_dir(target: Path, fill: Callable[[Path], None]) -> bool:
    """Make directory ``target`` by filling a hidden temporary beside it and renaming that into place.

    False when another process published ``target`` first (its copy is kept, ours dropped): the
    contents are a function of the key the name encodes, so either copy serves.
    """
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
    except OSError as exc:  # a cache path that is a file, or a read-only one: the user's to fix
        raise InputError(f"cannot create a directory here ({exc.strerror or exc}); pycert keeps its caches in "
                         "$PYCERT_CACHE, else $XDG_CACHE_HOME/pycert: point it at a writable directory",
                         where=str(target.parent)) from None
    try:
        fill(tmp)
        try:
            tmp.rename(target)
        except OSError:
            if not target.exists():
                raise
            return False
        return True
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def replace_dir(target: Path, fill: Callable[[Path], None], replaceable: Callable[[Path], bool]) -> None:
    """Make directory ``target`` by filling a hidden temporary beside it, then swap it into place: a reader
    sees the old directory or the new one, and a failure or Ctrl-C before the swap leaves the old one as
    it was. An existing ``target`` is replaced only when ``replaceable`` says it is an earlier output of
    the same command (an empty directory always is); anything else is refused before any work."""
    if target.exists() and not target.is_dir():
        raise InputError("is not a directory", where=str(target))
    if target.is_dir() and any(target.iterdir()) and not replaceable(target):
        raise InputError("exists and is not an earlier output of this command: refusing to replace it", where=str(target))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
    except OSError as exc:
        raise InputError(f"cannot write beside it ({exc.strerror or exc})", where=str(target)) from None
    old = target.parent / f".{target.name}.old-{tmp.name.rsplit('-', 1)[-1]}"
    try:
        fill(tmp)
        with signals_deferred():
            if target.exists():
                os.rename(target, old)
            os.rename(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
