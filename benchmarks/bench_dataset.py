"""The first-touch dataset's costs, each scenario a fresh ``pycert`` process, side by side in one run:

* ``make``: ``pycert dataset first-touch --trace T --out DIR`` (the engine, the certificates, the table);
* ``check``: ``--check DIR --trace T`` (every certificate verified offline, every cell, the engine again);
* ``check-offline``: the same with ``--no-engine``;
* ``check-kernel``: ``--no-engine --kernel`` (offline, then one build: the library and the two modules);
* ``kernel-batched``: the dataset's Lean work as ``pycert dataset`` does it, every row's headline of a
  family in one module (two ``pycert check`` files);
* ``kernel-per-row``: the one-instance-per-certificate path for comparison: one module per row (the same
  declarations, split), on ``--per-row`` rows of each family (all of them: 65 Lean processes, which hold
  both of the machine's Lean slots for a quarter of an hour).

The two kernel scenarios check the instance files against the library from the build cache (built
once beforehand if it is not there): each file carries a fresh comment, so the cache cannot answer for it.

    python benchmarks/bench_dataset.py --trace ../shared/traces/mooncake-fast25/conversation_trace.jsonl \\
        [--out /tmp/first-touch] [--only make,check,...] [--per-row 3] [--json]

Each figure is wall seconds and the peak resident memory of the largest process the scenario ran
(``ru_maxrss`` of the children), with the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

SCENARIOS = ("make", "check", "check-offline", "check-kernel", "kernel-batched", "kernel-per-row")
PYCERT = [sys.executable, "-m", "pycert"]


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def timed(argv: list[str], env: dict[str, str] | None = None) -> dict[str, object]:
    """One fresh process under GNU time: wall seconds, exit code, the peak RSS GNU time reports (the
    largest process of the tree it waited for)."""
    before = loadavg()
    with tempfile.NamedTemporaryFile("r") as rss:
        t0 = time.monotonic()
        # a fresh interpreter per scenario: each is measured cold, as a user runs it
        proc = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss.name, *argv], env={**os.environ, **(env or {})},
                              capture_output=True, text=True, check=False)
        wall = time.monotonic() - t0
        peak_kib = int(rss.read().split()[-1])
    return {"seconds": round(wall, 1), "exit": proc.returncode, "peak_rss_mib": round(peak_kib / 1024),
            "load_before": before, "load_after": loadavg(), "tail": proc.stderr.strip().splitlines()[-1:]}


def split_rows(module: Path, into: Path) -> list[Path]:
    """One file per row of a batched module: its imports and options, then one row's namespace."""
    text = module.read_text()
    head, _, rest = text.partition("\nnamespace ")
    blocks = ("namespace " + rest).split("\nnamespace ")
    out = []
    for i, block in enumerate(blocks):
        body = block if i == 0 else "namespace " + block
        name = re.search(r"namespace Pycert\.Instance\.(\w+)\.(\w+)", body)
        assert name, body[:80]
        path = into / f"{name.group(1)}{name.group(2)}.lean"
        path.write_text(head + "\n" + body.replace(f"{name.group(1)}.{name.group(2)}", f"{name.group(1)}{name.group(2)}"))
        out.append(path)
    return out


def kernel(files: list[Path]) -> dict[str, object]:
    stamp = f"-- bench {uuid.uuid4().hex}\n"
    for f in files:
        f.write_text(stamp + f.read_text())
    res = timed([*PYCERT, "check", *map(str, files), "--json"])
    res["files"] = len(files)
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, required=True)
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "pycert-bench-first-touch")
    ap.add_argument("--only", default=",".join(SCENARIOS))
    ap.add_argument("--per-row", type=int, default=3, help="rows of each family split for kernel-per-row (0: all)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    chosen = [s for s in args.only.split(",") if s]
    figures: dict[str, object] = {"machine": f"{platform.node()} {os.cpu_count()} cores", "python": sys.version.split()[0]}
    base = ["dataset", "first-touch"]
    if "make" in chosen:
        figures["make"] = timed([*PYCERT, *base, "--trace", str(args.trace), "--out", str(args.out)])
    if "check" in chosen:
        figures["check"] = timed([*PYCERT, *base, "--check", str(args.out), "--trace", str(args.trace)])
    if "check-offline" in chosen:
        figures["check-offline"] = timed([*PYCERT, *base, "--check", str(args.out), "--trace", str(args.trace),
                                          "--no-engine"])
    if "check-kernel" in chosen:
        figures["check-kernel"] = timed([*PYCERT, *base, "--check", str(args.out), "--trace", str(args.trace),
                                         "--no-engine", "--kernel"])
    lean = args.out / "certificates" / "lean"
    if {"kernel-batched", "kernel-per-row"} & set(chosen):
        subprocess.run([*PYCERT, "build"], capture_output=True, check=False)  # the library, cached: not measured
    modules = sorted(lean.glob("FirstTouch*.lean")) + sorted((lean / "derived").glob("FirstTouch*.lean"))
    if "kernel-batched" in chosen:
        scratch = Path(tempfile.mkdtemp(prefix="bench-batched-", dir="/tmp"))
        copies = []
        for m in modules:
            (scratch / m.name).write_text(m.read_text())
            copies.append(scratch / m.name)
        figures["kernel-batched"] = kernel(copies)
    if "kernel-per-row" in chosen:
        scratch = Path(tempfile.mkdtemp(prefix="bench-per-row-", dir="/tmp"))
        figures["kernel-per-row"] = kernel([f for m in modules for f in split_rows(m, scratch)[:args.per_row or None]])
    print(json.dumps(figures, indent=2) if args.json else "\n".join(f"{k}: {v}" for k, v in figures.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
