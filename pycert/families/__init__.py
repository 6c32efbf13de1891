"""The families of certified claims, one package each: the claim in ``<family>/__init__.py``
(:class:`pycert.families.base.Claim`), the producer in ``<family>/produce.py``
(:class:`pycert.families.base.Producer`).

:data:`FAMILIES` finds every claim, so a new family is its package, its Lean file and its tests, and
nothing else names it. Producers are imported only by what makes certificates (:func:`producer`): they
bring the solvers and the trace engine, which reading a certificate does not need.
"""

from __future__ import annotations

import importlib
import pkgutil

from pycert.families.base import Claim, Producer


def _discover() -> dict[str, Claim]:
    found: dict[str, Claim] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.ispkg:
            claim = importlib.import_module(f"{__name__}.{info.name}").CLAIM
            found[claim.name] = claim
    return dict(sorted(found.items()))


FAMILIES: dict[str, Claim] = _discover()
"""Family name -> claim, in name order (the order ``pycert prove all`` runs them)."""


def producer(name: str) -> Producer:
    """The producer of family ``name`` (its package's ``produce`` module)."""
    return importlib.import_module(f"{type(FAMILIES[name]).__module__}.produce").PRODUCER
