"""Where pycert's own files are, and where it keeps caches.

Proving needs files that live at the repository's top level (the design card's layout): the Lean
library ``lean/``, ``lakefile.lean``, ``lean-toolchain``, the committed pooling instance, the
certificate schema and the committed certificates (the mutation campaign's reference corpus). A
wheel carries them as package data under ``pycert/_data`` in the same layout (``setup.py`` copies
them there at build time); a checkout (an editable install, or the source tree on ``sys.path``)
reads them where they are. :func:`data_root` is the one place that decides which; everything else
asks it (or :func:`library_dir`) and never computes a path from its own module file.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import os
import stat
import tempfile
from pathlib import Path

from pycert.core.errors import InputError, ToolchainMissing

DATA_DIR = "_data"
"""The package-data folder inside ``pycert`` in a built wheel."""
SHIPPED = ("lean", "lakefile.lean", "lean-toolchain", "certificates")
"""What the wheel carries, as paths relative to the repository root (and to ``pycert/_data``)."""
NOT_SHIPPED = ("certificates/lean/derived", "certificates/runs")
"""Derived from local traces (full-resolution data, or a local run's record): never in a wheel."""
_MARKERS = ("lakefile.lean", "lean-toolchain", "lean/Pycert.lean")


def _is_data_root(path: Path) -> bool:
    return all((path / m).is_file() for m in _MARKERS)


@functools.cache
def checkout_root() -> Path | None:
    """The repository root when pycert runs from a checkout of it, else None (an installed wheel)."""
    package = importlib.resources.files("pycert")
    if not isinstance(package, Path):
        return None
    parent = package.resolve().parent
    return parent if _is_data_root(parent) and (parent / "pyproject.toml").is_file() else None


@functools.cache
def data_root() -> Path:
    """The directory holding ``lean/``, the Lake files and ``certificates/``:
    the checkout, else the installed package data."""
    if (root := checkout_root()) is not None:
        return root
    data = importlib.resources.files("pycert") / DATA_DIR
    if not isinstance(data, Path) or not _is_data_root(data):
        raise ToolchainMissing(f"pycert's package data is missing ({data}): reinstall pycert from a wheel or "
                               "run it from a checkout")
    return data


def library_dir() -> Path:
    """The Lean library pycert proves with (``lean/``)."""
    return data_root() / "lean"


def package_parent() -> Path:
    """The directory this ``pycert`` package was imported from: what a child Python puts first on its path to
    run this same pycert (the warm checker's daemon)."""
    return Path(str(importlib.resources.files("pycert"))).resolve().parent


def worker_source() -> Path:
    """The Lean program of pycert's Lean worker (``pycert.lean.worker``): package code, in every install."""
    return Path(str(importlib.resources.files("pycert.lean") / "PycertWorker.lean"))


def committed_instance() -> Path:
    """The committed pooling instance."""
    return data_root() / "certificates" / "inputs" / "committed.json"


def schema_path() -> Path:
    """The JSON Schema of ``pycert-cert/1``."""
    return data_root() / "certificates" / "schema" / "pycert-cert-1.schema.json"


def committed_certificates() -> Path:
    """The committed certificates, their manifest and the inputs that live beside them."""
    return data_root() / "certificates"


def shared_traces_dir() -> Path | None:
    """Where the README's Data section keeps the Mooncake traces, ``../shared/traces/mooncake-fast25/``
    beside a checkout, when pycert runs from one (else None): where pycert looks for a committed
    certificate's trace to name it in a command."""
    root = checkout_root()
    return None if root is None else root.parent / "shared" / "traces" / "mooncake-fast25"


def default_certificate_dir() -> Path:
    """Where ``pycert prove`` writes without ``--out``: the checkout's ``certificates/``, else
    ``certificates/`` in the working directory (never into an installed package)."""
    root = checkout_root()
    return root / "certificates" if root is not None else Path("certificates")


def cache_dir() -> Path:
    """``$PYCERT_CACHE``, else ``$XDG_CACHE_HOME/pycert``, else ``~/.cache/pycert``: the wasm toolchain,
    the Lean build cache, Lake's build tree and numba's compiled kernels."""
    if env := os.environ.get("PYCERT_CACHE"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pycert"


def library_files(library: Path) -> list[tuple[str, Path]]:
    """The library's Lean sources as (POSIX path relative to ``library``, file), sorted by path."""
    return sorted((p.relative_to(library).as_posix(), p) for p in library.rglob("*.lean") if p.is_file())


def library_sha256(library: Path | None = None) -> str:
    """The library's content hash: sha256 of the lines ``<sha256 of the file>  <path>``, one per Lean
    file, sorted by path (bytewise). The same as, in ``lean/``,
    ``find . -name '*.lean' -printf '%P\\n' | LC_ALL=C sort | xargs sha256sum | sha256sum``."""
    lines = []
    for rel, path in library_files(library or library_dir()):
        lines.append(f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {rel}\n")
    return hashlib.sha256("".join(lines).encode()).hexdigest()


VISIBLE_ROOTS = ("/tmp", "/home")
"""The only directories the wasm Lean process can open (its Node file-system mounts)."""


def scratch_root() -> Path:
    """A per-user directory the wasm process can see, for staging sources and mirrors."""
    root = Path(tempfile.gettempdir())
    if not is_visible(root):
        root = Path("/tmp")
    # /tmp is everyone's: a directory of this name that another user made, or may write, could hold a planted
    # toolchain loader or olean that verify --kernel would run or read
    return private_dir(root / f"pycert-{os.getuid()}", "pycert's scratch directory",
                       "remove it, or set TMPDIR to a directory of your own under /tmp or /home")


def private_dir(path: Path, what: str, remedy: str) -> Path:
    """``path``, made with mode 0700 if missing, and refused unless it is a directory of this user's that no one
    else may enter or write (``what`` names it, ``remedy`` says what to do, in the refusal)."""
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        st = os.lstat(path)
    except OSError as exc:
        raise InputError(f"cannot make {what}: {exc.strerror or exc}", where=str(path)) from None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise InputError(f"{what} is not private (it must be a directory owned by uid {os.getuid()} with mode 0700; it "
                         f"is {stat.filemode(st.st_mode)}, owned by uid {st.st_uid}): refused; {remedy}", where=str(path))
    return path


def is_visible(path: Path) -> bool:
    """Whether the wasm Lean process can open ``path`` (it mounts only /tmp and /home)."""
    resolved = path.resolve()
    return any(resolved == Path(r) or Path(r) in resolved.parents for r in VISIBLE_ROOTS)
