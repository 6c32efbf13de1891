"""Block ids of any JSON scalar engines write, each made a 64-bit reference exactly: two ids are one block
iff they are the same JSON value.

Engines and gateways store a block's hash as an integer (signed, unsigned, or past 64 bits) or as a string
(hex, with or without ``0x``, or any other text). "The same JSON value" is JSON's own equality: a string
equals a string of the same characters, an integer an integer of the same value, and a string never
equals an integer (``"0x1f"``, ``"1f"``, ``"31"`` and ``31`` are four blocks; so are ``"1f"`` and ``"1F"``, and
``"1f"`` and ``"01f"``). A float, ``true``, ``false`` and ``null`` are refused: a writer that printed an id as a
float may already have merged two ids past 2^53, and the others name no block.

Each id is encoded as a *kind* and a 64-bit *value* such that (kind, value) determines the id:

=========================================  ==============  ==========================================
id                                         kind            value
=========================================  ==============  ==========================================
integer in [0, 2^64)                       0 (plain)       the integer
integer in (-2^64, 0)                      1               ``-id - 1``
``[0x|0X]`` then 1-16 hex digits, one      a kind for each the digits read in base 16
case (digits alone count as lower)         (prefix, case,
                                           digit count)
any other string or integer                2 (strings),    its index in a table of the distinct
                                           3 (integers)    such ids (exact interning)
=========================================  ==============  ==========================================

A hex string is known by its prefix, its case and its digit count, so within one kind the values are the
ids. A trace whose ids are all of one kind (the usual case: every id an unsigned 64-bit integer, or every
id 16 lower-case hex digits) keeps the values as its references; a trace of several kinds is renumbered
densely, kind by kind (:func:`renumber`: a sort of each kind's values, about 25 bytes a reference at its
peak, never a table per id). Only ids of kinds 2 and 3 are held in a Python table, about 100-150 bytes
for each distinct one (BENCHMARKS.md has what 10^7 references of each kind cost).
"""

from __future__ import annotations

import json
import re
from array import array
from dataclasses import dataclass, field

import numpy as np

from pycert.core.errors import InputError

PLAIN, NEGATIVE, TEXT, BIG = 0, 1, 2, 3
_HEX_BASE = 4
_PREFIXES = ("", "0x", "0X")
_MAX_DIGITS = 16
_HEX = re.compile(r"(0[xX])?([0-9a-f]{1,16}|[0-9A-F]{1,16})")
_UPPER = re.compile(r"[A-F]")


def hex_kind(prefix: str, upper: bool, digits: int) -> int:
    """The kind of a hex id with this prefix, case and digit count (1 .. 16)."""
    return _HEX_BASE + (_PREFIXES.index(prefix) * 2 + upper) * _MAX_DIGITS + digits - 1


@dataclass
class BlockIds:
    """The references of a trace as they are read: 64-bit values, their kinds once an id is not a plain
    unsigned integer (None until then: a trace of plain ids costs nothing more), and the tables of the
    ids no kind encodes."""

    values: array = field(default_factory=lambda: array("Q"))
    kinds: array | None = None
    texts: dict[str, int] = field(default_factory=dict)
    bigs: dict[int, int] = field(default_factory=dict)

    def extend(self, ids: list, where: str, field_name: str) -> int:
        """Append one request's ids (a JSON list of scalars); how many there were."""
        if set(map(type, ids)) <= {int} and (not ids or (min(ids) >= 0 and max(ids) < 1 << 64)):
            self.values.extend(ids)  # the common case, checked without a per-id Python branch
            if self.kinds is not None:
                self.kinds.extend(bytes(len(ids)))
            return len(ids)
        if self.kinds is None:
            self.kinds = array("B", bytes(len(self.values)))
        for k, v in enumerate(ids):
            kind, value = self.encode(v, where, f"{field_name}[{k}]")
            self.values.append(value)
            self.kinds.append(kind)
        return len(ids)

    def encode(self, v: object, where: str, name: str) -> tuple[int, int]:
        """The (kind, value) of one id (the module docstring's table)."""
        if isinstance(v, bool) or not isinstance(v, int | str):
            what = "a float" if isinstance(v, float) else "not a block id"
            raise InputError(f"{name} is {what}: {json.dumps(v)[:40]} (a block id is a JSON string or integer; a float may "
                             "already have merged two ids)", where=where)
        if isinstance(v, int):
            if 0 <= v < 1 << 64:
                return PLAIN, v
            if -(1 << 64) < v < 0:
                return NEGATIVE, -v - 1
            return BIG, self.bigs.setdefault(v, len(self.bigs))
        if (m := _HEX.fullmatch(v)) is not None:
            digits = m.group(2)
            return hex_kind(m.group(1) or "", _UPPER.search(digits) is not None, len(digits)), int(digits, 16)
        return TEXT, self.texts.setdefault(v, len(self.texts))

    def references(self) -> np.ndarray:
        """The trace's references (uint64): the values, renumbered when the ids are of several kinds."""
        values = np.frombuffer(self.values, dtype=np.uint64).copy()
        if self.kinds is None:
            return values
        kinds = np.frombuffer(self.kinds, dtype=np.uint8)
        return renumber(values, kinds)


def renumber(values: np.ndarray, kinds: np.ndarray) -> np.ndarray:
    """References such that two are equal iff their (kind, value) pairs are: the values themselves when there
    is one kind, else dense ids, each kind's in a range of its own (in place over ``values``)."""
    present = np.flatnonzero(np.bincount(kinds, minlength=256))
    if len(present) <= 1:
        return values
    offset = 0
    for kind in present.tolist():
        mask = kinds == kind
        these = values[mask]
        distinct = np.unique(these)
        values[mask] = np.searchsorted(distinct, these).astype(np.uint64) + np.uint64(offset)
        offset += len(distinct)
        del mask, these, distinct
    return values
