"""Kernel runner figures: the library built cold (empty build cache) and then again from the cache.

    python benchmarks/bench_kernel.py [--json]

Prints per-module seconds for the cold build, the total, and the cached rebuild's total.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time

from pycert import kernel


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-build-cache-") as cache:
        os.environ["PYCERT_BUILD_CACHE"] = cache
        t0 = time.monotonic()
        cold = kernel.build(library=kernel.default_library(), backend="wasm")
        cold_s = time.monotonic() - t0
        t0 = time.monotonic()
        warm = kernel.build(library=kernel.default_library(), backend="wasm")
        warm_s = time.monotonic() - t0
    out = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "cold_total_s": round(cold_s, 1),
        "cold_ok": cold.ok,
        "modules": {r.module: {"status": r.status, "seconds": round(r.seconds, 1)} for r in cold.results},
        "cached_total_s": round(warm_s, 2),
        "cached_all_hits": all(r.cached for r in warm.results),
    }
    print(json.dumps(out, indent=2) if args.json else "\n".join(f"{k}: {v}" for k, v in out.items()))


if __name__ == "__main__":
    main()
