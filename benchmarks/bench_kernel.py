"""Kernel runner figures: the library built cold (empty build cache) with the package's own Emscripten
loader and with pycert's patched one (``pycert.lean.wasm.patch_loader``), side by side, then the cached
rebuild.

    python benchmarks/bench_kernel.py [--json] [--only patched|package]

Each cold build gets its own empty build cache, so neither can answer from the other's results.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time

from pycert.core.resources import library_dir
from pycert.lean import build


def cold_build(loader: str) -> dict:
    os.environ["PYCERT_WASM_LOADER"] = loader
    with tempfile.TemporaryDirectory(prefix="bench-build-cache-") as cache:
        os.environ["PYCERT_BUILD_CACHE"] = cache
        t0 = time.monotonic()
        cold = build.build(library=library_dir(), backend="wasm")
        cold_s = time.monotonic() - t0
        t0 = time.monotonic()
        warm = build.build(library=library_dir(), backend="wasm")
        warm_s = time.monotonic() - t0
    return {
        "cold_total_s": round(cold_s, 1),
        "cold_ok": cold.ok,
        "modules": {r.module: {"status": r.status, "seconds": round(r.seconds, 1)} for r in cold.results},
        "cached_total_s": round(warm_s, 2),
        "cached_all_hits": all(r.cached for r in warm.results),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--only", choices=("patched", "package"))
    args = ap.parse_args()
    out: dict = {"machine": f"{platform.machine()}, {os.cpu_count()} cores"}
    for loader in [args.only] if args.only else ["patched", "package"]:
        out[loader] = cold_build(loader)
    print(json.dumps(out, indent=2) if args.json else "\n".join(f"{k}: {v}" for k, v in out.items()))


if __name__ == "__main__":
    main()
