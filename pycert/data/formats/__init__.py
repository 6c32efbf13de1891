"""The trace layouts pycert reads, one module each, and the registry the CLI's ``--format`` lists.

=========  ==========================================================  =====================
layout     what a line is                                              block size
=========  ==========================================================  =====================
requests   one request: ``hash_ids`` (any JSON scalars) or               unknown, or
           ``prompt_token_ids``; optional ``timestamp``, ``tenant``,     ``--block-tokens`` (16)
           ``session``, ``host``
mooncake   Mooncake FAST'25 JSONL: one request, ``hash_ids``            512, or its lengths
bailian    Qwen-Bailian JSONL (ATC'25): one request, ``hash_ids``       16, or its lengths
aiperf     AIPerf / Dynamo ``mooncake_trace`` JSONL                     512, or its lengths
prompts    ``{"prompt_token_ids": [...]}``: one prompt, blocked here    ``--block-tokens`` (16)
ids        one 64-bit block id                                          ``--block-tokens``
=========  ==========================================================  =====================

``auto`` (:func:`detect`) picks a layout only where the first line leaves no doubt, and says which and why
when a later line does not fit it, with the flag that reads the file another way. docs/formats.md has the
fields each reads and ignores, and an example line of each.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, BinaryIO, Literal, get_args

from pycert.core.errors import InputError, Refused

if TYPE_CHECKING:
    import numpy as np

    from pycert.data.formats.fields import Requests

Format = Literal["requests", "mooncake", "bailian", "aiperf", "prompts", "ids"]
FORMATS: tuple[str, ...] = get_args(Format)
FORMAT_CHOICES = ("auto", *FORMATS)
"""What ``--format`` takes."""


@dataclass(frozen=True)
class Parsed:
    """What a layout's reader found: the references, and where the layout has requests, their columns
    (:class:`~pycert.data.formats.fields.Requests`); the prompt's tokens where the layout says them; the block
    size it says and how; whether the blocks were cut here from token ids; the first line whose timestamp is
    earlier than the one before it (None when none is); whether the requests were sorted by timestamp."""

    format: Format
    refs: np.ndarray
    columns: Requests | None
    prompt_tokens: np.ndarray | None
    block_tokens: int | None
    block_rule: str | None
    cut: bool = False
    disorder: str | None = None
    sorted: bool = False


AIPERF_ONLY = ("session_id", "delay")
"""Fields that only AIPerf's layout of those pycert reads has (its ``text_input`` and ``messages`` too)."""
OTHERS = {"output_length": "mooncake", "session_id": "aiperf", "delay": "aiperf", "text_input": "aiperf",
          "messages": "aiperf", "parent_chat_id": "bailian"}
"""Fields of a published layout that a line of block ids without that layout's key field may have: such a line
is that layout's with its key field lost, or the requests layout's with a field it ignores, and only the user
can say which."""


def detect(first: tuple[int, bytes], name: str) -> Format:
    """The layout of a trace whose first line is ``first``, when the line leaves no doubt: not JSON is ``ids``;
    ``chat_id`` is Qwen-Bailian's; ``input_length`` is Mooncake's, or AIPerf's when the line lacks
    ``output_length`` or has one of AIPerf's own fields; ``hash_ids`` or ``prompt_token_ids`` alone is the
    requests layout. A line of block ids that also has a field of a published layout (:data:`OTHERS`) but not
    that layout's key field could be either, and a line with none of these fields is no layout: each is an
    error saying which ``--format`` to name."""
    from pycert.data.formats import hash_ids, requests  # the readers and numpy: see parse
    from pycert.data.formats.source import json_object

    if not first[1].lstrip().startswith(b"{"):
        return "ids"
    keys = json_object(*first, name)
    where = f"{name}:{first[0]}"
    if "chat_id" in keys:
        return "bailian"
    if "input_length" in keys:
        aiperf = "output_length" not in keys or any(k in keys for k in (*AIPERF_ONLY, *hash_ids.AIPERF.other_inputs))
        return "aiperf" if aiperf else "mooncake"
    blocks = [f for f in requests.BLOCKS if f in keys]
    other = next((k for k in OTHERS if k in keys), None)
    if other is not None and blocks:
        layout = OTHERS[other]
        key = "chat_id" if layout == "bailian" else "input_length"
        raise InputError(f"the first line has {blocks[0]!r} and {other!r}, a field of the {layout} layout, but not its "
                         f"{key!r}: name the layout, --format requests (block ids alone) or --format {layout}",
                         where=where)
    if other is not None and other in ("text_input", "messages", *AIPERF_ONLY):
        return "aiperf"
    if blocks:
        return "requests"
    raise InputError("no layout has the first line's fields: a request needs 'hash_ids' (its block ids) or "
                     "'prompt_token_ids' (the requests layout, docs/formats.md), or a layout's own fields "
                     "(Mooncake's 'input_length' and 'hash_ids', ...)", where=where)


def _fix(found: Format, err: InputError, chosen: bool) -> InputError:
    """``err`` from reading a trace as ``found``, with the way to read it otherwise where there is one (a field the
    layout wants that a line lacks or holds otherwise): a layout chosen by the first line (``chosen``) names what
    chose it. Another error (malformed JSON, a block size the lengths refute) is left as it is."""
    if found == "ids" and chosen and "binary data" not in err.message:
        out = InputError(f"{err.message} (the ids layout: the first line is not a JSON object; an engine's or a "
                         "gateway's log is turned into the requests layout first: docs/export.md)", where=err.where)
        out.__cause__ = None
        return out
    about_fields = err.message.startswith(("missing field", "field ", "hash_ids[", "a request given as"))
    if found not in ("mooncake", "bailian", "aiperf", "prompts") or not about_fields:
        return err
    why = " (chosen by the first line's fields)" if chosen else ""
    fix = ("--format requests reads each line's block ids alone, of any JSON string or integer, and its tenant, "
           "session and host")
    out = InputError(f"{err.message}{why}; {fix}", where=err.where)
    out.__cause__ = None
    return out


def parse(stream: BinaryIO, name: str, fmt: str = "auto", block_tokens: int | None = None,
          sort: bool = False) -> Parsed:
    """Every line of ``stream`` in layout ``fmt`` (``auto``: :func:`detect`), with ``--block-tokens``
    (``block_tokens``: how prompts are cut into blocks; for any other layout it must agree with what the trace
    says) and ``--sort`` (``sort``: the requests in the order of their timestamps, every request having one)."""
    # The readers (and numpy) load here, not with the package: a certificate's claim names the layouts
    # (Format) without reading a trace.
    from pycert.data.formats import order
    from pycert.data.formats.source import lines

    numbered: Iterator[tuple[int, bytes]] = lines(stream, name)
    first = next(numbered, None)
    if first is None:
        raise InputError("empty trace: no lines", where=name)
    if fmt not in FORMAT_CHOICES:
        raise InputError(f"unknown layout {fmt!r} (one of {', '.join(FORMAT_CHOICES)})", where="--format")
    found: Format = detect(first, name) if fmt == "auto" else fmt  # type: ignore[assignment]
    try:
        parsed = _read(found, chain([first], numbered), name, block_tokens)
    except Refused:
        raise
    except InputError as err:
        raise _fix(found, err, fmt == "auto") from None
    if len(parsed.refs) == 0:
        why = f" (no prompt has a full block of {parsed.block_tokens:,} tokens)" if parsed.cut else ""
        raise InputError(f"empty trace: no block references{why}", where=name)
    if sort:
        return order.by_time(parsed, name)
    return order.checked(parsed, name)


def _read(found: Format, every: Iterable[tuple[int, bytes]], name: str, block_tokens: int | None) -> Parsed:
    # the readers and numpy load here, not with the package: see parse
    from pycert.data.formats import hash_ids, ids, prompts, requests
    from pycert.data.formats.blocks import resolve

    if found == "ids":
        return Parsed(found, ids.read(every, name), None, None, block_tokens,
                      None if block_tokens is None else "--block-tokens")
    size = block_tokens or prompts.DEFAULT_BLOCK_TOKENS
    cut_rule = f"prompts cut into blocks of {size:,} tokens, " + ("--block-tokens" if block_tokens else "the default")
    if found == "prompts":
        cols = prompts.read(every, name, size).requests()
        return Parsed(found, cols.refs, cols, cols.tokens, size, cut_rule, cut=True)
    if found == "requests":
        read, cut = requests.read(every, name, size)
        cols = read.requests()
        if cut:
            return Parsed(found, cols.refs, cols, cols.tokens, size, cut_rule, cut=True)
        return Parsed(found, cols.refs, cols, None, block_tokens, None if block_tokens is None else "--block-tokens")
    layout = hash_ids.LAYOUTS[found]
    read, rule = hash_ids.read(layout, every, name)
    cols = read.requests()
    size = resolve(rule, rule.says(layout.block_tokens), block_tokens)
    return Parsed(found, cols.refs, cols, cols.tokens, size, rule.describe(layout.block_tokens))
