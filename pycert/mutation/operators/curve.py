"""A curve of capacities in one instance (issue 39): one capacity's headline literal one off, a running count
the kernel computes given one plane too few, and a capacity checked with another capacity's witness. Each
must be rejected by the kernel at the capacity it is planted in, for its reason: the headline no longer
follows from that capacity's checks, ``cutsOK`` refuses a count that wrapped (``Curve.runP`` is not
trusted), the cover test finds more pairs open than the capacity holds."""

from __future__ import annotations

import random
from typing import Any

import numpy as np

import pycert.analysis.capacity as recipe
from pycert.lean.emit import capacity as emit
from pycert.lean.emit import curve
from pycert.mutation.lean_batch import Snippet
from pycert.mutation.operators.base import KERNEL_REJECTS, Operator, Planned, hash_ids, strip_header, sub_once

TARGET = "pycert/lean/emit/curve.py"
CAPACITIES = [1, 2, 4]
"""The curve of every mutant; the defect goes into the middle capacity, so that it is flanked by capacities
that still check."""


def _trace() -> list[int]:
    rng = random.Random(39)
    return hash_ids([rng.randrange(14) for _ in range(180)])


def _points(refs: list[int], witness_from: dict[int, int] | None = None) -> list[curve.Point]:
    """Both models at each capacity of :data:`CAPACITIES`; ``witness_from`` gives a capacity the witness of
    another (its pairs, without bypass)."""
    arr = np.asarray(refs, dtype=np.uint64)
    out = []
    for c in CAPACITIES:
        pairs = recipe.belady_pairs(arr, (witness_from or {}).get(c, c))
        admitted = emit.Side(recipe.cut_list(arr, c, admission=True), recipe.belady_pairs(arr, c, admission=True))
        out.append(curve.Point(c, emit.Side(recipe.cut_list(arr, c), pairs), admitted, False))
    return out


def _curve(name: str, edit: Any = None, witness_from: dict[int, int] | None = None) -> str:
    """The emitted curve of :func:`_trace` at :data:`CAPACITIES`, its text edited by ``edit(text, plans)``
    (a list of (old, new), each once)."""
    refs = _trace()
    text, plans = curve.emit_curve(refs, "0" * 64, name, _points(refs, witness_from))
    text = strip_header(text)
    for old, new in (edit(text, plans) if edit else []):
        text = sub_once(text, old, new)
    return text


def _one_off(text: str, plans: list[emit.Plan]) -> list[tuple[str, str]]:
    p = plans[1]
    return [(f"Optima trace {p.refs} {p.capacity} {p.witness_hits} ", f"Optima trace {p.refs} {p.capacity} {p.witness_hits + 1} ")]


def _narrow(text: str, plans: list[emit.Plan]) -> list[tuple[str, str]]:
    """The middle capacity's running count of starts in one plane fewer than its count needs."""
    start = text.index(f"namespace {curve.section(plans[1].capacity)}\n")
    line = next(x for x in text[start:].splitlines() if x.startswith("noncomputable def AS : List Nat := Curve.runP "))
    *head, width, plane = line.split(" ")
    return [(f"{line}\n", f"{' '.join(head)} {int(width) - 1} {plane}\n")]


class Curve(Operator):
    """Plant defects in a curve of capacities in one instance, each in its middle capacity: its headline
    literal one off, a running count one plane too narrow, another capacity's witness (the kernel must
    reject each at that capacity, for its reason)."""

    name = "curve"

    def plan(self, ctx: Any) -> list[Planned]:
        mid = CAPACITIES[1]
        self.add("curve-literal-one-off", "lean-kernel", f"one capacity of a curve ({mid} blocks of {CAPACITIES}) states one "
                 "hit more than its cut list and its witness give", f"kernel error in C{mid}.headline", TARGET,
                 instance=Snippet("curve-literal-one-off", _curve("Mut_curve_one_off", _one_off), f"C{mid}.headline",
                                  KERNEL_REJECTS))
        self.add("curve-count-narrow", "lean-kernel", f"the running count of the starts at {mid} blocks computed by the "
                 "kernel in one plane fewer than it needs (the count wraps)", f"kernel error in C{mid}.starts_ok", TARGET,
                 instance=Snippet("curve-count-narrow", _curve("Mut_curve_narrow", _narrow), f"C{mid}.starts_ok",
                                  KERNEL_REJECTS))
        self.add("curve-witness-of-another", "lean-kernel", f"the capacity of {mid} blocks checked with the witness of "
                 f"{CAPACITIES[2]} blocks (more pairs open than {mid} blocks hold)", f"kernel error in C{mid}.cover_ok",
                 TARGET, instance=Snippet("curve-witness-of-another", _curve("Mut_curve_other", None, {mid: CAPACITIES[2]}),
                                          f"C{mid}.cover_ok", KERNEL_REJECTS))
        return self.plans
