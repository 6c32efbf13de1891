"""The trace engine: an id stream off by one or broken."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from pycert.core.errors import InputError
from pycert.data.traces import read_trace
from pycert.mutation.operators.base import (
    TRACE_INPUT,
    Operator,
    Planned,
    Verdict,
    expect_failure,
)


class TraceEngine(Operator):
    """Feed the trace engine a file whose id stream is off by one (or broken): the figures must
    change and the certificate of the old figures must then fail to verify (the file's sha256
    re-forged, so only the recomputed figures can catch it); a broken line is named by file:line."""

    name = "trace-engine"

    def plan(self, ctx: Any) -> list[Planned]:
        self.add("trace-off-by-one-start", "trace-engine", "the id stream starts one id late",
                 "figures change; verify failure on figures", TRACE_INPUT,
                 run=lambda c: c.trace_expect(_shift_stream))
        self.add("trace-repeated-line", "trace-engine", "one request line read twice",
                 "figures change; verify failure on figures", TRACE_INPUT,
                 run=lambda c: c.trace_expect(lambda lines: lines[:3] + lines[2:]))
        self.add("trace-relabel+1", "trace-engine", "every block id plus one", "figures change", TRACE_INPUT,
                 equivalent="renaming every block id by the same bijection leaves |r| and distinct r, hence every "
                            "ceiling figure, unchanged",
                 run=lambda c: c.trace_expect(lambda lines: [_map_ids(ln, lambda ids: [i + 1 for i in ids]) for ln in lines]))
        self.add("trace-truncated-line", "trace-engine", "the last line cut in half", "an input error naming file:line",
                 TRACE_INPUT, run=_truncated)
        return self.plans


def _map_ids(line: bytes, f: Callable[[list[int]], list[int]]) -> bytes:
    obj = json.loads(line)
    obj["hash_ids"] = f(obj["hash_ids"])
    return (json.dumps(obj) + "\n").encode()


def _shift_stream(lines: list[bytes]) -> list[bytes]:
    records = [json.loads(ln) for ln in lines]
    ids = [i for r in records for i in r["hash_ids"]][1:] + [-1]
    out, k = [], 0
    for r in records:
        r["hash_ids"], k = ids[k:k + len(r["hash_ids"])], k + len(r["hash_ids"])
        r["hash_ids"] = [i for i in r["hash_ids"] if i >= 0]
        out.append((json.dumps(r) + "\n").encode())
    return out


def _truncated(ctx: Any) -> Verdict:
    path = ctx.repo / TRACE_INPUT
    data = path.read_bytes().rstrip(b"\n")
    path.write_bytes(data[: len(data) - 20])
    n_lines = data.count(b"\n") + 1
    try:
        read_trace(path)
    except InputError as exc:
        return expect_failure([str(exc)], rf"{re.escape(path.name)}:{n_lines}: truncated", "the reader")
    return "survived", "the reader accepted a truncated line"
