"""A curve of capacities in one run (issue 39, item 1), side by side with today's path in the same run:
today, one ``pycert prove capacity --capacity-blocks C`` command per capacity (main's code, one Lean process
and one certificate each); here, one ``pycert prove capacity --capacity-blocks C1,C2,...`` command for them
all (one Lean process for up to 32 capacities, one certificate each). Every certificate's figures are
compared between the two paths (they must agree capacity by capacity).

    python benchmarks/bench_curve.py [--trace FILE] [--capacities 1,2,4,...,8192] [--today-capacities ...]
        [--today REV] [--json]

Today's code is ``git archive REV`` (default ``main``) unpacked in a scratch directory and run with
``PYTHONPATH`` on it, the same virtual environment and Lean toolchain; its library is built once before
anything is timed (that build is not a row). Each command gets the trace under a fresh name (a symbolic
link), so that no instance module is in pycert's build cache; the library is. ``wall_s`` is the whole
command, ``lean_s``/``lean_cpu_s``/``peak_mib`` its instance file's Lean process (as the command prints
them), ``cpu_s`` the command's CPU (children included). ``load`` is the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from pathlib import Path

from pycert.core import console

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_TRACE = ROOT.parent / "shared" / "traces" / "mooncake-fast25" / "conversation_trace.jsonl"
POWERS = [1 << k for k in range(14)]
LEAN_LINE = re.compile(r"  (Capacity\w+): ok \((?P<wall>[\d.]+) s, (?P<cpu>[\d.]+) s CPU, (?P<peak>[\d,]+) MiB peak\)")


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"


def today_tree(rev: str, tmp: Path) -> tuple[Path, str]:
    """``git archive rev`` unpacked under ``tmp``, and the commit it is."""
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", rev], check=True, capture_output=True,
                            text=True).stdout.strip()
    archive = tmp / "today.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "-C", str(ROOT), "archive", commit], check=True, stdout=out)
    with tarfile.open(archive) as tar:
        tar.extractall(tmp / "today", filter="data")
    return tmp / "today", commit


def pycert(tree: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    # from inside the tree: `python -m` puts the working directory first on the path, before PYTHONPATH and
    # before the editable install of this checkout
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-m", "pycert", *args], capture_output=True, text=True, env=env, cwd=tree)


def prove(tree: Path, trace: Path, capacities: list[int], tmp: Path) -> dict:
    """One ``prove capacity`` command with ``tree``'s code on a fresh name of ``trace``: its times and, per
    capacity, the kernel's figures off its certificates."""
    link = tmp / f"bench_{uuid.uuid4().hex[:8]}.jsonl"
    link.symlink_to(trace.resolve())
    out = tmp / f"out-{link.stem}"
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), load()
    t0 = time.perf_counter()
    res = pycert(tree, ["prove", "capacity", "--trace", str(link), "--capacity-blocks", ",".join(map(str, capacities)),
                        "--out", str(out), "--backend", "wasm"])
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        raise SystemExit(f"prove failed ({res.returncode}): {res.stdout[-2000:]}")

    lean = [m.groupdict() for m in LEAN_LINE.finditer(res.stderr)]
    figures = {}
    for cert in out.glob("capacity-*.json"):
        doc = json.loads(cert.read_text())
        figs = {f["name"]: f["numerator"] for f in doc["figures"] if f["denominator"] == 1}
        figures[doc["parameters"]["capacity_blocks"]] = {k: figs.get(k) for k in ("max_hits", "bypass_hits",
                                                                                  "prefix_cache_hits")}
    return {"capacities": capacities, "wall_s": round(wall, 1),
            "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1),
            "lean_s": round(sum(float(x["wall"]) for x in lean), 1), "lean_cpu_s": round(sum(float(x["cpu"]) for x in lean), 1),
            "peak_mib": max((int(x["peak"].replace(",", "")) for x in lean), default=None), "lean_files": len(lean),
            "load": f"{start} -> {load()}", "figures": figures}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    ap.add_argument("--capacities", default=",".join(map(str, POWERS)))
    ap.add_argument("--today-capacities", default=None, help="today's commands, one per capacity (default: all)")
    ap.add_argument("--today", default="main", help="the revision today's path runs")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    caps = [int(c) for c in args.capacities.split(",")]
    today_caps = [int(c) for c in args.today_capacities.split(",")] if args.today_capacities else caps
    with tempfile.TemporaryDirectory(prefix="bench-curve-") as scratch:
        tmp = Path(scratch)
        tree, commit = today_tree(args.today, tmp)
        for code in (tree, ROOT):  # the libraries, before anything is timed
            if (built := pycert(code, ["build", "--backend", "wasm"])).returncode != 0:
                raise SystemExit(f"library build failed: {built.stderr[-1000:]}")
            where = re.search(r"^library\s+(\S+)", pycert(code, ["toolchain"]).stdout, re.M)
            if where is None or not where.group(1).startswith(str(code)):
                raise SystemExit(f"{code}'s commands would run another library: {where and where.group(1)}")
        rows = [{"path": f"today ({args.today} {commit[:7]}), one command per capacity", **prove(tree, args.trace, [c], tmp)}
                for c in today_caps]
        rows.append({"path": "curve, one command", **prove(ROOT, args.trace, caps, tmp)})
    one = {r["capacities"][0]: r for r in rows[:-1]}
    curve = rows[-1]
    disagree = [c for c in today_caps if one[c]["figures"].get(c) != curve["figures"].get(c)]
    report = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
              "trace": str(args.trace), "rows": rows, "figures_agree": not disagree, "disagree": disagree,
              "today_sum_wall_s": round(sum(r["wall_s"] for r in rows[:-1]), 1),
              "curve_over_one": {c: round(curve["wall_s"] / one[c]["wall_s"], 2) for c in today_caps}}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    columns = ("path", "wall_s", "cpu_s", "lean_s", "lean_cpu_s", "peak_mib", "lean_files", "load")
    print(console.table([*columns, "capacities"], [[*(r[k] for k in columns), ",".join(map(str, r["capacities"]))]
                                                    for r in rows]))
    print(f"figures agree: {report['figures_agree']}; curve wall / one capacity's: {report['curve_over_one']}")


if __name__ == "__main__":
    main()
