"""The requests layout: one JSON object a request, as a team's own traffic is exported.

A line needs one of two fields, the same one on every line:

- ``hash_ids``: the request's block ids in order, each a JSON string or integer of any size (engines
  store block hashes as hex strings, signed or unsigned integers, some past 64 bits), made references by
  :class:`~pycert.data.formats.block_ids.BlockIds`: two ids are one block iff they are the same JSON value;
- ``prompt_token_ids``: the prompt's tokens, cut into blocks here exactly as the prompts layout cuts them
  (:mod:`pycert.data.formats.prompts`: full blocks of ``--block-tokens``, named by their whole prefix).

And may have ``timestamp`` (a non-negative number in any unit, or an ISO 8601 date and time: only the order
is read), ``tenant`` (a string; every request or none), ``session`` and ``host`` (a string or an integer;
any request may leave either out). Nothing else is read, and any other field is left alone, so a gateway's
or an engine's log line can be read as it is once it has one of the two.
"""

from __future__ import annotations

from collections.abc import Iterable

from pycert.core.errors import InputError
from pycert.data.formats import prompts
from pycert.data.formats.fields import TIMESTAMP, Columns, check, shown
from pycert.data.formats.hash_ids import HASH_IDS
from pycert.data.formats.source import json_object

NAME = "requests"
BLOCKS = (HASH_IDS, prompts.TOKENS)
"""The fields a request's blocks come from: one of them, the same on every line."""


def blocks_field(obj: dict, where: str) -> str:
    """Which of :data:`BLOCKS` a line gives its blocks in, or the one-line error."""
    has = [f for f in BLOCKS if f in obj]
    if len(has) == 1:
        return has[0]
    if has:
        raise InputError(f"both {HASH_IDS!r} and {prompts.TOKENS!r}: a request gives its blocks one way (the requests "
                         "layout)", where=where)
    raise InputError(f"missing field {HASH_IDS!r} or {prompts.TOKENS!r}: a request needs its block ids or its prompt's "
                     "token ids (the requests layout)", where=where)


def read(lines: Iterable[tuple[int, bytes]], name: str, block_tokens: int) -> tuple[Columns, bool]:
    """Every line of a requests trace, checked; and whether its blocks were cut from token ids (at
    ``block_tokens`` tokens a block) rather than named by ``hash_ids``."""
    cols = Columns()
    table: dict[tuple[int, bytes], int] = {}
    chosen: tuple[str, int] | None = None
    for lineno, line in lines:
        where = f"{name}:{lineno}"
        obj = json_object(lineno, line, name)
        given = blocks_field(obj, where)
        if chosen is None:
            chosen = (given, lineno)
        elif given != chosen[0]:
            raise InputError(f"field {given!r}, but line {chosen[1]} gives its blocks as {chosen[0]!r}: every request "
                             "gives them the same way (ids of one kind name one block)", where=where)
        if TIMESTAMP in obj:
            check(obj, TIMESTAMP, "time", where)
        if given == HASH_IDS:
            ids = obj[HASH_IDS]
            if not isinstance(ids, list):
                raise InputError(f"field 'hash_ids' must be a list of block ids, got {shown(ids)}", where=where)
            cols.request(ids, 0, obj, lineno, where, labelled=True)
        else:
            toks = prompts.token_ids(obj, where)
            cols.request(prompts.blocks(toks, block_tokens, table), len(toks), obj, lineno, where,
                         field_name=prompts.TOKENS, labelled=True)
    return cols, chosen is not None and chosen[0] == prompts.TOKENS
