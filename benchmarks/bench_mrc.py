"""Side by side, in one run: pycert's exact all-capacity LRU and Belady/MIN (OPT) curves against
libCacheSim simulating LRU and Belady at a single capacity, on the same trace; peak memory; and how
the curves' cost grows on 1M- and 10M-reference synthetic traces.

    .venv/bin/python benchmarks/bench_mrc.py [--trace PATH] [--repeat 5] [--scale 1000000,10000000] [--json]

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
- Belady/MIN at one capacity: pycert's heap implementation (``belady_hits``, what ``trace mrc`` paid
  per capacity before the one-pass curve) and libCacheSim's ``Belady`` (hashpower 16, as in the
  issue, and its default 24).
- ``pycert OPT curve``: :func:`pycert.analysis.optcurve.opt_hit_curve`, the Belady hit count at every
  capacity in one pass (numba, compiled code loaded from its cache: the first call of a process).
- ``pycert LRU + OPT curves + ceiling``: what one ``pycert trace mrc`` computes.
- numba's one-time costs, each in a fresh child process: compiling the kernel with an empty cache,
  and loading it from the cache.

Peak memory: pycert's path (read, curves, stats) runs in fresh child processes that report their
peak resident set (``VmHWM``, interpreter, numpy and numba with its compiled kernel included): read
only, read + LRU curve, read + OPT curve, read + both. Linux only (``/proc``).

Scaling (``--scale``): for each size, ``pycert trace generate`` writes a seeded synthetic trace with
about that many references (not timed), a fresh child process times reading it, the LRU curve, the
OPT curve and libCacheSim's Belady at one capacity, and more fresh processes report the peak RSS of
each curve as above.
"""

from __future__ import annotations

import argparse
import json
import os
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

from pycert.analysis.cachesim import belady_hits, lru_hit_curve  # noqa: E402
from pycert.analysis.stats import stats_from_counts  # noqa: E402
from pycert.analysis.optcurve import opt_hit_curve  # noqa: E402
from pycert.data.traces import read_trace  # noqa: E402

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


_PEAK = "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')))"


def child_peak(trace: Path, work: str) -> int:
    """Peak RSS in KiB of a fresh process that reads ``trace`` and runs ``work`` (``t`` is the trace)."""
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss across fork+exec, so a child would report this
    # (larger) process's peak.
    code = ("import sys; sys.path.insert(0, sys.argv[2]);"
            "from pycert.data.traces import read_trace; from pycert.analysis.cachesim import lru_hit_curve; from pycert.analysis.stats import trace_stats;"
            "from pycert.analysis.optcurve import opt_hit_curve;"
            f"t = read_trace(sys.argv[1]); trace_stats(t); {work};" + _PEAK)
    out = subprocess.run([sys.executable, "-c", code, str(trace), str(REPO)], check=True, capture_output=True,
                         text=True)
    return int(out.stdout.strip())


PEAK_WORK = (("read", "opt_hit_curve([1, 2, 1])"),  # numba and its compiled kernel loaded, as below
             ("read + LRU curve", "opt_hit_curve([1, 2, 1]); lru_hit_curve(t.refs)"),
             ("read + OPT curve", "opt_hit_curve(t.refs)"),
             ("read + both curves", "lru_hit_curve(t.refs); opt_hit_curve(t.refs)"))


def numba_first_call(cache_dir: str | None) -> float:
    """Seconds for the first OPT curve of a fresh process on a 3-reference trace: with ``cache_dir``
    an empty numba cache (so it compiles), else the cache beside pycert/optcurve.py."""
    code = ("import sys, time; sys.path.insert(0, sys.argv[1]); from pycert.analysis.optcurve import opt_hit_curve;"
            "t0 = time.perf_counter(); opt_hit_curve([1, 2, 1]); print(time.perf_counter() - t0)")
    env = dict(os.environ, **({"NUMBA_CACHE_DIR": cache_dir} if cache_dir else {}))
    out = subprocess.run([sys.executable, "-c", code, str(REPO)], check=True, capture_output=True, text=True,
                         env=env)
    return float(out.stdout.strip())


_SCALE = """
import json, sys, time, tempfile
sys.path.insert(0, sys.argv[2])
from pathlib import Path
from pycert.data.traces import read_trace
from pycert.analysis.cachesim import lru_hit_curve
from pycert.analysis.optcurve import opt_hit_curve
sys.path.insert(0, sys.argv[2] + '/benchmarks')
from bench_mrc import write_lcs_inputs
import libcachesim as lcs
repeat, cap = int(sys.argv[3]), int(sys.argv[4])
opt_hit_curve([1, 2, 1])  # load the compiled kernel before timing it
def best(fn):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter(); r = fn(); times.append(time.perf_counter() - t0)
    return min(times), r
read_s, t = best(lambda: read_trace(sys.argv[1]))
lru_s, lru = best(lambda: lru_hit_curve(t.refs))
opt_s, opt = best(lambda: opt_hit_curve(t.refs))
with tempfile.TemporaryDirectory() as tmp:
    og, _ = write_lcs_inputs(t.refs, Path(tmp))
    def one():
        miss, _ = lcs.Belady(cache_size=cap, hashpower=16).process_trace(
            lcs.TraceReader(str(og), lcs.TraceType.ORACLE_GENERAL_TRACE))
        return len(t.refs) - round(miss * len(t.refs))
    lcs_s, lcs_hits = best(one)
assert lcs_hits == opt.hits(cap), (lcs_hits, opt.hits(cap))
peak = next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:'))
print(json.dumps({"refs": t.n_refs, "distinct": lru.distinct, "read_s": read_s, "lru_curve_s": lru_s,
                  "opt_curve_s": opt_s, "libcachesim_belady_s": lcs_s, "belady_capacity": cap,
                  "opt_capacities": opt.max_distance, "lru_capacities": lru.max_distance,
                  "peak_rss_mib_all_in_one_process": round(int(peak) / 1024, 1)}))
"""


def scale_row(refs_wanted: int, repeat: int, cap: int, tmp: Path) -> dict:
    """Generate a synthetic trace of about ``refs_wanted`` references and time the curves on it."""
    path = tmp / f"synthetic-{refs_wanted}.jsonl"
    requests = max(1, round(refs_wanted / 23.13))  # the generator's default mix: about 23 refs a request
    subprocess.run([sys.executable, "-m", "pycert", "trace", "generate", "-o", str(path), "--seed", "0",
                    "--requests", str(requests), "--json"], check=True, capture_output=True, cwd=REPO)
    out = subprocess.run([sys.executable, "-c", _SCALE, str(path), str(REPO), str(repeat), str(cap)], check=True,
                         capture_output=True, text=True, cwd=REPO)
    row = json.loads(out.stdout)
    row["requests"] = requests
    row["peak_rss_mib_by_work"] = {what: round(child_peak(path, work) / 1024, 1) for what, work in PEAK_WORK}
    path.unlink()
    return row


def interleaved(fns: dict[str, Callable[[], object]], repeat: int) -> dict[str, tuple[float, float, object]]:
    """``timed`` for several functions, one call of each per round, so that a machine whose load
    changes during the run weighs on all of them alike."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    results: dict[str, object] = {}
    for _ in range(repeat):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            results[k] = fn()
            times[k].append(time.perf_counter() - t0)
    return {k: (min(v), statistics.median(v), results[k]) for k, v in times.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--capacities", default="1024,10000", help="libCacheSim single-capacity runs (the first: Belady)")
    ap.add_argument("--scale", default="1000000,10000000",
                    help="synthetic trace sizes in references for the scaling table ('' for none)")
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
    opt_hit_curve(refs[:3])  # the compiled kernel is loaded once per process; its cost is reported below

    def curve_and_ceiling() -> tuple:
        curve = lru_hit_curve(refs)
        return curve, stats_from_counts(curve.refs, curve.distinct)[1]

    def both_and_ceiling() -> tuple:
        curve, opt = lru_hit_curve(refs), opt_hit_curve(refs)
        return curve, opt, stats_from_counts(curve.refs, curve.distinct)[1]

    caps = [int(c) for c in args.capacities.split(",")]
    bcap = caps[0]
    lcs_default: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        og, txt = write_lcs_inputs(refs, Path(tmp))

        def lcs_belady(hp: int) -> Callable[[], int]:
            def one() -> int:
                reader = lcs.TraceReader(str(og), lcs.TraceType.ORACLE_GENERAL_TRACE)
                miss, _ = lcs.Belady(cache_size=bcap, hashpower=hp).process_trace(reader)
                return len(refs) - round(miss * len(refs))
            return one

        def lru_plus_one_belady() -> tuple:
            curve = lru_hit_curve(refs)
            return curve, belady_hits(refs, bcap), stats_from_counts(curve.refs, curve.distinct)[1]

        got = interleaved({"lru": curve_and_ceiling, "opt": lambda: opt_hit_curve(refs),
                           "both": both_and_ceiling, "lcs16": lcs_belady(16), "lcs24": lcs_belady(24),
                           "old": lru_plus_one_belady}, args.repeat)
        curve, ceiling = got["lru"][2]
        opt = got["opt"][2]
        add("pycert LRU curve, every capacity, + ceiling", *got["lru"][:2],
            f"{curve.max_distance + 1} capacities, ceiling {float(ceiling):.6f}")
        add("pycert OPT (Belady) curve, every capacity", *got["opt"][:2],
            f"{opt.max_distance + 1} capacities, hit rate @ {bcap} {opt.hits(bcap) / len(refs):.6f}")
        add("pycert LRU + OPT curves + ceiling (one trace mrc)", *got["both"][:2], "both curves")
        add(f"pycert LRU curve + ceiling + one belady_hits @ {bcap} (before)", *got["old"][:2],
            f"hit rate @ {bcap} {got['old'][2][1] / len(refs):.6f}")
        for hp in (16, 24):
            hits = got[f"lcs{hp}"][2]
            assert hits == opt.hits(bcap) == got["old"][2][1], (hp, hits, opt.hits(bcap))
            add(f"libCacheSim Belady @ {bcap} (oracleGeneral, hashpower {hp}{' default' if hp == 24 else ''})",
                *got[f"lcs{hp}"][:2], f"hit rate {hits / len(refs):.6f} (= pycert OPT curve)")
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
    with tempfile.TemporaryDirectory() as cache:
        compile_s = numba_first_call(cache)
    load_s = numba_first_call(None)
    peaks = {what: round(child_peak(args.trace, work) / 1024, 1) for what, work in PEAK_WORK}
    scale: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in [int(x) for x in args.scale.split(",") if x.strip()]:
            scale.append(scale_row(size, max(1, args.repeat // 2), bcap, Path(tmp)))
    summary = {
        "trace": str(args.trace), "sha256": trace.sha256, "refs": trace.n_refs, "distinct": curve.distinct,
        "python": sys.version.split()[0], "numpy": np.__version__, "libcachesim": getattr(lcs, "__version__", "?"),
        "numba": __import__("numba").__version__, "cpus": os.cpu_count(),
        "rows": rows,
        "curve_faster_than_default_libcachesim_single_capacity": got["lru"][0] < min(lcs_default),
        "opt_curve_faster_than_libcachesim_belady_hashpower16": got["opt"][0] < got["lcs16"][0],
        "both_curves_cheaper_than_lru_curve_plus_one_belady": got["both"][0] < got["old"][0],
        "numba_compile_s": round(compile_s, 2), "numba_cache_load_s": round(load_s, 3),
        "peak_rss_mib": peaks, "scale": scale,
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
        for k in ("curve_faster_than_default_libcachesim_single_capacity",
                  "opt_curve_faster_than_libcachesim_belady_hashpower16",
                  "both_curves_cheaper_than_lru_curve_plus_one_belady"):
            print(f"{k}: {summary[k]}")
        print(f"numba: compile {compile_s:.2f} s with an empty cache, {load_s:.3f} s to load it (first call)")
        print("peak RSS, fresh process (MiB): " + ", ".join(f"{k} {v}" for k, v in peaks.items()))
        for r in scale:
            print(f"synthetic {r['refs']:,} refs ({r['distinct']:,} distinct): read {r['read_s']:.2f} s, "
                  f"LRU curve {r['lru_curve_s']:.2f} s, OPT curve {r['opt_curve_s']:.2f} s, "
                  f"libCacheSim Belady @ {r['belady_capacity']} {r['libcachesim_belady_s']:.2f} s, "
                  "peak RSS (MiB) " + ", ".join(f"{k} {v}" for k, v in r["peak_rss_mib_by_work"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
