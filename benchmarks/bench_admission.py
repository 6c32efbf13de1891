"""The optimum with bypass on whole traces, no Lean: at each capacity, Belady's MIN with bypass
from pycert's two engines (a direct simulation, and stack distances on the trace with a fresh block after
every reference) against libCacheSim's Belady on that trace at C + 1 blocks (libCacheSim has no bypass),
the cut recipe's bound for it (tight when it equals the hit count), whether the hits are a prefix of
every request, and Belady's MIN without bypass beside it; the seconds each took, in one run.

    python benchmarks/bench_admission.py [--trace FILE ...] [--capacities 1,2,4,...,8192] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from pycert.analysis.cachesim import belady_bypass_flags
from pycert.analysis.capacity import belady_hit_flags, bound_pairs, cut_list, stack_distances
from pycert.analysis.requests import firsts, not_prefix_closed, prefix_breaks
from pycert.core import console
from pycert.data.traces import read_trace

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT.parent / "shared" / "traces" / "mooncake-fast25"
sys.path.insert(0, str(ROOT / "tests"))


def lcs_bypass(refs: np.ndarray, capacities: list[int], tmp: Path) -> dict[int, tuple[int, float]]:
    """libCacheSim's Belady at C + 1 on the trace with a fresh block after every reference: its hits and
    seconds; empty when libCacheSim is not installed."""
    try:
        import libcachesim as lcs  # optional (the test extra): the comparison is skipped without it
    except ImportError:
        return {}
    from test_libcachesim_agreement import oracle_general  # the trace writer the agreement test checks

    mixed = np.empty(2 * len(refs), dtype=np.int64)
    mixed[0::2], mixed[1::2] = refs.view(np.int64), np.int64(1 << 62) + np.arange(len(refs))
    path = oracle_general(mixed, tmp / "mixed.oracleGeneral")
    out = {}
    for c in capacities:
        t0 = time.perf_counter()
        miss, _ = lcs.Belady(cache_size=c + 1, hashpower=20).process_trace(
            lcs.TraceReader(str(path), lcs.TraceType.ORACLE_GENERAL_TRACE))
        out[c] = (len(mixed) - round(miss * len(mixed)), time.perf_counter() - t0)
    return out


def bench(path: Path, capacities: list[int], tmp: Path) -> list[dict]:
    trace = read_trace(path)
    refs = trace.refs
    first = firsts(trace)
    closed = first is not None and not_prefix_closed(refs, first) is None
    t0 = time.perf_counter()
    adm_d = stack_distances(refs, admission=True)
    curve_s = time.perf_counter() - t0
    opt_d = stack_distances(refs)
    theirs = lcs_bypass(refs, capacities, tmp)
    rows = []
    for c in capacities:
        t0 = time.perf_counter()
        sim = belady_bypass_flags(refs, c)
        sim_s = time.perf_counter() - t0
        hit = belady_hit_flags(refs, c, admission=True, distances=adm_d)
        t0 = time.perf_counter()
        cuts = cut_list(refs, c, admission=True, hit=hit)
        recipe_s = time.perf_counter() - t0
        bound = bound_pairs(refs, c, cuts, admission=True)
        plain = int(belady_hit_flags(refs, c, distances=opt_d).sum())
        rows.append({"trace": path.name, "refs": trace.n_refs, "capacity": c, "bypass_hits_simulated": int(sim.sum()),
                     "sim_s": round(sim_s, 2), "bypass_hits_curve": int(hit.sum()), "same_hits": bool(np.array_equal(sim, hit)),
                     "lcs_hits_c_plus_1": theirs[c][0] if c in theirs else "n/a",
                     "lcs_s": round(theirs[c][1], 2) if c in theirs else "n/a", "cuts": len(cuts), "bound": bound,
                     "tight": bound == int(hit.sum()), "recipe_s": round(recipe_s, 2),
                     "prefix": "n/a" if first is None else (closed and len(prefix_breaks(hit, first)) == 0),
                     "no_bypass_hits": plain, "curve_s": round(curve_s, 2)})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, action="append", default=[])
    ap.add_argument("--capacities", default=",".join(str(1 << k) for k in range(14)))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    traces = args.trace or [TRACES / "conversation_trace.jsonl", TRACES / "synthetic_trace.jsonl"]
    caps = [int(c) for c in args.capacities.split(",")]
    with tempfile.TemporaryDirectory(prefix="pycert-bench-admission-") as d:
        rows = [r for t in traces for r in bench(t, caps, Path(d))]
    meta = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "loadavg": open("/proc/loadavg").read().split()[:3]}
    if args.json:
        print(json.dumps({"meta": meta, "rows": rows}, indent=1))
    else:
        print(console.table(list(rows[0]), [[str(v) for v in r.values()] for r in rows]))
        print(meta)
    return 0 if all(r["tight"] and r["same_hits"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
