"""Axiom-audit figures, side by side in one run, each scenario in a fresh process (cold caches):

* ``init-closure``: every constant of ``Init`` and its imports decoded and walked, as if each were a
  theorem's dependency: an upper bound on the Init share of any library audit;
* ``std-closure``: the same for ``Std`` (Init included);
* ``library``: ``pycert audit``'s own path: the library under ``lean/`` built through the kernel
  runner (cached) and audited with ``audit_build`` (skipped when the library has no modules).

    python benchmarks/bench_audit.py [--json] [--library DIR]

The audit is single-threaded Python; the figure to hold is <= 60 s on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

SCENARIOS = ("init-closure", "std-closure", "library")


def _closure(root: str) -> dict[str, object]:
    from pycert.audit.graph import Environment
    from pycert.lean.wasm import find_wasm

    wasm = find_wasm()
    if wasm is None:
        raise SystemExit("the wasm toolchain is not installed (pycert toolchain install)")
    t0 = time.monotonic()
    env = Environment([wasm.lib])
    env.load_closure([root])
    loaded = time.monotonic() - t0
    for name in list(env.owner):
        env.node(name)
    return {"modules": len(env.modules), "constants": len(env.nodes), "load_s": round(loaded, 2),
            "total_s": round(time.monotonic() - t0, 2)}


def _library(library: Path) -> dict[str, object]:
    from pycert.audit import axioms as au
    from pycert.lean import build as lean_build
    from pycert.lean.resolve import resolve
    from pycert.lean.sources import library_modules

    if not library_modules(library):
        return {"skipped": f"no modules under {library}"}
    backend = resolve()
    t0 = time.monotonic()
    build = lean_build.build(library=library, backend=backend)
    built = time.monotonic() - t0
    report = au.audit_build(build, backend, library)
    return {"build_s": round(built, 1), "cached": all(r.cached for r in build.results), "verdict": report.verdict,
            "theorems": report.declarations_audited, "constants_walked": report.constants_walked,
            "modules_loaded": report.modules_loaded, "axioms_seen": report.axioms_seen,
            "audit_s": round(report.seconds, 2)}


def _run_one(scenario: str, library: Path) -> None:
    out = _closure("Init") if scenario == "init-closure" else _closure("Std") if scenario == "std-closure" \
        else _library(library)
    out["max_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--library", type=Path, default=None, help="default: the library pycert proves with")
    ap.add_argument("--scenario", choices=SCENARIOS, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.library is None:
        from pycert.core.resources import library_dir

        args.library = library_dir()
    if args.scenario:
        _run_one(args.scenario, args.library)
        return
    figures: dict[str, object] = {"machine": f"{platform.machine()}, {len(os.sched_getaffinity(0))} cores usable"}
    for s in SCENARIOS:
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, __file__, "--scenario", s, "--library", str(args.library)],
                              capture_output=True, text=True, check=True)
        row = json.loads(proc.stdout.strip().splitlines()[-1])
        row["process_wall_s"] = round(time.monotonic() - t0, 2)
        figures[s] = row
    print(json.dumps(figures, indent=2) if args.json else "\n".join(f"{k}: {v}" for k, v in figures.items()))


if __name__ == "__main__":
    main()
