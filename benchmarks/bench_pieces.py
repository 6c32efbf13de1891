"""A trace too long for one Lean process, at a capacity, side by side with another revision (issue 39, item 4).

    .venv/bin/python benchmarks/bench_pieces.py --base REV [--requests N] [--seed S] [--capacity C] [--rounds R] [--json]

The trace is ``pycert trace generate --requests N --seed S`` (43,291 and 0: 1,000,161 references), generated
once. Each round runs ``pycert prove capacity --trace T --capacity-blocks C`` on both sides, into a fresh
directory each, then plain ``pycert verify`` of the certificate (which regenerates every piece from the trace):
this checkout, whose pieces state the optimum with bypass both ways (``OptimumA``, the pairs open
across each joint carried), and ``--base`` (``main``: today's path, exported with ``git archive`` and run with
this virtual environment through ``PYTHONPATH``), whose pieces state the bound of the other model only
(``Bounded``). Both sides check their pieces as Ray tasks on a local cluster of this machine's cores. Each
side's library is built once beforehand, with a small trace in pieces proved (not timed); the pieces themselves are new to the build cache in
every round (a fresh ``$PYCERT_CACHE`` build tree per run, hard-linking the installed toolchain).

Rounds alternate which side goes first; every row has the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_fixed_costs import HERE, TOOLCHAIN, export, load  # the same export of the base revision


def pycert(side: Path, args: list[str], env: dict[str, str], cwd: Path) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pycert", *args], cwd=cwd, capture_output=True, text=True,
                          env={**env, "PYTHONPATH": str(side)})
    return time.monotonic() - t0, done


def fresh_cache(root: Path, base_cache: Path) -> Path:
    """A pycert cache with the toolchain and the library's build tree of ``base_cache`` (hard links) and nothing
    of earlier instance runs: a new directory each run."""
    cache = Path(tempfile.mkdtemp(prefix="cache-", dir=root))
    shutil.copytree(base_cache, cache, copy_function=os.link, dirs_exist_ok=True)
    return cache


def headline(out: Path) -> tuple[str, int | None, str]:
    [cert] = sorted(out.glob("capacity-*.json"))
    doc = json.loads(cert.read_text())
    figs = {f["name"]: f["numerator"] for f in doc["figures"]}
    hits = figs.get("bypass_hits", figs.get("max_hits"))
    return doc["parameters"]["lean_encoding"], hits, cert.name


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="main")
    ap.add_argument("--requests", type=int, default=43291)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--capacity", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-pieces-"))
    rows = []
    try:
        sides = {"this checkout": HERE, f"{a.base} (today)": export(a.base, work / "base")}
        env = dict(os.environ)
        trace = work / f"syn{a.requests}.jsonl"
        _, done = pycert(HERE, ["trace", "generate", "-o", str(trace), "--requests", str(a.requests), "--seed",
                                str(a.seed)], env, work)
        if done.returncode:
            raise SystemExit(done.stderr)
        caches = {}
        installed = Path(os.environ.get("PYCERT_CACHE") or Path.home() / ".cache" / "pycert") / TOOLCHAIN
        for name, side in sides.items():  # each side's library built once, not timed
            caches[name] = Path(tempfile.mkdtemp(prefix="warm-", dir=work))
            shutil.copytree(installed, caches[name] / TOOLCHAIN, copy_function=os.link)
            small = work / "warm.txt"  # the library, numba's kernels and Ray's start, on a trace of 2,000 ids
            small.write_text("".join(f"{(i * 7919) % 300 * 2654435761}\n" for i in range(2000)))
            _, done = pycert(side, ["prove", "capacity", "--trace", str(small), "--capacity-blocks", "4",
                                    "--shard-refs", "1000", "--out", str(work / f"warm-{len(caches)}")],
                             {**env, "PYCERT_CACHE": str(caches[name])}, work)
            if done.returncode:
                raise SystemExit(f"{name}: the library did not build: {done.stdout[-2000:]}{done.stderr[-2000:]}")
        order = list(sides)
        for r in range(a.rounds):
            for name in order if r % 2 == 0 else order[::-1]:
                side, out = sides[name], work / f"out-{r}-{len(rows)}"
                run_env = {**env, "PYCERT_CACHE": str(fresh_cache(work, caches[name]))}
                before = load()
                wall, done = pycert(side, ["prove", "capacity", "--trace", str(trace), "--capacity-blocks",
                                           str(a.capacity), "--out", str(out)], run_env, work)
                after = load()
                row = {"side": name, "round": r, "prove_s": round(wall, 1), "status": "ok" if done.returncode == 0 else
                       f"exit {done.returncode}", "load_before": before, "load_after": after}
                if done.returncode == 0:
                    encoding, hits, cert = headline(out)
                    vwall, vdone = pycert(side, ["verify", str(out / cert)], run_env, work)
                    row |= {"layout": encoding, "hits": hits, "verify_s": round(vwall, 1),
                            "verify": "ok" if vdone.returncode == 0 else f"exit {vdone.returncode}"}
                else:
                    row["error"] = (done.stderr or done.stdout)[-600:]
                rows.append(row)
                if not a.json:
                    print(row, file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if a.json:
        print(json.dumps({"requests": a.requests, "seed": a.seed, "capacity": a.capacity, "rows": rows}, indent=1))
    else:
        print("| side | round | layout | hits | prove s | verify s | load before/after |")
        print("|---|---:|---|---:|---:|---:|---|")
        for x in rows:
            print(f"| {x['side']} | {x['round']} | {x.get('layout', x['status'])} | {x.get('hits', '-')} | {x['prove_s']} "
                  f"| {x.get('verify_s', '-')} | {x['load_before']} / {x['load_after']} |")
    return 0 if all(x["status"] == "ok" for x in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
