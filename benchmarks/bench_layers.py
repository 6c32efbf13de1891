"""Start-up and run times of pycert against an older revision, side by side in one run (issue 27).

    python benchmarks/bench_layers.py [--old REV] [--repeat N] [--cold] [--json]

The older revision is checked out into a git worktree under /tmp and run from source (its directory
first on ``PYTHONPATH``, so its own ``pycert``, ``solvers`` and ``mutation`` are imported), with this
checkout's virtual environment; each side proves and verifies with its own library and certificates.
Measured per side, alternating old and new, medians of ``--repeat`` runs:

- ``pycert --help`` and a plain ``pycert verify`` of the isolation certificate: CPU seconds of the
  process (user + system);
- ``pycert prove all`` with nothing changed (a first run fills the caches): wall and CPU seconds;
- with ``--cold``: ``pycert prove all`` with both Mooncake traces and an empty build cache (and, for
  this side, no kept solver answers or audits), once each: wall and CPU seconds, Lean included.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TRACES = REPO.parent / "shared" / "traces" / "mooncake-fast25"
DEFAULT_OLD = "89c827c"


def checkout(rev: str) -> Path:
    where = Path(tempfile.gettempdir()) / f"pycert-bench-{rev}"
    if not (where / "pycert").is_dir():
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-f", str(where), rev], check=True,
                       capture_output=True)
    return where


def command(side: Path | None, args: list[str]) -> tuple[list[str], dict[str, str], Path]:
    env = {**os.environ}
    if side is None:
        return [str(Path(sys.executable).parent / "pycert"), *args], env, REPO
    env["PYTHONPATH"] = str(side)
    return [sys.executable, "-c", "import sys; from pycert.cli import main; sys.exit(main(sys.argv[1:]))", *args], env, side


def timed(side: Path | None, args: list[str], env_extra: dict[str, str] | None = None) -> tuple[float, float, int]:
    """(wall s, CPU s of the process and its children, exit code)."""
    argv, env, cwd = command(side, args)
    env.update(env_extra or {})
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.returncode


def median_of(side: Path | None, args: list[str], repeat: int, env_extra: dict[str, str] | None = None) -> dict:
    runs = [timed(side, args, env_extra) for _ in range(repeat)]
    return {"wall_s": round(statistics.median(r[0] for r in runs), 3), "cpu_s": round(statistics.median(r[1] for r in runs), 3),
            "exit": sorted({r[2] for r in runs})}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", default=DEFAULT_OLD, help=f"the older revision (default {DEFAULT_OLD})")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cold", action="store_true", help="also prove all with both Mooncake traces on an empty build cache")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    old = checkout(args.old)
    sides = {"old": old, "new": None}
    out: dict = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at start",
                 "old": args.old, "new": subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                                        capture_output=True, text=True).stdout.strip()}
    scratch = Path(tempfile.mkdtemp(prefix="bench-layers-"))
    for name, side in sides.items():
        out[name] = {}
    for what, argv in (("help", ["--help"]), ("verify", ["verify", "certificates/isolation-t8-n1024.json"])):
        for name, side in sides.items():
            out[name][what] = median_of(side, argv, args.repeat)
    for name, side in sides.items():  # prime the caches, then the run with nothing changed
        warm = ["prove", "all", "--out", str(scratch / f"warm-{name}")]
        timed(side, warm)
        out[name]["prove_all_warm"] = median_of(side, warm, max(3, args.repeat // 2))
    if args.cold:
        traces = ["--trace", str(TRACES / "conversation_trace.jsonl"), "--trace", str(TRACES / "synthetic_trace.jsonl")]
        for name, side in sides.items():
            cache = scratch / f"build-cache-{name}"
            env = {"PYCERT_BUILD_CACHE": str(cache), "PYCERT_MEMO": "0"}
            wall, cpu, code = timed(side, ["prove", "all", *traces, "--out", str(scratch / f"cold-{name}")], env)
            out[name]["prove_all_mooncake_cold"] = {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "exit": [code]}
    out["load_at_end"] = round(os.getloadavg()[0], 1)
    print(json.dumps(out, indent=2) if args.json else "\n".join(f"{k}: {v}" for k, v in out.items()))


if __name__ == "__main__":
    main()
