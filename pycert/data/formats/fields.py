"""The checks every JSON layout applies to a line's fields, and the per-request columns they fill.

A field is checked against what its layout's published description says it holds; a wrong one is one
line, ``file:line: field 'X' must be <what>, got <value>``. The optional ``tenant`` (any string) is
the same in every JSON layout: the first request decides whether the trace names tenants, and then
every request must (a request without one in a trace with tenants, or the reverse, is an error naming
both lines), so that no request is counted under a tenant nobody wrote. The requests layout adds
``session`` and ``host`` (a string or an integer each, which a request may leave out) and every layout keeps a
request's ``timestamp`` where it has one: what a fleet's router and the timestamps' order are read from.
"""

from __future__ import annotations

import json
import math
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone

import numpy as np

from pycert.core.errors import InputError
from pycert.core.gate import bounded
from pycert.core.limits import MAX_TRACE_REFS, MAX_TRACE_TOKENS
from pycert.data.formats.block_ids import BlockIds

TENANT = "tenant"
SESSION = "session"
HOST = "host"
TIMESTAMP = "timestamp"


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
    "label": (lambda v: isinstance(v, str) or _is_int(v), "a string or an integer"),
    "time": (lambda v: _time(v) or isinstance(v, str), "a non-negative number or an ISO 8601 date and time"),
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


def seconds_of(value: object, where: str) -> float:
    """A ``time`` field's value as a number: itself, or an ISO 8601 date and time in seconds since 1970 (one
    without a zone read as UTC)."""
    if not isinstance(value, str):
        return float(value)  # type: ignore[arg-type]
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        raise InputError(f"field 'timestamp' must be a non-negative number or an ISO 8601 date and time, got "
                         f"{shown(value)}", where=where) from None
    return (at if at.tzinfo else at.replace(tzinfo=timezone.utc)).timestamp()


@dataclass
class Labels:
    """One label of each request (a tenant, a session, a host): an index into ``names`` per request, -1 for a
    request without one."""

    of: array = field(default_factory=lambda: array("q"))
    names: dict[str | int, int] = field(default_factory=dict)

    def add(self, value: str | int | None) -> None:
        self.of.append(-1 if value is None else self.names.setdefault(value, len(self.names)))

    def column(self) -> tuple[np.ndarray | None, tuple[str | int, ...]]:
        """The per-request indices (None when no request has the label) and the names."""
        if not self.names:
            return None, ()
        return np.frombuffer(self.of, dtype=np.int64).copy(), tuple(self.names)


@dataclass
class Columns:
    """What a JSON reader accumulates: the references (:class:`BlockIds`), and one entry per request: its
    offset into the references, its line, its prompt's tokens, its tenant, its session and host (the
    requests layout) and its timestamp (NaN for a request without one)."""

    ids: BlockIds = field(default_factory=BlockIds)
    bounds: array = field(default_factory=lambda: array("q", [0]))
    lines: array = field(default_factory=lambda: array("q"))
    tokens: array = field(default_factory=lambda: array("q"))
    tenants: Labels = field(default_factory=Labels)
    sessions: Labels = field(default_factory=Labels)
    hosts: Labels = field(default_factory=Labels)
    times: array = field(default_factory=lambda: array("d"))
    iso_times: bool = False
    """Whether a timestamp was an ISO 8601 string (shown as one in messages)."""
    first_line: int | None = None
    has_tenants: bool | None = None
    total_tokens: int = 0

    def request(self, ids: list, tokens: int, obj: dict, lineno: int, where: str, field_name: str = "hash_ids",
                labelled: bool = False) -> None:
        """One request: its block ids (of any JSON scalar: :class:`BlockIds`), its prompt's tokens, its tenant and
        with ``labelled`` its session and host (checked here), its timestamp (checked by its layout)."""
        self.tenant(obj, lineno, where)
        bounded(len(self.ids.values) + len(ids), MAX_TRACE_REFS, "block references", where)
        self.total_tokens += tokens
        bounded(self.total_tokens, MAX_TRACE_TOKENS, "prompt tokens in all (token figures are sums in 64 bits)", where)
        self.ids.extend(ids, where, field_name)
        self.bounds.append(len(self.ids.values))
        self.lines.append(lineno)
        self.tokens.append(tokens)
        if labelled:
            for name, labels in ((SESSION, self.sessions), (HOST, self.hosts)):
                labels.add(check(obj, name, "label", where) if name in obj else None)  # type: ignore[arg-type]
        if TIMESTAMP in obj:
            self.iso_times |= isinstance(obj[TIMESTAMP], str)
            self.times.append(seconds_of(obj[TIMESTAMP], where))
        else:
            self.times.append(math.nan)

    def tenant(self, obj: dict, lineno: int, where: str) -> None:
        has = TENANT in obj
        if self.has_tenants is None:
            self.has_tenants, self.first_line = has, lineno
        elif has != self.has_tenants:
            said = "names" if self.has_tenants else "does not name"
            raise InputError(f"{'no' if not has else 'a'} field 'tenant', but line {self.first_line} {said} a tenant: "
                             "either every request names its tenant or none does", where=where)
        if has:
            self.tenants.add(check(obj, TENANT, "text", where))  # type: ignore[arg-type]

    def requests(self) -> Requests:
        """Everything read, as arrays."""
        def ints(a: array) -> np.ndarray:
            return np.frombuffer(a, dtype=np.int64).copy()

        times = np.frombuffer(self.times, dtype=np.float64).copy()
        tenants, tenant_names = self.tenants.column()
        sessions, session_names = self.sessions.column()
        hosts, host_names = self.hosts.column()
        return Requests(refs=self.ids.references(), bounds=ints(self.bounds), lines=ints(self.lines),
                        tokens=ints(self.tokens), tenants=tenants, tenant_names=tenant_names,  # type: ignore[arg-type]
                        sessions=sessions, session_names=session_names, hosts=hosts, host_names=host_names,
                        timestamps=None if np.isnan(times).all() else times, iso_times=self.iso_times)


@dataclass(frozen=True)
class Requests:
    """A JSON layout's requests as arrays: the references (uint64), the request offsets into them, and per
    request its line, prompt tokens, tenant, session, host (indices into the names, -1 for none; None when no
    request has one) and timestamp (NaN for none; None when no request has one)."""

    refs: np.ndarray
    bounds: np.ndarray
    lines: np.ndarray
    tokens: np.ndarray
    tenants: np.ndarray | None
    tenant_names: tuple[str, ...]
    sessions: np.ndarray | None = None
    session_names: tuple[str | int, ...] = ()
    hosts: np.ndarray | None = None
    host_names: tuple[str | int, ...] = ()
    timestamps: np.ndarray | None = None
    iso_times: bool = False
