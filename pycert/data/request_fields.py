"""One field of every request of a JSON trace, read as it is (a router's routing field: a host, a session,
a tenant, a user), through the same reader as the trace itself (:mod:`pycert.data.formats.source`).

Every request line must hold the field: a request without one would be routed by a rule nobody wrote. A
value is any JSON value whose canonical text (sorted keys, no spaces) is at most
:data:`MAX_FIELD_VALUE_BYTES`; a longer one is refused by ``file:line`` (a line is at most
:data:`~pycert.core.limits.MAX_LINE_BYTES` before it is parsed at all).
"""

from __future__ import annotations

import json
from pathlib import Path

from pycert.core.errors import InputError
from pycert.core.gate import Source as File
from pycert.data.formats.source import json_object, lines, opened

MAX_FIELD_VALUE_BYTES = 4096
"""The longest routing value, as canonical JSON text: ids and names, not documents."""


def canonical(value: object) -> bytes:
    """A JSON value's canonical text (sorted keys, no spaces): what is measured here and hashed by a router."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def request_values(path: File | Path | str, name: str) -> list[object]:
    """Field ``name`` of every request line of the trace at ``path``, in order."""
    out: list[object] = []
    with opened(path) as src:
        for lineno, line in lines(src.text, src.name):
            where = f"{src.name}:{lineno}"
            if not line.lstrip().startswith(b"{"):
                raise InputError(f"not a JSON line: a trace of block ids has no field {name!r} to route by", where=where)
            obj = json_object(lineno, line, src.name)
            if name not in obj:
                raise InputError(f"no field {name!r}: every request must name what it is routed by", where=where)
            value = obj[name]
            size = len(canonical(value))
            if size > MAX_FIELD_VALUE_BYTES:
                raise InputError(f"field {name!r} holds {size:,} bytes; a routing value is at most "
                                 f"{MAX_FIELD_VALUE_BYTES:,}", where=where)
            out.append(value)
    return out
