"""The JSON Lines layouts whose requests carry their block ids (``hash_ids``) and prompt length
(``input_length``): Mooncake FAST'25, Qwen-Bailian (USENIX ATC'25) and AIPerf / Dynamo's
``mooncake_trace``. One reader serves the three; each :class:`HashIdsLayout` names the fields its
publisher documents, with what each must hold, and the block size its writers used.

Each id in ``hash_ids`` is one reference to a prefix block, and equal ids are the same reusable block.
Every documented field is checked on every line, whether or not a figure reads it, so that a file
of another layout, or a damaged one, is refused at its first wrong line rather than read as something
nobody wrote.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pycert.core.errors import InputError
from pycert.data.formats.blocks import LengthRule
from pycert.data.formats.fields import Columns, check, missing, shown
from pycert.data.formats.source import json_object

HASH_IDS = "hash_ids"


@dataclass(frozen=True)
class HashIdsLayout:
    name: str
    block_tokens: int
    """The block size the publisher documents."""
    required: tuple[tuple[str, str], ...]
    """(field, kind of :data:`pycert.data.formats.fields.KINDS`), besides ``hash_ids``."""
    optional: tuple[tuple[str, str], ...] = ()
    other_inputs: tuple[str, ...] = ()
    """Fields that make a line another kind of request, with no block ids pycert could read."""


MOONCAKE = HashIdsLayout("mooncake", 512, required=(("input_length", "count"), ("output_length", "count")),
                         optional=(("timestamp", "ms"),))
"""Mooncake FAST'25 (its README: 512-token blocks, ``timestamp`` in milliseconds)."""
BAILIAN = HashIdsLayout("bailian", 16, required=(
    ("chat_id", "int"), ("parent_chat_id", "parent"), ("timestamp", "seconds"), ("input_length", "count"),
    ("output_length", "count"), ("type", "text"), ("turn", "positive")))
"""Qwen-Bailian (alibaba-edu/qwen-bailian-usagetraces-anon's README: every record has these eight
fields; ``hash_ids`` are salted SipHash ids of 16-token blocks; ``timestamp`` in seconds)."""
AIPERF = HashIdsLayout("aiperf", 512, required=(("input_length", "count"),), optional=(
    ("output_length", "count"), ("timestamp", "ms"), ("delay", "ms"), ("session_id", "text")),
    other_inputs=("text_input", "messages"))
"""AIPerf's ``mooncake_trace`` custom dataset (its ``MooncakeTrace`` model: ``timestamp`` or ``delay`` in
milliseconds, ``session_id``; its block size flag defaults to 512 tokens)."""

LAYOUTS = {layout.name: layout for layout in (MOONCAKE, BAILIAN, AIPERF)}


def block_ids(obj: dict, where: str) -> list[int]:
    """``obj["hash_ids"]``: a list of integers in [0, 2^64)."""
    ids = obj[HASH_IDS]
    if not isinstance(ids, list):
        raise InputError(f"field 'hash_ids' must be a list of block ids, got {shown(ids)}", where=where)
    if set(map(type, ids)) <= {int} and (not ids or (min(ids) >= 0 and max(ids) < 1 << 64)):
        return ids  # the common case, checked without a per-id Python branch
    for k, v in enumerate(ids):
        if not isinstance(v, int) or isinstance(v, bool):
            raise InputError(f"hash_ids[{k}] is not an integer: {shown(v)}", where=where)
        if v < 0:
            raise InputError(f"hash_ids[{k}] is negative: {v}", where=where)
        if v >= 1 << 64:
            raise InputError(f"hash_ids[{k}] does not fit in 64 bits: {v}", where=where)
    return ids


def read(layout: HashIdsLayout, lines: Iterable[tuple[int, bytes]], name: str) -> tuple[Columns, LengthRule]:
    """Every line of a ``layout`` trace, checked; the requests and what their lengths say of the block size."""
    cols, rule = Columns(), LengthRule()
    required = tuple(f for f, _ in layout.required)
    for lineno, line in lines:
        where = f"{name}:{lineno}"
        obj = json_object(lineno, line, name)
        if HASH_IDS not in obj and (other := next((f for f in layout.other_inputs if f in obj), None)):
            raise InputError(f"a request given as {other!r} has no block ids: pycert reads requests with "
                             "'input_length' and 'hash_ids'", where=where)
        missing(obj, required + (HASH_IDS,), where, layout.name)
        for f, kind in layout.required + tuple(o for o in layout.optional if o[0] in obj):
            check(obj, f, kind, where)
        ids = block_ids(obj, where)
        tokens = int(obj["input_length"])
        cols.request(ids, tokens, obj, lineno, where)
        rule.add(lineno, tokens, len(ids))
    return cols, rule
