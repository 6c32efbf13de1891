"""numba's ``njit`` where the ``fast`` extra installed numba, else the plain Python function.

The compiled kernels (Belady's one-pass curve, the optimum at a capacity, the Beneš network) are sequential
loops over numpy arrays that numba compiles to machine code; without numba the same functions run as
Python, with the same exact results, about 30 times slower (the Belady curve of Mooncake's conversation
trace, 288,500 references: 0.6 s compiled, 17 s as Python; BENCHMARKS.md). So the trace commands need no
compiler to install (the slim install, docs/install.md), and a large trace says which extra makes it fast.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from pycert.core.resources import cache_dir

try:  # the fast extra: absent from the slim install, where the kernels run as Python
    from numba import njit as _njit
    from numba.core import config as _config
except ImportError:
    _njit = None

COMPILED = _njit is not None
"""Whether the kernels are compiled (numba installed)."""
SLOW_REFS = 1_000_000
"""Traces from this many references on get a note that the fast extra would compile the kernels."""
if COMPILED and not os.environ.get("NUMBA_CACHE_DIR"):
    # numba keeps compiled kernels beside their module (inside site-packages when installed) unless told
    _config.CACHE_DIR = str(cache_dir() / "numba")


def njit(*args: Any, **kwargs: Any) -> Any:
    """``numba.njit`` (``@njit`` or ``@njit(cache=True, ...)``), or with numba absent the function itself."""
    if _njit is not None:
        return _njit(*args, **kwargs)
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]

    def keep(fn: Callable[..., Any]) -> Callable[..., Any]:
        return fn
    return keep


def slow_note(refs: int) -> str | None:
    """What to say before a kernel runs as Python over ``refs`` references (None: compiled, or quick anyway)."""
    if COMPILED or refs < SLOW_REFS:
        return None
    return (f"numba is not installed (the fast extra), so the compiled kernels run as plain Python, about 30 times "
            f"slower on these {refs:,} references; install pycert with its fast extra to compile them")
