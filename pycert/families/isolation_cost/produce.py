"""Making isolation-cost certificates: read each trace once, make its tenant map and keyed trace, and per
capacity emit the trace's and the keyed trace's capacity instances and their composition."""

from __future__ import annotations

import argparse
import re
from fractions import Fraction
from pathlib import Path

from pycert.core.console import plural
from pycert.core.errors import InputError
from pycert.core.limits import MAX_PARAM, MAX_PIECE_REFS, MAX_TENANTS, int_range
from pycert.families.base import Options, Prepared, Producer, Setting, input_file
from pycert.families.capacity.produce import CapacityOptions, capacities, refuse_overwrites
from pycert.analysis import salt
from pycert.analysis.salt import TenantRule
from pycert.families.traces import DEFAULT_TRACE, read_for_proof, reading_of, trace_files
from pycert.families.isolation_cost import CLAIM, ENCODING, IsolationCostParams, derive, names, rule_tag

RULE = re.compile(r"field|round-robin|prefix:([1-9][0-9]{0,12})")


def tenant_rule(text: str) -> str:
    """``--tenant-rule``: ``field``, ``round-robin`` or ``prefix:K`` (1 ≤ K ≤ 2^40)."""
    m = RULE.fullmatch(text)
    if m is None or (m.group(1) is not None and int(m.group(1)) > MAX_PARAM):
        raise argparse.ArgumentTypeError(f"{text[:40]!r}: give field, round-robin or prefix:K (K a block count from 1 "
                                         f"to {MAX_PARAM})")
    return text


def parse_rule(text: str) -> tuple[TenantRule, int | None]:
    rule, _, k = text.partition(":")
    return rule, (int(k) if k else None)  # type: ignore[return-value]


class IsolationCostOptions(Options):
    trace: list[Path] = []
    """The ceiling family's ``--trace``; none: the embedded synthetic trace."""
    capacity_blocks: list[int] = []
    capacity_tokens: list[int] = []
    """The capacity family's flags: the capacities, in blocks or in tokens."""
    block_tokens: int | None = None
    trace_format: str = "auto"
    sort: bool = False
    tenant_rule: str = "field"
    tenants: int | None = None
    wanted: bool = False
    """``pycert prove isolation-cost``, or a tenant flag under ``prove all``: else the family makes nothing."""
    shard_refs: int | None = None
    ray_address: str | None = None
    """Options of the families it borrows from that it does not take (each trace is one instance per
    capacity, checked in the run's build): refused under ``prove isolation-cost``."""
    required: bool = False


class IsolationCostProducer(Producer):
    summary = ("Prove what a per-tenant salt costs at each capacity of --capacity-blocks on each --trace: the "
               "optimum at C blocks of one cache shared by every tenant and of a salted cache (every block keyed by "
               "its request's tenant: the trace's tenant field, or --tenants with --tenant-rule), each "
               "kernel-checked for caches that may bypass a missed block and for caches that store every miss, and "
               "the hits the salt costs.")
    claim = CLAIM
    options = IsolationCostOptions
    borrows = ("ceiling", "capacity")

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--tenant-rule", type=tenant_rule, default=None, metavar="RULE",
                            help="isolation-cost: who each request belongs to: field (the trace's tenant field; the "
                                 "default), prefix:K (the sha256 of its first K block ids modulo --tenants: a "
                                 "conversation stays with one tenant) or round-robin (requests dealt in turn); "
                                 "docs/isolation-cost.md")
        parser.add_argument("--tenants", type=int_range(1, MAX_TENANTS), default=None, metavar="T",
                            help="isolation-cost: how many tenants a prefix:K or round-robin rule assigns to")

    def options_from(self, args: argparse.Namespace, everything: bool = False) -> IsolationCostOptions:
        required = args.family == self.claim.name
        return IsolationCostOptions(
            trace=getattr(args, "trace", []), capacity_blocks=args.capacity_blocks, capacity_tokens=args.capacity_tokens,
            block_tokens=getattr(args, "block_tokens", None), trace_format=getattr(args, "format", "auto"),
            sort=getattr(args, "sort", False), tenant_rule=args.tenant_rule or "field", tenants=args.tenants,
            wanted=required or args.tenant_rule is not None or args.tenants is not None, required=required,
            shard_refs=getattr(args, "shard_refs", None), ray_address=getattr(args, "ray_address", None))

    def traces(self, setting: Setting) -> list[Path]:
        opts: IsolationCostOptions = setting.options  # type: ignore[assignment]
        if not opts.wanted:
            return []
        return list(opts.trace) or [setting.out_dir / DEFAULT_TRACE]

    def check(self, setting: Setting) -> None:
        opts: IsolationCostOptions = setting.options  # type: ignore[assignment]
        if not opts.wanted:
            return
        if not (opts.capacity_blocks or opts.capacity_tokens):
            raise InputError("give the capacities to certify the salt's cost at: --capacity-blocks C[,C...] or "
                             "--capacity-tokens T[,T...]")
        rule, k = parse_rule(opts.tenant_rule)
        if rule == "field" and opts.tenants is not None:
            raise InputError("the trace's tenant field names its own tenants: --tenants goes with --tenant-rule "
                             "prefix:K or round-robin", where="--tenants")
        if rule != "field" and opts.tenants is None:
            raise InputError(f"--tenant-rule {opts.tenant_rule} deals requests to tenants: give --tenants T", where="--tenant-rule")
        if opts.required:
            for flag, value in (("--shard-refs", opts.shard_refs), ("--ray-address", opts.ray_address)):
                if value is not None:
                    raise InputError("isolation-cost states both optima both ways in one instance per trace and "
                                     "capacity, checked in this run's build: it takes no pieces and no Ray cluster",
                                     where=flag)
        tag = rule_tag(rule, opts.tenants or 0, k)
        refuse_overwrites(opts.trace, self.traces(setting), setting.out_dir,
                          lambda trace: (names(trace, tag, 0)[0].removesuffix("-c0"), names(trace, tag, 0)[1]))

    def prepare(self, setting: Setting) -> list[Prepared]:
        return [p for path, emitted in trace_files(self.traces(setting), setting)
                for p in self._prepare_trace(path, setting, emitted)]

    def _prepare_trace(self, path: Path, setting: Setting, emitted: Path | None = None) -> list[Prepared]:
        opts: IsolationCostOptions = setting.options  # type: ignore[assignment]
        trace = read_for_proof(path, opts)
        if trace.n_refs == 0:
            raise InputError("the trace has no block references: nothing to cache", where=trace.name)
        if trace.n_refs > MAX_PIECE_REFS:
            raise InputError(f"{trace.n_refs:,} references: isolation-cost states both optima both ways in one instance "
                             f"per trace, which holds at most {MAX_PIECE_REFS:,} (a trace in pieces states a bound "
                             "only); certify a part of the trace", where=trace.name)
        rule, k = parse_rule(opts.tenant_rule)
        tenant_of = salt.tenant_map(trace, rule, opts.tenants, k)
        count = salt.tenant_count(trace, rule, opts.tenants)
        if count > MAX_TENANTS:
            raise InputError(f"the trace names {count:,} tenants, more than the {MAX_TENANTS:,} a tenant map may have",
                             where=trace.name)
        trace_input = (setting.emitted("trace", emitted, sha256=trace.sha256) if emitted is not None
                       else input_file("trace", path, setting.root, sha256=trace.sha256))
        base = dict(tenant_rule=rule, tenants=count, prefix_blocks=k, tenant_map_sha256=salt.map_sha256(tenant_of),
                    lean_encoding=ENCODING, **reading_of(trace))
        keyed = None
        out = []
        for c in capacities(CapacityOptions(capacity_blocks=opts.capacity_blocks, capacity_tokens=opts.capacity_tokens),
                            trace):
            verdict, why = derive.prefix_of(trace, c)
            params = IsolationCostParams(capacity_blocks=c, shared_prefix_cache=verdict, **base)  # type: ignore[arg-type]
            keyed = keyed or derive.salted(trace, params)
            if why := derive.unsortable(keyed):
                raise InputError(f"{why}: certify a part of the trace", where=trace.name)
            if verdict != "attained":
                setting.progress(f"{trace.name}: no prefix cache claimed at {plural(c, 'block')}: {why}")
            instance = CLAIM.instance(params, [trace_input])
            setting.progress(f"{trace.name}: {plural(count, 'tenant')} ({opts.tenant_rule}), the trace and the keyed "
                             f"trace at {plural(c, 'block')}")
            files, cost = derive.files(keyed, params, instance.path)
            p = Prepared(claim=CLAIM, id=names(path, rule_tag(rule, count, k), c)[0], parameters=params, headline="",
                         inputs=[trace_input], located={trace_input.path: path})
            for rel in (instance.path, *CLAIM.parts(params, instance)):
                written = setting.emit(Path(rel), files[rel])
                p.inputs.append(setting.emitted("lean", Path(rel), derived_from="trace"))
                p.located[rel] = written
            p.lean_file = p.located[instance.path]
            p.parts = [p.located[rel] for rel in CLAIM.parts(params, instance)]
            p.engine = {"refs": Fraction(cost.refs), "capacity_blocks": Fraction(c),
                        "shared_demand_hits": Fraction(cost.shared_demand), "shared_hits": Fraction(cost.shared),
                        "salted_demand_hits": Fraction(cost.salted_demand), "salted_hits": Fraction(cost.salted)}
            gap = cost.shared - cost.salted
            p.headline = (f"{plural(c, 'block')}: the salt costs {plural(gap, 'hit')}"
                          + (f" ({100 * gap / cost.shared:.2f}%)" if cost.shared else ""))
            out.append(p)
        return out


PRODUCER = IsolationCostProducer()
