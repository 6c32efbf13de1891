"""The cost of isolation: prompt tokens per second through the engine's shared prefix cache, with and
without the admission layer (a keyed per-tenant salt), on the same engine and the same requests,
side by side in one run.

The workload is the one the salt makes expensive: ``--tenants`` tenants each ask about the same
``--documents`` shared documents (``--doc-tokens`` tokens each, seeded) with a short question of
their own (``--question-tokens``), every tenant every document, in ``--rounds`` rounds, each round
submitted at once (the engine batches it as it likes). Without the salt a document's blocks are
computed once and shared by every tenant; with it each tenant computes its own copy once and reuses
it. The two configurations alternate on one engine (``--repeats`` times each, the cache emptied
before each), and the table gives the median of each and their ratio, in prompt tokens per second of
wall time and per second of the process's CPU time (the engine runs in a thread of this process): on
a machine shared with other jobs the second is the steadier of the two.

    python benchmarks/bench_leak_isolation.py [--json] [--device cpu|cuda] [--model DIR | --layers L --hidden H]

The published figure to compare with: 0.874x of the engine's native prefix-cache throughput (vLLM on
a GPU serving a 7B model). This runs transformers' continuous batching with the small random-weight
model of ``pycert leak run`` unless ``--model`` says otherwise; ``--layers``/``--hidden`` save a larger
random Qwen2-shaped checkpoint to a temporary directory first and load it like ``--model``, so that
prefill compute, which the cache saves, weighs more against the engine's per-step overhead.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import tempfile
import time
from pathlib import Path

from transformers import Qwen2Config, Qwen2ForCausalLM

from pycert.leak.admission import Admission, EngineRequest, TenantRequest
from pycert.leak.engines.transformers import SMALL, TransformersEngine


def random_checkpoint(layers: int, hidden: int, seed: int, where: Path) -> Path:
    """A random-weight Qwen2-shaped checkpoint of the given size, saved where ``--model`` can load it."""
    import torch

    torch.manual_seed(seed)
    heads = max(2, hidden // 64)
    config = Qwen2Config(**{**SMALL, "num_hidden_layers": layers, "hidden_size": hidden,
                            "intermediate_size": int(hidden * 2.75), "num_attention_heads": heads,
                            "num_key_value_heads": max(1, heads // 2)})
    Qwen2ForCausalLM(config).save_pretrained(where)
    return where


def workload(args: argparse.Namespace, vocab: int) -> list[list[tuple[str, list[int]]]]:
    """Rounds of (tenant, prompt): every tenant asks about every document once a round."""
    rng = random.Random(args.seed)
    docs = [[rng.randrange(16, vocab) for _ in range(args.doc_tokens)] for _ in range(args.documents)]
    tenants = [f"tenant-{t}" for t in range(args.tenants)]
    rounds = []
    for _ in range(args.rounds):
        batch = [(t, d + [rng.randrange(16, vocab) for _ in range(args.question_tokens)]) for t in tenants for d in docs]
        rng.shuffle(batch)
        rounds.append(batch)
    return rounds


def measure(engine: TransformersEngine, rounds: list[list[tuple[str, list[int]]]], admission: Admission | None) -> dict:
    engine.empty_cache()
    prompt_tokens = cached = 0
    ttft = []
    t0, c0 = time.perf_counter(), time.process_time()
    for batch in rounds:
        reqs = [admission.admit(TenantRequest(t, p)) if admission else EngineRequest(tuple(p), None) for t, p in batch]
        for (_, p), served in zip(batch, engine.serve_many(reqs)):
            prompt_tokens += len(p)
            cached += served.cached_tokens
            ttft.append(served.ttft_s)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"wall_s": wall, "cpu_s": cpu, "prompt_tokens": prompt_tokens, "tokens_per_s": prompt_tokens / wall,
            "tokens_per_cpu_s": prompt_tokens / cpu,
            "cached_tokens": cached, "median_ttft_ms": 1000 * statistics.median(ttft)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tenants", type=int, default=4)
    ap.add_argument("--documents", type=int, default=6)
    ap.add_argument("--doc-tokens", type=int, default=640)
    ap.add_argument("--question-tokens", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--model", type=Path, default=None)
    ap.add_argument("--layers", type=int, default=None, help="a random model of this many layers (with --hidden)")
    ap.add_argument("--hidden", type=int, default=None)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    blocks = args.tenants * args.documents * ((args.doc_tokens + args.question_tokens + 8) // 256 + 2) + 16
    scratch = tempfile.TemporaryDirectory(prefix="pycert-bench-model-")
    model = args.model
    if args.layers or args.hidden:
        model = random_checkpoint(args.layers or SMALL["num_hidden_layers"], args.hidden or SMALL["hidden_size"],
                                  args.seed, Path(scratch.name))
    engine = TransformersEngine(model_dir=model, device=args.device, seed=args.seed, num_blocks=blocks)
    try:
        rounds = workload(args, engine.vocab)
        measure(engine, rounds[:1], None)  # warm-up: first-call costs of the engine, not of either configuration
        runs: dict[str, list[dict]] = {"native": [], "isolated": []}
        admission = Admission(os.urandom(32))
        for _ in range(args.repeats):
            runs["native"].append(measure(engine, rounds, None))
            runs["isolated"].append(measure(engine, rounds, admission))
    finally:
        engine.close()
        scratch.cleanup()
    med = {k: statistics.median(r["tokens_per_s"] for r in v) for k, v in runs.items()}
    med_cpu = {k: statistics.median(r["tokens_per_cpu_s"] for r in v) for k, v in runs.items()}
    pairs = [i["tokens_per_s"] / n["tokens_per_s"] for n, i in zip(runs["native"], runs["isolated"])]
    result = {"engine": f"{engine.name} ({engine.version})", "model": engine.model, "device": args.device,
              "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}",
              "workload": {k: getattr(args, k) for k in ("tenants", "documents", "doc_tokens", "question_tokens",
                                                         "rounds", "repeats", "seed")},
              "runs": runs, "median_tokens_per_s": med, "ratio": med["isolated"] / med["native"],
              "pair_ratios": pairs, "median_tokens_per_cpu_s": med_cpu,
              "cpu_ratio": med_cpu["isolated"] / med_cpu["native"], "load_average": os.getloadavg()}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['engine']}; {result['model']}; {args.device}; {result['machine']}")
    print("| configuration | prompt tokens | cached tokens | wall s (median run) | tokens/s (median) | "
          "tokens per CPU-s (median) | median TTFT ms |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for k, v in runs.items():
        mid = sorted(v, key=lambda r: r["tokens_per_s"])[len(v) // 2]
        print(f"| {k} | {mid['prompt_tokens']} | {mid['cached_tokens']} | {mid['wall_s']:.2f} | {med[k]:.0f} | "
              f"{med_cpu[k]:.0f} | {mid['median_ttft_ms']:.1f} |")
    print(f"isolated / native in tokens per CPU-second: {result['cpu_ratio']:.3f}x; "
          f"load average at the end {result['load_average'][0]:.1f}")
    print(f"isolated / native: {result['ratio']:.3f}x of the medians; per alternating pair "
          + ", ".join(f"{r:.3f}" for r in pairs) + " (runs: "
          + ", ".join(f"{r['tokens_per_s']:.0f}" for r in runs["native"]) + " native; "
          + ", ".join(f"{r['tokens_per_s']:.0f}" for r in runs["isolated"]) + " isolated)")


if __name__ == "__main__":
    main()
