"""A fleet certified end to end (issue 45, item 5; issue 48, item 3), side by side in one run with its peer,
one capacity certificate of the same trace at the pooled capacity ``H · C``:

* the peer: ``pycert prove capacity --trace T --capacity-blocks H·C`` (one instance, both models both ways), first
  and again last (the ratios are to the mean of the two: the machine is shared);
* the fleet: ``pycert prove fleet --trace T --hosts H --capacity-blocks C --routing R`` for each routing alone,
  then all routings in one command (they share the pooled instance);
* ``pycert verify`` of the fleet certificates (offline: every sub-trace and Lean file made again).

    python benchmarks/bench_fleet.py [--trace FILE] [--hosts 8] [--capacity 512]
        [--routing round-robin --routing prefix:2] [--json]

Each command gets the trace under a fresh name (a symbolic link), so that no instance module is in pycert's
build cache; the library is (built once before anything is timed). ``wall_s`` is the whole command, ``cpu_s``
its CPU with its children's (Ray's workers and every Lean process included), ``load`` the load average before
and after: the machine is shared, and a Lean process waits for one of its two slots; ``warm_checker`` whether this
pycert's warm checker answered before the command (``PYCERT_DAEMON=off``: every Lean fresh, as on a first run). The
fleet's pooled optimum must equal the peer's optimum with bypass at ``H · C`` (the same instance, stated twice).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from fractions import Fraction
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_TRACE = ROOT.parent / "shared" / "traces" / "mooncake-fast25" / "conversation_trace.jsonl"
LEAN_LINE = re.compile(r"  (?P<module>(?:Fleet|Capacity)\w+): ok \((?P<wall>[\d.]+) s, (?P<cpu>[\d.]+) s CPU, "
                       r"(?P<peak>[\d,]+) MiB peak\)")
"""A Lean process's line in prove's progress: its module, wall and CPU seconds, peak RSS."""


def lean_processes(output: str) -> dict[str, object]:
    """The command's Lean processes, by kind (the pooled or capacity instance, the hosts', the compositions)."""
    kinds: dict[str, list[tuple[float, float, int]]] = {}
    for m in LEAN_LINE.finditer(output):
        name = m["module"]
        kind = "host" if "Host" in name else "pooled" if "Pool" in name or name.startswith("Capacity") else "composition"
        kinds.setdefault(kind, []).append((float(m["wall"]), float(m["cpu"]), int(m["peak"].replace(",", ""))))
    return {k: {"count": len(v), "lean_cpu_s": round(sum(c for _, c, _ in v), 1),
                "cpu_each_s": f"{min(c for _, c, _ in v)}-{max(c for _, c, _ in v)}",
                "peak_mib": max(p for _, _, p in v)} for k, v in kinds.items()}


def lean_cpu(row: dict[str, object]) -> float:
    """Every Lean process's CPU in a command (Ray's workers' children included, which the command's own misses)."""
    return sum(float(k["lean_cpu_s"]) for k in row["lean"].values())  # type: ignore[union-attr, index]


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"


def warm_checker() -> str:
    """Whether this pycert's warm checker (``pycert daemon``) answers before a command, with its warm workers."""
    if os.environ.get("PYCERT_DAEMON", "on").strip().lower() in ("off", "0", "no", "false"):
        return "off (PYCERT_DAEMON)"
    res = subprocess.run([sys.executable, "-m", "pycert", "daemon", "status", "--json"], capture_output=True, text=True,
                         cwd=ROOT)
    mine = [d for d in json.loads(res.stdout or "{}").get("daemons", []) if d["current"]] if res.returncode == 0 else []
    return f"warm, {len(mine[0]['workers'])} workers" if mine else "none running"


def run(args: list[str]) -> tuple[subprocess.CompletedProcess[str], dict[str, object]]:
    checker = warm_checker()
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), load()
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "pycert", *args], capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if res.returncode != 0:
        raise SystemExit(f"pycert {' '.join(args[:2])} failed ({res.returncode}): {res.stdout[-1500:]}{res.stderr[-1500:]}")
    return res, {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "load": f"{start} -> {load()}",
                 "warm_checker": checker, "lean": lean_processes(res.stdout + res.stderr)}


def figures(cert: Path) -> dict[str, Fraction]:
    return {f["name"]: Fraction(f["numerator"], f["denominator"]) for f in json.loads(cert.read_text())["figures"]}


def fresh(trace: Path, tmp: Path) -> Path:
    link = tmp / f"bench_{uuid.uuid4().hex[:8]}.jsonl"
    link.symlink_to(trace.resolve())
    return link


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    ap.add_argument("--hosts", type=int, default=8)
    ap.add_argument("--capacity", type=int, default=512)
    ap.add_argument("--routing", action="append", default=[])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    routings = args.routing or ["round-robin", "prefix:2"]
    h, c = args.hosts, args.capacity
    rows = []
    run(["build"])  # the library, once, before anything is timed
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as scratch:
        tmp = Path(scratch)

        def the_peer(when: str) -> dict[str, Fraction]:
            link = fresh(args.trace, tmp)
            out = tmp / f"peer-{uuid.uuid4().hex[:6]}"
            _, row = run(["prove", "capacity", "--trace", str(link), "--capacity-blocks", str(h * c), "--out", str(out),
                          "--backend", "wasm"])
            got = figures(next(out.glob("capacity-*.json")))
            rows.append({"command": f"prove capacity --capacity-blocks {h * c} (the peer, {when})", **row,
                         "hits": int(got["bypass_hits"])})
            return got

        peer = the_peer("first")
        for chosen in [[r] for r in routings] + ([routings] if len(routings) > 1 else []):
            link = fresh(args.trace, tmp)
            out = tmp / f"fleet-{uuid.uuid4().hex[:6]}"
            argv = ["prove", "fleet", "--trace", str(link), "--hosts", str(h), "--capacity-blocks", str(c),
                    *(x for r in chosen for x in ("--routing", r)), "--out", str(out), "--backend", "wasm"]
            _, row = run(argv)
            certs = sorted(out.glob("fleet-*.json"))
            got = [figures(p) for p in certs]
            if any(f["pooled_hits"] != peer["bypass_hits"] for f in got):
                raise SystemExit("the fleet's pooled optimum differs from the capacity certificate's at H·C")
            rows.append({"command": f"prove fleet --hosts {h} --capacity-blocks {c} " + " ".join(f"--routing {r}" for r in chosen),
                         **row, "routed": {p.stem: int(f["routed_hits"]) for p, f in zip(certs, got)},
                         "pooled": int(got[0]["pooled_hits"]), "workload": int(got[0].get("workload_hits", -1))})
            if len(chosen) > 1:
                _, row = run(["verify", *map(str, certs), "--input", f"{link.name}={args.trace}"])
                rows.append({"command": f"verify {len(certs)} fleet certificates (offline)", **row})
        the_peer("again, last")  # the machine is shared: the peer's wall is read at both ends of the run
    peers = [r for r in rows if str(r["command"]).startswith("prove capacity")]
    peer_wall = sum(float(r["wall_s"]) for r in peers) / len(peers)  # type: ignore[arg-type]
    peer_lean = sum(lean_cpu(r) for r in peers) / len(peers)
    for r in rows:
        if str(r["command"]).startswith("prove fleet"):
            r["ratio_to_peer_wall"] = round(float(r["wall_s"]) / peer_wall, 2)  # type: ignore[arg-type]
            r["ratio_to_peer_lean_cpu"] = round(lean_cpu(r) / peer_lean, 2)
    result = {"machine": f"{platform.node()}, {platform.processor() or platform.machine()}, "
                         f"{len(os.sched_getaffinity(0))} cores", "trace": args.trace.name, "rows": rows}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['machine']}; trace {args.trace.name}; {h} hosts of {c} blocks")
    for r in rows:
        extra = {k: v for k, v in r.items() if k not in ("command", "wall_s", "cpu_s", "load")}
        print(f"  {r['command']}: {r['wall_s']} s wall, {r['cpu_s']} s CPU, load {r['load']}  {extra or ''}")


if __name__ == "__main__":
    main()
