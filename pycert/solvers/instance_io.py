"""Instance files: parse with errors at ``file:line``, load, and write deterministic JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pycert.core import strict_json
from pycert.core.errors import InputError
from pycert.core.gate import Source, named
from pycert.core.limits import MAX_JSON_BYTES, json_depth_error
from pycert.solvers.instance import COMMITTED, Instance, consistency_errors


def json_line(text: str, path: Sequence[Any]) -> int | None:
    """1-based line of the JSON value at ``path`` (keys and list indices) in ``text``; ``None`` if absent.

    The standard decoder skips over sibling values, so only the walk itself is written here.
    """
    dec = json.JSONDecoder()
    pos = _skip_ws(text, 0)
    try:
        for step in path:
            if text[pos] == "{":
                pos = _skip_ws(text, pos + 1)
                while text[pos] != "}":
                    key, pos = dec.raw_decode(text, pos)
                    pos = _skip_ws(text, _skip_ws(text, pos) + 1)  # past ':'
                    if key == str(step):
                        break
                    _, pos = dec.raw_decode(text, pos)
                    pos = _skip_ws(text, pos)
                    pos = _skip_ws(text, pos + 1) if text[pos] == "," else pos
                else:
                    return None
            elif text[pos] == "[" and isinstance(step, int):
                pos = _skip_ws(text, pos + 1)
                for _ in range(step):
                    _, pos = dec.raw_decode(text, pos)
                    pos = _skip_ws(text, pos)
                    if text[pos] != ",":
                        return None
                    pos = _skip_ws(text, pos + 1)
                if text[pos] == "]":
                    return None
            else:
                return None
    except (IndexError, json.JSONDecodeError):
        return None
    return text.count("\n", 0, pos) + 1


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def parse_instance(text: str, source: str = "instance") -> Instance:
    """Parse and validate instance JSON; every problem is an :class:`InputError` at ``source:line``."""
    def where(path: Sequence[Any]) -> str:
        line = json_line(text, path)
        return f"{source}:{line}" if line else source

    if len(text) > MAX_JSON_BYTES:
        raise InputError(f"larger than the limit of {MAX_JSON_BYTES >> 20} MiB", where=source)
    if why := json_depth_error(text):
        raise InputError(why, where=source)
    try:
        data = strict_json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON: {exc.msg}", where=f"{source}:{exc.lineno}") from None
    except strict_json.DuplicateKey:
        key, line = strict_json.duplicate(text) or ("?", 0)
        raise InputError(f"the key {json.dumps(key)[:80]} is named twice in one object", where=f"{source}:{line}") from None
    except ValueError:  # int() of a number past 4,300 digits
        raise InputError("a number with more than 4,300 digits", where=source) from None
    try:
        inst = Instance.model_validate(data)
    except ValidationError as exc:
        e = exc.errors()[0]
        loc = tuple(e["loc"])
        field = ".".join(str(p) for p in loc) or "instance"
        raise InputError(f"{field}: {e['msg']}", where=where(loc)) from None
    errs = consistency_errors(inst)
    if errs:
        path, msg = errs[0]
        raise InputError(msg, where=where(path))
    return inst


def load_instance(source: Source | Path | str = COMMITTED) -> Instance:
    """An instance from a certificate directory (:func:`pycert.core.gate.inside`) or a path the user named:
    a regular file of at most :data:`~pycert.core.limits.MAX_JSON_BYTES`."""
    source = source if isinstance(source, Source) else named(source)
    data = source.read("an instance file", MAX_JSON_BYTES, missing="no such instance file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", where=str(source)) from None
    return parse_instance(text, source=str(source))


def dump_instance(inst: Instance) -> str:
    """Deterministic JSON: one host, request or routing entry per line, so diffs and errors point somewhere."""
    head = inst.model_dump(mode="json", by_alias=True, exclude={"hosts", "requests", "routing"})
    lines = ["{"]
    lines += [f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True)}," for k, v in head.items()]
    for key, items in (("hosts", inst.hosts), ("requests", inst.requests)):
        body = ",\n".join(f"    {json.dumps(i.model_dump(mode='json'))}" for i in items)
        lines.append(f'  "{key}": [\n{body}\n  ],')
    routing = ",\n".join(f'    "{r}": {h}' for r, h in sorted(inst.routing.items()))
    lines.append(f'  "routing": {{\n{routing}\n  }}')
    lines.append("}")
    return "\n".join(lines) + "\n"
