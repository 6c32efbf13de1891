"""The Lean backend interface, which the native Lake install and the embedded wasm Lean both implement.

A backend reports what it is (:meth:`Backend.info`, recorded in every certificate), compiles a set
of modules (:meth:`Backend.build`: each one's verdict and the tree of compiled ``.olean`` files),
says where its own ``Init``/``Std``/``Lean`` files are (:meth:`Backend.toolchain_library`, the
audit's search path), and asks Lean's own ``#print axioms`` where it can (:meth:`Backend.print_axioms`:
the answers, which the audit compares with its own). Nothing outside :mod:`pycert.lean.native` and
:mod:`pycert.lean.wasm` asks which backend it holds; :mod:`pycert.lean.resolve` picks one.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import BaseModel

from pycert.lean.diagnostics import CheckResult
from pycert.lean.sources import Unit

Kind = Literal["native", "wasm"]
KINDS: tuple[Kind, ...] = ("native", "wasm")
_VERSION = re.compile(r"Lean \(version ([^,)]+)(?:[^)]*?\bcommit ([0-9a-fA-F]+))?")


class ToolchainInfo(BaseModel):
    """What ``pycert toolchain`` reports; recorded in every certificate."""

    backend: Kind
    lean_version: str
    lean_commit: str | None = None
    node_version: str | None = None
    node: str | None = None
    lean_js: str | None = None
    lean_lib: str | None = None
    lean: str | None = None
    lake: str | None = None
    cache_dir: str | None = None
    library: str | None = None
    """The Lean library pycert proves with, and its content hash (filled in by ``pycert toolchain``)."""
    library_sha256: str | None = None


def parse_lean_version(text: str) -> tuple[str, str | None] | None:
    """(version, commit) from ``lean --version`` output, e.g. ``Lean (version 4.28.0, x86_64-unknown-linux-gnu,
    commit 38f3c0c4..., Release)``; None when no such line is there."""
    m = _VERSION.search(text)
    return (m.group(1).strip(), m.group(2)) if m else None


class PrintedAxioms(BaseModel):
    """Lean's own ``#print axioms`` answer per theorem (theorem -> axioms), or why Lean was not asked."""

    answers: dict[str, list[str]] | None = None
    not_run: str = ""


@dataclass(frozen=True)
class BuildOptions:
    jobs: int
    timeout: float
    progress: Callable[[str], None]
    daemon: bool = False
    """Whether small modules may go to the warm checker (:mod:`pycert.lean.daemon`), where the backend has one."""


class Backend(ABC):
    kind: ClassVar[Kind]

    @abstractmethod
    def info(self) -> ToolchainInfo: ...

    @abstractmethod
    def toolchain_library(self) -> Path:
        """The directory holding the toolchain's own ``.olean`` files (``Init/Prelude.olean`` ...)."""

    @abstractmethod
    def build(self, library: Path | None, units: list[Unit], options: BuildOptions) -> tuple[list[CheckResult], Path]:
        """Compile ``units`` (the modules of ``library``, if given, and standalone files): one verdict per
        unit, in an order where each comes after what it imports, and the tree of compiled files."""

    def cache_identity(self) -> str | None:
        """What the build cache keys this backend's compiled files by (its toolchain), or None when the
        backend keeps its own (Lake)."""
        return None

    @abstractmethod
    def print_axioms(self, project: Path | None, modules: list[str], theorems: list[str],
                     timeout: float) -> PrintedAxioms:
        """Lean's own ``#print axioms`` for ``theorems`` of ``modules`` (built in the Lake project
        ``project``), where this backend can run it; else why not."""
