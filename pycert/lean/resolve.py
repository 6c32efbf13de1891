"""Which Lean backend a command runs on: ``--backend``, else ``$PYCERT_LEAN``, else a native Lake install
when ``lake`` is on PATH, else the embedded wasm Lean.

Above both backends (it imports them) and below the build's entry points (:mod:`pycert.lean.build`),
so that no backend imports what chooses among them.
"""

from __future__ import annotations

import os

from pycert.core.errors import InputError, ToolchainMissing
from pycert.lean.backend import KINDS, Backend
from pycert.lean.native import find_native
from pycert.lean.toolchain import no_backend
from pycert.lean.wasm import find_wasm


def resolve(requested: str | Backend | None = None) -> Backend:
    """The backend to use: ``requested``, else ``$PYCERT_LEAN``, else native if on PATH, else wasm."""
    if isinstance(requested, Backend):
        return requested
    choice = requested or os.environ.get("PYCERT_LEAN") or "auto"
    if choice not in ("auto", *KINDS):
        raise InputError(f"unknown Lean backend {choice!r}: expected native or wasm")
    if choice in ("auto", "native"):
        if native := find_native():
            return native
        if choice == "native":
            raise ToolchainMissing("the native backend needs `lake` and `lean` on PATH (an elan install)")
    if wasm := find_wasm():
        return wasm
    raise ToolchainMissing(no_backend())
