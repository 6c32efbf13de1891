"""``pycert pooling solve|generate|check``: the pooled KV placement result and its instances.

``solve`` runs every step of :func:`pycert.families.pooling.run_pooling` (CP-SAT, HiGHS, replay, Belady,
matching, with ``--kernel`` the Lean kernel) and prints the table; ``generate`` writes a seeded instance;
``check`` validates an instance, recomputes its walls and regenerates it from its recorded seed.
"""

from __future__ import annotations

import argparse
import json

from pydantic import BaseModel, ValidationError

from pycert import prove
from pycert.cli import add_backend, add_common, help_of
from pycert.core.console import Progress, emit, plural, table, write_out
from pycert.core.errors import EXIT_OK, EXIT_REJECTED, InputError
from pycert.core.extras import require
from pycert.core.files import atomic_write
from pycert.core.limits import (
    MAX_FAMILY_SIZE,
    in_path,
    int_list,
    int_range,
    json_depth_error,
    out_path,
    seconds,
    seed,
)
from pycert.families.pooling.produce import LeanCheck, PoolingResult, run_pooling
from pycert.solvers.capacitated import CapacitatedParams
from pycert.solvers.graphs import sharing
from pycert.solvers.instance import COMMITTED, GeneratorParams, generate
from pycert.solvers.instance_io import dump_instance, load_instance
from pycert.solvers.model import SolveResult, SolverParams
from pycert.solvers.pooled import peak_live


def _sizes(text: str) -> list[int]:
    return int_list(1, MAX_FAMILY_SIZE)(text)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("pooling", help=help_of("pooling"))
    psub = p.add_subparsers(dest="action", metavar="ACTION")
    psub.required = True

    s = psub.add_parser("solve", help="solve the pooled, per-instance and best-routing models and cross-check them")
    s.add_argument("instance", nargs="?", type=in_path, default=None, help="instance JSON (default: the committed one)")
    s.add_argument("--seed", type=seed, default=0, help="solver random seed (CP-SAT and HiGHS)")
    s.add_argument("--workers", type=int_range(1, 256), default=2, help="solver threads (1-256)")
    s.add_argument("--time-limit", type=seconds, default=60.0, help="seconds per solve")
    s.add_argument("--family-sizes", type=_sizes, default=None, metavar="N,N,...",
                   help="references per capacitated-family case (default 32,64,128,256)")
    s.add_argument("--family-seed", type=seed, default=None, help="seed of the capacitated family")
    s.add_argument("--kernel", action="store_true", help="kernel-check the emitted Lean wall file (slow on wasm)")
    s.add_argument("--lean-file", type=out_path, default=None, help="where to write the Lean wall file")
    add_common(s)
    add_backend(s, "Lean backend for --kernel")
    s.set_defaults(func=cmd_solve)

    g = psub.add_parser("generate", help="write the seeded instance (defaults reproduce the committed one)")
    g.add_argument("--seed", type=seed, default=None, help="generator seed (default: the committed instance's)")
    g.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a generator parameter (repeatable), e.g. --set hosts=8")
    g.add_argument("--name", default=None, help="instance name")
    g.add_argument("--out", type=out_path, default=None, help="output file (default: stdout)")
    add_common(g)
    g.set_defaults(func=cmd_generate)

    c = psub.add_parser("check", help="validate an instance, recompute its walls, regenerate it from its seed")
    c.add_argument("instance", nargs="?", type=in_path, default=None, help="instance JSON (default: the committed one)")
    add_common(c)
    c.set_defaults(func=cmd_check)


def cmd_solve(args: argparse.Namespace) -> int:
    require("prove", "pycert pooling")
    cases = CapacitatedParams()
    if args.family_sizes:
        cases = cases.model_copy(update={"sizes": args.family_sizes})
    if args.family_seed is not None:
        cases = cases.model_copy(update={"seed": args.family_seed})
    res = run_pooling(
        args.instance or COMMITTED,
        params=SolverParams(seed=args.seed, workers=args.workers, time_limit_s=args.time_limit),
        cases=cases,
        lean_check=(lambda path: LeanCheck.model_validate(prove.check([path], args.backend).model_dump()))
        if args.kernel else None,
        lean_file=args.lean_file,
        progress=Progress(enabled=not args.json),
    )
    emit(args.json, res, lambda: render_table(res))
    return EXIT_OK if res.holds else EXIT_REJECTED


def _params(overrides: list[str], base: BaseModel) -> BaseModel:
    update = dict(base.model_dump())
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or key not in update:
            raise InputError(f"--set {item!r}: expected KEY=VALUE with KEY one of {', '.join(sorted(update))}")
        if json_depth_error(value):
            raise InputError(f"--set {key}: {json_depth_error(value)}")
        try:
            update[key] = json.loads(value)
        except ValueError:  # not JSON (or a number past 4,300 digits): the text itself
            update[key] = value
    try:
        return type(base).model_validate(update)
    except ValidationError as exc:
        e = exc.errors()[0]
        raise InputError(f"--set: {'.'.join(map(str, e['loc'])) or 'params'}: {e['msg']}") from None


def cmd_generate(args: argparse.Namespace) -> int:
    committed = load_instance(COMMITTED).provenance
    seed = args.seed if args.seed is not None else (committed.seed if committed else 0)
    params = _params(args.overrides, committed.params if committed else GeneratorParams())
    inst = generate(seed, params, name=args.name)
    text = dump_instance(inst)
    if args.out:
        atomic_write(args.out, text.encode("utf-8"))
    if args.out or args.json:
        emit(args.json, {"path": str(args.out) if args.out else None, "seed": seed, "name": inst.name,
                         "refs": len(inst.trace), "distinct": len(set(inst.trace))},
             lambda: f"wrote {args.out}: {plural(len(inst.trace), 'reference')} over {plural(len(set(inst.trace)), 'block')} "
                     f"(seed {seed})")
    else:
        write_out(text.removesuffix("\n"))
    return EXIT_OK


class CheckReport(BaseModel):
    instance: str
    refs: int
    distinct: int
    hosts: int
    requests: int
    pool_capacity: int
    pool_peak_live: int
    per_host_distinct: dict[int, int]
    per_instance_wall: int
    hosts_over_capacity: list[int]
    regenerates: bool | None
    """The file equals what its recorded seed and parameters generate (``None``: no provenance)."""


def cmd_check(args: argparse.Namespace) -> int:
    require("prove", "pycert pooling")
    path = args.instance or COMMITTED
    inst = load_instance(path)
    shared = sharing(inst, inst.routing)
    regenerates = None
    if inst.provenance:
        regenerates = generate(inst.provenance.seed, inst.provenance.params, name=inst.name) == inst
    rep = CheckReport(
        instance=str(path), refs=len(inst.trace), distinct=shared.distinct_blocks, hosts=len(inst.hosts),
        requests=len(inst.requests), pool_capacity=inst.pool_capacity, pool_peak_live=peak_live(tuple(inst.trace)),
        per_host_distinct=shared.per_host_distinct, per_instance_wall=shared.per_instance_wall,
        hosts_over_capacity=[h.id for h in inst.hosts if shared.per_host_distinct[h.id] > h.capacity],
        regenerates=regenerates,
    )

    def human() -> str:
        rows = [("references", rep.refs), ("distinct blocks (pooled wall)", rep.distinct),
                ("Σ_h distinct (per-instance wall)", rep.per_instance_wall),
                ("pool capacity / peak live blocks", f"{rep.pool_capacity} / {rep.pool_peak_live}"),
                ("hosts over their cache capacity", ", ".join(map(str, rep.hosts_over_capacity)) or "none"),
                ("regenerates from its seed", {True: "yes", False: "NO", None: "no provenance"}[rep.regenerates])]
        return f"{rep.instance}: {rep.hosts} hosts, {rep.requests} requests\n" + table(["figure", "value"], rows)

    emit(args.json, rep, human)
    return EXIT_REJECTED if rep.regenerates is False else EXIT_OK


# ---------------------------------------------------------------------------- the table


def _status(r: SolveResult) -> str:
    if r.optimal:
        return "OPTIMAL"
    gap = "" if r.gap is None else f" gap {100 * r.gap:.2f}%"
    return f"{r.status}{gap}"


def _bound(r: SolveResult) -> str:
    return "-" if r.bound is None else f"{r.bound:g}"


def _yes(flag: bool | None) -> str:
    return {True: "yes", False: "NO", None: "n/a"}[flag]


def render_table(res: PoolingResult) -> str:
    def hit_rate(misses: int | None, refs: int) -> str:
        return "-" if misses is None else f"{100 * (refs - misses) / refs:.2f}%"

    rows = []
    for label, p in (("pooled", res.pooled), ("per-instance (committed routing)", res.per_instance)):
        rows.append((label, p.cpsat.objective, _bound(p.cpsat), _status(p.cpsat), p.highs.objective, _status(p.highs),
                     p.replay_misses, p.belady_misses, p.distinct, hit_rate(p.optimum, p.refs)))
    f = res.free_routing
    rows.append(("per-instance (best routing)", f.cpsat.objective, _bound(f.cpsat), _status(f.cpsat), f.highs.objective,
                 _status(f.highs), f.replay.misses if f.replay else "-",
                 f"match {f.matching_objective}" if f.matching_objective is not None else "-", "-",
                 hit_rate(f.cpsat.objective if f.agree else None, res.refs)))
    lines = [f"instance {res.instance}: {plural(res.hosts, 'host')}, {plural(res.requests, 'request')}, "
             f"{plural(res.refs, 'reference')}, {plural(res.distinct, 'distinct block')}, pool capacity {res.pool_capacity}", ""]
    lines.append(table(["model", "CP-SAT", "bound", "status", "HiGHS", "status", "replay", "Belady", "wall", "hit rate"],
                       rows))
    lines += ["", f"capacitated family (pool below the distinct count): {len(res.family)} cases"]
    lines.append(table(["case", "distinct", "capacity", "CP-SAT", "HiGHS", "replay", "Belady", "CP-SAT s", "HiGHS s"],
                       [(c.name, c.distinct, c.capacity, c.cpsat.objective, c.highs.objective, c.replay_misses,
                         c.belady_misses, f"{c.cpsat.wall_s:.3f}", f"{c.highs.wall_s:.3f}") for c in res.family]))
    a = res.agreement
    lines += ["", table(["check", "agrees"], [
        ("CP-SAT = HiGHS (all models OPTIMAL)", _yes(a.cpsat_highs)),
        ("replay recounts every schedule", _yes(a.replay)),
        ("Belady's MIN = CP-SAT (every cache)", _yes(a.belady)),
        ("networkx matching = best routing", _yes(a.matching)),
        (f"Lean kernel: {len(res.lean.theorems)} wall theorems", res.lean.status),
        ("published figures reproduced", _yes(a.published)),
    ])]
    bound = res.free_routing.proven_bound
    lines += ["", f"sharing: {res.sharing.shared_blocks} of {res.distinct} blocks are referenced at more than one host "
                  f"(per-instance wall {res.sharing.per_instance_wall} = pooled wall {res.distinct} + {res.sharing.excess})",
              f"no routing gets per-instance caching below {bound} misses (proven bound) against {res.pooled.optimum} pooled",
              f"{'HOLDS' if res.holds else 'DOES NOT HOLD'} in {res.wall_s:.1f} s"]
    return "\n".join(lines)
