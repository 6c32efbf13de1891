"""Pooling instances: the pydantic model, its consistency rules, and the seeded generator (reading and
writing instance files: :mod:`pycert.solvers.instance_io`).

An instance is a set of hosts (each with a local KV cache of ``capacity`` blocks and a routing
``load_limit`` in block references), a pool cache of ``pool_capacity`` blocks, requests (each an
ordered list of block ids, e.g. the prefix blocks of a prompt) and a routing of requests to hosts.
The trace is the requests in list order, each request's blocks in order: reference ``t`` is the
``t``-th block of that concatenation. A host's trace is the same concatenation restricted to the
requests routed to it.

The committed instance comes from :func:`generate`: requests are root-to-leaf paths of a random
prefix tree (a shared system prompt, then branching continuations), request types drawn with Zipf
popularity, and a routing that starts random and is then moved by seeded swaps until the
per-instance misses hit the target exactly (the published deployment's figure). Everything is a
function of the recorded seed and parameters, so the JSON file can be regenerated and compared.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from functools import cached_property
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, Strict, model_validator

from pycert.core.errors import InputError
from pycert.core.limits import MAX_INSTANCE_ID as MAX_ID
from pycert.core.limits import MAX_PARAM, MAX_POOL_HOSTS, MAX_POOL_REFS, MAX_POOL_REQUESTS
from pycert.core.resources import committed_instance
from pycert.solvers.pooled import peak_live

SCHEMA = "pycert-pooling-instance/1"
COMMITTED = committed_instance()


class _Frozen(BaseModel):
    # strict: "32" and true are not integers (JSON object keys, always strings, are parsed where declared)
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


Id = Annotated[int, Field(ge=0, le=MAX_ID)]
"""A host, request or block id: a non-negative signed 64-bit integer (:data:`pycert.core.limits.MAX_INSTANCE_ID`)."""
Count = Annotated[int, Field(ge=1, le=MAX_PARAM)]


class Host(_Frozen):
    id: Id
    capacity: Count = Field(description="blocks the host's own KV cache holds")
    load_limit: Count = Field(description="block references the host may serve (routing limit)")


class Request(_Frozen):
    id: Id
    blocks: list[int] = Field(min_length=1, max_length=MAX_POOL_REFS, description="block ids referenced in order")

    @model_validator(mode="after")
    def _non_negative(self) -> Request:
        if any(b < 0 for b in self.blocks):
            raise ValueError("block ids must be >= 0")
        if any(b > MAX_ID for b in self.blocks):
            raise ValueError(f"block ids must fit in 64 bits (at most {MAX_ID})")
        return self


class GeneratorParams(_Frozen):
    """Parameters of :func:`generate` (recorded in every generated instance)."""

    hosts: int = Field(16, ge=1, le=MAX_POOL_HOSTS)
    requests: int = Field(32, ge=1, le=MAX_POOL_REQUESTS)
    request_blocks: int = Field(16, ge=2, le=4096, description="blocks per request (prefix-tree depth)")
    blocks: int = Field(32, ge=2, le=1 << 20, description="distinct blocks (prefix-tree nodes)")
    shared_prefix: int = Field(8, ge=1, le=4096, description="system-prompt blocks every request starts with")
    popularity_skew: float = Field(1.0, ge=0.0, le=100.0, allow_inf_nan=False,
                                   description="Zipf exponent over request types")
    pool_capacity: int = Field(32, ge=1, le=MAX_PARAM)
    host_capacity: int = Field(24, ge=1, le=MAX_PARAM)
    host_load_limit: int = Field(32, ge=1, le=MAX_PARAM)
    target_pooled_misses: int | None = Field(32, ge=1, le=MAX_PARAM, description="published pooled misses to reproduce")
    target_per_instance_misses: int | None = Field(338, ge=1, le=MAX_PARAM,
                                                   description="published per-instance misses to reproduce")
    search_steps: int = Field(20000, ge=0, le=10_000_000, description="swap moves tried to reach the target")

    @model_validator(mode="after")
    def _shape(self) -> GeneratorParams:
        if self.shared_prefix >= self.request_blocks:
            raise ValueError("shared_prefix must be below request_blocks (requests must branch)")
        if self.blocks < self.request_blocks:
            raise ValueError("blocks must be at least request_blocks")
        return self


class Provenance(_Frozen):
    generator: str = "solvers.instance.generate"
    seed: int = Field(ge=-(1 << 63), le=MAX_ID)
    params: GeneratorParams


class Published(_Frozen):
    """The published figures an instance is meant to reproduce (the pipeline checks them)."""

    pooled_misses: int | None = None
    per_instance_misses: int | None = None


class Instance(_Frozen):
    schema_id: str = Field(SCHEMA, alias="schema")
    name: str = Field(min_length=1)
    description: str = ""
    provenance: Provenance | None = None
    published: Published = Published()
    pool_capacity: Count = Field(description="blocks the shared pool holds")
    hosts: list[Host] = Field(min_length=1, max_length=MAX_POOL_HOSTS)
    requests: list[Request] = Field(min_length=1, max_length=MAX_POOL_REQUESTS)
    routing: dict[Annotated[Id, Strict(False)], Id] = Field(description="request id -> host id (the committed routing)")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, strict=True)

    @cached_property
    def trace(self) -> list[int]:
        return [b for r in self.requests for b in r.blocks]

    @cached_property
    def host_ids(self) -> list[int]:
        return [h.id for h in self.hosts]

    def host(self, host_id: int) -> Host:
        return next(h for h in self.hosts if h.id == host_id)

    def host_trace(self, host_id: int, routing: dict[int, int] | None = None) -> list[int]:
        routing = self.routing if routing is None else routing
        return [b for r in self.requests if routing[r.id] == host_id for b in r.blocks]

    def overloaded(self, routing: dict[int, int] | None = None) -> list[tuple[int, Host, int]]:
        """(index, host, load) for every host that serves more block references under ``routing``
        (default: the committed one, which must route every request) than its ``load_limit``."""
        routing = self.routing if routing is None else routing
        load = {h.id: 0 for h in self.hosts}
        for r in self.requests:
            load[routing[r.id]] += len(r.blocks)
        return [(i, h, load[h.id]) for i, h in enumerate(self.hosts) if load[h.id] > h.load_limit]


# ---------------------------------------------------------------------------- validation


def consistency_errors(inst: Instance) -> list[tuple[tuple[Any, ...], str]]:
    """What makes an instance unusable, each with the JSON path it concerns (for file:line)."""
    errs: list[tuple[tuple[Any, ...], str]] = []
    if len(inst.trace) > MAX_POOL_REFS:
        errs.append((("requests",), f"{len(inst.trace)} block references in all, above the limit of {MAX_POOL_REFS}"))
    if inst.schema_id != SCHEMA:
        errs.append((("schema",), f"unknown schema {inst.schema_id!r}, expected {SCHEMA!r}"))
    for field, items in (("hosts", inst.hosts), ("requests", inst.requests)):
        seen: set[int] = set()
        for i, item in enumerate(items):
            if item.id in seen:
                errs.append(((field, i, "id"), f"duplicate {field[:-1]} id {item.id}"))
            seen.add(item.id)
    hosts = set(inst.host_ids)
    requests = {r.id for r in inst.requests}
    for rid, hid in inst.routing.items():
        if rid not in requests:
            errs.append((("routing", str(rid)), f"routing names unknown request {rid}"))
        if hid not in hosts:
            errs.append((("routing", str(rid)), f"request {rid} is routed to unknown host {hid}"))
    for i, r in enumerate(inst.requests):
        if r.id not in inst.routing:
            errs.append((("requests", i), f"request {r.id} is not routed to any host"))
    if not errs:
        errs += [(("hosts", i, "load_limit"),
                  f"host {h.id} carries {load} references under the routing, above its load_limit {h.load_limit}")
                 for i, h, load in inst.overloaded()]
    return errs


def validate(inst: Instance, where: str = "instance") -> Instance:
    """``inst`` if it is consistent; else an :class:`InputError` naming the first problem."""
    errs = consistency_errors(inst)
    if errs:
        raise InputError(errs[0][1], where=where)
    return inst


# ---------------------------------------------------------------------------- generators


def prefix_tree_paths(rng: random.Random, p: GeneratorParams) -> list[list[int]]:
    """Root-to-leaf paths of a random prefix tree with exactly ``p.blocks`` nodes, all of depth ``p.request_blocks``.

    The first ``shared_prefix`` levels are one chain (the system prompt); each new leaf copies a
    random existing path down to a random depth at or below the shared prefix and continues with
    fresh blocks. The last branch is shortened so the node count comes out exact.
    """
    depth = p.request_blocks
    paths = [list(range(depth))]
    used = depth
    while used < p.blocks:
        base = rng.choice(paths)
        cut = max(rng.randint(p.shared_prefix, depth - 1), depth - (p.blocks - used))
        paths.append(base[:cut] + list(range(used, used + depth - cut)))
        used += depth - cut
    return paths


def per_host_distinct(requests: Sequence[Sequence[int]], hosts: Sequence[int], n_hosts: int) -> list[int]:
    seen: list[set[int]] = [set() for _ in range(n_hosts)]
    for blocks, h in zip(requests, hosts):
        seen[h].update(blocks)
    return [len(s) for s in seen]


def generate(seed: int, params: GeneratorParams | None = None, name: str | None = None) -> Instance:
    """The instance for ``seed`` and ``params`` (deterministic). Raises :class:`InputError` when the
    parameters admit no instance or the routing search cannot hit the target for this seed."""
    p = params or GeneratorParams()
    rng = random.Random(seed)
    paths = prefix_tree_paths(rng, p)
    if len(paths) > p.requests:
        raise InputError(f"seed {seed}: the prefix tree has {len(paths)} leaves but only {p.requests} requests; "
                         "every block must be referenced", where="params")
    weights = [1.0 / (i + 1) ** p.popularity_skew for i in range(len(paths))]
    types = list(range(len(paths))) + rng.choices(range(len(paths)), weights=weights, k=p.requests - len(paths))
    rng.shuffle(types)
    requests = [paths[t] for t in types]
    trace = tuple(b for r in requests for b in r)
    if p.target_pooled_misses is not None and (len(set(trace)), peak_live(trace) <= p.pool_capacity) != (p.target_pooled_misses, True):
        raise InputError(f"pooled misses cannot be {p.target_pooled_misses}: {len(set(trace))} distinct blocks, "
                         f"{peak_live(trace)} live at once, pool capacity {p.pool_capacity}", where="params")
    hosts = _random_routing(rng, [len(r) for r in requests], p)
    if p.target_per_instance_misses is not None:
        hosts = _steer_routing(rng, requests, hosts, p)
    inst = Instance(
        name=name or f"generated-seed{seed}",
        description=(f"{p.hosts} hosts, {len(requests)} requests, {sum(map(len, requests))} block references over "
                     f"{p.blocks} blocks; requests are root-to-leaf paths of a prefix tree whose first {p.shared_prefix} blocks all requests share"),
        provenance=Provenance(seed=seed, params=p),
        published=Published(pooled_misses=p.target_pooled_misses, per_instance_misses=p.target_per_instance_misses),
        pool_capacity=p.pool_capacity,
        hosts=[Host(id=h, capacity=p.host_capacity, load_limit=p.host_load_limit) for h in range(p.hosts)],
        requests=[Request(id=i, blocks=b) for i, b in enumerate(requests)],
        routing={i: h for i, h in enumerate(hosts)},
    )
    return validate(inst, where="params")


def _random_routing(rng: random.Random, sizes: list[int], p: GeneratorParams) -> list[int]:
    load = [0] * p.hosts
    hosts = []
    for s in sizes:
        fits = [h for h in range(p.hosts) if load[h] + s <= p.host_load_limit]
        if not fits:
            raise InputError(f"requests do not fit: total load {sum(sizes)} over {p.hosts} hosts of "
                             f"load_limit {p.host_load_limit}", where="params")
        least = min(load[h] for h in fits)  # balance first, so large targets stay reachable
        h = rng.choice([h for h in fits if load[h] == least])
        load[h] += s
        hosts.append(h)
    return hosts


def _steer_routing(rng: random.Random, requests: list[list[int]], hosts: list[int], p: GeneratorParams) -> list[int]:
    """Swap requests between hosts until Σ_h distinct hits the target with every host within its capacity.

    Each move is kept when it does not worsen |Σ - target| + capacity overflow, so the walk can
    cross plateaus. Swaps keep loads unchanged for equal-size requests; others are load-checked.
    """
    target = p.target_per_instance_misses
    sizes = [len(r) for r in requests]

    def score(hs: list[int]) -> int:
        d = per_host_distinct(requests, hs, p.hosts)
        return abs(sum(d) - target) + sum(max(0, x - p.host_capacity) for x in d)

    def loads_ok(hs: list[int]) -> bool:
        load = [0] * p.hosts
        for s, h in zip(sizes, hs):
            load[h] += s
        return max(load) <= p.host_load_limit

    best = score(hosts)
    for _ in range(p.search_steps):
        if best == 0:
            return hosts
        i, j = rng.sample(range(len(requests)), 2)
        if hosts[i] == hosts[j]:
            continue
        cand = hosts.copy()
        cand[i], cand[j] = cand[j], cand[i]
        if sizes[i] != sizes[j] and not loads_ok(cand):
            continue
        s = score(cand)
        if s <= best:
            hosts, best = cand, s
    if best:
        raise InputError(f"the routing search cannot reach per-instance misses {target} within "
                         f"{p.search_steps} moves (off by {best}); try another seed", where="params")
    return hosts
