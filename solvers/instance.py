"""Pooling instances: the pydantic model, loading with file:line errors, and the seeded generators.

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

import json
import random
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError, model_validator

from pycert.core.errors import InputError
from pycert.core.limits import MAX_INSTANCE_ID as MAX_ID, MAX_JSON_BYTES, MAX_PARAM, json_depth_error
from solvers.pooled import peak_live

SCHEMA = "pycert-pooling-instance/1"
COMMITTED = Path(__file__).resolve().parent / "instances" / "committed.json"


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
    blocks: list[int] = Field(min_length=1, description="block ids referenced in order")

    @model_validator(mode="after")
    def _non_negative(self) -> Request:
        if any(b < 0 for b in self.blocks):
            raise ValueError("block ids must be >= 0")
        if any(b > MAX_ID for b in self.blocks):
            raise ValueError(f"block ids must fit in 64 bits (at most {MAX_ID})")
        return self


class GeneratorParams(_Frozen):
    """Parameters of :func:`generate` (recorded in every generated instance)."""

    hosts: int = Field(16, ge=1, le=4096)
    requests: int = Field(32, ge=1, le=65_536)
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
    hosts: list[Host] = Field(min_length=1)
    requests: list[Request] = Field(min_length=1)
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


# ---------------------------------------------------------------------------- validation


def consistency_errors(inst: Instance) -> list[tuple[tuple[Any, ...], str]]:
    """What makes an instance unusable, each with the JSON path it concerns (for file:line)."""
    errs: list[tuple[tuple[Any, ...], str]] = []
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
        for i, h in enumerate(inst.hosts):
            load = sum(len(r.blocks) for r in inst.requests if inst.routing[r.id] == h.id)
            if load > h.load_limit:
                errs.append((("hosts", i, "load_limit"),
                             f"host {h.id} carries {load} references under the routing, above its load_limit {h.load_limit}"))
    return errs


def validate(inst: Instance, where: str = "instance") -> Instance:
    """``inst`` if it is consistent; else an :class:`InputError` naming the first problem."""
    errs = consistency_errors(inst)
    if errs:
        raise InputError(errs[0][1], where=where)
    return inst


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
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON: {exc.msg}", where=f"{source}:{exc.lineno}") from None
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


def load_instance(path: Path | str = COMMITTED) -> Instance:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no such instance file", where=str(path)) from None
    except IsADirectoryError:
        raise InputError("is a directory, not an instance file", where=str(path)) from None
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", where=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot read instance: {exc.strerror or exc}", where=str(path)) from None
    return parse_instance(text, source=str(path))


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


class FamilyCase(_Frozen):
    """One capacitated single-cache case: the pool is smaller than the distinct count."""

    name: str
    refs: list[int] = Field(min_length=1)
    capacity: int = Field(ge=1)

    @cached_property
    def distinct(self) -> int:
        return len(set(self.refs))


class FamilyParams(_Frozen):
    seed: int = 7
    sizes: list[int] = Field(default_factory=lambda: [32, 64, 128, 256], min_length=1,
                             description="references per case (the benchmark doubles them further)")
    refs_per_block: int = Field(4, ge=1, description="blocks = refs / refs_per_block")
    capacity_fraction: float = Field(0.5, gt=0.0, lt=1.0, description="pool capacity as a fraction of the blocks")
    skew: float = Field(0.8, ge=0.0, description="Zipf exponent of block popularity")


def capacitated_family(p: FamilyParams | None = None) -> list[FamilyCase]:
    """Seeded small cases with capacity strictly below the distinct count (so OPT exceeds the wall).

    Blocks are drawn with Zipf popularity. A draw is redrawn from the same stream until more blocks
    are live at some step than the capacity holds (:func:`solvers.pooled.peak_live`): then every
    schedule must evict a block it needs again, so OPT is strictly above the distinct count.
    """

    p = p or FamilyParams()
    rng = random.Random(p.seed)
    cases = []
    for n in p.sizes:
        blocks = max(2, n // p.refs_per_block)
        capacity = max(1, int(blocks * p.capacity_fraction))
        weights = [1.0 / (b + 1) ** p.skew for b in range(blocks)]
        refs = rng.choices(range(blocks), weights=weights, k=n)
        while peak_live(tuple(refs)) <= capacity:
            refs = rng.choices(range(blocks), weights=weights, k=n)
        cases.append(FamilyCase(name=f"n{n}-b{blocks}-c{capacity}", refs=refs, capacity=capacity))
    return cases
