"""Pooling solve times, side by side: CP-SAT and HiGHS on the committed instance and on the
capacitated family with the number of references doubling.

    .venv/bin/python benchmarks/bench_pooling.py [--max-refs 4096] [--workers 2] [--json]

Every row is one solve of the same model by both solvers, with Belady and the replay as checks;
a row whose optimum disagrees is marked, not dropped. Wall times are the solvers' own solve calls
(model building excluded), in seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pycert.core.console import table  # noqa: E402
from pycert.solvers.capacitated import CapacitatedParams, capacitated_cases  # noqa: E402
from pycert.solvers.instance import COMMITTED  # noqa: E402
from pycert.solvers.instance_io import load_instance  # noqa: E402
from pycert.solvers.model import SolverParams  # noqa: E402
from pycert.solvers.optima import solve_free_routing, solve_paging  # noqa: E402
from pycert.solvers.per_instance import committed_model  # noqa: E402
from pycert.solvers.pooled import Cache  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-refs", type=int, default=4096)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--capacity-fraction", type=float, default=0.25)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    params = SolverParams(seed=args.seed, workers=args.workers, time_limit_s=120.0)
    rows = []

    inst = load_instance(COMMITTED)
    t0 = time.perf_counter()
    pooled = solve_paging("committed: pooled", [Cache("pool", tuple(inst.trace), inst.pool_capacity)], params)
    pm = committed_model(inst)
    per = solve_paging("committed: per-instance", pm.caches, params, pm=pm)
    free = solve_free_routing(inst, params)
    total = time.perf_counter() - t0
    for name, out in (("committed: pooled", pooled), ("committed: per-instance", per)):
        rows.append(dict(case=name, refs=out.refs, distinct=out.distinct, capacity=out.capacity,
                         vars=out.cpsat.variables, rows=out.cpsat.constraints, opt=out.cpsat.objective,
                         cpsat_s=out.cpsat.wall_s, highs_s=out.highs.wall_s, agree=out.agree))
    rows.append(dict(case="committed: best routing", refs=len(inst.trace), distinct=len(set(inst.trace)), capacity=None,
                     vars=free.cpsat.variables, rows=free.cpsat.constraints, opt=free.cpsat.objective,
                     cpsat_s=free.cpsat.wall_s, highs_s=free.highs.wall_s, agree=free.agree))

    sizes = []
    n = 32
    while n <= args.max_refs:
        sizes.append(n)
        n *= 2
    for case in capacitated_cases(CapacitatedParams(sizes=sizes, capacity_fraction=args.capacity_fraction)):
        out = solve_paging(case.name, [Cache(case.name, tuple(case.refs), case.capacity)], params)
        rows.append(dict(case=case.name, refs=out.refs, distinct=out.distinct, capacity=out.capacity,
                         vars=out.cpsat.variables, rows=out.cpsat.constraints, opt=out.cpsat.objective,
                         cpsat_s=out.cpsat.wall_s, highs_s=out.highs.wall_s, agree=out.agree))

    if args.json:
        print(json.dumps({"parameters": params.model_dump(), "committed_total_s": total, "rows": rows}, indent=2))
    else:
        print(table(["case", "refs", "distinct", "capacity", "vars", "rows", "OPT", "CP-SAT s", "HiGHS s", "agree"],
                    [(r["case"], r["refs"], r["distinct"], r["capacity"] if r["capacity"] is not None else "-",
                      r["vars"], r["rows"], r["opt"], f"{r['cpsat_s']:.3f}", f"{r['highs_s']:.3f}",
                      "yes" if r["agree"] else "NO") for r in rows]))
        print(f"\ncommitted instance, all three models, both solvers: {total:.2f} s "
              f"(workers={params.workers}, seed={params.seed})")
    return 0 if all(r["agree"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
