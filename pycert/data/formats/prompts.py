"""Prompts as token ids (``{"prompt_token_ids": [...]}``, vLLM's name), cut into the blocks a prefix
cache would keep.

A block is ``B`` consecutive tokens from the prompt's start, and only full blocks are references: a
partial last block is never reused by vLLM or SGLang. Two blocks are the same block iff their prompts
agree on every token up to the block's end, as vLLM's chained block hash has it (each block's hash
covers its parent's). Ids are made by **exact interning**, not hashing: a block is the pair (its
parent block's id, its own ``B`` tokens), and a table hands out the next integer to each new pair, so
by induction two blocks get one id iff their whole prefixes are equal. Nothing can collide, and the
ids (0, 1, 2, ... in order of first appearance) depend on the file alone. The table holds each
distinct block's tokens once: about ``8·B`` bytes a distinct block.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from pycert.core.errors import InputError
from pycert.data.formats.fields import Columns, check, missing, shown
from pycert.data.formats.source import json_object

TOKENS = "prompt_token_ids"
DEFAULT_BLOCK_TOKENS = 16
"""vLLM's default block size."""
_ROOT = -1


def token_ids(obj: dict, where: str) -> np.ndarray:
    toks = obj[TOKENS]
    if not isinstance(toks, list):
        raise InputError(f"field {TOKENS!r} must be a list of token ids, got {shown(toks)}", where=where)
    if not (set(map(type, toks)) <= {int} and (not toks or (min(toks) >= 0 and max(toks) < 1 << 64))):
        for k, v in enumerate(toks):  # the common case above is checked without a per-token Python branch
            if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < 1 << 64:
                raise InputError(f"{TOKENS}[{k}] must be a token id, an integer in [0, 2^64), got {shown(v)}",
                                 where=where)
    return np.array(toks, dtype=np.uint64)


def blocks(toks: np.ndarray, block_tokens: int, table: dict[tuple[int, bytes], int]) -> list[int]:
    """The ids of a prompt's full blocks: each (its parent's id, its own tokens) interned in ``table``."""
    ids, parent = [], _ROOT
    for k in range(len(toks) // block_tokens):
        parent = table.setdefault((parent, toks[k * block_tokens:(k + 1) * block_tokens].tobytes()), len(table))
        ids.append(parent)
    return ids


def read(lines: Iterable[tuple[int, bytes]], name: str, block_tokens: int) -> Columns:
    """Every line of a prompts trace, checked, its prompt cut into full blocks of ``block_tokens``."""
    cols = Columns()
    table: dict[tuple[int, bytes], int] = {}
    for lineno, line in lines:
        where = f"{name}:{lineno}"
        obj = json_object(lineno, line, name)
        missing(obj, (TOKENS,), where, "prompts")
        if "timestamp" in obj:
            check(obj, "timestamp", "number", where)
        toks = token_ids(obj, where)
        cols.request(blocks(toks, block_tokens, table), len(toks), obj, lineno, where)
    return cols
