"""Kernel-checked traces: kernel seconds and peak memory against trace length, the whole-trace
packed encoding (``pycert.lean_trace``) side by side with the previous per-reference encoding
(``benchmarks/legacy``: chunked ``decodeFrom``/``denseGo``, walked reference by reference), in one run.

    python benchmarks/bench_lean_trace.py [--trace FILE] [--sizes 16384,65536,all] [--synthetic 1000000]
                                          [--hashed 16384] [--legacy-max 65536] [--timeout 1800] [--json]

Each size is a prefix of the trace (``all``: the whole trace); ``--synthetic N`` adds a seeded
synthetic trace of at least N references (``pycert trace generate``); ``--hashed`` reruns prefixes with
the ids renamed to random 64-bit values, first occurrences no longer increasing (the permuted table). Every case runs alone in its
own process (one Lean process at a time), so ``peak_rss_mib`` is that Lean process's peak resident
memory and ``instance_s`` is its wall time minus that of a file that only imports the library module.
The legacy encoding runs up to ``--legacy-max`` references: past that it takes tens of minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pycert.core import console
from pycert.data import synthetic
from pycert.data.traces import read_trace, trace_from_bytes
from pycert.lean import toolchain
from pycert.lean.emit import packed_trace as lt

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_TRACE = ROOT.parent / "shared" / "traces" / "mooncake-fast25" / "conversation_trace.jsonl"
sys.path.insert(0, str(HERE / "legacy"))
import windowed  # noqa: E402  (the previous emitter, kept only for this comparison)

CHILD = """
import json, resource, sys
from pathlib import Path
from pycert.lean import build
path, library = Path(sys.argv[1]), Path(sys.argv[2])
res = build.check_files([path], backend="wasm", timeout=float(sys.argv[3]), library=library, jobs=1).by_module()
r = res[path.stem]
print(json.dumps({"status": r.status, "seconds": r.seconds,
                  "peak_rss_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
                  "errors": [d.render() for d in r.failures][:3]}))
"""


def run_one(path: Path, library: Path, timeout: float) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), str(library), str(timeout)],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        return {"status": "crashed", "seconds": 0.0, "peak_rss_kib": 0, "errors": [out.stderr.strip()[-300:]]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    ap.add_argument("--sizes", default="16384,65536,all")
    ap.add_argument("--synthetic", type=int, default=1_000_000)
    ap.add_argument("--hashed", default="16384", help="prefix sizes also run with ids renamed to random 64-bit hashes")
    ap.add_argument("--legacy-max", type=int, default=65_536)
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    trace = read_trace(args.trace)
    cases = [(str(n), trace.refs[: len(trace.refs) if n == "all" else int(n)].tolist(), trace.sha256)
             for n in filter(None, args.sizes.split(","))]
    for n in filter(None, args.hashed.split(",")):
        prefix = trace.refs[: int(n)].tolist()
        rng, name = random.Random(0), {}
        for b in dict.fromkeys(prefix):
            name[b] = rng.getrandbits(64)  # collisions among a few thousand 64-bit draws: none seen, and harmless
        cases.append((f"{n} hashed ids", [name[b] for b in prefix], trace.sha256))
    if args.synthetic:
        requests = args.synthetic // 15
        while True:
            synth = trace_from_bytes(synthetic.to_jsonl(synthetic.generate(0, requests=requests)), "synthetic.jsonl")
            if synth.n_refs >= args.synthetic:
                break
            requests = requests * args.synthetic // synth.n_refs + 1
        cases.append((f"synthetic {synth.n_refs}", synth.refs.tolist(), synth.sha256))

    with tempfile.TemporaryDirectory(prefix="bench-lean-trace-", dir=toolchain.scratch_root()) as tmp:
        d = Path(tmp)
        library = d / "lean"
        shutil.copytree(ROOT / "lean", library)
        shutil.copy(HERE / "legacy" / "TraceCheck.lean", library / "Pycert" / "TraceCheck.lean")
        base = {}
        for enc, module in (("packed", "Pycert.PackedTrace"), ("legacy", "Pycert.TraceCheck")):
            f = d / f"ImportOnly_{enc}.lean"
            f.write_text(f"import {module}\nimport Pycert.Ceiling\n\ntheorem importOnly : True := True.intro\n")
            base[enc] = run_one(f, library, args.timeout)
        rows = []
        for label, refs, sha in cases:
            for enc in ("packed", "legacy"):
                if enc == "legacy" and (len(refs) > args.legacy_max or "hashed" in label):
                    continue  # the legacy encoding takes only ids numbered densely in first-occurrence order
                name = f"{enc.capitalize()}{len(refs)}"
                src = (lt.emit_instance(refs, sha, name) if enc == "packed"
                       else windowed.emit_instance(refs, sha, name))
                f = d / f"{name}.lean"
                f.write_text(src)
                r = run_one(f, library, args.timeout)
                inst = r["seconds"] - base[enc]["seconds"]
                rows.append({
                    "trace": label, "refs": len(refs), "distinct": len(set(refs)), "encoding": enc,
                    "file_mib": round(len(src.encode()) / 2**20, 2), "status": r["status"],
                    "check_s": round(r["seconds"], 1), "instance_s": round(inst, 1),
                    "us_per_ref": round(1e6 * inst / max(1, len(refs)), 1),
                    "peak_rss_mib": round(r["peak_rss_kib"] / 1024), "errors": r["errors"],
                })
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    out = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}", "backend": "wasm",
        "trace": str(args.trace), "sha256": trace.sha256,
        "import_only_s": {k: round(v["seconds"], 1) for k, v in base.items()},
        "import_only_peak_rss_mib": {k: round(v["peak_rss_kib"] / 1024) for k, v in base.items()},
        "rows": rows,
    }
    cols = ["trace", "refs", "distinct", "encoding", "file_mib", "status", "check_s", "instance_s", "us_per_ref",
            "peak_rss_mib"]
    console.emit(args.json, out, human=lambda: (
        f"{out['trace']} ({out['machine']}, wasm); import alone {out['import_only_s']} s\n"
        + console.table(cols, [[r[c] for c in cols] for r in rows])
    ))


if __name__ == "__main__":
    main()
