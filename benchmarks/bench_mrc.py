"""Side by side, in one run: pycert's exact all-capacity LRU curve plus the ceiling, against
libCacheSim simulating LRU at a single capacity, on the same trace; and peak memory.

    .venv/bin/python benchmarks/bench_mrc.py [--trace PATH] [--repeat 5] [--json]

Default trace: ../shared/traces/mooncake-fast25/conversation_trace.jsonl (relative to the repo).

What is timed (wall clock, best and median of --repeat runs):

- ``pycert read``: streaming JSONL parse and sha256 of the trace (libCacheSim cannot read it at all).
- ``pycert LRU curve + ceiling``: from the references in memory to the hit count at every capacity
  and the exact ceiling.
- ``libCacheSim LRU @ C``: ``LRU(cache_size=C).process_trace(reader)`` on the same references,
  already converted to its own trace formats (oracleGeneral binary, plain text; objects of size 1).
  Its time includes reading that file, which is its input. Run with its default ``hashpower`` (24:
  a 2**24-bucket hash table per cache) and with ``hashpower=16``, to show how much of its time is
  that allocation.
- Belady/MIN at one capacity: pycert's heap implementation and libCacheSim's ``Belady``.

Peak memory: pycert's whole path (read, curve, stats) runs in a fresh child process that reports its
peak resident set (``VmHWM``, interpreter and numpy included). Linux only (``/proc``).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pycert.cachesim import belady_hits, lru_hit_curve, stats_from_counts  # noqa: E402
from pycert.traces import read_trace  # noqa: E402

DEFAULT_TRACE = REPO.parent / "shared" / "traces" / "mooncake-fast25" / "conversation_trace.jsonl"
ORACLE_GENERAL = np.dtype([("time", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float, object]:
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times), result


def write_lcs_inputs(refs: np.ndarray, directory: Path) -> tuple[Path, Path]:
    n = len(refs)
    order = np.argsort(refs, kind="stable")
    same = refs[order[1:]] == refs[order[:-1]]
    nxt = np.full(n, -1, dtype=np.int64)
    nxt[order[:-1][same]] = order[1:][same] + 1  # libCacheSim virtual time counts from 1
    rec = np.zeros(n, dtype=ORACLE_GENERAL)
    rec["time"], rec["id"], rec["size"], rec["next"] = np.arange(n), refs, 1, nxt
    og, txt = directory / "trace.oracleGeneral", directory / "trace.txt"
    rec.tofile(og)
    np.savetxt(txt, refs, fmt="%d")
    return og, txt


def child_peak(trace: Path) -> int:
    """Peak RSS in KiB of a fresh process running pycert's read + curve + stats on ``trace``."""
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss across fork+exec, so a child would report this
    # (larger) process's peak.
    code = ("import sys; sys.path.insert(0, sys.argv[2]);"
            "from pycert.traces import read_trace; from pycert.cachesim import lru_hit_curve, trace_stats;"
            "t = read_trace(sys.argv[1]); c = lru_hit_curve(t.refs); trace_stats(t);"
            "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')))")
    out = subprocess.run([sys.executable, "-c", code, str(trace), str(REPO)], check=True, capture_output=True,
                         text=True)
    return int(out.stdout.strip())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--capacities", default="1024,10000", help="libCacheSim single-capacity runs")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not args.trace.exists():
        print(f"trace not found: {args.trace}", file=sys.stderr)
        return 2
    import libcachesim as lcs

    rows: list[dict] = []

    def add(what: str, best: float, median: float, result: object) -> None:
        rows.append({"what": what, "best_s": round(best, 4), "median_s": round(median, 4), "result": result})

    best, med, trace = timed(lambda: read_trace(args.trace), args.repeat)
    add("pycert read (JSONL, sha256)", best, med, f"{trace.n_refs} refs")
    refs = trace.refs

    def curve_and_ceiling() -> tuple:
        curve = lru_hit_curve(refs)
        return curve, stats_from_counts(curve.refs, curve.distinct)[1]

    best, med, (curve, ceiling) = timed(curve_and_ceiling, args.repeat)
    ours_best = best
    add("pycert LRU curve, every capacity, + ceiling", best, med,
        f"{curve.max_distance + 1} capacities, ceiling {float(ceiling):.6f}")
    caps = [int(c) for c in args.capacities.split(",")]
    lcs_default: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        og, txt = write_lcs_inputs(refs, Path(tmp))
        for cap in caps:
            for fmt, path, ttype in (("oracleGeneral", og, lcs.TraceType.ORACLE_GENERAL_TRACE),
                                     ("txt", txt, lcs.TraceType.PLAIN_TXT_TRACE)):
                for hp in (24, 16):
                    def one(path: Path = path, ttype: object = ttype, hp: int = hp, cap: int = cap) -> int:
                        reader = lcs.TraceReader(str(path), ttype)
                        miss, _ = lcs.LRU(cache_size=cap, hashpower=hp).process_trace(reader)
                        return len(refs) - round(miss * len(refs))
                    best, med, hits = timed(one, args.repeat)
                    assert hits == curve.hits(cap), (cap, fmt, hits, curve.hits(cap))
                    if hp == 24:
                        lcs_default.append(best)
                    add(f"libCacheSim LRU @ {cap} ({fmt}, hashpower {hp}{' default' if hp == 24 else ''})",
                        best, med, f"hit rate {hits / len(refs):.6f} (= pycert)")
        bcap = caps[0]
        best, med, b = timed(lambda: belady_hits(refs, bcap), max(1, args.repeat // 2))
        add(f"pycert Belady @ {bcap}", best, med, f"hit rate {b / len(refs):.6f}")

        def lcs_belady() -> int:
            reader = lcs.TraceReader(str(og), lcs.TraceType.ORACLE_GENERAL_TRACE)
            miss, _ = lcs.Belady(cache_size=bcap, hashpower=16).process_trace(reader)
            return len(refs) - round(miss * len(refs))
        best, med, lb = timed(lcs_belady, max(1, args.repeat // 2))
        assert lb == b
        add(f"libCacheSim Belady @ {bcap} (oracleGeneral, hashpower 16)", best, med,
            f"hit rate {lb / len(refs):.6f} (= pycert)")
    peak_kib = child_peak(args.trace)
    summary = {
        "trace": str(args.trace), "sha256": trace.sha256, "refs": trace.n_refs, "distinct": curve.distinct,
        "python": sys.version.split()[0], "numpy": np.__version__, "libcachesim": getattr(lcs, "__version__", "?"),
        "rows": rows,
        "curve_faster_than_default_libcachesim_single_capacity": ours_best < min(lcs_default),
        "pycert_peak_rss_mib": round(peak_kib / 1024, 1),
        "this_process_peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"{summary['trace']}  ({summary['refs']:,} refs, {summary['distinct']:,} distinct)")
        w = max(len(r["what"]) for r in rows)
        print(f"{'what'.ljust(w)}  {'best s':>8}  {'median s':>8}  result")
        for r in rows:
            print(f"{r['what'].ljust(w)}  {r['best_s']:8.4f}  {r['median_s']:8.4f}  {r['result']}")
        print(f"all-capacity curve + ceiling faster than one default libCacheSim LRU run: "
              f"{summary['curve_faster_than_default_libcachesim_single_capacity']}")
        print(f"pycert peak RSS (read + curve + stats, fresh process): {summary['pycert_peak_rss_mib']} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
