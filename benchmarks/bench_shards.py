"""Whole traces of any size: today's single Lean process against shards on a local Ray cluster, side
by side in one run.

    python benchmarks/bench_shards.py --trace 1.5M=PATH --trace 8M=PATH ... [--single 1.5M,8M]
        [--shard-refs N] [--work DIR] [--timeout 3600] [--json]

For each trace (its label before ``=``):

- ``single`` (only for the labels in ``--single``): the trace's one-file instance, as ``pycert prove``
  writes it for a trace that fits, checked alone by one Lean process (``jobs=1``): its status, wall
  seconds, CPU seconds and peak resident memory;
- ``sharded``: ``pycert prove ceiling --trace T`` end to end (a local Ray cluster of this machine's
  cores, started by pycert; read, split, shards and schedule emitted and checked as Ray tasks, the
  composition checked, the audit, the certificate): its wall seconds, and for every Lean process
  (each shard, each schedule module, the composition) its wall and CPU seconds and peak resident
  memory, as pycert's progress lines report them.

Each run proves under a new trace name (a symlink), so no module is answered by the build cache. The
projection to more cores divides the Lean processes' CPU seconds by the core count and adds the
composition and the driver's own time, which do not spread.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import tempfile
import time
import uuid
from pathlib import Path

from pycert import prove
from pycert.core import console
from pycert.data.traces import read_trace
from pycert.lean import build
from pycert.lean.emit import packed_trace

LINE = re.compile(r"^\s*(?P<module>\S+): (?P<status>\w+) \((?P<wall>[\d.]+) s, (?P<cpu>[\d.]+) s CPU, "
                  r"(?P<rss>[\d,]+) MiB peak\)")
DONE = re.compile(r"\[\d+ of \d+ done, (\d+) s\]")


def single(path: Path, work: Path, timeout: float) -> dict:
    """The trace as one file, checked alone by one Lean process."""
    trace = read_trace(path)
    name = f"Single{uuid.uuid4().hex[:8]}"
    lean = work / f"{name}.lean"
    t0 = time.monotonic()
    lean.write_text(packed_trace.emit_instance(trace.refs, trace.sha256, name))
    emit_s = time.monotonic() - t0
    r = build.check_files([lean], backend="wasm", timeout=timeout, jobs=1).by_module()[name]
    lean.unlink()
    return {"status": r.status + (f" ({r.cause})" if r.cause else ""), "emit_s": round(emit_s, 1),
            "wall_s": round(r.seconds, 1), "cpu_s": r.cpu_s, "peak_rss_mib": r.peak_rss_mib,
            "file_mib": None, "detail": r.detail[:200]}


def sharded(path: Path, work: Path, timeout: float, shard_refs: int | None) -> dict:
    """``pycert prove ceiling --trace`` end to end, under a fresh name."""
    tag = uuid.uuid4().hex[:8]
    link = work / f"b{tag}.jsonl"
    link.symlink_to(path.resolve())
    lines: list[str] = []
    t0 = time.monotonic()
    res = prove.prove(["ceiling"], [link], backend="wasm", out_dir=work / f"certs-{tag}", timeout=timeout,
                      shard_refs=shard_refs, progress=lambda m: (lines.append(m), print(m, file=sys.stderr, flush=True)))
    wall = time.monotonic() - t0
    mine = f"CeilingB{tag}"
    runs = [{"module": m["module"], "status": m["status"], "wall_s": float(m["wall"]), "cpu_s": float(m["cpu"]),
             "peak_rss_mib": int(m["rss"].replace(",", ""))}
            for line in lines if (m := LINE.match(line)) and m["module"].startswith(mine)]
    done = [float(m[1]) for line in lines if (m := DONE.search(line))]
    ray_wall = done[-1] if done else 0.0
    tasks = [r for r in runs if re.search(r"(Shard|Sched)\d+$", r["module"])]
    serial = wall - ray_wall
    cores = os.cpu_count() or 1
    return {"ok": res.ok, "wall_s": round(wall, 1), "ray_wall_s": ray_wall, "stages": {s.name: s.seconds for s in res.stages},
            "lean_processes": runs, "shards": sum("Shard" in r["module"] for r in tasks),
            "lean_cpu_s": round(sum(r["cpu_s"] for r in runs), 1),
            "max_peak_rss_mib": max((r["peak_rss_mib"] for r in runs), default=0),
            # The Ray phase keeps every core busy while tasks remain; on c cores it takes its measured time
            # scaled by cores / c, but never less than its longest task. The rest does not spread.
            "projected_s": {str(c): round(serial + max(ray_wall * cores / c, max((r["wall_s"] for r in tasks), default=0)))
                            for c in (cores, 16, 128)}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", action="append", default=[], metavar="LABEL=PATH", required=True)
    ap.add_argument("--single", default="", help="labels also checked as one file by one Lean process")
    ap.add_argument("--shard-refs", type=int, default=None)
    ap.add_argument("--work", type=Path, default=None, help="scratch directory (default: a new one under /tmp)")
    ap.add_argument("--timeout", type=float, default=3600.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-shards-"))
    work.mkdir(parents=True, exist_ok=True)
    singles = {s for s in args.single.split(",") if s}
    rows = []
    for spec in args.trace:
        label, _, path = spec.partition("=")
        trace = read_trace(Path(path))
        row = {"label": label, "refs": trace.n_refs, "distinct": int(len(set(trace.refs.tolist())))
               if trace.n_refs < 2_000_000 else None, "file": Path(path).name}
        del trace
        if label in singles:
            row["single"] = single(Path(path), work, args.timeout)
            print(json.dumps({"label": label, "single": row["single"]}), file=sys.stderr, flush=True)
        row["sharded"] = sharded(Path(path), work, args.timeout, args.shard_refs)
        print(json.dumps({"label": label, "sharded": {k: v for k, v in row["sharded"].items()
                                                      if k != "lean_processes"}}), file=sys.stderr, flush=True)
        rows.append(row)
    out = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
           "rows": rows}
    console.emit(args.json, out, lambda: json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
