"""vLLM's own cache manager replaying a whole trace (``pycert engine replay --engine vllm``'s replay,
without the certificates), beside LRU at the same capacity computed by pycert (Mattson stack distances)
and by libCacheSim, in one run.

    PYCERT_VLLM_PYTHON=.venv-vllm/bin/python \\
    python benchmarks/bench_vllm_replay.py ../shared/traces/mooncake-fast25/conversation_trace.jsonl \\
        --num-blocks 1024 --block-tokens 512 [--json]

Printed: the engine's hits (blocks, and its own cached tokens), its evictions, the replay's wall time
(the engine already started: vLLM's import is timed apart as ``engine_start_s``) and references per
second, this process's CPU time (the token map, the wire) and the engine process's (vLLM's own work, when
``PYCERT_VLLM_PYTHON`` runs it in a child; 0 in process), the peak RSS of this process and of the engine's (``ru_maxrss`` of the
children: Linux carries a parent's peak into a child at fork, so the child's figure is at least this
process's at that moment), and LRU's hits at the same capacity from pycert and from libCacheSim with
their times. The load average before and after is printed beside them: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_mrc import write_lcs_inputs  # noqa: E402

from pycert.analysis.cachesim import lru_hit_curve  # noqa: E402
from pycert.analysis.optcurve import admission_hit_curve  # noqa: E402
from pycert.cli.engine import checked_trace  # noqa: E402
from pycert.leak import replay as replaylog  # noqa: E402
from pycert.leak.engines.paged import open_engine  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--num-blocks", type=int, default=1024)
    ap.add_argument("--block-tokens", type=int, default=None, help="default: the trace's own block size")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    c, b = args.num_blocks, args.block_tokens
    trace, requests, b = checked_trace(args.trace, c, b, "vllm")
    load_before = os.getloadavg()
    t0 = time.monotonic()
    engine = open_engine("vllm", c, b, args.seed)
    start = time.monotonic() - t0
    try:
        header = replaylog.engine_header(engine, seed=args.seed, num_blocks=c, block_tokens=b, trace=args.trace.name,
                                         trace_sha256=trace.sha256, requests=len(requests), refs=trace.n_refs)
        t0, cpu0 = time.monotonic(), time.process_time()
        log = replaylog.replay(engine, requests, header)
        wall, cpu = time.monotonic() - t0, time.process_time() - cpu0
    finally:
        engine.close()
    t0 = time.monotonic()
    lru = lru_hit_curve(trace.refs).hits(c)
    lru_s = time.monotonic() - t0
    out = {"trace": args.trace.name, "sha256": trace.sha256, "requests": len(requests), "refs": trace.n_refs,
           "num_blocks": c, "block_tokens": b, "engine": f"{engine.name} ({engine.version})",
           "prompt_tokens": sum(r.engine_tokens for r in log.requests),
           "engine_hits": sum(r.cached_tokens // b for r in log.requests),
           "engine_cached_tokens": sum(r.cached_tokens for r in log.requests),
           "evicted_blocks": sum(r.evicted_blocks for r in log.requests),
           "engine_start_s": round(start, 1), "replay_wall_s": round(wall, 1), "replay_cpu_s": round(cpu, 1),
           "engine_process_cpu_s": round(getattr(engine, "cpu_seconds", 0.0), 1),
           "refs_per_s": round(trace.n_refs / wall), "requests_per_s": round(len(requests) / wall),
           "lru_hits_pycert": lru, "lru_pycert_s": round(lru_s, 2)}
    try:
        import libcachesim as lcs
    except ImportError:
        out["lru_hits_libcachesim"] = "libcachesim not installed"
    else:
        with tempfile.TemporaryDirectory() as tmp:
            og, _ = write_lcs_inputs(trace.refs, Path(tmp))
            t0 = time.monotonic()
            miss, _ = lcs.LRU(cache_size=c, hashpower=16).process_trace(
                lcs.TraceReader(str(og), lcs.TraceType.ORACLE_GENERAL_TRACE))
            out["lru_hits_libcachesim"] = trace.n_refs - round(miss * trace.n_refs)
            out["lru_libcachesim_s"] = round(time.monotonic() - t0, 2)
    out["belady_bypass_hits"] = admission_hit_curve(trace.refs).hits(c)
    out |= {"peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
            "engine_peak_rss_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024,
            "load_before": load_before, "load_after": os.getloadavg(), "machine": f"{platform.machine()}, "
            f"{os.cpu_count()} cores, Python {platform.python_version()}"}
    if args.json:
        print(json.dumps(out, indent=2))
        return
    for key, value in out.items():
        print(f"{key:24} {value}")


if __name__ == "__main__":
    main()
