"""Reading a trace of the requests layout, its block ids in each shape engines write them, beside the
Mooncake reader of the same references (the peer: unsigned 64-bit integers, no renumbering), side by side
in one run. Each scenario is a fresh ``pycert trace stats`` process under GNU time.

The trace: ``--refs`` references (10^7 by default) in requests of 1-40 blocks, each block drawn from
``--distinct`` ids (2^22 by default) in no order, written once per shape:

* ``mooncake``: the Mooncake layout, ids unsigned 64-bit integers (the peer);
* ``requests-u64``: the same lines read as the requests layout (``--format requests``);
* ``requests-hex16``: each id as 16 lower-case hex digits (one kind: no renumbering);
* ``requests-signed``: each id as a signed 64-bit integer (two kinds: renumbered by sorting);
* ``requests-sha256``: each id as 64 hex digits (no kind packs it: the table of distinct strings).

    python benchmarks/bench_requests.py [--refs 10000000] [--distinct 4194304] [--dir /tmp/bench-requests] [--json]

Each figure is wall seconds and peak resident memory (GNU time's ``%M``), with the load average before
and after; the files' sizes are given. Every scenario's refs and distinct counts must agree.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SHAPES = ("mooncake", "requests-u64", "requests-hex16", "requests-signed", "requests-sha256")


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def write(path: Path, shape: str, refs: int, distinct: int, seed: int = 0) -> None:
    """The trace of ``shape``, the same references in every shape."""
    rng = np.random.default_rng(seed)
    pool = rng.integers(0, 1 << 64, size=distinct, dtype=np.uint64)
    picks = pool[rng.integers(0, distinct, size=refs)]
    lengths = []
    left = refs
    while left:
        n = min(left, int(rng.integers(1, 41)))
        lengths.append(n)
        left -= n
    if shape == "requests-sha256":
        import hashlib

        text = {int(v): hashlib.sha256(int(v).to_bytes(8, "big")).hexdigest() for v in pool.tolist()}
    with path.open("w") as f:
        at = 0
        for n in lengths:
            ids = picks[at:at + n].tolist()
            at += n
            if shape == "requests-hex16":
                cell = ", ".join(f'"{v:016x}"' for v in ids)
            elif shape == "requests-signed":
                cell = ", ".join(str(v - (1 << 64) if v >= 1 << 63 else v) for v in ids)
            elif shape == "requests-sha256":
                cell = ", ".join(f'"{text[v]}"' for v in ids)
            else:
                cell = ", ".join(map(str, ids))
            if shape == "mooncake" or shape == "requests-u64":
                f.write(f'{{"input_length": {n * 512}, "output_length": 1, "hash_ids": [{cell}]}}\n')
            else:
                f.write(f'{{"hash_ids": [{cell}]}}\n')


def timed(argv: list[str]) -> dict[str, object]:
    before = loadavg()
    with tempfile.NamedTemporaryFile("r") as rss:
        t0 = time.monotonic()
        proc = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss.name, *argv], capture_output=True, text=True,
                              check=False)
        wall = time.monotonic() - t0
        peak_kib = int(rss.read().split()[-1])
    out = json.loads(proc.stdout) if proc.returncode == 0 else {}
    return {"seconds": round(wall, 1), "exit": proc.returncode, "peak_rss_mib": round(peak_kib / 1024),
            "refs": out.get("refs"), "distinct": out.get("distinct"), "load_before": before, "load_after": loadavg(),
            "error": proc.stderr.strip().splitlines()[-1:] if proc.returncode else []}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--refs", type=int, default=10_000_000)
    ap.add_argument("--distinct", type=int, default=1 << 22)
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "bench-requests")
    ap.add_argument("--only", default=",".join(SHAPES))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    rows = {}
    for shape in args.only.split(","):
        path = args.dir / f"{shape.replace('requests-u64', 'mooncake')}-{args.refs}.jsonl"
        if not path.exists():
            write(path, shape, args.refs, args.distinct)
        fmt = "mooncake" if shape == "mooncake" else "requests"
        rows[shape] = {"file_mib": round(path.stat().st_size / 2**20),
                       **timed([sys.executable, "-m", "pycert", "trace", "stats", str(path), "--format", fmt, "--json"])}
    report = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores", "refs": args.refs,
              "distinct_pool": args.distinct, "scenarios": rows}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{report['machine']}; {args.refs:,} references from {args.distinct:,} ids")
        print(f"{'scenario':18} {'file MiB':>9} {'seconds':>8} {'peak MiB':>9} {'refs':>12} {'distinct':>10}  load")
        for shape, r in rows.items():
            print(f"{shape:18} {r['file_mib']:>9} {r['seconds']:>8} {r['peak_rss_mib']:>9} {r['refs'] or '-':>12} "
                  f"{r['distinct'] or '-':>10}  {r['load_before']} -> {r['load_after']} {r['error'] or ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
