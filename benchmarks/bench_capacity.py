"""The ceiling at a capacity, kernel-checked: per capacity, the cut list's length, the instance's kernel
seconds and peak memory, for the bound alone (``bound``), for the bound with Belady's hit pairs as the
witness (``optimum``: ``Optimum``, both ways; ``emit_s`` then includes the pairs) and for both cache models
both ways with the prefix test where the trace has requests (``optima``: ``Optima`` or ``PrefixOptima``,
issue 37; ``emit_s`` includes both models' pairs, cut lists and the prefix verdict), beside the
whole-trace ceiling check (capacity-free) and libCacheSim's Belady (a simulation, no proof) on the same
trace, in one run.

    python benchmarks/bench_capacity.py [--trace FILE] [--capacities 2,16,128,1024,8192]
        [--checks bound,optimum,optima] [--synthetic 1000000] [--synthetic-capacities 128] [--timeout 1800]
        [--json]

Each Lean file runs alone in its own process (one Lean process at a time, a fresh first line so that
pycert's build cache misses), so ``peak_rss_mib`` is that Lean process's peak resident memory and
``check_s`` its wall time, import included. A trace too long for one instance (the million-reference
synthetic one) is checked in pieces split at cuts: each piece is a row of its own, and the row
``prove capacity (end to end)`` is the whole ``pycert prove capacity`` command on that trace (cut list,
pieces emitted and checked as Ray tasks on a local cluster, the composition, the audit, the
certificate), its wall time the figure the target speaks of; the trace file gets a new name each run,
so that no module of it is in the build cache. ``recipe_s`` is pycert's cut list (Belady labels and the
sweep, :func:`pycert.analysis.capacity.cut_list`), ``emit_s`` the emitter (packing, the sort network,
the planes); ``lcs_s`` is libCacheSim's Belady over an oracleGeneral file of the trace (written once,
not timed), ``lcs_hits`` its hit count, which must equal the kernel's bound.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
from bench_lean_trace import fresh, run_one  # the same one-process-per-file runner

from pycert.analysis.capacity import belady_hit_flags, cut_list
from pycert.analysis.requests import prefix_verdict
from pycert.core import console, resources
from pycert.core.limits import MAX_PIECE_REFS
from pycert.data import synthetic
from pycert.data.traces import Trace, read_trace, trace_from_bytes
from pycert.families.capacity import derive
from pycert.lean.emit import capacity as emit_capacity
from pycert.lean.emit import packed_trace, pieces

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_TRACE = ROOT.parent / "shared" / "traces" / "mooncake-fast25" / "conversation_trace.jsonl"
sys.path.insert(0, str(ROOT / "tests"))


def lcs_belady(trace: Trace, capacities: list[int], tmp: Path) -> dict[int, tuple[int, float]]:
    """libCacheSim's Belady hit count and seconds at each capacity; empty when it is not installed."""
    try:
        import libcachesim as lcs  # optional (the test extra): the comparison is skipped without it
    except ImportError:
        return {}
    from test_libcachesim_agreement import oracle_general  # the trace writer the agreement test checks

    path = oracle_general(trace.refs, tmp / "trace.oracleGeneral")
    out = {}
    for c in capacities:
        t0 = time.perf_counter()
        miss_ratio, _ = lcs.Belady(cache_size=c, hashpower=20).process_trace(
            lcs.TraceReader(str(path), lcs.TraceType.ORACLE_GENERAL_TRACE))
        out[c] = (trace.n_refs - round(miss_ratio * trace.n_refs), time.perf_counter() - t0)
    return out


def synthetic_trace(target: int) -> tuple[Trace, bytes]:
    """The seeded synthetic trace (``pycert trace generate``) of at least ``target`` references, and its file."""
    requests = max(1, target // 24)  # about 23 references a request
    while True:
        data = synthetic.to_jsonl(synthetic.generate(0, requests=requests))
        synth = trace_from_bytes(data, "synthetic.jsonl")
        if synth.n_refs >= target:
            return synth, data
        requests = requests * target // synth.n_refs + 1


def instance(trace: Trace, module: str, c: int, check: str) -> tuple[str, emit_capacity.Plan]:
    """The instance of one check, as the family writes it (``derive.instance_text``: the cut lists, the
    pairs, the prefix verdict and the emitter)."""
    encoding = {"bound": emit_capacity.ENCODING, "optimum": emit_capacity.OPTIMUM_ENCODING,
                "optima": emit_capacity.OPTIMA_ENCODING}[check]
    prefix = prefix_verdict(trace, belady_hit_flags(trace.refs, c, admission=True))[0] if check == "optima" else None
    text, plan = derive.instance_text(trace, module, c, encoding, prefix)
    return text.decode(), plan


def bench_trace(label: str, trace: Trace, capacities: list[int], d: Path, timeout: float, data: bytes,
                checks: list[str]) -> list[dict]:
    """The rows of one trace (``data``: its file, which the end-to-end run of a trace in pieces proves)."""
    refs = trace.refs
    rows = []
    ceiling = d / f"Ceiling{trace.n_refs}.lean"
    t0 = time.perf_counter()
    ceiling.write_text(packed_trace.emit_instance(refs, trace.sha256, ceiling.stem))
    emit_s = time.perf_counter() - t0
    r = run_one(fresh(ceiling), ROOT / "lean", timeout)
    rows.append({"trace": label, "refs": trace.n_refs, "check": "ceiling (any capacity)", "capacity": "-", "cuts": "-",
                 "recipe_s": "-", "emit_s": round(emit_s, 1), "status": r["status"], "check_s": round(r["seconds"], 1),
                 "cpu_s": round(r["cpu_s"], 1), "peak_rss_mib": round(r["peak_rss_kib"] / 1024),
                 "max_hits": trace.n_refs - len(set(refs.tolist())), "lcs_hits": "-", "lcs_s": "-"})
    print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    lcs = lcs_belady(trace, capacities, d)
    for c in capacities:
        t0 = time.perf_counter()
        cuts = cut_list(refs, c)
        recipe_s = time.perf_counter() - t0
        theirs = lcs.get(c)
        if not emit_capacity.fits_one(trace.n_refs, len(np.unique(refs))):
            rows += bench_pieces(label, trace, data, c, cuts, recipe_s, d, timeout, theirs)
            continue
        for check in checks:
            f = d / f"Capacity{trace.n_refs}C{c}{check.capitalize()}.lean"
            t0 = time.perf_counter()
            text, plan = instance(trace, f.stem, c, check)
            emit_s = time.perf_counter() - t0
            f.write_text(text)
            r = run_one(fresh(f), ROOT / "lean", timeout)
            rows.append({"trace": label, "refs": trace.n_refs, "check": f"capacity, {check}", "capacity": c,
                         "cuts": plan.cuts, "recipe_s": round(recipe_s, 2), "emit_s": round(emit_s, 1),
                         "status": r["status"], "check_s": round(r["seconds"], 1), "cpu_s": round(r["cpu_s"], 1),
                         "peak_rss_mib": round(r["peak_rss_kib"] / 1024), "max_hits": plan.max_hits,
                         "bypass_hits": plan.admission.witness_hits if plan.admission else "-",
                         "prefix": plan.prefix if plan.admission else "-",
                         "lcs_hits": theirs[0] if theirs else "n/a", "lcs_s": round(theirs[1], 2) if theirs else "n/a",
                         "errors": r["errors"]})
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def bench_pieces(label: str, trace: Trace, data: bytes, c: int, cuts: list[int], recipe_s: float, d: Path,
                 timeout: float, theirs: tuple[int, float] | None) -> list[dict]:
    """Each piece alone (a row each, one Lean process at a time), then ``pycert prove capacity`` end to end."""
    refs, rows = trace.refs, []
    points = pieces.split_points(trace.n_refs, cuts, MAX_PIECE_REFS)
    for k, (a, b) in enumerate(zip(points, points[1:])):
        f = d / f"Capacity{trace.n_refs}C{c}Piece{k}.lean"
        t0 = time.perf_counter()
        text, piece = pieces.emit_piece(refs[a:b + 1], trace.sha256, f.stem, c, pieces.local_cuts(cuts, a, b))
        emit_s = time.perf_counter() - t0
        f.write_text(text)
        r = run_one(fresh(f), ROOT / "lean", timeout)
        rows.append({"trace": label, "refs": piece.refs, "check": f"capacity piece {k} of {len(points) - 1}",
                     "capacity": c, "cuts": piece.cuts, "recipe_s": "-", "emit_s": round(emit_s, 1), "status": r["status"],
                     "check_s": round(r["seconds"], 1), "cpu_s": round(r["cpu_s"], 1),
                     "peak_rss_mib": round(r["peak_rss_kib"] / 1024), "max_hits": "-", "lcs_hits": "-", "lcs_s": "-",
                     "errors": r["errors"]})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    name = f"synthetic{uuid.uuid4().hex[:8]}"
    path = d / f"{name}.jsonl"
    path.write_bytes(data)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pycert", "prove", "capacity", "--trace", str(path),
                           "--capacity-blocks", str(c), "--out", str(d / f"certs-{name}"), "--backend", "wasm", "--json"],
                          capture_output=True, text=True, cwd=d, timeout=timeout)
    wall = time.perf_counter() - t0
    cert = d / f"certs-{name}" / f"capacity-{name}-c{c}.json"
    figures = ({f["name"]: f["numerator"] for f in json.loads(cert.read_text())["figures"]} if cert.exists() else {})
    rows.append({"trace": label, "refs": trace.n_refs, "check": f"prove capacity (end to end, {len(points) - 1} pieces "
                 "on Ray)", "capacity": c, "cuts": len(cuts), "recipe_s": round(recipe_s, 2), "emit_s": "-",
                 "status": "ok" if proc.returncode == 0 else f"exit {proc.returncode}", "check_s": round(wall, 1),
                 "cpu_s": "-", "peak_rss_mib": "-", "max_hits": figures.get("max_hits", "-"),
                 "lcs_hits": theirs[0] if theirs else "n/a", "lcs_s": round(theirs[1], 2) if theirs else "n/a",
                 "errors": [] if proc.returncode == 0 else [proc.stderr.strip()[-300:]]})
    print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    ap.add_argument("--capacities", default="2,16,128,1024,8192")
    ap.add_argument("--synthetic", default="1000000", help="a seeded synthetic trace of at least this many references")
    ap.add_argument("--synthetic-capacities", default="128")
    ap.add_argument("--checks", default="bound,optimum,optima", help="which instances at each capacity")
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    ints = lambda text: [int(x) for x in filter(None, text.split(","))]  # noqa: E731
    with tempfile.TemporaryDirectory(prefix="bench-capacity-", dir=resources.scratch_root()) as tmp:
        d = Path(tmp)
        trace = read_trace(args.trace)
        checks = list(filter(None, args.checks.split(",")))
        rows = bench_trace(args.trace.name, trace, ints(args.capacities), d, args.timeout, args.trace.read_bytes(), checks)
        if args.synthetic:
            synth, data = synthetic_trace(int(args.synthetic))
            rows += bench_trace(f"synthetic seed 0 ({synth.n_refs})", synth, ints(args.synthetic_capacities), d,
                                args.timeout, data, checks)
    out = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}", "backend": "wasm",
           "loadavg": open("/proc/loadavg").read().split()[:3],
           "trace": str(args.trace), "sha256": trace.sha256, "rows": rows}
    cols = ["trace", "refs", "check", "capacity", "cuts", "recipe_s", "emit_s", "status", "check_s", "cpu_s",
            "peak_rss_mib", "max_hits", "bypass_hits", "prefix", "lcs_hits", "lcs_s"]
    console.emit(args.json, out, human=lambda: (
        f"{out['trace']} ({out['machine']}, wasm)\n" + console.table(cols, [[r.get(c, "-") for c in cols] for r in rows])))


if __name__ == "__main__":
    main()
