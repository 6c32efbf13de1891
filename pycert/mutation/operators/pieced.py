"""The emitted files of a trace in pieces for the capacity mutants (:mod:`pycert.mutation.operators.capacity`):
two pieces and their composition flattened into one batch snippet, with a defect planted in a piece's data or in
what the composition is told, and the split moved off the cut list."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from unittest import mock

import numpy as np

import pycert.analysis.capacity as recipe
from pycert.lean.emit import joints, pieces
from pycert.mutation.operators.base import strip_header


def piece_snippet(refs: list[int], name: str, capacity: int, lie: Callable[[list[pieces.PiecePlan]], None], gap: int = 0) -> str:
    """Two pieces of ``refs`` split at a middle cut (piece 1 starting ``gap`` references after it) and
    their composition, flattened into one batch snippet, with the pieces' plans edited by ``lie`` before
    the composition is written (so that only the composition states the defect)."""
    arr = np.asarray(refs, dtype=np.uint64)
    cuts = recipe.cut_list(arr, capacity)
    y = next(y for y in cuts[len(cuts) // 2:] if gap == 0 or refs[y] != refs[y + gap])
    texts, plans = [], []
    for k, (a, b) in enumerate(((0, y), (y + gap, len(refs) - 1))):
        text, plan = pieces.emit_piece(refs[a:b + 1], "0" * 64, f"{name}_P{k}", capacity, pieces.local_cuts(cuts, a, b))
        texts.append(text)
        plans.append(plan)
    lie(plans)
    glue, _ = pieces.emit_glue(name, "0" * 64, [f"{name}_P0", f"{name}_P1"], plans, len(set(refs)))
    return "\n\n".join("\n".join(line for line in strip_header(t).splitlines()
                                 if line != "module" and not line.startswith("public import "))
                       for t in (*texts, glue))


def joint_moved(plans: list[pieces.PiecePlan]) -> None:
    """The composition told that piece 1 starts with piece 0's last id (piece 1 starts one reference
    later): pieces that do not overlap, which would lose a reuse across the split."""
    plans[1].first = plans[0].last


def _split_off_cut(real: Callable[..., list[int]]) -> Callable[..., list[int]]:
    """The split moved off the cut list: the first joint one reference later, after a reference that is no cut (a
    sound bound, loose: the joint counts as one more cut)."""
    def split(n: int, cuts: list[int], max_refs: int) -> list[int]:
        points = real(n, cuts, max_refs)
        points[1] += 1 if points[1] not in cuts else 2
        return points
    return split


def split_moved() -> Any:
    return mock.patch.object(joints, "split_after_cuts", _split_off_cut(joints.split_after_cuts))


def joint_snippet(refs: list[int], name: str, capacity: int, edit: Callable[[joints.PieceData], joints.PieceData],
            glue: bool = True) -> str:
    """Two pieces both ways of ``refs`` (:mod:`pycert.lean.emit.joints`) joined after the middlemost cut with
    bypass that leaves at least two pairs open, piece 1 emitted from ``edit`` of its data, and (with
    ``glue``) their composition told that piece 1 starts with what piece 0 leaves open (so that only the kernel
    can object), flattened into one batch snippet. A composition over a piece the kernel refused is left out:
    elaborating it after that error overflowed the wasm Lean's JavaScript stack in a batch of mutants."""
    arr = np.asarray(refs, dtype=np.uint64)
    cuts = recipe.cut_list(arr, capacity, admission=True)
    starts, ends = recipe.belady_pairs(arr, capacity, admission=True)
    nxt = joints.next_reference(arr)
    open_at = [int((starts[:y + 1] & (nxt[:y + 1] > y)).sum()) for y in cuts]
    y = min((y for y, k in zip(cuts, open_at) if k >= 2 and y + 1 < len(refs)), key=lambda y: abs(y - len(refs) // 2))
    data = joints.piece_data(arr, cuts, starts, ends, [0, y + 1, len(refs)])
    data[1] = edit(data[1])
    texts, plans = [], []
    for k, d in enumerate(data):
        text, plan = joints.emit_joint_piece(d, "0" * 64, f"{name}_P{k}", capacity)
        texts.append(text)
        plans.append(plan)
    if glue:
        plans[1].opened = plans[0].left_open
        texts.append(joints.emit_joint_glue(name, "0" * 64, [f"{name}_P0", f"{name}_P1"], plans, len(set(refs)))[0])
    return "\n\n".join("\n".join(line for line in strip_header(t).splitlines()
                                 if line != "module" and not line.startswith("public import "))
                       for t in texts)


def open_dropped(d: joints.PieceData) -> joints.PieceData:
    """The piece without the first block open where it starts: that pair's end has no start."""
    return joints.PieceData(refs=d.refs[1:], opened=d.opened[1:], cuts=[c - 1 for c in d.cuts if c >= 1],
                            starts=d.starts[1:], ends=d.ends[1:])


def open_swapped(d: joints.PieceData) -> joints.PieceData:
    """The piece starting with its first two open blocks in the other order: a piece fine on its own."""
    order = np.r_[1, 0, 2:len(d.refs)]
    return joints.PieceData(refs=d.refs[order], opened=[d.opened[1], d.opened[0], *d.opened[2:]], cuts=d.cuts,
                            starts=d.starts[order], ends=d.ends[order])
