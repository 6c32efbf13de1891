"""The families of certified claims, one module each (:class:`pycert.families.base.Family`).

Every module of this package but ``base`` defines one family as ``FAMILY``; :data:`FAMILIES` finds
them all, so a new family is its module, its Lean file and its tests, and nothing else names it.
"""

from __future__ import annotations

import importlib
import pkgutil

from pycert.families.base import Family


def _discover() -> dict[str, Family]:
    found: dict[str, Family] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name == "base":
            continue
        family = importlib.import_module(f"{__name__}.{info.name}").FAMILY
        found[family.name] = family
    return dict(sorted(found.items()))


FAMILIES: dict[str, Family] = _discover()
"""Family name -> family, in name order (the order ``pycert prove all`` runs them)."""
