"""The warm checker's targets (issue 48), each case beside its reference in one run.

It prints the table BENCHMARKS.md shows (markdown), the targets met or missed and by how much, and ``uptime``
at both ends.

    .venv/bin/python benchmarks/bench_warm.py [--small] [--curve] [--mrc [--base REV] [--rounds N]] [--json]

``--small``: a fresh 3,000-reference trace of 64-bit ids in no order (seeded, new ids every command, so that
the kernel answers and not the build cache), ``pycert prove ceiling --trace T --capacity-blocks 16,64`` (its
ceiling and two capacities), the library built beforehand (not timed). In order: today's path
(``--no-daemon``: fresh Lean processes); then, with this pycert's warm checker stopped, a first command (it
finds none, checks with fresh processes and starts one), a second and a third right after; then, once
``pycert daemon start`` says a worker is warm, one more, and ``--no-daemon`` again.

``--curve``: the conversation trace's optimum both ways (with and without bypass), ``pycert prove capacity``,
under fresh names (a symbolic link each, so that no instance module is in the build cache): one capacity
(128 blocks), then the 14 capacities 1, 2, 4, ..., 8,192 blocks; and the one capacity under the trace's own
name, whose instance the committed certificates put in the build cache (what a user meets for the
committed capacity). Each row is a whole command; the stages and each Lean run's wall and CPU as it prints
them. The kernel stage's time outside its longest Lean run is a wait: for a machine Lean slot that other
runs hold, or for a warm checker's worker to start (or a second file behind the first on one worker).

``--mrc``: ``pycert trace mrc`` on the conversation trace, a fresh process each time, beside libCacheSim
(a fresh Python process: import, read its oracleGeneral file, LRU at 128, 1,024 and 8,192 blocks, with its
default hash table and with ``hashpower=16``; the conversion of the trace to that file is not timed),
``--rounds`` rounds each (default 5), alternating; with ``--base REV``, that revision's ``trace mrc`` too
(exported with ``git archive``, run with this virtual environment) and whether its curves are this one's.

The machine is shared here, and pycert's Lean slots are machine-wide, so another user's Lean run can make
either side wait: every row has the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
from bench_fixed_costs import export, trace  # noqa: E402 - the 3,000-reference traces and the base revision, as there
SHARED = REPO.parent / "shared" / "traces" / "mooncake-fast25"
POWERS = [1 << k for k in range(14)]
LEAN = re.compile(r"^\[\s*[\d.]+s\]\s+(\S+): ok \(([\d.]+) s, ([\d.]+) s CPU, ([\d,]+) MiB peak\)", re.M)
STAGE = re.compile(r"^(instances: \w+|kernel|axiom audit|figures|statements|certificates)\s+(\w+)\s+([\d.]+)", re.M)


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def pycert(args: list[str], env: dict[str, str] | None = None, tree: Path = REPO) -> tuple[subprocess.CompletedProcess[str], float]:
    """``python -m pycert ARGS`` from ``tree`` (this checkout, or the base revision's files)."""
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pycert", *args], capture_output=True, text=True, cwd=tree,
                          env={**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1", **(env or {})})
    return done, time.monotonic() - t0


def prove(case: str, args: list[str], env: dict[str, str] | None = None, tree: Path = REPO) -> dict:
    """One prove command: its wall time, its CPU and its children's (fresh Lean processes are its children, the
    warm checker's workers are not: their CPU is ``lean_cpu_s``, as the command prints it), its stages."""
    before, used = load(), resource.getrusage(resource.RUSAGE_CHILDREN)
    done, wall = pycert(["prove", *args], env, tree)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = done.stdout + done.stderr
    lean = LEAN.findall(out)
    return {"case": case, "exit": done.returncode, "wall_s": round(wall, 1),
            "command_cpu_s": round(after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime, 1),
            "stages": {m[1]: float(m[3]) for m in STAGE.finditer(out)},
            "lean": [{"module": m[0], "wall_s": float(m[1]), "cpu_s": float(m[2]), "peak_mib": int(m[3].replace(",", ""))}
                     for m in lean],
            "lean_cpu_s": round(sum(float(m[2]) for m in lean), 1), "checker": "warm checker: pid" in out,
            "load": f"{before} -> {load()}", "error": out[-800:] if done.returncode else ""}


def small(work: Path, rows: list[dict]) -> None:
    seed = random.getrandbits(32)

    def one(key: str, case: str, k: int, extra: list[str] = (), env: dict[str, str] | None = None) -> None:
        t = trace(work / f"small{k}.txt", seed + k)
        rows.append({"key": key, **prove(case, ["ceiling", "--trace", str(t), "--capacity-blocks", "16,64", "--out",
                                                  str(work / f"small-out{k}"), *extra], env)})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)

    pycert(["daemon", "stop"])
    one("fresh", "3,000 refs, ceiling + 2 capacities: --no-daemon (fresh processes)", 0, ["--no-daemon"])
    one("first", "the same: first command, no warm checker running (it starts one)", 1)
    one("second", "the same: a second trace right after", 2)
    one("third", "the same: a third trace right after", 3)
    before = load()
    started, waited = pycert(["daemon", "start"])
    rows.append({"key": "start", "case": "pycert daemon start (waits for a warm worker)", "exit": started.returncode,
                 "wall_s": round(waited, 1), "load": f"{before} -> {load()}"})
    one("warm", "the same: a trace once the checker is warm", 4)
    one("fresh2", "the same: --no-daemon again (fresh processes)", 5, ["--no-daemon"])


def curve(work: Path, rows: list[dict]) -> None:
    """One capacity and the 14, fresh names; the one capacity the committed certificates cached."""
    conv = SHARED / "conversation_trace.jsonl"

    def fresh(name: str) -> Path:
        link = work / f"{name}-{random.getrandbits(24):06x}.jsonl"
        link.symlink_to(conv)
        return link

    every = fresh("curve")
    runs = [("one", "conversation, one capacity (128), fresh name", fresh("one"), [128], REPO),
            ("fourteen", "conversation, 14 capacities 1..8,192, fresh name", every, POWERS, REPO),
            ("cached", "conversation, one capacity (128), its own name (the build cache answers)", conv, [128], REPO)]
    for key, case, path, caps, tree in runs:
        args = ["capacity", "--trace", str(path), "--capacity-blocks", ",".join(map(str, caps)),
                "--out", str(work / f"curve-out-{len(rows)}")]
        rows.append({"key": key, **prove(case, args, tree=tree)})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)


LCS = """
import sys, time
import libcachesim as lcs
hits = []
for c in (128, 1024, 8192):
    cache = lcs.LRU(cache_size=c) if sys.argv[2] == "default" else lcs.LRU(cache_size=c, hashpower=int(sys.argv[2]))
    miss, _ = cache.process_trace(lcs.TraceReader(sys.argv[1], lcs.TraceType.ORACLE_GENERAL_TRACE))
    hits.append(round(1 - miss, 6))
print(hits)
"""


def mrc(work: Path, rows: list[dict], base: Path | None, rounds: int) -> None:
    from bench_mrc import write_lcs_inputs  # noqa: PLC0415 - the benchmark's own helper

    from pycert.data.traces import read_trace

    conv = SHARED / "conversation_trace.jsonl"
    og, _txt = write_lcs_inputs(read_trace(conv).refs, work)
    runs = {"mrc": ("pycert trace mrc (all capacities, LRU and Belady)",
                    lambda: pycert(["trace", "mrc", str(conv), "--json"])[0]),
            "lcs": ("libCacheSim LRU at 128, 1,024, 8,192 blocks (default hashpower)", lambda: subprocess.run(
                [sys.executable, "-c", LCS, str(og), "default"], capture_output=True, text=True)),
            "lcs16": ("libCacheSim LRU at 128, 1,024, 8,192 blocks (hashpower 16)", lambda: subprocess.run(
                [sys.executable, "-c", LCS, str(og), "16"], capture_output=True, text=True))}
    if base is not None:
        runs["mrc_base"] = ("pycert trace mrc, base revision",
                            lambda: pycert(["trace", "mrc", str(conv), "--json"], tree=base)[0])
    times: dict[str, list[float]] = {key: [] for key in runs}
    outputs: dict[str, str] = {}
    before = load()
    for r in range(rounds):
        for key in (list(runs) if r % 2 == 0 else list(runs)[::-1]):
            t0 = time.monotonic()
            done = runs[key][1]()
            times[key].append(time.monotonic() - t0)
            if done.returncode:
                raise SystemExit(f"{runs[key][0]} failed: {done.stderr[-500:]}")
            outputs[key] = done.stdout
    for key, ts in times.items():
        rows.append({"key": key, "case": runs[key][0], "wall_s": round(statistics.median(ts), 2),
                     "rounds_s": [round(t, 2) for t in ts], "load": f"{before} -> {load()}"})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    if base is not None:  # "unchanged": the same curves as the base revision's (later issues added trace stats)
        this, then = json.loads(outputs["mrc"]), json.loads(outputs["mrc_base"])
        same = all(this[k] == then[k] for k in then if k != "stats") and all(
            this["stats"].get(k) == v for k, v in then["stats"].items())
        rows.append({"key": "mrc_same", "case": "trace mrc --json, this against the base revision", "same": same,
                     "wall_s": 0.0, "load": load()})


def main() -> int:  # noqa: C901 - one branch per case
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--curve", action="store_true")
    ap.add_argument("--mrc", action="store_true")
    ap.add_argument("--base", default=None, metavar="REV",
                    help="--mrc: also run this revision's trace mrc, and compare its curves (e.g. 8fc50f4, where issue "
                         "48 measured it)")
    ap.add_argument("--rounds", type=int, default=5, help="--mrc: rounds of each command, alternating (default 5)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows: list[dict] = []
    start = uptime()
    built, _ = pycert(["build"])
    if built.returncode:
        raise SystemExit(f"the library does not build: {built.stderr[-800:]}")
    with tempfile.TemporaryDirectory(prefix="bench-warm-", dir="/tmp") as scratch:
        work = Path(scratch)
        base = export(args.base, work / "base") if args.base else None
        if args.mrc:
            mrc(work, rows, base, args.rounds)
        if args.small:
            small(work, rows)
        if args.curve:
            curve(work, rows)
    if args.json:
        print(json.dumps({"machine": f"{os.cpu_count()} cores", "uptime_start": start, "uptime_end": uptime(),
                          "rows": rows, "targets": targets(rows)}, indent=2))
        return 0
    print(render(rows, start))
    return 0 if all(r.get("exit", 0) == 0 for r in rows) else 1


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def targets(rows: list[dict]) -> list[dict]:
    """Issue 48's targets, each with its figure from this run (absent: that part was not run)."""
    by = {r["key"]: r for r in rows if "key" in r}
    out = []

    def target(what: str, figure: float, limit: float, unit: str) -> None:
        out.append({"target": what, "figure": round(figure, 2), "limit": limit, "unit": unit, "met": figure <= limit,
                    "by": round(figure - limit, 2)})

    if "first" in by:
        target("a 3,000-reference trace, ceiling + 2 capacities, no warm checker running", by["first"]["wall_s"], 10,
               "s")
    if "second" in by:
        target("a second such trace right after", by["second"]["wall_s"], 5, "s")
    if "warm" in by:
        target("(for reference) a trace once the checker is warm", by["warm"]["wall_s"], 5, "s")
    if "one" in by and "fourteen" in by:
        target("the 14-capacity curve against one capacity", by["fourteen"]["wall_s"] / by["one"]["wall_s"], 3, "x")
        target("the same, less each command's wait for a Lean slot", (by["fourteen"]["wall_s"] - waited(by["fourteen"]))
               / (by["one"]["wall_s"] - waited(by["one"])), 3, "x")
        target("the same, Lean CPU", by["fourteen"]["lean_cpu_s"] / by["one"]["lean_cpu_s"], 3, "x")
    if "mrc" in by and "lcs" in by:
        target("trace mrc against libCacheSim's three capacities (default)",
               by["mrc"]["wall_s"] / by["lcs"]["wall_s"], 1, "x")
    if "mrc_same" in by:
        out.append({"target": "trace mrc's figures unchanged from the base revision", "met": by["mrc_same"]["same"]})
    return out


def waited(r: dict) -> float:
    """How long the kernel stage was not running the command's Lean (a machine slot held by other runs, a warm
    checker's worker still starting): the stage's time less its longest Lean run (its Lean runs overlap)."""
    lean = [m["wall_s"] for m in r.get("lean", [])]
    return max(0.0, r.get("stages", {}).get("kernel", 0.0) - max(lean, default=0.0)) if lean else 0.0


def render(rows: list[dict], start: str) -> str:
    """The table BENCHMARKS.md shows, in markdown, then the targets."""
    lines = [f"uptime at the start: {start}", "",
             "| case | exit | wall s | Lean wall s, each | Lean CPU s | kernel s (of it, waiting) | audit s "
             "| load (1 min, before -> after) |",
             "|---|---:|---:|---|---:|---:|---:|---|"]
    for r in rows:
        if r["key"] == "mrc_same":
            continue
        st = r.get("stages", {})
        rounds = f" (rounds {', '.join(map(str, r['rounds_s']))})" if "rounds_s" in r else ""
        each = ", ".join(f"{m['wall_s']:g}" for m in r.get("lean", []))
        kernel = f"{st['kernel']:g} ({waited(r):.1f})" if "kernel" in st else ""
        lines.append(f"| {r['case']}{rounds} | {r.get('exit', 0)} | {r['wall_s']:.1f} | {each} | "
                     f"{r.get('lean_cpu_s', '')} | {kernel} | {st.get('axiom audit', '')} | {r['load']} |")
    lines += ["", "| target | this run | limit | met |", "|---|---:|---:|---|"]
    for t in targets(rows):
        if "figure" in t:
            verdict = "yes" if t["met"] else f"no, by {t['by']:g} {t['unit']}"
            lines.append(f"| {t['target']} | {t['figure']:g} {t['unit']} | {t['limit']:g} {t['unit']} | {verdict} |")
        else:
            lines.append(f"| {t['target']} | | | {'yes' if t['met'] else 'NO'} |")
    lines += ["", f"uptime at the end: {uptime()}"]
    return "\n".join(lines)

if __name__ == "__main__":
    sys.exit(main())
