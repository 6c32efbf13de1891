"""A trace replayed on the real engine (``pycert engine replay``'s replay, without the certificates), and
beside it, on the same references, what pycert computes for LRU and Belady's MIN at the same capacity
and for a cache of unbounded size: the engine's own hits against both, in one run.

    head -n 600 ../shared/traces/mooncake-fast25/conversation_trace.jsonl > /tmp/conv600.jsonl
    python benchmarks/bench_engine_replay.py /tmp/conv600.jsonl --num-blocks 1024 --block-tokens 64 [--json]

(the slice: 600 requests, 16,495 references; sha256 4b4aad55...421f). Wall time, this process's CPU
time (the engine runs in a thread of it: on a shared machine the steadier figure), peak RSS and the
load average before and after are printed beside the hits. ``--shapes tiny,small`` replays with the
replay's model and then with the one ``pycert leak run`` uses, one after the other in the same run
(BENCHMARKS.md: why the replay has its own); ``--threads 2,1`` with torch's intra-op threads at 2 and
then at 1 (what ``pycert engine replay`` runs: ``pycert.leak.engines.paged.TORCH_THREADS``). The hits must be the
same in every run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import time
from pathlib import Path

from pycert.analysis.cachesim import lru_hit_curve
from pycert.analysis.optcurve import admission_hit_curve, opt_hit_curve
from pycert.cli.engine import checked_trace
from pycert.leak import replay as replaylog
from pycert.leak.engines.paged import MAX_BATCH_TOKENS, TORCH_THREADS
from pycert.leak.engines.transformers import SMALL, TINY, TransformersEngine


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--num-blocks", type=int, default=1024)
    ap.add_argument("--block-tokens", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shapes", default="tiny", help="tiny, small or tiny,small (default tiny)")
    ap.add_argument("--threads", default=str(TORCH_THREADS), help="torch intra-op threads, e.g. 2,1 (default: the "
                                                                   "command's)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    trace, requests = checked_trace(args.trace, args.num_blocks, args.block_tokens)
    curves = lru_hit_curve(trace.refs), opt_hit_curve(trace.refs), admission_hit_curve(trace.refs)
    runs = [run(args, trace, requests, shape, int(threads), *curves) for shape in args.shapes.split(",")
            for threads in args.threads.split(",")]
    if args.json:
        print(json.dumps(runs, indent=2))
        return
    for out in runs:
        for key, value in out.items():
            print(f"{key:24} {value}")
        print()


def run(args: argparse.Namespace, trace, requests, shape: str, threads: int, lru, opt, adm) -> dict:  # noqa: ANN001
    c, b = args.num_blocks, args.block_tokens
    load_before = os.getloadavg()
    t0, cpu0 = time.monotonic(), time.process_time()
    engine = TransformersEngine(seed=args.seed, page_size=b, num_blocks=c, max_batch_tokens=MAX_BATCH_TOKENS,
                                shape={"tiny": TINY, "small": {**SMALL, "max_position_embeddings": 1 << 22}}[shape],
                                threads=threads)
    try:
        header = replaylog.engine_header(engine, seed=args.seed, num_blocks=c, block_tokens=b, trace=args.trace.name,
                                         trace_sha256=trace.sha256, requests=len(requests), refs=trace.n_refs)
        log = replaylog.replay(engine, requests, header)
    finally:
        engine.close()
    wall, cpu = time.monotonic() - t0, time.process_time() - cpu0
    return {"trace": args.trace.name, "sha256": trace.sha256, "requests": len(requests), "refs": trace.n_refs,
           "num_blocks": c, "block_tokens": b, "model": engine.model, "torch_threads": threads,
           "engine_hits": sum(r.cached_tokens for r in log.requests) // b, "lru_hits": lru.hits(c),
           "belady_hits": opt.hits(c), "bypass_hits": adm.hits(c), "unbounded_hits": lru.refs - lru.distinct,
           "evicted_blocks": sum(r.evicted_blocks for r in log.requests),
           "requests_with_evictions": sum(r.evicted_blocks > 0 for r in log.requests),
           "replay_wall_s": round(wall, 1), "replay_cpu_s": round(cpu, 1),
           "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
           "load_before": load_before, "load_after": os.getloadavg(),
           "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"}


if __name__ == "__main__":
    main()
