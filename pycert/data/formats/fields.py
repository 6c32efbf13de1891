"""The checks every JSON layout applies to a line's fields, and the per-request columns they fill.

A field is checked against what its layout's published description says it holds; a wrong one is one
line, ``file:line: field 'X' must be <what>, got <value>``. The optional ``tenant`` (any string) is
the same in every JSON layout: the first request decides whether the trace names tenants, and then
every request must (a request without one in a trace with tenants, or the reverse, is an error naming
both lines), so that no request is counted under a tenant nobody wrote.
"""

from __future__ import annotations

import json
import math
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from pycert.core.errors import InputError
from pycert.core.gate import bounded
from pycert.core.limits import MAX_TRACE_REFS, MAX_TRACE_TOKENS

TENANT = "tenant"


def shown(value: object) -> str:
    return json.dumps(value)[:40]


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _count(v: object) -> bool:  # an integral float (5.0) is a count too: some writers emit every number as one
    return (_is_int(v) or (isinstance(v, float) and v.is_integer())) and v >= 0  # type: ignore[operator]


def _time(v: object) -> bool:
    return (_is_int(v) or (isinstance(v, float) and math.isfinite(v))) and v >= 0  # type: ignore[operator]


KINDS: dict[str, tuple[Callable[[object], bool], str]] = {
    "count": (_count, "a non-negative integer"),
    "positive": (lambda v: _count(v) and v >= 1, "a positive integer"),  # type: ignore[operator]
    "ms": (_time, "a non-negative number of milliseconds"),
    "seconds": (_time, "a non-negative number of seconds"),
    "number": (_time, "a non-negative number"),
    "int": (_is_int, "an integer"),
    "parent": (lambda v: _is_int(v) and v >= -1, "an integer, -1 for a root request"),  # type: ignore[operator]
    "text": (lambda v: isinstance(v, str), "a string"),
}
"""Each kind of field: its test and what it must be, as the error says it."""


def check(obj: dict, name: str, kind: str, where: str) -> object:
    """``obj[name]``, which is present, when it is of ``kind``; else the one-line error."""
    test, expected = KINDS[kind]
    value = obj[name]
    if not test(value):
        raise InputError(f"field {name!r} must be {expected}, got {shown(value)}", where=where)
    return value


def missing(obj: dict, required: tuple[str, ...], where: str, layout: str) -> None:
    if absent := [f for f in required if f not in obj]:
        raise InputError(f"missing field {', '.join(repr(m) for m in absent)} (the {layout} layout)", where=where)


@dataclass
class Columns:
    """What a JSON reader accumulates, one entry per request: the request offsets into the references,
    the prompt's tokens, the tenant."""

    refs: array = field(default_factory=lambda: array("Q"))
    bounds: array = field(default_factory=lambda: array("q", [0]))
    tokens: array = field(default_factory=lambda: array("q"))
    tenant_of: array = field(default_factory=lambda: array("q"))
    tenant_names: dict[str, int] = field(default_factory=dict)
    first_line: int | None = None
    has_tenants: bool | None = None
    total_tokens: int = 0

    def request(self, ids: list[int] | array, tokens: int, obj: dict, lineno: int, where: str) -> None:
        """One request: its block ids, its prompt's tokens and its tenant (checked here)."""
        self.tenant(obj, lineno, where)
        bounded(len(self.refs) + len(ids), MAX_TRACE_REFS, "block references", where)
        self.total_tokens += tokens
        bounded(self.total_tokens, MAX_TRACE_TOKENS, "prompt tokens in all (token figures are sums in 64 bits)", where)
        self.refs.extend(ids)
        self.bounds.append(len(self.refs))
        self.tokens.append(tokens)

    def tenant(self, obj: dict, lineno: int, where: str) -> None:
        has = TENANT in obj
        if self.has_tenants is None:
            self.has_tenants, self.first_line = has, lineno
        elif has != self.has_tenants:
            said = "names" if self.has_tenants else "does not name"
            raise InputError(f"{'no' if not has else 'a'} field 'tenant', but line {self.first_line} {said} a tenant: "
                             "either every request names its tenant or none does", where=where)
        if has:
            name = check(obj, TENANT, "text", where)
            self.tenant_of.append(self.tenant_names.setdefault(name, len(self.tenant_names)))  # type: ignore[arg-type]

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, tuple[str, ...]]:
        """refs (uint64), request offsets, prompt tokens, tenants (None without), tenant names."""
        tenants = np.frombuffer(self.tenant_of, dtype=np.int64).copy() if self.has_tenants else None
        return (np.frombuffer(self.refs, dtype=np.uint64).copy(), np.frombuffer(self.bounds, dtype=np.int64).copy(),
                np.frombuffer(self.tokens, dtype=np.int64).copy(), tenants, tuple(self.tenant_names))
