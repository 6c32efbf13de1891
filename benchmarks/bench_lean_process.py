"""Where one wasm Lean process's time goes (issue 39, item 2), with the loader before issue 39 (two
patches) and today's (three), side by side in one run.

    .venv/bin/python benchmarks/bench_lean_process.py [--rounds N] [--json]

Cases, each one Lean process holding a machine slot, the library from the build cache:

- ``--version``: Node's start and the module's instantiation, nothing else;
- ``prelude``: an empty file (the frontend, no import);
- ``import Pycert``: the import of the whole library;
- ``ceiling`` and ``capacity``: a 3,000-reference trace of 64-bit ids, its ceiling instance and its
  instance at 16 blocks, as ``pycert prove`` emits them (compiled with ``-o``, as the build does);
- ``worker``: the same two instance files and the library's root, one after the other in one Lean
  worker (:mod:`pycert.lean.worker`): the first job pays the worker's start.

Each round runs every case with both loaders, in alternating order. Wall seconds, CPU seconds and peak
resident memory of the process; the load average before each. This machine is shared: CPU seconds move
less with the load than wall seconds do.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pycert.core.resources import library_dir
from pycert.lean import build
from pycert.lean import toolchain as tc
from pycert.lean.backend import resolve
from pycert.lean.process import run_process
from pycert.lean.worker import LeanWorker


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def loaders(package: Path, into: Path) -> dict[str, Path]:
    """The two-patch loader (before issue 39) and today's, each beside links to the package's other files
    (the loader finds ``lean.wasm`` in its own directory)."""
    source = (package / "lean.js").read_text(encoding="utf-8")
    two = source.replace(tc._DLSYM_SCAN, tc._DLSYM_INDEXED).replace(tc._POOL_PRESPAWN, tc._POOL_ONE)
    out = {}
    for name, text in (("two patches", two), ("three patches", tc.patch_loader(source))):
        d = into / name.replace(" ", "-")
        d.mkdir()
        for f in package.iterdir():
            if f.name != "lean.js" and not f.name.startswith("lean-pycert"):
                (d / f.name).symlink_to(f)
        (d / "lean.js").write_text(text, encoding="utf-8")
        out[name] = d / "lean.js"
    return out


def instances(work: Path) -> dict[str, Path]:
    rng = random.Random(39)
    ids = [rng.getrandbits(64) for _ in range(700)]
    trace = work / "t3k.txt"
    trace.write_text("".join(f"{ids[rng.randrange(60 if rng.random() < 0.5 else 700)]}\n" for _ in range(3000)))
    out = work / "certs"
    done = subprocess.run([sys.executable, "-m", "pycert", "prove", "ceiling", "--trace", str(trace),
                           "--capacity-blocks", "16", "--out", str(out), "--json"], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"pycert prove failed: {done.stderr[-2000:]}")
    derived = out / "lean" / "derived"
    return {"ceiling": derived / "CeilingT3k.lean", "capacity": derived / "CapacityT3kC16.lean"}


def one(node: Path, loader: Path, lean_path: str, case: str, source: Path | None, stage: Path) -> dict:
    stage.mkdir(parents=True, exist_ok=True)
    argv = [str(node), str(loader)]
    if source is None:
        argv.append("--version")
    else:
        shutil.copyfile(source, stage / source.name)
        argv += ["--json", "-o", str(stage / (source.stem + ".olean")), source.name]
    before = load()
    run = run_process(argv, stage, {**os.environ, "LEAN_PATH": lean_path}, 900)
    ok = run.exit_code == 0 or (source is None and "Lean (version" in run.stdout)
    return {"case": case, "ok": ok, "wall_s": round(run.seconds, 1), "cpu_s": run.cpu_s,
            "peak_mib": run.peak_rss_mib, "load": before}


def worker(node: Path, loader: Path, lean_path: str, files: dict[str, Path], stage: Path) -> list[dict]:
    stage.mkdir(parents=True, exist_ok=True)
    w = LeanWorker(node, loader, lean_path)
    rows = []
    try:
        for case, f in files.items():
            shutil.copyfile(f, stage / f.name)
            before = load()
            run = w.compile(stage / f.name, f.stem, stage / (f.stem + ".olean"), 900)
            rows.append({"case": f"worker: {case}", "ok": run.exit_code == 0, "wall_s": round(run.seconds, 1),
                         "cpu_s": run.cpu_s, "peak_mib": run.peak_rss_mib, "load": before})
    finally:
        w.close()
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    wasm = resolve("wasm")
    lean_path = f"{wasm.lib}:{build.build(library=library_dir(), backend='wasm').olean_dir}"
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-lean-", dir="/tmp") as tmp:
        work = Path(tmp)
        files = instances(work)
        (work / "Empty.lean").write_text("prelude\n")
        (work / "ImportAll.lean").write_text("import Pycert\n")
        cases = {"--version": None, "prelude": work / "Empty.lean", "import Pycert": work / "ImportAll.lean", **files}
        by_loader = loaders(wasm.lean_js.parent, work)
        for r in range(args.rounds):
            order = list(by_loader) if r % 2 == 0 else list(by_loader)[::-1]
            for name in order:
                for case, source in cases.items():
                    row = one(wasm.node, by_loader[name], lean_path, case, source, work / f"stage-{r}-{name}-{case}")
                    rows.append({"loader": name, "round": r, **row})
                    print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
                jobs = {**files, "the library's root": library_dir() / "Pycert.lean"}
                for row in worker(wasm.node, by_loader[name], lean_path, jobs, work / f"worker-{r}-{name}"):
                    rows.append({"loader": name, "round": r, **row})
                    print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for row in rows:
            print(f"{row['loader']:14} {row['case']:30} {'ok' if row['ok'] else 'FAILED':6} wall {row['wall_s']:6.1f} s"
                  f"  CPU {row['cpu_s']:6.1f} s  peak {row['peak_mib']:6,} MiB  load {row['load']}")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
