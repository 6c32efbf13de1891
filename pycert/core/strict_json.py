"""JSON objects whose keys are each named once. The standard decoder and pydantic keep the last of two equal keys
without a word, so a line or a certificate that names a field twice reads one way here and may read the other
way in a stranger's tool (jq, a browser, a spreadsheet importer): such a document is refused, naming the key and
its line. The check rides on the C decoder (:data:`object_pairs_hook`); only a document that has a duplicate is
walked again, in Python, to find the line.
"""

from __future__ import annotations

import json
from typing import Any


class DuplicateKey(ValueError):
    """A JSON object names ``key`` twice."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An ``object_pairs_hook`` that refuses a key named twice in one object."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        raise DuplicateKey(next(k for k, _ in pairs if k in seen or seen.add(k)))  # type: ignore[func-returns-value]
    return out


def loads(text: str | bytes) -> Any:
    """``json.loads`` that raises :class:`DuplicateKey` for a key named twice in one object (any other problem
    as ``json.loads`` raises it)."""
    return json.loads(text, object_pairs_hook=unique_pairs)


def duplicate(text: str | bytes) -> tuple[str, int] | None:
    """The first key some object of ``text`` names twice and the 1-based line of its second naming, or None
    (also None when ``text`` is no JSON: the caller's parser says why)."""
    try:
        loads(text)
        return None
    except DuplicateKey:
        pass
    except ValueError:
        return None
    s = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    found = _walk(s, _ws(s, 0), json.JSONDecoder())
    return None if found is None else (found[0], s.count("\n", 0, found[1]) + 1)


def _ws(s: str, i: int) -> int:
    while i < len(s) and s[i] in " \t\r\n":
        i += 1
    return i


def _walk(s: str, i: int, dec: json.JSONDecoder) -> tuple[str, int] | None:
    """The first key named twice in one object of the value at ``i``, and where; iterative, so depth costs no
    stack (a document gets here only once its nesting has been bounded and the C decoder has read it)."""
    stack: list[set[str] | None] = []  # per open container: the keys seen (an object) or None (an array)
    while True:
        i = _ws(s, i)
        c = s[i]
        if c in "{[":
            stack.append(set() if c == "{" else None)
            i = _ws(s, i + 1)
            if s[i] in "}]":
                stack.pop()
                i += 1
            elif c == "{":
                key, j = dec.raw_decode(s, i)
                stack[-1].add(key)  # type: ignore[union-attr]
                i = _ws(s, j) + 1
                continue
            else:
                continue
        else:
            _, i = dec.raw_decode(s, i)
        while stack:  # after a value: the next key or element, or the end of the container
            i = _ws(s, i)
            if s[i] == ",":
                i = _ws(s, i + 1)
                keys = stack[-1]
                if keys is not None:
                    key, j = dec.raw_decode(s, i)
                    if key in keys:
                        return key, i
                    keys.add(key)
                    i = _ws(s, j) + 1
                break
            stack.pop()
            i += 1
        else:
            return None
