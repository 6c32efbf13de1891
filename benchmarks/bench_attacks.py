"""The attack corpus (``tests/attacks/``) against this checkout and an older revision, side by side, in
one run: each case's hostile directory is built once, then every run of it goes to both pycerts, one
after the other; and plain ``pycert verify`` of the committed certificates on both, alternating.

    python benchmarks/bench_attacks.py [--old REV] [--cases NAME,...] [--patience S] [--memory MIB] [--repeat N] [--json]

The older revision is checked out into a git worktree under /tmp and run from source (its directory first
on ``PYTHONPATH``), with this checkout's virtual environment (``benchmarks/bench_layers.py`` does the
same). A child past ``--patience`` seconds or ``--memory`` MiB of RSS is killed (its process group) and
shown so: on the older revision that is what an attack does. Each figure is the child's wall time and
peak RSS (``VmHWM``, sampled every 20 ms: ``wait4``'s ``ru_maxrss`` starts from the parent's RSS at the
fork); the verdict columns say how each side's answer differs from the case's expected one.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pycert.core.console import escaped  # noqa: E402 (the repository root first, above)
from tests.attacks import corpus  # noqa: E402

DEFAULT_OLD = "9b362af"


def checkout(rev: str) -> Path:
    where = Path(tempfile.gettempdir()) / f"pycert-bench-{rev}"
    if not (where / "pycert").is_dir():
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-f", str(where), rev], check=True,
                       capture_output=True)
    return where


def bounded(run: corpus.Run, patience: float, memory: int) -> corpus.Run:
    """The run with the killer's bounds (twice the expected ones, plus slack) set to ``patience`` and ``memory``."""
    expect = run.expect.model_copy(update={"seconds": (patience - 5) / 2, "rss_mib": (memory - 512) // 2})
    return run.model_copy(update={"expect": expect})


def cell(got: corpus.Outcome) -> str:
    what = f"killed ({got.killed})" if got.killed else f"exit {got.exit}"
    return f"{what}, {got.seconds:.1f} s, {got.rss_mib:,.0f} MiB"


def verify_once(tree: Path) -> tuple[float, float]:
    """Wall and CPU seconds of plain verify of ``tree``'s committed certificates, with the traces."""
    args = ["verify", *sorted(str(p) for p in (tree / "certificates").glob("*.json"))]
    args += [f"--input={n}={corpus.SHARED / n}" for n in ("conversation_trace.jsonl", "synthetic_trace.jsonl")]
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "pycert", *args], cwd=tree, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(tree)})
    _, status, usage = os.wait4(proc.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, f"plain verify in {tree} did not pass"
    return time.monotonic() - t0, usage.ru_utime + usage.ru_stime


def verify_plain(trees: dict[str, Path], repeat: int) -> dict[str, tuple[float, float]]:
    """Median wall and CPU seconds per side, the sides alternating."""
    runs: dict[str, list[tuple[float, float]]] = {side: [] for side in trees}
    for _ in range(repeat):
        for side, tree in trees.items():
            runs[side].append(verify_once(tree))
    return {side: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r)) for side, r in runs.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", default=DEFAULT_OLD, help=f"the older revision (default {DEFAULT_OLD}: main before issue 34)")
    ap.add_argument("--cases", default=None, help="comma-separated case names (default: all; '' for none: plain verify alone)")
    ap.add_argument("--patience", type=float, default=120.0, help="seconds before a child is killed (default 120)")
    ap.add_argument("--memory", type=int, default=3072, help="MiB of RSS before a child is killed (default 3072)")
    ap.add_argument("--repeat", type=int, default=3, help="plain verify runs per side (default 3)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    old = checkout(args.old)
    rows = []
    for name in [c for c in args.cases.split(",") if c] if args.cases is not None else corpus.cases():
        with tempfile.TemporaryDirectory(prefix="bench-attack-") as d:
            case = corpus.build(name, Path(d))
            for k, run in enumerate(case.runs):
                if (why := corpus.available(run)) is not None:
                    rows.append({"case": name, "run": k, "skipped": why})
                    continue
                new = corpus.execute(name, k, run, Path(d))
                holds = corpus.failures(run, new)  # before the old side runs in the same directory
                before = corpus.execute(name, k, bounded(run, args.patience, args.memory), Path(d), tree=old)
                broken = [f for f in corpus.failures(run, before) if not f.startswith(("killed", "exit None"))]
                rows.append({"case": name, "run": k, "command": escaped(" ".join(run.argv[:2])), "old": cell(before),
                             "old_verdict": "; ".join(broken[:3]) or "as expected", "new": cell(new),
                             "new_verdict": "; ".join(holds) or "as expected"})
    plain = verify_plain({"old": old, "new": REPO}, args.repeat)
    load = Path("/proc/loadavg").read_text().split()[:3]
    if args.json:
        print(json.dumps({"rows": rows, "plain_verify": plain, "load": load, "old": args.old}, indent=2))
        return 0
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; load average after the run {' '.join(load)}; "
          f"old = {args.old}")
    print("| case | run | command | old | old against the case | new | new against the case |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        if "skipped" in r:
            print(f"| {r['case']} | {r['run']} | | skipped: {r['skipped']} | | | |")
        else:
            print(f"| {r['case']} | {r['run']} | `{r['command']}` | {r['old']} | {escaped(r['old_verdict'])} | {r['new']} | "
                  f"{escaped(r['new_verdict'])} |")
    for side, (wall, cpu) in plain.items():
        print(f"plain verify of the committed certificates ({side}): median wall {wall:.2f} s, CPU {cpu:.2f} s "
              f"({args.repeat} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
