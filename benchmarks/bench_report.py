"""The report page, the figures and the documentation site, against an older revision, in one run (issue 36).

    python benchmarks/bench_report.py [--old REV] [--repeat N] [--json]

- ``pycert report`` of the committed certificates (the Mooncake traces handed in with ``--input`` when
  they are beside the checkout), for this checkout and for ``--old`` (checked out and run from source as
  ``bench_layers.py`` does), alternating: wall and CPU seconds, peak RSS of the process, the page's size
  and how many plots it holds;
- ``pycert trace plot`` of the conversation trace (else the embedded one) as PNG, SVG and PDF, and
  ``pycert trace mrc --all --csv``: wall seconds and the size of what they write (this checkout);
- ``mkdocs build --strict`` of the documentation site (this checkout).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_layers import REPO, TRACES, checkout, command

DEFAULT_OLD = "9b362af"
"""main before issue 36: a certificate's plot repeated under each certificate of its trace."""


def run(side: Path | None, args: list[str], cwd: Path | None = None) -> dict:
    """One process: wall s, CPU s, peak RSS MiB, exit code."""
    argv, env, where = command(side, args)
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd or where, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    proc.stderr.close()
    return {"wall_s": round(wall, 3), "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
            "peak_mib": round(usage.ru_maxrss / 1024, 1), "exit": os.waitstatus_to_exitcode(status)}


def medians(runs: list[dict]) -> dict:
    return {k: statistics.median(r[k] for r in runs) for k in ("wall_s", "cpu_s", "peak_mib")} | \
        {"exit": sorted({r["exit"] for r in runs})}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", default=DEFAULT_OLD, help=f"the older revision (default {DEFAULT_OLD})")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    sides = {"old": checkout(args.old), "new": None}
    inputs = [f"--input={t.name}={t}" for t in sorted(TRACES.glob("*.jsonl"))]
    scratch = Path(tempfile.mkdtemp(prefix="pycert-bench-report-"))
    out: dict = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at start",
                 "old": args.old, "report": {}, "figures": {}}
    runs: dict[str, list[dict]] = {name: [] for name in sides}
    for _ in range(args.repeat):
        for name, side in sides.items():
            page = scratch / f"report-{name}.html"
            certs = (side or REPO) / "certificates"
            runs[name].append(run(side, ["report", "--certs", str(certs), "--out", str(page), *inputs]))
            text = page.read_text(encoding="utf-8")
            out["report"][name] = {"bytes": len(text.encode()), "plots": text.count("data:image/png;base64,")}
    for name in sides:
        out["report"][name] |= medians(runs[name])
    trace = TRACES / "conversation_trace.jsonl"
    chosen = [str(trace)] if trace.exists() else []
    for suffix in ("png", "svg", "pdf"):
        target = scratch / f"plot.{suffix}"
        out["figures"][f"trace plot -o .{suffix}"] = run(None, ["trace", "plot", *chosen, "-o", str(target)]) | {
            "bytes": target.stat().st_size}
    csv_file = scratch / "mrc.csv"
    argv, env, _ = command(None, ["trace", "mrc", *chosen, "--all", "--csv"])
    t0 = time.monotonic()
    with csv_file.open("w") as sink:
        subprocess.run(argv, env=env, stdout=sink, check=True)
    out["figures"]["trace mrc --all --csv"] = {"wall_s": round(time.monotonic() - t0, 3), "bytes": csv_file.stat().st_size}
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "--site-dir", str(scratch / "site")],
                   cwd=REPO, check=True)
    out["figures"]["mkdocs build --strict"] = {"wall_s": round(time.monotonic() - t0, 3)}
    out["load_at_end"] = round(os.getloadavg()[0], 1)
    print(json.dumps(out, indent=2) if args.json else "\n".join(f"{k}: {v}" for k, v in out.items()))


if __name__ == "__main__":
    main()
