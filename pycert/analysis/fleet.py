"""A fleet behind its router: which host each request of a trace goes to, and each host's sub-trace.

A fleet is ``H`` hosts, each with its own cache; a router sends every request to one host, and all of a
request's blocks go with it. The **host list** gives each request's host (an index below ``H``), in trace
order; a host's **sub-trace** is the requests routed to it, in trace order (``lean/Pycert/Fleet.lean``
``sub``: reference by reference, the references whose request went there).

**Routings** (``--routing``):

* ``round-robin``: request ``r`` (from 0, in file order) goes to host ``r mod H``.
* ``field:NAME``: the host the trace's own field ``NAME`` records (a fleet's own log): a non-negative
  integer below ``H`` is that host; strings are hosts numbered in the order they first appear (at most
  ``H`` of them).
* ``hash:NAME``: a consistent hash of field ``NAME`` (a session, tenant or user id): jump consistent hashing
  (Lamping and Veach, 2014) of the first 8 bytes (big-endian) of sha256 of the value's canonical JSON text, so
  that adding a host moves only about ``1 / H`` of the keys, as a consistent-hash ring does.
* ``prefix:K``: the same hash of the request's first ``K`` block ids (decimal, joined by commas; fewer when
  the request is shorter): requests that share their first ``K`` blocks share a host.
* ``cache-aware``: the rule of SGLang's and vLLM's routers in cache-aware mode, offline. The router keeps,
  per host, an estimate of that host's cache: the chained prefixes (a block and everything before it in its
  request, as a chained block hash names it) of every request it sent there, never dropped (SGLang's
  approximate tree learns only from what it sends, and its default size, 2^24 characters, outlasts a host's
  cache: the estimate can name prefixes the host has evicted, as a real router's does). A request's match at
  a host is how many of its leading blocks that estimate holds in a row; if the best match ratio (matched
  blocks over the request's blocks) is at least ``threshold`` the request goes to the host with the longest
  match, else to the least-loaded host. Measured on the conversation trace at 8 hosts of 512 blocks
  (docs/fleet-kernel.md): an estimate cut to the last 512 blocks' prefixes a host was sent forgets a conversation
  between its turns and routes like round-robin. **Load** is the number of requests sent to a host so far (the trace is replayed one
  request at a time, so none is in flight: a cumulative count stands in for the queue length); ties go to
  the least loaded, then the lowest index. On Mooncake's traces every request starts with block 0, so every
  host that saw any request matches one block of every request: ties by load keep such matches from
  sending every request to host 0, and the ratio keeps them from counting for much.

Nothing here is trusted by the kernel: the routing is recorded (the host list, its sha256, and per reference
in the Lean composition) and verify makes it again from the trace.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from pycert.core.errors import InputError
from pycert.data.request_fields import canonical
from pycert.data.traces import Trace

ROUTING = re.compile(r"round-robin|cache-aware|prefix:([1-9][0-9]{0,12})|(field|hash):([A-Za-z0-9_.-]{1,64})")
"""What ``--routing`` takes; a field name is 1 to 64 letters, digits, ``_``, ``.`` or ``-``."""
THRESHOLD = Fraction(3, 10)
"""The cache-aware router's default match ratio (SGLang's and vLLM's routers' cache threshold)."""


@dataclass(frozen=True)
class Routing:
    """A parsed ``--routing``: its kind, the field it reads (``field``, ``hash``), its prefix length
    (``prefix``), and the cache-aware router's threshold."""

    kind: str
    field: str | None = None
    prefix_blocks: int | None = None
    threshold: Fraction | None = None

    @property
    def text(self) -> str:
        """The routing as ``--routing`` writes it."""
        if self.kind in ("field", "hash"):
            return f"{self.kind}:{self.field}"
        if self.kind == "prefix":
            return f"prefix:{self.prefix_blocks}"
        return self.kind


def parse_routing(text: str, threshold: Fraction | None = None) -> Routing:
    """``text`` as a :class:`Routing`; an input error names what ``--routing`` takes."""
    m = ROUTING.fullmatch(text)
    if m is None:
        raise InputError(f"{text[:40]!r}: give round-robin, field:NAME, hash:NAME, prefix:K or cache-aware (NAME: 1 "
                         "to 64 letters, digits, '_', '.', '-'; K: a block count)", where="--routing")
    if m.group(1) is not None:
        return Routing("prefix", prefix_blocks=int(m.group(1)))
    if m.group(2) is not None:
        return Routing(m.group(2), field=m.group(3))
    return Routing(text, threshold=(THRESHOLD if threshold is None else threshold) if text == "cache-aware" else None)


def key64(data: bytes) -> int:
    """The first 8 bytes of sha256 of ``data``, big-endian."""
    return int.from_bytes(hashlib.sha256(data).digest()[:8], "big")


def jump_hash(key: int, buckets: int) -> int:
    """Jump consistent hashing (Lamping and Veach, "A Fast, Minimal Memory, Consistent Hash Algorithm",
    2014): ``key`` (64 bits) to a bucket below ``buckets``; going from ``H`` to ``H + 1`` buckets moves a key
    only to the new bucket, about ``1 / (H + 1)`` of them."""
    b, j = -1, 0
    while j < buckets:
        b = j
        key = (key * 2862933555777941757 + 1) & 0xFFFFFFFFFFFFFFFF
        j = int((b + 1) * ((1 << 31) / ((key >> 33) + 1)))
    return b


def by_field(values: Sequence[object], hosts: int, name: str) -> np.ndarray:
    """``field:NAME``: each request's host as its field says (integers as they are, strings numbered in the
    order they first appear)."""
    out = np.empty(len(values), dtype=np.int64)
    numbered: dict[str, int] = {}
    for r, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, str)):
            raise InputError(f"field {name!r} of request {r} (line {r + 1}) is {canonical(v)[:40].decode()}: a host is "
                             f"an integer below --hosts {hosts} or a string naming it", where=f"--routing field:{name}")
        if isinstance(v, int):
            if not 0 <= v < hosts:
                raise InputError(f"field {name!r} of request {r} (line {r + 1}) names host {v}, not one of the "
                                 f"{hosts} hosts 0 to {hosts - 1}", where=f"--routing field:{name}")
            out[r] = v
        else:
            k = numbered.setdefault(v, len(numbered))
            if k >= hosts:
                raise InputError(f"field {name!r} names more than {hosts} hosts (the {hosts + 1}th, {v[:40]!r}, at "
                                 f"request {r}, line {r + 1}): give --hosts {hosts + 1} or more", where=f"--routing field:{name}")
            out[r] = k
    return out


def by_hash(values: Sequence[object], hosts: int) -> np.ndarray:
    """``hash:NAME``: jump consistent hashing of each value's canonical JSON text."""
    return np.fromiter((jump_hash(key64(canonical(v)), hosts) for v in values), dtype=np.int64, count=len(values))


def by_prefix(trace: Trace, prefix_blocks: int, hosts: int) -> np.ndarray:
    """``prefix:K``: jump consistent hashing of each request's first ``K`` block ids."""
    assert trace.requests is not None
    starts = trace.requests[:-1]
    ends = np.minimum(trace.requests[1:], starts + prefix_blocks)
    refs = trace.refs
    return np.fromiter((jump_hash(key64(",".join(map(str, refs[a:b].tolist())).encode()), hosts)
                        for a, b in zip(starts.tolist(), ends.tolist())), dtype=np.int64, count=len(starts))


def chains(trace: Trace) -> np.ndarray:
    """Each reference's chained prefix, as a dense number: equal exactly when two references hold the same
    block after the same blocks in their requests (what a chained block hash names)."""
    assert trace.requests is not None
    out = np.empty(trace.n_refs, dtype=np.int64)
    seen: dict[tuple[int, int], int] = {}
    refs = trace.refs.tolist()
    for a, b in zip(trace.requests[:-1].tolist(), trace.requests[1:].tolist()):
        parent = -1
        for j in range(a, b):
            parent = out[j] = seen.setdefault((parent, refs[j]), len(seen))
    return out


def cache_aware(trace: Trace, hosts: int, threshold: Fraction) -> np.ndarray:
    """The cache-aware router (module docstring): the longest estimated cached prefix if its ratio reaches
    ``threshold``, else the least-loaded host."""
    assert trace.requests is not None
    chain = chains(trace).tolist()
    held: list[set[int]] = [set() for _ in range(hosts)]
    load = [0] * hosts
    out = np.empty(trace.n_requests or 0, dtype=np.int64)
    for r, (a, b) in enumerate(zip(trace.requests[:-1].tolist(), trace.requests[1:].tolist())):
        mine = chain[a:b]
        matched = []
        for h in range(hosts):
            k = 0
            while k < len(mine) and mine[k] in held[h]:
                k += 1
            matched.append(k)
        best = max(matched)
        if mine and Fraction(best, len(mine)) >= threshold and best > 0:
            host = min((h for h in range(hosts) if matched[h] == best), key=lambda h: (load[h], h))
        else:
            host = min(range(hosts), key=lambda h: (load[h], h))
        out[r] = host
        load[host] += 1
        held[host].update(mine)
    return out


def route(trace: Trace, routing: Routing, hosts: int, values: Sequence[object] | None = None) -> np.ndarray:
    """Each request's host under ``routing`` (``values``: field ``NAME`` of every request, for ``field`` and
    ``hash``)."""
    if trace.requests is None:
        raise InputError("the trace has no requests (a file of block ids): a router sends requests, so give a trace "
                         "in a layout with requests (docs/formats.md)", where=trace.name)
    n = trace.n_requests or 0
    if routing.kind == "round-robin":
        return np.arange(n, dtype=np.int64) % hosts
    if routing.kind == "prefix":
        return by_prefix(trace, routing.prefix_blocks or 1, hosts)
    if routing.kind == "cache-aware":
        return cache_aware(trace, hosts, routing.threshold or THRESHOLD)
    if values is None or len(values) != n:
        raise InputError(f"routing {routing.text} needs field {routing.field!r} of each of the {n:,} requests",
                         where=trace.name)
    return by_field(values, hosts, routing.field or "") if routing.kind == "field" else by_hash(values, hosts)


def host_list(hosts_of: np.ndarray) -> bytes:
    """The host list as a file: each request's host in decimal, a newline after each."""
    return "".join(f"{h}\n" for h in hosts_of.tolist()).encode()


def host_list_sha256(hosts_of: np.ndarray) -> str:
    return hashlib.sha256(host_list(hosts_of)).hexdigest()


def per_reference(trace: Trace, hosts_of: np.ndarray) -> np.ndarray:
    """Each reference's host: its request's."""
    assert trace.requests is not None
    return np.repeat(hosts_of, np.diff(trace.requests))


def sub_trace(trace: Trace, hosts_of: np.ndarray, host: int) -> Trace:
    """Host ``host``'s sub-trace: its requests, in trace order, with their prompt lengths (the file's sha256
    and name stay the whole trace's: a sub-trace is not a file)."""
    assert trace.requests is not None
    mine = np.flatnonzero(hosts_of == host)
    starts, ends = trace.requests[:-1][mine], trace.requests[1:][mine]
    lengths = ends - starts
    refs = (np.concatenate([trace.refs[a:b] for a, b in zip(starts.tolist(), ends.tolist())]) if len(mine)
            else np.zeros(0, dtype=trace.refs.dtype))
    return dataclasses.replace(trace, refs=refs, requests=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
                               prompt_tokens=None if trace.prompt_tokens is None else trace.prompt_tokens[mine],
                               tenants=None if trace.tenants is None else trace.tenants[mine])


def sub_traces(trace: Trace, hosts_of: np.ndarray, hosts: int) -> list[Trace]:
    return [sub_trace(trace, hosts_of, h) for h in range(hosts)]
