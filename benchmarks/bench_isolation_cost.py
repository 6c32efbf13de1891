"""What a per-tenant salt costs, certified end to end: ``pycert prove isolation-cost`` on a trace at a few
capacities under one tenant map, beside today's path in the same run (``pycert prove capacity`` at the same
capacities: the shared optimum alone), each a whole command in a child process.

    python benchmarks/bench_isolation_cost.py [--trace FILE] [--capacities 16,128,1024] [--tenants 8]
        [--tenant-rule prefix:2] [--no-baseline] [--json]

Each command gets the trace through a link with a new name, so that no Lean module of it is in pycert's build
cache (the library is: build it first); its certificates go to a fresh directory. ``wall_s`` is the command's
wall time, ``pycert_mib`` the peak RSS of the pycert process itself (VmHWM, sampled every 20 ms), and each
Lean process's wall, CPU and peak RSS are read off pycert's progress lines. The figures are the
certificates' own.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT.parent / "shared" / "traces" / "mooncake-fast25" / "conversation_trace.jsonl"
sys.path.insert(0, str(ROOT / "tests"))

from attacks.corpus import Expect, Run, execute  # noqa: E402 (the corpus runner: wall time and peak RSS of a child)

LEAN = re.compile(r"\]\s+(\S+): ok \(([\d.]+) s, ([\d.]+) s CPU, ([\d,]+) MiB peak\)")


def command(family: str, trace: Path, capacities: str, tenants: list[str], work: Path) -> dict:
    """One ``pycert prove`` in a child: its exit, wall time, peak RSS, each Lean process and the figures."""
    link = work / f"{trace.stem}-{uuid.uuid4().hex[:8]}{trace.suffix}"
    link.symlink_to(trace.resolve())
    out = work / f"out-{family}"
    argv = ["prove", family, "--trace", str(link), "--capacity-blocks", capacities, "--out", str(out), *tenants]
    got = execute(family, 0, Run(argv=argv, expect=Expect(exit=0, seconds=3600, rss_mib=16384)), work, ROOT)
    lean = [{"module": m, "wall_s": float(w), "cpu_s": float(c), "peak_mib": int(p.replace(",", ""))}
            for m, w, c, p in LEAN.findall(got.output)]
    certs = {}
    for cert in sorted(out.glob("*.json")) if got.exit == 0 else []:
        doc = json.loads(cert.read_text())
        certs[doc["id"]] = {f["name"]: f["decimal"] for f in doc["figures"]}
    return {"family": family, "exit": got.exit, "wall_s": round(got.seconds, 1), "pycert_mib": round(got.rss_mib),
            "lean": lean, "certificates": certs, "tail": got.output[-2000:] if got.exit else ""}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, default=TRACE)
    ap.add_argument("--capacities", default="16,128,1024")
    ap.add_argument("--tenants", default="8")
    ap.add_argument("--tenant-rule", default="prefix:2")
    ap.add_argument("--no-baseline", action="store_true", help="skip pycert prove capacity")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    tenants = ["--tenant-rule", args.tenant_rule] + ([] if args.tenant_rule == "field" else ["--tenants", args.tenants])
    load = Path("/proc/loadavg").read_text().split()[:3]
    with tempfile.TemporaryDirectory(prefix="pycert-bench-iso-") as tmp:
        runs = [command("isolation-cost", args.trace, args.capacities, tenants, Path(tmp))]
        if not args.no_baseline:
            runs.append(command("capacity", args.trace, args.capacities, [], Path(tmp)))
    result = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "load_start": load,
              "load_end": Path("/proc/loadavg").read_text().split()[:3], "trace": args.trace.name,
              "capacities": args.capacities, "tenant_rule": args.tenant_rule, "runs": runs}
    if args.json:
        print(json.dumps(result, indent=1))
        return
    for r in runs:
        print(f"pycert prove {r['family']}: exit {r['exit']}, {r['wall_s']} s wall, pycert {r['pycert_mib']} MiB peak")
        for m in r["lean"]:
            print(f"  {m['module']}: {m['wall_s']} s, {m['cpu_s']} s CPU, {m['peak_mib']:,} MiB peak")
        for cid, figs in r["certificates"].items():
            print(f"  {cid}: " + ", ".join(f"{k} {figs[k]}" for k in ("shared_hits", "salted_hits", "gap", "gap_share",
                                                                      "partitioned_hits", "bypass_hits") if k in figs))
        if r["tail"]:
            print(r["tail"])
    print(f"load average {' '.join(result['load_start'])} at the start, {' '.join(result['load_end'])} at the end")


if __name__ == "__main__":
    main()
