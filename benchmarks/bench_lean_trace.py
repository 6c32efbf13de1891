"""Kernel-checked trace instances: wall time against trace size, on one backend, in one run.

    python benchmarks/bench_lean_trace.py [--trace FILE] [--sizes 1000,4000,16000,64000,all]
                                          [--chunk 2048] [--timeout 900] [--json]

Each size is a prefix window of the trace. A file that only imports ``Pycert.TraceCheck`` runs first,
so ``check_s - import_s`` is what the instance itself costs (elaboration plus kernel). Files run one
at a time (``jobs=1``) so the figures do not share cores with each other.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
from pathlib import Path

from pycert import console, kernel, lean_trace as lt, toolchain as tc
from pycert.traces import read_trace

DEFAULT_TRACE = Path(__file__).resolve().parents[2] / "shared" / "traces" / "mooncake-fast25" / "conversation_trace.jsonl"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    ap.add_argument("--sizes", default="1000,4000,16000,64000,all")
    ap.add_argument("--chunk", type=int, default=lt.DEFAULT_CHUNK_REFS)
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--backend", default="wasm")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    trace = read_trace(args.trace)
    refs = trace.refs.tolist()
    sizes = [len(refs) if s == "all" else min(int(s), len(refs)) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-lean-trace-", dir=tc.scratch_root()) as tmp:
        d = Path(tmp)
        base = d / "ImportOnly.lean"
        base.write_text("import Pycert.TraceCheck\n\ntheorem importOnly : True := True.intro\n")
        files, plans = [base], {}
        for n in sizes:
            name = f"Prefix{n}"
            plans[name] = lt.plan(refs[:n], trace.sha256, name, chunk_refs=args.chunk)
            (d / f"{name}.lean").write_text(lt.render(plans[name]))
            files.append(d / f"{name}.lean")
        res = kernel.check_files(files, backend=args.backend, timeout=args.timeout, jobs=1).by_module()
    import_s = res["ImportOnly"].seconds
    rows = []
    for name, inst in plans.items():
        r = res[name]
        rows.append({
            "refs": inst.refs, "distinct": inst.distinct, "chunks": len(inst.chunks),
            "file_kb": round(len(lt.render(inst).encode()) / 1024, 1), "status": r.status,
            "check_s": round(r.seconds, 1), "instance_s": round(r.seconds - import_s, 1),
        })
    out = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores", "backend": args.backend,
        "trace": str(args.trace), "sha256": trace.sha256, "chunk_refs": args.chunk,
        "import_only_s": round(import_s, 1), "rows": rows,
    }
    console.emit(args.json, out, human=lambda: (
        f"{out['trace']} ({out['machine']}, {args.backend}); chunk {args.chunk} refs; "
        f"import of Pycert.TraceCheck alone {out['import_only_s']} s\n"
        + console.table(list(rows[0]), [list(r.values()) for r in rows])
    ))


if __name__ == "__main__":
    main()
