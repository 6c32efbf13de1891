"""The trace layouts pycert reads, one module each, and the registry the CLI's ``--format`` lists.

=========  ==========================================================  =====================
layout     what a line is                                              block size
=========  ==========================================================  =====================
mooncake   Mooncake FAST'25 JSONL: one request, ``hash_ids``            512, or its lengths
bailian    Qwen-Bailian JSONL (ATC'25): one request, ``hash_ids``       16, or its lengths
aiperf     AIPerf / Dynamo ``mooncake_trace`` JSONL                     512, or its lengths
prompts    ``{"prompt_token_ids": [...]}``: one prompt, blocked here    ``--block-tokens`` (16)
ids        one 64-bit block id                                          ``--block-tokens``
=========  ==========================================================  =====================

``auto`` reads the first line: not JSON is ``ids``; a JSON object with ``prompt_token_ids`` is
``prompts``, with ``chat_id`` ``bailian``, with ``session_id``, ``delay``, ``text_input`` or
``messages`` or without ``output_length`` ``aiperf``, else ``mooncake``. docs/formats.md has the
fields each reads and ignores, and an example line of each.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, BinaryIO, Literal, get_args

from pycert.core.errors import InputError

if TYPE_CHECKING:
    import numpy as np

Format = Literal["mooncake", "bailian", "aiperf", "prompts", "ids"]
FORMATS: tuple[str, ...] = get_args(Format)
FORMAT_CHOICES = ("auto", *FORMATS)
"""What ``--format`` takes."""


@dataclass(frozen=True)
class Parsed:
    """What a layout's reader found: the references, and per request (where the layout has requests)
    the offsets into them, the prompt's tokens and the tenant; the block size it says and how."""

    format: Format
    refs: np.ndarray
    requests: np.ndarray | None
    prompt_tokens: np.ndarray | None
    tenants: np.ndarray | None
    tenant_names: tuple[str, ...]
    block_tokens: int | None
    block_rule: str | None


def detect(first: tuple[int, bytes], name: str) -> Format:
    """The layout of a trace whose first line is ``first`` (the module docstring says how)."""
    from pycert.data.formats import hash_ids, prompts  # the readers and numpy: see parse
    from pycert.data.formats.source import json_object

    if not first[1].lstrip().startswith(b"{"):
        return "ids"
    keys = json_object(*first, name)
    if prompts.TOKENS in keys:
        return "prompts"
    if "chat_id" in keys:
        return "bailian"
    if "output_length" not in keys or any(k in keys for k in ("session_id", "delay", *hash_ids.AIPERF.other_inputs)):
        return "aiperf"
    return "mooncake"


def parse(stream: BinaryIO, name: str, fmt: str = "auto", block_tokens: int | None = None) -> Parsed:
    """Every line of ``stream`` in layout ``fmt`` (``auto``: :func:`detect`), with ``--block-tokens``
    (``block_tokens``: how a prompts trace is blocked; for any other layout it must agree with what
    the trace says)."""
    # The readers (and numpy) load here, not with the package: a certificate's claim names the layouts
    # (Format) without reading a trace.
    from pycert.data.formats import hash_ids, ids, prompts
    from pycert.data.formats.blocks import resolve
    from pycert.data.formats.source import lines

    numbered: Iterator[tuple[int, bytes]] = lines(stream, name)
    first = next(numbered, None)
    if first is None:
        raise InputError("empty trace: no lines", where=name)
    if fmt not in FORMAT_CHOICES:
        raise InputError(f"unknown layout {fmt!r} (one of {', '.join(FORMAT_CHOICES)})", where="--format")
    found: Format = detect(first, name) if fmt == "auto" else fmt  # type: ignore[assignment]
    every = chain([first], numbered)
    if found == "ids":
        parsed = Parsed(found, ids.read(every, name), None, None, None, (), block_tokens,
                        None if block_tokens is None else "--block-tokens")
    elif found == "prompts":
        size = block_tokens or prompts.DEFAULT_BLOCK_TOKENS
        refs, bounds, tokens, tenants, names = prompts.read(every, name, size).arrays()
        parsed = Parsed(found, refs, bounds, tokens, tenants, names, size, f"prompts cut into blocks of {size:,} "
                        "tokens, " + ("--block-tokens" if block_tokens else "the default"))
    else:
        layout = hash_ids.LAYOUTS[found]
        cols, rule = hash_ids.read(layout, every, name)
        refs, bounds, tokens, tenants, names = cols.arrays()
        size = resolve(rule, rule.says(layout.block_tokens), block_tokens)
        parsed = Parsed(found, refs, bounds, tokens, tenants, names, size, rule.describe(layout.block_tokens))
    if len(parsed.refs) == 0:
        why = f" (no prompt has a full block of {parsed.block_tokens:,} tokens)" if found == "prompts" else ""
        raise InputError(f"empty trace: no block references{why}", where=name)
    return parsed
