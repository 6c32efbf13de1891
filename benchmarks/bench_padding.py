"""Compressed traces padded with data that decompresses to nothing, read by this checkout and by an older
revision, side by side in one run: how long each takes to its verdict (the trace read, or refused as padding),
and the padding's bytes over that time.

    python benchmarks/bench_padding.py [--old REV] [--size MB] [--patience S] [--json]

Each kind (``tests/attacks/corpus.py``'s :func:`padding`) is appended to a small gzip or zstd trace; a child
process (``PYTHONPATH`` the tree, this checkout's virtual environment) reads it with ``read_trace``, through the
gate, and is killed past ``--patience`` seconds. ``zstd frames at the limit`` is the densest stream this
checkout accepts (one frame for every ``FRAME_BYTES`` bytes of output), ``zstd frames of 64 KiB`` a
bgzip-like one, and the conversation trace (gzip and zstd, when the Mooncake traces are beside the checkout)
is data, not padding: the same reader's speed on what it is for. The older revision is checked out into
a git worktree under /tmp, as ``bench_attacks.py`` does.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import zstandard

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.bench_attacks import checkout  # noqa: E402 (the repository root first, above)
from pycert.data.formats.source import FRAME_BYTES  # noqa: E402
from tests.attacks.corpus import SHARED, padding  # noqa: E402

READ = """
import sys, time
from pycert.core.errors import InputError
from pycert.data.traces import read_trace
t0 = time.monotonic()
try:
    trace = read_trace(sys.argv[1])
    verdict = f"read, {trace.n_refs:,} references"
except InputError as err:
    verdict = "refused: " + err.message[:70]
print(f"{time.monotonic() - t0:.3f}\\t{verdict}")
"""


def inputs(work: Path, size: int) -> dict[str, tuple[Path, int]]:
    """Each kind's file and the bytes of it that are padding (or data, for the real traces)."""
    out = {}
    small = b"1\n2\n1\n3\n" * 4
    for kind in ("zstd-empty-frames", "zstd-skippable", "gzip-empty-members", "gzip-zeros", "gzip-comment"):
        head = zstandard.ZstdCompressor().compress(small) if kind.startswith("zstd") else gzip.compress(small, mtime=0)
        pad = padding(kind, size)
        out[kind] = (work / f"{kind}.{'zst' if kind.startswith('zstd') else 'gz'}", len(pad))
        out[kind][0].write_bytes(head + pad)
    line = b"".join(b"%d\n" % (i % 9973) for i in range(4000))
    for name, chunk in ((f"zstd frames at the limit ({FRAME_BYTES} B)", FRAME_BYTES), ("zstd frames of 64 KiB", 1 << 16)):
        text = (line * (size // len(line) + 1))[:size]
        text = text[:text.rfind(b"\n") + 1]
        c = zstandard.ZstdCompressor(level=1)
        path = work / f"frames-{chunk}.zst"
        path.write_bytes(b"".join(c.compress(text[i:i + chunk]) for i in range(0, len(text), chunk)))
        out[name] = (path, path.stat().st_size)
    conversation = SHARED / "conversation_trace.jsonl"
    if conversation.is_file():
        data = conversation.read_bytes()
        (work / "conversation.jsonl.gz").write_bytes(gzip.compress(data, 6, mtime=0))
        (work / "conversation.jsonl.zst").write_bytes(zstandard.ZstdCompressor(level=3).compress(data))
        for ext in ("gz", "zst"):
            path = work / f"conversation.jsonl.{ext}"
            out[f"conversation trace ({ext}), data"] = (path, path.stat().st_size)
    return out


def measure(tree: Path, path: Path, patience: float) -> tuple[float | None, str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    try:
        done = subprocess.run([sys.executable, "-c", READ, str(path)], env=env, capture_output=True, text=True,
                              timeout=patience, cwd=tempfile.gettempdir())
    except subprocess.TimeoutExpired:
        return None, f"killed past {patience:g} s"
    if done.returncode != 0:
        return None, f"exit {done.returncode}: {done.stderr.strip().splitlines()[-1][:70] if done.stderr.strip() else ''}"
    seconds, verdict = done.stdout.strip().split("\t", 1)
    return float(seconds), verdict


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", default="8fc50f4", help="the older revision (default: main before issue 50)")
    ap.add_argument("--size", type=int, default=12, help="megabytes of padding a file (default 12, the red team's)")
    ap.add_argument("--patience", type=float, default=60.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    old = checkout(args.old)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind, (path, size) in inputs(Path(tmp), args.size * 1_000_000).items():
            row = {"kind": kind, "bytes": size}
            for side, tree in (("this", REPO), (args.old, old)):
                seconds, verdict = measure(tree, path, args.patience)
                row[side] = {"seconds": seconds, "verdict": verdict,
                             "mb_per_s": None if not seconds else round(size / seconds / 1e6, 1)}
            rows.append(row)
    if args.json:
        print(json.dumps({"rows": rows, "machine": platform.node(), "load": os.getloadavg()}, indent=2))
        return
    print(f"# {platform.node()}, load {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {time.strftime('%Y-%m-%d')}")
    print(f"| padding | MB | this checkout | {args.old} |")
    print("|---|---:|---|---|")
    for r in rows:
        cells = [f"{r[s]['seconds']:.2f} s ({r[s]['mb_per_s']:,} MB/s), {r[s]['verdict']}" if r[s]["seconds"] is not None
                 else r[s]["verdict"] for s in ("this", args.old)]
        print(f"| {r['kind']} | {r['bytes'] / 1e6:.1f} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
