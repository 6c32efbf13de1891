"""Kernel-checked traces: kernel seconds and peak memory against trace length, three encodings side
by side in one run:

- ``packed/2``, today's (``pycert.lean_trace``): packed vectors, a sorted table and a Beneš network,
  literals in raw 4,096-bit pieces grouped 64 to a definition;
- ``packed/1``, the previous one (stop 18, read from git at ``--v1-rev``): the same vectors, but a
  permutation walked entry by entry when ids are not in increasing first-use order, and each
  vector one definition of ``OfNat`` pieces;
- ``legacy``, the per-reference encoding before that (``benchmarks/legacy``: chunked
  ``decodeFrom``/``denseGo``, walked reference by reference).

    python benchmarks/bench_lean_trace.py [--trace FILE] [--sizes 16384,65536,all] [--synthetic 1000000,…]
        [--hashed 16384,all] [--legacy-max 16384] [--v1-rev 22dc5c0] [--timeout 1800] [--json]

Each size is a prefix of the trace (``all``: the whole trace); ``--synthetic N,…`` adds seeded
synthetic traces of at least N references (``pycert trace generate``); ``--hashed`` reruns prefixes with
the ids renamed to random 64-bit values, first occurrences no longer increasing. Every case runs alone
in its own process (one Lean process at a time), so ``peak_rss_mib`` is that Lean process's peak
resident memory; ``instance_s`` is its wall time minus that of a file that only imports the same
library modules, run just before it (the import is most of a small file, and its time moves with
the machine's load), and ``instance_cpu_s`` the same in CPU seconds. The legacy encoding runs up to ``--legacy-max`` references (it ran out of memory at
65,536 in an earlier run).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from pycert.core import console, resources
from pycert.data import synthetic
from pycert.data.traces import read_trace, trace_from_bytes
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
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"status": r.status, "seconds": r.seconds, "cpu_s": u.ru_utime + u.ru_stime,
                  "peak_rss_kib": u.ru_maxrss,
                  "errors": [d.render() for d in r.failures][:3]}))
"""


def run_one(path: Path, library: Path, timeout: float) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), str(library), str(timeout)],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        return {"status": "crashed", "seconds": 0.0, "cpu_s": 0.0, "peak_rss_kib": 0, "errors": [out.stderr.strip()[-300:]]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def fresh(path: Path) -> Path:
    """``path`` with a new first line, so that pycert's build cache (keyed by content) misses and
    the file is really checked."""
    lines = path.read_text().splitlines(keepends=True)
    if lines and lines[0].startswith("-- bench run "):
        lines = lines[1:]
    path.write_text(f"-- bench run {uuid.uuid4().hex}\n" + "".join(lines))
    return path


class V1(NamedTuple):
    lean: str
    emit: Callable[[list[int], str, str], str]


def load_v1(rev: str) -> V1:
    """The packed/1 encoding as it stood at ``rev``: its emitter and its ``PackedTrace.lean``, renamed
    ``PackedTraceV1`` so that both live in one scratch library."""
    def show(path: str) -> str:
        return subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout
    rename = lambda text: text.replace("Pycert.PackedTrace", "Pycert.PackedTraceV1")  # noqa: E731
    spec = importlib.util.spec_from_loader("packed_v1", loader=None)
    module = importlib.util.module_from_spec(spec)
    # Where its imports live now (issue 13 moved them; what they do is unchanged).
    source = show("pycert/lean_trace.py").replace("from pycert.errors", "from pycert.core.errors").replace(
        "from pycert.limits", "from pycert.core.limits")
    exec(compile(source, f"{rev}:pycert/lean_trace.py", "exec"), module.__dict__)
    return V1(lean=rename(show("lean/Pycert/PackedTrace.lean")).replace("import Pycert.Basic", "import Pycert.Lists"),
              emit=lambda refs, sha, name: rename(module.emit_instance(refs, sha, name)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    ap.add_argument("--sizes", default="16384,65536,all")
    ap.add_argument("--synthetic", default="1000000", help="seeded synthetic traces of at least these many references")
    ap.add_argument("--hashed", default="16384,all", help="prefix sizes also run with ids renamed to random 64-bit hashes")
    ap.add_argument("--legacy-max", type=int, default=16_384)
    ap.add_argument("--v1-rev", default="22dc5c0", help="git revision holding the packed/1 encoding")
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    trace = read_trace(args.trace)
    cases = [(str(n), trace.refs[: len(trace.refs) if n == "all" else int(n)].tolist(), trace.sha256)
             for n in filter(None, args.sizes.split(","))]
    for n in filter(None, args.hashed.split(",")):
        prefix = trace.refs[: len(trace.refs) if n == "all" else int(n)].tolist()
        rng, name = random.Random(0), {}
        for b in dict.fromkeys(prefix):
            name[b] = rng.getrandbits(64)  # collisions among a few thousand 64-bit draws: none seen, and harmless
        cases.append((f"{n} hashed ids", [name[b] for b in prefix], trace.sha256))
    v1 = load_v1(args.v1_rev)
    for target in (int(x) for x in filter(None, args.synthetic.split(","))):
        requests = max(1, target // 24)  # about 23 references a request
        while True:
            synth = trace_from_bytes(synthetic.to_jsonl(synthetic.generate(0, requests=requests)), "synthetic.jsonl")
            if synth.n_refs >= target:
                break
            requests = requests * target // synth.n_refs + 1
        cases.append((f"synthetic {synth.n_refs}", synth.refs.tolist(), synth.sha256))

    with tempfile.TemporaryDirectory(prefix="bench-lean-trace-", dir=resources.scratch_root()) as tmp:
        d = Path(tmp)
        library = d / "lean"
        shutil.copytree(ROOT / "lean", library)
        (library / "Pycert" / "TraceCheck.lean").write_text(  # Basic.lean's list lemmas are Lists.lean now
            (HERE / "legacy" / "TraceCheck.lean").read_text().replace("import Pycert.Basic", "import Pycert.Lists"))
        (library / "Pycert" / "PackedTraceV1.lean").write_text(v1.lean)
        emit = {"packed/2": lt.emit_instance, "packed/1": v1.emit, "legacy": windowed.emit_instance}
        base_file = {}
        for enc, module in (("packed/2", "Pycert.PackedTrace"), ("packed/1", "Pycert.PackedTraceV1"),
                            ("legacy", "Pycert.TraceCheck")):
            f = d / f"ImportOnly_{enc.replace('/', '')}.lean"
            f.write_text(f"import {module}\nimport Pycert.Ceiling\n\ntheorem importOnly : True := True.intro\n")
            base_file[enc] = f
        base: dict[str, list[dict]] = {enc: [] for enc in base_file}
        rows = []
        for label, refs, sha in cases:
            for enc in emit:
                if enc == "legacy" and (len(refs) > args.legacy_max or "hashed" in label):
                    continue  # the legacy encoding takes only ids numbered densely in first-occurrence order
                name = f"{enc.replace('/', '').capitalize()}{len(refs)}{'H' if 'hashed' in label else ''}"
                src = emit[enc](refs, sha, name)
                f = d / f"{name}.lean"
                f.write_text(src)
                fresh(f)
                # The import is most of a small file and moves with the machine's load: time it next to each case.
                b = run_one(fresh(base_file[enc]), library, args.timeout)
                base[enc].append(b)
                r = run_one(f, library, args.timeout)
                inst = r["seconds"] - b["seconds"]
                rows.append({
                    "trace": label, "refs": len(refs), "distinct": len(set(refs)), "encoding": enc,
                    "file_mib": round(len(src.encode()) / 2**20, 2), "status": r["status"],
                    "check_s": round(r["seconds"], 1), "import_s": round(b["seconds"], 1), "instance_s": round(inst, 1),
                    "cpu_s": round(r["cpu_s"], 1), "instance_cpu_s": round(r["cpu_s"] - b["cpu_s"], 1),
                    "us_per_ref": round(1e6 * inst / max(1, len(refs)), 1),
                    "peak_rss_mib": round(r["peak_rss_kib"] / 1024), "errors": r["errors"],
                })
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    out = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}", "backend": "wasm",
        "trace": str(args.trace), "sha256": trace.sha256,
        "import_only_s": {k: [round(v["seconds"], 1) for v in vs] for k, vs in base.items()},
        "import_only_peak_rss_mib": {k: max((round(v["peak_rss_kib"] / 1024) for v in vs), default=0)
                                     for k, vs in base.items()},
        "rows": rows,
    }
    cols = ["trace", "refs", "distinct", "encoding", "file_mib", "status", "check_s", "import_s", "instance_s",
            "us_per_ref", "instance_cpu_s", "peak_rss_mib"]
    console.emit(args.json, out, human=lambda: (
        f"{out['trace']} ({out['machine']}, wasm); import alone {out['import_only_s']} s\n"
        + console.table(cols, [[r[c] for c in cols] for r in rows])
    ))


if __name__ == "__main__":
    main()
