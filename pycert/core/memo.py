"""Results kept by the content of everything that made them, so a run with nothing changed is fast.

Like the Lean build cache (:mod:`pycert.lean.build`), an entry is keyed by a hash of all it depends on:
the input bytes, the parameters, the versions of the libraries that computed it and the source of
the pycert code that did (:func:`code_sha256`), so any change to any of them misses. Entries live in
``<cache>/memo/<kind>/`` and are written atomically; one that no longer reads as the model is a miss.
``$PYCERT_MEMO=0`` turns the memo off (every result computed afresh).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import os
from collections.abc import Callable, Hashable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from pycert.core.files import atomic_write
from pycert.core.resources import cache_dir

M = TypeVar("M", bound=BaseModel)


@functools.cache
def code_sha256(*packages: str) -> str:
    """sha256 of the Python sources of ``packages`` (dotted names), file names and bytes, in order."""
    h = hashlib.sha256()
    for package in packages:
        spec = importlib.util.find_spec(package)
        roots = list(spec.submodule_search_locations or []) if spec else []
        files = sorted(p for root in roots for p in Path(root).rglob("*.py")) or ([Path(spec.origin)] if spec and spec.origin else [])
        for path in files:
            h.update(f"{package}:{path.name}:{path.stat().st_size}\n".encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def key_of(parts: Sequence[str | bytes]) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def enabled() -> bool:
    return os.environ.get("PYCERT_MEMO", "1") != "0"


def memo(kind: str, parts: Sequence[str | bytes], model: type[M], compute: Callable[[], M]) -> tuple[M, bool]:
    """``compute()``, or the value kept for the same ``parts``; the flag says whether it was kept."""
    path = cache_dir() / "memo" / kind / f"{key_of(parts)}.json"
    if enabled() and path.is_file():
        try:
            return model.model_validate_json(path.read_bytes()), True
        except (OSError, ValidationError):
            pass
    value = compute()
    if enabled():
        atomic_write(path, value.model_dump_json().encode())
    return value, False


# ---------------------------------------------------------------------------- kept for one run

_SESSION: dict[tuple[str, Hashable], object] | None = None
T = TypeVar("T")


@contextlib.contextmanager
def session() -> Iterator[None]:
    """A scope (one prove or one verify) within which :func:`kept` values are shared: the certificates of
    a curve of capacities rest on one instance file and one trace's engines, computed once, not once per
    certificate. Nothing outlives the scope, so code patched between runs (the mutation campaign swaps
    an engine in the same process) is never answered from an earlier run. Nested scopes share the outer one."""
    global _SESSION
    if _SESSION is not None:
        yield
        return
    _SESSION = {}
    try:
        yield
    finally:
        _SESSION = None


def kept(kind: str, key: Hashable, compute: Callable[[], T]) -> T:
    """``compute()``, or, inside a :func:`session`, the value computed there for the same ``kind`` and
    ``key`` (which must name everything the value depends on); outside one, always computed."""
    if _SESSION is None:
        return compute()
    slot = (kind, key)
    if slot not in _SESSION:
        _SESSION[slot] = compute()
    return _SESSION[slot]  # type: ignore[return-value]
