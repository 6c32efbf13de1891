"""The black-box audit on a live server, and what the salt costs in time to first token, in one run.

Starts ``pycert leak serve`` (the real engine, CPU, the small random model) and ``pycert leak gateway``
in front of it, each in its own process on a free loopback port, then:

1. **The salt's cost**: ``--prompts`` seeded prompts, each sent through three paths in shuffled order,
   the server's cache emptied (``/reset_prefix_cache``) before each path: straight to the server
   without a salt, straight with ``cache_salt`` (what the gateway adds), and through the gateway
   (salted, plus the gateway's hop). Each path sends the prompt twice: the first is a miss, the second
   a hit. The table gives the median time to first token of each (client clock, as the audit measures).
2. **The audit**: ``pycert leak audit`` through the gateway at ``--samples`` (default 250, the audit's
   default), its wall time, and the KS statistics it certified.

    python benchmarks/bench_leak_audit.py [--prompts 100] [--samples 250] [--prefix-samples 50] [--json]

Figures on a shared machine are indicative; the load average is printed beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from pycert.leak.admission import FIRST_ID
from pycert.leak.wire import read_stream, request_body

KEYS = "alice aaaaaaaaaaaaaaaaaaaaaaaa\nbob bbbbbbbbbbbbbbbbbbbbbbbb\n"


def start(argv: list[str], err: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "pycert", *argv, "--port", "0", "--json"], stdout=subprocess.PIPE,
                            stderr=err.open("wb"), env={**os.environ, "PYTHONUNBUFFERED": "1"})
    return proc, json.loads(proc.stdout.readline())["url"]  # type: ignore[union-attr]


def ttft(url: str, prompt: list[int], salt: str | None, key: str | None) -> float:
    body = request_body("pycert-small-seed0", prompt, 2, "cache_salt", salt)
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    req = urllib.request.Request(url + "/v1/completions", data=json.dumps(body).encode(), headers=headers)
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=600) as resp:
        first, _ = read_stream(resp)
    assert first is not None
    return (first - t0) * 1000


def salt_cost(server: str, gateway: str, prompts: int, seed: int) -> dict[str, dict[str, float]]:
    rng = random.Random(seed)
    paths = {"unsalted": (server, None, None), "cache_salt": (server, "a-tenant-salt", None),
             "gateway": (gateway, None, "a" * 24)}
    times: dict[str, dict[str, list[float]]] = {p: {"miss": [], "hit": []} for p in paths}
    for _ in range(prompts):
        prompt = [rng.randrange(FIRST_ID, 8192) for _ in range(rng.randint(544, 784))]
        for name in rng.sample(list(paths), len(paths)):
            url, salt, key = paths[name]
            urllib.request.urlopen(urllib.request.Request(server + "/reset_prefix_cache", data=b"{}"), timeout=600)
            times[name]["miss"].append(ttft(url, prompt, salt, key))
            times[name]["hit"].append(ttft(url, prompt, salt, key))
    return {p: {k: round(statistics.median(v), 2) for k, v in t.items()} for p, t in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=100)
    ap.add_argument("--samples", type=int, default=250)
    ap.add_argument("--prefix-samples", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="pycert-bench-audit-") as tmp:
        keys = Path(tmp) / "keys"
        keys.write_text(KEYS)
        server, url = start(["leak", "serve"], Path(tmp) / "serve.err")
        gateway, gw = start(["leak", "gateway", "--upstream", url, "--keys", str(keys)], Path(tmp) / "gateway.err")
        try:
            load = os.getloadavg()[0]
            t0 = time.perf_counter()
            cost = salt_cost(url, gw, args.prompts, args.seed)
            cost_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            res = subprocess.run([sys.executable, "-m", "pycert", "leak", "audit", "--endpoint", gw, "--keys", str(keys),
                                  "--samples", str(args.samples), "--prefix-samples", str(args.prefix_samples),
                                  "--seed", str(args.seed), "--out", str(Path(tmp) / "certs"), "--json"],
                                 capture_output=True, text=True)
            audit_s = time.perf_counter() - t0
            audit = json.loads(res.stdout)
        finally:
            for proc in (gateway, server):
                proc.send_signal(signal.SIGTERM)
                proc.wait(120)
    out = {"machine": f"{platform.node()} ({os.cpu_count()} cores)", "load_before": round(load, 2),
           "load_after": round(os.getloadavg()[0], 2), "salt_cost_ttft_ms": cost, "salt_cost_s": round(cost_s, 1),
           "audit_exit": res.returncode, "audit_wall_s": round(audit_s, 1), "audit": audit}
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"{out['machine']}; load average {out['load_before']} before, {out['load_after']} after")
    print(f"{'path':12} {'miss TTFT ms':>13} {'hit TTFT ms':>12}   ({args.prompts} prompts, medians, {cost_s:.0f} s)")
    for p, t in cost.items():
        print(f"{p:12} {t['miss']:>13} {t['hit']:>12}")
    if "status" not in audit:
        print(f"audit: exit {res.returncode}: {audit}")
        return
    print(f"audit ({args.samples} samples an arm, {args.prefix_samples} a prefix): exit {res.returncode}, "
          f"{audit['status']}, {audit_s:.0f} s wall")
    for name in ("own_reuse", "cross_tenant_reuse", "fresh"):
        a = audit[name]
        print(f"  {name:20} median {a['ttft_median_ms']} ms, D {a['ks']}, p {a['p_value']}, cached hits {a['cached_hits']}")
    print(f"  KS critical D {audit['ks_critical']:.4f} at alpha {audit['alpha']}, power {audit['power']}, "
          f"smallest prefix detected {audit['smallest_prefix_detected']}")


if __name__ == "__main__":
    main()
