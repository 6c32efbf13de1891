"""What the fleet claim derives from a trace and its parameters: the host list, each host's sub-trace, the Lean
parts (the pooled instance at ``H · C`` blocks and each host's at ``C``, one capacity instance each or a
composition of pieces both ways, :mod:`pycert.families.capacity.derive`), the composition, and the engines'
figures. Prove runs the parts' makers as Ray tasks and verify in turn: the same makers, the same bytes. The
claim (:mod:`pycert.families.fleet`) imports this module only when it has a trace to read (numpy, numba)."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

import numpy as np

from pycert.analysis import fleet as routing
from pycert.analysis.requests import ref_tokens
from pycert.core.errors import InputError, Rejected, Rejection
from pycert.core.gate import Source
from pycert.core.limits import MAX_PIECE_REFS
from pycert.core.memo import kept
from pycert.core.schema import InputFile
from pycert.data.request_fields import request_values
from pycert.families.capacity import check_optimum
from pycert.families.capacity import derive as capacity_derive
from pycert.families.fleet import ENCODING, FleetParams, host_module, part_modules, pooled_module
from pycert.families.traces import reading_of
from pycert.lean.emit import CAPACITY_OPTIMA_ENCODING
from pycert.lean.emit import capacity as emit_capacity
from pycert.lean.emit import fleet as emit
from pycert.lean.emit import joints
from pycert.leak import replay as replaylog

if TYPE_CHECKING:  # numpy's trace type: only for annotations
    from pycert.families.traces import Trace


@dataclass(frozen=True)
class Split:
    """A trace behind a routing: each request's host, each reference's, and each host's sub-trace."""

    trace: Trace
    hosts_of: np.ndarray
    per_ref: np.ndarray
    subs: list[Trace]


def values(source: Source | Path, route: routing.Routing) -> list[object] | None:
    """Field ``NAME`` of every request line, in file order, for ``field:NAME`` and ``hash:NAME``; None for the
    other routings."""
    return request_values(source, route.field or "") if route.kind in ("field", "hash") else None


def split(trace: Trace, route: routing.Routing, hosts: int, fields: list[object] | None) -> Split:
    """The host list and the sub-traces (:mod:`pycert.analysis.fleet`). ``fields``: :func:`values`, in file order;
    each request is routed by its own line's, in whatever order the trace was read (``--sort``)."""
    if fields is not None and trace.lines is not None and len(trace.lines) and int(trace.lines.max()) <= len(fields):
        fields = [fields[line - 1] for line in trace.lines.tolist()]
    hosts_of = routing.route(trace, route, hosts, fields)
    return Split(trace=trace, hosts_of=hosts_of, per_ref=routing.per_reference(trace, hosts_of),
                 subs=routing.sub_traces(trace, hosts_of, hosts))


def routing_of(params: FleetParams) -> routing.Routing:
    return routing.parse_routing(params.routing, None if params.threshold is None else Fraction(params.threshold))


def certified_split(trace: Trace, source: Source, params: FleetParams) -> Split:
    """The split a certificate's parameters name, made again from its trace (whose sha256 was checked): a
    routing the trace cannot be routed by, or a host list with another sha256, is a rejection of the
    parameters. Kept within a run: the claim asks for it at each stage."""
    def compute() -> Split:
        route = routing_of(params)
        try:
            s = split(trace, route, params.hosts, values(source, route))
        except InputError as err:
            raise Rejected(Rejection.mismatch("parameters.routing", "a routing this trace's requests can be routed by",
                                              f"{params.routing!r} ({err})")) from None
        if (found := routing.host_list_sha256(s.hosts_of)) != params.hosts_sha256:
            raise Rejected(Rejection.mismatch("parameters.hosts_sha256", f"{found} (the host list the routing makes of "
                                              "the trace)", params.hosts_sha256))
        return s
    return kept("fleet-split", (trace.sha256, params.model_dump_json()), compute)


def check_host_list(s: Split, params: FleetParams, listed: InputFile | None, read: object) -> None:
    """The host list the certificate names against the one made again: its recorded sha256, and the copy beside
    the certificate where there is one (a file longer than the trace's list is refused before it is read)."""
    data = routing.host_list(s.hosts_of)
    actual = hashlib.sha256(data).hexdigest()
    if listed is None:
        raise Rejected(Rejection.mismatch("inputs", "the host list derived from the trace", "absent", reason="missing-input"))
    if listed.sha256 != actual:
        raise Rejected(Rejection.mismatch(f"inputs[{listed.path}].sha256 (made again from the trace and the routing)",
                                          actual, listed.sha256))
    source = read.locate(listed)  # type: ignore[attr-defined]
    if source.exists():
        try:
            same = source.read("a host list", len(data)) == data
        except InputError as err:
            if "above the limit" not in err.message:  # a link, a FIFO: not a copy that could be compared
                raise InputError(f"the host list beside the certificate, {listed.path}: {err.message}") from None
            same = False
        if not same:
            raise Rejected(Rejection.mismatch(f"{listed.path} (the copy beside the certificate)",
                                              "the host list pycert makes from the trace", "other bytes"))


def pieces_of(refs: np.ndarray, piece_refs: int | None) -> int:
    """How a part is checked: 0 (no reference: no module), 1 (one capacity instance), or ``k`` pieces both
    ways (a trace past one instance's sort); the count is what the parameters record."""
    if not len(refs):
        return 0
    limit = min(piece_refs or MAX_PIECE_REFS, MAX_PIECE_REFS)
    if len(refs) <= limit and emit_capacity.fits_one(len(refs), len(np.unique(refs))):
        return 1
    return -1  # pieces: how many, the split decides


def one_instance(trace: Trace, module: str, capacity: int, workload: bool) -> tuple[str, emit_capacity.Plan]:
    """One capacity instance as a module (both models both ways, no prefix test), for a Ray task or verify."""
    text, plan = capacity_derive.instance_text(trace, module, capacity, CAPACITY_OPTIMA_ENCODING, None,
                                               as_module=True, workload=workload)
    return text.decode(), plan


@dataclass
class Part:
    """The pooled instance or one host's: its module, and how to make it (one maker, or pieces and their glue)."""

    module: str
    capacity: int
    refs: np.ndarray
    sha256: str
    makers: list[tuple[str, Callable[[], tuple[str, Any]], int]] = field(default_factory=list)
    pieced: bool = False

    def glue(self, plans: Sequence[Any]) -> tuple[str, emit.Part]:
        """The part's own module text and what it states, from its makers' plans (for one instance: its own)."""
        if not self.pieced:
            [(text, plan)] = plans
            bound = plan.admission
            return text, emit.Part(module=self.module, kind="optima", refs=plan.refs, hits=bound.witness_hits or 0)
        mods = [m for m, _, _ in self.makers]
        text, whole = joints.emit_joint_glue(self.module, self.sha256, mods, list(plans), len(np.unique(self.refs)))
        assert whole.admission is not None
        return text, emit.Part(module=self.module, kind="joint", refs=whole.refs, hits=whole.admission.witness_hits or 0)


def part(trace: Trace, module: str, capacity: int, piece_refs: int | None, workload: bool, count: int) -> Part:
    """The makers of one part whose checking the parameters record as ``count`` (:func:`pieces_of`; the pieces'
    count must be what the split makes)."""
    out = Part(module=module, capacity=capacity, refs=trace.refs, sha256=trace.sha256)
    if count == 1:
        out.makers = [(module, functools.partial(one_instance, trace, module, capacity, workload), trace.n_refs)]
        return out
    limit = min(piece_refs or MAX_PIECE_REFS, MAX_PIECE_REFS)
    cuts, points = capacity_layout(trace.refs, capacity, limit)
    if count not in (-1, len(points) - 1):
        raise Rejected(Rejection.mismatch(f"parameters ({module})", f"{len(points) - 1} pieces (the split of "
                                          f"{trace.n_refs:,} references in pieces of at most {limit:,})", str(count)))
    out.makers, out.pieced = capacity_derive.joint_makers(trace.refs, trace.sha256, module, capacity, cuts, points), True
    return out


def capacity_layout(refs: np.ndarray, capacity: int, limit: int) -> tuple[list[int], list[int]]:
    """The capacity family's split of a trace in pieces both ways; a split it refuses is the parameters' fault."""
    try:
        return capacity_derive.joint_layout(refs, capacity, limit)
    except InputError as err:
        raise Rejected(Rejection.mismatch("parameters.piece_refs", "a piece size at which the part splits at cuts",
                                          f"{limit} ({err.message})")) from None


def parts(s: Split, params: FleetParams, composition: str, trace: PurePosixPath,
          counts: tuple[int, Sequence[int]] | None = None) -> list[Part]:
    """The pooled part, then each host's that receives a reference, as ``counts`` (the pooled part's, the hosts')
    record them (None: as the split makes them, at prove). ``trace``: the trace's file, which names the pooled
    module."""
    h, c = params.hosts, params.capacity_blocks
    pooled_count = counts[0] if counts else pieces_of(s.trace.refs, params.piece_refs)
    hosts = counts[1] if counts else [pieces_of(sub.refs, params.piece_refs) for sub in s.subs]
    out = [part(s.trace, pooled_module(trace, h * c, pooled_count != 1, params.piece_refs),
                h * c, params.piece_refs, pooled_count == 1, pooled_count)]
    for k, (sub, n) in enumerate(zip(s.subs, hosts)):
        if (n == 0) != (sub.n_refs == 0):
            raise Rejected(Rejection.mismatch(f"parameters.host_pieces[{k}]", f"0 exactly when host {k} receives no "
                                              f"reference ({sub.n_refs:,} here)", str(n)))
        if n:
            out.append(part(sub, host_module(composition, k), c, params.piece_refs, False, n))
    return out


def planned(s: Split, route: routing.Routing, hosts: int, capacity: int, piece_refs: int | None,
            trace: PurePosixPath, composition: str) -> tuple[FleetParams, list[Part]]:
    """The parameters prove records for a split (the host list's sha256, how each part is checked) and the parts'
    makers: the one place they are worked out, so that a certificate made without Lean (the tests) has them too."""
    threshold = None if route.threshold is None else f"{route.threshold.numerator}/{route.threshold.denominator}"
    draft = FleetParams(hosts=hosts, capacity_blocks=capacity, routing=route.text, threshold=threshold,
                        hosts_sha256=routing.host_list_sha256(s.hosts_of), pooled_pieces=1, host_pieces=[1] * hosts,
                        piece_refs=piece_refs, lean_encoding=ENCODING, **reading_of(s.trace))  # type: ignore[arg-type]
    made = parts(s, draft, composition, trace)
    counts = {p.module: len(p.makers) if p.pieced else 1 for p in made}
    params = FleetParams.model_validate({**draft.model_dump(), "pooled_pieces": counts[made[0].module],
                                         "host_pieces": [counts.get(host_module(composition, k), 0) for k in range(hosts)]})
    return params, made


def compose(s: Split, params: FleetParams, composition: str, built: Sequence[tuple[Part, str, emit.Part]]
            ) -> tuple[dict[str, str], emit.Statement]:
    """Every module's text by name (each part's pieces were made already; ``built``: each part, its own
    module's text and what it states), the composition last, and what the composition states."""
    pooled = built[0][2]
    by_module = {p.module: stated for p, _, stated in built[1:]}
    empty = emit.Part(module=None, kind="empty", refs=0, hits=0)  # a host that receives no reference
    hosts = [by_module.get(host_module(composition, k), empty) for k in range(params.hosts)]
    distinct = len(np.unique(s.trace.refs)) if pooled.kind == "optima" else None
    text, statement = emit.emit_fleet(composition, s.trace.sha256, s.per_ref, params.hosts, params.capacity_blocks,
                                      pooled, hosts, distinct)
    return {**{p.module: own for p, own, _ in built}, composition: text}, statement


def files(s: Split, params: FleetParams, instance: str, trace: PurePosixPath) -> tuple[dict[str, bytes], emit.Statement]:
    """Every Lean file by path (``instance``: the composition's), made in this process: what verify writes again."""
    composition = PurePosixPath(instance).stem
    where = PurePosixPath(instance).parent
    made: dict[str, str] = {}
    built = []
    for p in parts(s, params, composition, trace, (params.pooled_pieces, params.host_pieces)):
        plans = []
        for m, make, _ in p.makers:
            text, plan = make()
            plans.append((text, plan) if not p.pieced else plan)
            if p.pieced:
                made[m] = text
        own, stated = p.glue(plans)
        built.append((p, own, stated))
    texts, statement = compose(s, params, composition, built)
    made |= texts
    expected = {PurePosixPath(path).stem for path in part_modules(params, instance, trace)} | {composition}
    if set(made) != expected:
        raise Rejected(Rejection.mismatch("parameters (the parts)", ", ".join(sorted(expected)), ", ".join(sorted(made))))
    return {(where / f"{m}.lean").as_posix(): text.encode() for m, text in made.items()}, statement


def check_literals(s: Split, params: FleetParams, kernel: dict[str, int]) -> None:
    """The kernel's literals against the parameters, the trace and pycert's engines: each optimum is Belady's
    MIN with bypass on its list (two engines agreeing), each host's length its sub-trace's."""
    for name, want in (("hosts", params.hosts), ("capacity_blocks", params.capacity_blocks), ("refs", s.trace.n_refs)):
        if kernel[name] != want:
            raise Rejected(Rejection.mismatch(f"figures.{name}", f"{want} (the parameters and the trace)", str(kernel[name])))
    if "distinct" in kernel and kernel["distinct"] != (d := len(np.unique(s.trace.refs))):
        raise Rejected(Rejection.mismatch("figures.distinct", f"{d} (the trace's distinct blocks)", str(kernel["distinct"])))
    pooled_c = params.hosts * params.capacity_blocks
    check_optimum("pooled_hits", kernel["pooled_hits"], capacity_derive.engines(s.trace.refs, pooled_c, admission=True),
                  pooled_c, "Belady's MIN with bypass on the whole trace")
    for k, sub in enumerate(s.subs):
        if kernel[f"host_refs_{k}"] != sub.n_refs:
            raise Rejected(Rejection.mismatch(f"figures.host_refs_{k}", f"{sub.n_refs} (host {k}'s sub-trace)",
                                              str(kernel[f"host_refs_{k}"])))
        opt = capacity_derive.engines(sub.refs, params.capacity_blocks, admission=True) if sub.n_refs else 0
        check_optimum(f"host_hits_{k}", kernel[f"host_hits_{k}"], opt, params.capacity_blocks,
                      f"Belady's MIN with bypass on host {k}'s sub-trace")


def figures(s: Split, params: FleetParams, kernel: dict[str, int]) -> dict[str, Fraction]:
    """The kernel's literals, checked (:func:`check_literals`), and the waterfall computed from them."""
    check_literals(s, params, kernel)
    n = Fraction(kernel["refs"])
    out = {name: Fraction(v) for name, v in kernel.items()}
    pooled, routed = out["pooled_hits"], out["routed_hits"]
    out |= {"requests": Fraction(s.trace.n_requests or 0), "pooled_capacity_blocks": Fraction(params.hosts * params.capacity_blocks),
            "pooled_hit_rate": pooled / n, "routed_hit_rate": routed / n, "routing_loss": pooled - routed}
    if "workload_hits" in out:
        out |= {"workload_hit_rate": out["workload_hits"] / n, "capacity_loss": out["workload_hits"] - pooled}
    weights = ref_tokens(s.trace)
    if weights is not None and s.trace.block_tokens is not None:
        b = s.trace.block_tokens
        out["refs_tokens"] = Fraction(weights.total)
        for name in ("workload_hits", "pooled_hits", "routed_hits"):
            if name in out:
                out[f"{name}_tokens"] = out[name] * b
    return out


def host_requests(sub: Trace) -> list[list[int]]:
    """A host's requests as lists of block ids, in its sub-trace's order."""
    assert sub.requests is not None
    refs, bounds = sub.refs.tolist(), sub.requests.tolist()
    return [refs[a:b] for a, b in zip(bounds, bounds[1:])]


LOG_HEADER_BYTES, LOG_LINE_BYTES = 4096, 512
"""The most a replay log's header and each of its request lines may take (a genuine line is about 200 bytes)."""


def engine_figures(s: Split, params: FleetParams, logs: Sequence[Source], figures: dict[str, Fraction]) -> dict[str, Fraction]:
    """Each host's replay log held to its sub-trace and to the certificate's engine (its header, every request's
    blocks), the engine's hits per host (its own count, whole blocks) refused above the host's kernel-checked
    optimum, and the sums: the engine figures and the eviction loss."""
    setting = params.engine
    assert setting is not None
    busy = [k for k, sub in enumerate(s.subs) if sub.n_refs]
    if len(logs) != len(busy):
        raise Rejected(Rejection.mismatch("inputs[role=log]", f"{len(busy)} replay logs, one per host that receives a "
                                          "reference", str(len(logs))))
    b, out = setting.block_tokens, {f"engine_hits_{k}": Fraction(0) for k in range(params.hosts)}
    total = cached = served = 0
    for k, source in zip(busy, logs):
        sub = s.subs[k]
        # a log is a header and a line a request: read no more than this host's requests can fill, so that 64 logs
        # of a stranger's directory cost what the trace's own requests do, not 64 times the log size limit
        log = replaylog.parse(source.read("a replay log", LOG_HEADER_BYTES + LOG_LINE_BYTES * (sub.n_requests or 0)),
                              str(source))
        h = log.header
        want = {"engine": setting.engine, "engine_version": setting.engine_version, "model": setting.model,
                "device": setting.device, "seed": setting.seed, "block_tokens": b, "num_blocks": params.capacity_blocks,
                "trace_sha256": s.trace.sha256, "requests": sub.n_requests, "refs": sub.n_refs}
        for name, value in want.items():
            if getattr(h, name) != value:
                raise Rejected(Rejection.mismatch(f"{source} header.{name}", f"{value} (host {k}'s replay)",
                                                  str(getattr(h, name))))
        mine = host_requests(sub)
        if len(log.requests) != len(mine):
            raise Rejected(Rejection.mismatch(f"{source} (requests)", str(len(mine)), str(len(log.requests))))
        for i, (line, blocks) in enumerate(zip(log.requests, mine)):
            if (line.request, line.blocks, line.blocks_sha256) != (i, len(blocks), replaylog.blocks_digest(blocks)):
                raise Rejected(Rejection.mismatch(f"{source}:{i + 2}", f"request {i} of host {k}'s sub-trace, "
                                                  f"{len(blocks)} blocks", f"request {line.request}, {line.blocks} blocks"))
        hits = sum(min(r.cached_tokens // b, r.blocks) for r in log.requests)
        if hits > (bound := int(figures[f"host_hits_{k}"])):
            raise Rejected(Rejection(subject=f"figures.engine_hits_{k}", reason="above-optimum", expected=f"at most {bound}",
                                     found=str(hits), detail=f"the engine reports {hits} hits on host {k} at "
                                     f"{params.capacity_blocks} blocks, above the {bound} the kernel proved for every "
                                     "cache of that many blocks on its sub-trace: a defect of the engine, the tap or "
                                     "the replay"))
        out[f"engine_hits_{k}"] = Fraction(hits)
        total, cached = total + hits, cached + sum(r.cached_tokens for r in log.requests)
        if (weights := ref_tokens(sub)) is not None:
            marks = np.zeros(sub.n_refs, dtype=bool)
            for a, r in zip(sub.requests[:-1].tolist(), log.requests):  # type: ignore[index]
                marks[a:a + min(r.cached_tokens // b, r.blocks)] = True
            served += weights.hit(marks)
    n = figures["refs"]
    out |= {"engine_hits": Fraction(total), "engine_cached_tokens": Fraction(cached), "engine_hit_rate": Fraction(total) / n,
            "eviction_loss": figures["routed_hits"] - total}
    if "refs_tokens" in figures:
        out["engine_hits_tokens"] = Fraction(served)
    return out
