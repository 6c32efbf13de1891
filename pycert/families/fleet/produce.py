"""Making fleet certificates: read each trace once; per number of hosts, capacity and routing, route its requests,
make each host's sub-trace, emit and check the pooled instance and every host's as Ray tasks (one task a module,
in parallel; the pooled instance shared by every certificate with the same ``H · C``), replay each host on the
engine where one is asked for, then write each composition, which the run's build checks with its parts from the
build cache."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import numpy as np

from pycert.analysis import fleet as routing
from pycert.core.console import plural
from pycert.core.errors import InputError
from pycert.core.limits import int_list, int_range
from pycert.core.schema import InputFile
from pycert.families.base import Options, Prepared, Producer, Setting, input_file
from pycert.families.capacity.produce import CapacityOptions, capacities, refuse_overwrites
from pycert.families.fleet import (CLAIM, MAX_FLEET_HOSTS, FleetParams, derive, host_list_path, log_paths, names,
                                   part_modules)
from pycert.families.fleet import replays
from pycert.families.traces import DEFAULT_TRACE, certified_trace, read_for_proof, trace_files
from pycert.lean import cluster
from pycert.leak.engines.paged import ENGINES

if TYPE_CHECKING:
    from pycert.leak.replay import PagedEngine


def routing_arg(text: str) -> str:
    """``--routing``: checked as :func:`pycert.analysis.fleet.parse_routing` reads it."""
    try:
        routing.parse_routing(text)
    except InputError as err:
        raise argparse.ArgumentTypeError(err.message) from None
    return text


def threshold_arg(text: str) -> str:
    """``--threshold``: a ratio from 0 to 1, a decimal (``0.3``) or a fraction (``3/10``), kept exact."""
    try:
        value = Fraction(text.strip())
    except (ValueError, ZeroDivisionError):
        value = None
    if value is None or not 0 <= value <= 1 or value.denominator > 10 ** 6 or len(text) > 20:
        raise argparse.ArgumentTypeError(f"{text[:20]!r}: give a ratio from 0 to 1 (0.3, or 3/10)")
    return f"{value.numerator}/{value.denominator}"


class FleetOptions(Options):
    trace: list[Path] = []
    capacity_blocks: list[int] = []
    capacity_tokens: list[int] = []
    block_tokens: int | None = None
    trace_format: str = "auto"
    sort: bool = False
    """The ceiling's and capacity's flags: the traces, each host's capacity, how a trace is read."""
    hosts: list[int] = []
    routing: list[str] = []
    threshold: str | None = None
    engine: str | None = None
    engine_block_tokens: int = 16
    piece_refs: int | None = None
    ray_address: str | None = None
    wanted: bool = False
    """``pycert prove fleet``, or a fleet flag under ``prove all``: else the family makes nothing."""


class FleetProducer(Producer):
    summary = ("Prove where a fleet's hits went on each --trace: --hosts H caches of --capacity-blocks C blocks "
               "behind each --routing; the workload's reuse (the ceiling), the pooled optimum of one cache of H·C "
               "blocks with the theorem that it bounds every routing and every per-host policy, the routed optimum "
               "(each host's optimum at C blocks on its own requests, summed), and with --engine an engine's hits "
               "replaying each host; the losses between them in blocks and tokens.")
    claim = CLAIM
    options = FleetOptions
    borrows = ("ceiling", "capacity")

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--hosts", type=int_list(1, MAX_FLEET_HOSTS), action="extend", default=[], metavar="H[,H...]",
                            help="fleet: how many hosts, each with a cache of --capacity-blocks blocks (one certificate "
                                 f"per number, at most {MAX_FLEET_HOSTS}); docs/fleet.md")
        parser.add_argument("--routing", type=routing_arg, action="append", default=[], metavar="ROUTING",
                            help="fleet: how requests go to hosts (repeatable): round-robin, field:NAME (the host the "
                                 "trace's field NAME records), hash:NAME (a consistent hash of field NAME), prefix:K (a "
                                 "consistent hash of the first K block ids) or cache-aware (the longest estimated cached "
                                 "prefix, else the least-loaded host)")
        parser.add_argument("--threshold", type=threshold_arg, default=None, metavar="RATIO",
                            help="fleet, cache-aware routing: the match ratio under which a request goes to the "
                                 "least-loaded host (default 0.3)")
        parser.add_argument("--engine", choices=ENGINES, default=None,
                            help="fleet: replay each host's sub-trace on this engine's own cache code and certify its "
                                 "hits beside the optima (observed)")
        parser.add_argument("--engine-block-tokens", type=int_range(4, 1 << 12), default=16, metavar="B",
                            help="fleet, with --engine: tokens each trace block becomes in the replay (default 16)")

    def options_from(self, args: argparse.Namespace, everything: bool = False) -> FleetOptions:
        wanted = args.family == self.claim.name or bool(args.hosts or args.routing)
        return FleetOptions(
            trace=getattr(args, "trace", []), capacity_blocks=args.capacity_blocks, capacity_tokens=args.capacity_tokens,
            block_tokens=getattr(args, "block_tokens", None), trace_format=getattr(args, "format", "auto"),
            sort=getattr(args, "sort", False), hosts=args.hosts, routing=args.routing, threshold=args.threshold, engine=args.engine,
            engine_block_tokens=args.engine_block_tokens, piece_refs=getattr(args, "shard_refs", None),
            ray_address=getattr(args, "ray_address", None), wanted=wanted)

    def traces(self, setting: Setting) -> list[Path]:
        opts: FleetOptions = setting.options  # type: ignore[assignment]
        return (list(opts.trace) or [setting.out_dir / DEFAULT_TRACE]) if opts.wanted else []

    def check(self, setting: Setting) -> None:
        opts: FleetOptions = setting.options  # type: ignore[assignment]
        if not opts.wanted:
            return
        for flag, given in (("--hosts", opts.hosts), ("--routing", opts.routing),
                            ("--capacity-blocks", opts.capacity_blocks or opts.capacity_tokens)):
            if not given:
                raise InputError("a fleet needs --hosts H, --capacity-blocks C (each host's) and --routing R", where=flag)
        if opts.threshold is not None and "cache-aware" not in opts.routing:
            raise InputError("--threshold is the cache-aware router's: give --routing cache-aware", where="--threshold")
        if opts.piece_refs is not None and opts.piece_refs < 2:
            raise InputError(f"--shard-refs {opts.piece_refs}: a piece holds at least 2 references", where="--shard-refs")
        refuse_overwrites(opts.trace, self.traces(setting), setting.out_dir,
                          lambda trace: (names(trace, "round-robin", 0, 0)[0].removesuffix("-round-robin-h0-c0"),
                                         names(trace, "round-robin", 0, 0)[1]))

    def prepare(self, setting: Setting) -> list[Prepared]:
        opts: FleetOptions = setting.options  # type: ignore[assignment]
        plans = [plan for path, emitted in trace_files(self.traces(setting), setting)
                 for plan in self._plan_trace(path, setting, emitted)]
        if not plans:
            return []
        works: dict[str, cluster.Work] = {}
        for plan in plans:
            for part in plan.parts:
                for m, make, n in part.makers:
                    works.setdefault(m, cluster.Work(m, make, size=plural(n, "reference"), weight=n))
        setting.progress(f"{plural(len(works), 'Lean module')} for {plural(len(plans), 'fleet certificate')}, as Ray "
                         "tasks (at most one a core, each checking its modules in one warm Lean)")
        outcomes = {o.module: o for o in cluster.check_all(list(works.values()), backend=setting.backend,
                                                             timeout=setting.timeout, address=opts.ray_address,
                                                             progress=setting.progress, grouped=True)}
        if opts.engine is None:
            return [plan.finish(outcomes, setting, None) for plan in plans]
        with replays.engines(opts.engine, opts.engine_block_tokens) as fresh:
            return [plan.finish(outcomes, setting, fresh) for plan in plans]

    def _plan_trace(self, path: Path, setting: Setting, emitted: Path | None) -> list[_Plan]:
        opts: FleetOptions = setting.options  # type: ignore[assignment]
        trace = read_for_proof(path, opts)
        trace_input = (setting.emitted("trace", emitted, sha256=trace.sha256) if emitted is not None
                       else input_file("trace", path, setting.root, sha256=trace.sha256))
        distinct = len(np.unique(trace.refs))
        longest = int(np.diff(trace.requests).max()) if trace.requests is not None and trace.n_requests else 0
        fields: dict[str, list[object] | None] = {}
        out = []
        for text in dict.fromkeys(opts.routing):
            route = routing.parse_routing(text, None if opts.threshold is None else Fraction(opts.threshold))
            if route.field is not None and route.field not in fields:
                fields[route.field] = derive.values(path, route)
            for c in capacities(CapacityOptions(capacity_blocks=opts.capacity_blocks, capacity_tokens=opts.capacity_tokens),
                                trace):
                if opts.engine is not None and longest >= c:  # before any Lean runs: the engine could not replay it
                    raise InputError(f"a request of {longest:,} blocks, which an engine's cache of {c:,} blocks cannot run "
                                     "beside its partial last block: give a larger --capacity-blocks", where=trace.name)
                for h in dict.fromkeys(opts.hosts):
                    if h * c > distinct:
                        raise InputError(f"{plural(h, 'host')} of {plural(c, 'block')} hold {h * c:,} blocks, more than the trace's "
                                         f"{distinct:,} distinct blocks: every cache would hold the whole trace; give fewer "
                                         "hosts or a smaller --capacity-blocks", where=trace.name)
                    s = derive.split(trace, route, h, fields.get(route.field or ""))
                    out.append(_Plan(path, trace_input, s, route, h, c, opts, setting))
        return out


class _Plan:
    """One certificate on its way: the split, the parts' makers (checked as Ray tasks), then the composition."""

    def __init__(self, path: Path, trace_input: InputFile, s: derive.Split, route: routing.Routing, hosts: int,
                 capacity: int, opts: FleetOptions, setting: Setting) -> None:
        self.path, self.trace_input, self.s, self.opts = path, trace_input, s, opts
        self.id, self.composition = names(PurePosixPath(trace_input.path), route.text, hosts, capacity)
        earlier = certified_trace(setting.out_dir / f"{self.id}.json")
        if earlier is not None and earlier != PurePosixPath(trace_input.path).name:
            raise InputError(f"{setting.out_dir / self.id}.json certifies trace {earlier}, which this trace's certificate "
                             "would replace: rename the trace or prove into another --out", where=str(path))
        self.params, self.parts = derive.planned(s, route, hosts, capacity, opts.piece_refs,
                                                 PurePosixPath(trace_input.path), self.composition)
        sizes = ", ".join(str(sub.n_refs) for sub in s.subs)
        setting.progress(f"{s.trace.name}: {plural(hosts, 'host')} of {plural(capacity, 'block')}, routing {route.text}: "
                         f"references per host {sizes}")

    def finish(self, outcomes: dict[str, cluster.Outcome], setting: Setting,
               fresh: Callable[[int], PagedEngine] | None) -> Prepared:
        """The composition from the parts' outcomes, the engine's replays on ``fresh`` engines (with
        ``--engine``), the files and the certificate's inputs."""
        params: FleetParams = self.params
        instance = CLAIM.instance(params, [self.trace_input])
        p = Prepared(claim=CLAIM, id=self.id, parameters=params, headline="", inputs=[self.trace_input],
                     located={self.trace_input.path: self.path})
        results = [outcomes[m].result for part in self.parts for m, _, _ in part.makers]
        if not p.judge_parts(results):
            return p
        built = []
        texts: dict[str, str] = {}
        for part in self.parts:
            mine = [outcomes[m] for m, _, _ in part.makers]
            own, stated = part.glue([(o.source, o.extra) for o in mine] if not part.pieced else [o.extra for o in mine])
            built.append((part, own, stated))
            if part.pieced:
                texts |= {o.module: o.source for o in mine}
        composed, statement = derive.compose(self.s, params, self.composition, built)
        texts |= composed
        rel_hosts = Path(host_list_path(self.id))
        hosts_file = setting.emit(rel_hosts, routing.host_list(self.s.hosts_of))
        p.inputs.append(setting.emitted("hosts", rel_hosts, derived_from="trace"))
        p.located[rel_hosts.as_posix()] = hosts_file
        if fresh is not None:
            engine, logs = replays.replay_hosts(fresh, self.s, params.capacity_blocks, self.opts.engine_block_tokens,
                                                setting.progress)
            params = params.model_copy(update={"engine": engine})
            p.parameters = params
            for rel, data in zip(log_paths(self.id, params), logs):
                written = setting.emit(Path(rel), data)
                p.inputs.append(setting.emitted("log", Path(rel)))
                p.located[rel] = written
        order = [instance.path, *part_modules(params, instance.path, PurePosixPath(self.trace_input.path))]
        for rel in order:
            module = PurePosixPath(rel).stem
            written = setting.emit(Path(rel), texts[module].encode())
            p.inputs.append(setting.emitted("lean", Path(rel), derived_from="trace"))
            p.located[rel] = written
        p.lean_file = p.located[order[0]]
        p.parts = [p.located[rel] for rel in order[1:]]
        p.engine = {name: Fraction(v) for name, v in zip(CLAIM.literal_names(params), statement.literals())}
        p.headline = (f"{params.hosts} x {plural(params.capacity_blocks, 'block')} {params.routing}: pooled "
                      f"{statement.pooled / statement.refs:.4f}, routed {statement.routed / statement.refs:.4f}")
        return p


PRODUCER = FleetProducer()
