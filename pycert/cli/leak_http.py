"""``pycert leak serve``, ``pycert leak gateway`` and ``pycert leak audit``: the engine over HTTP, the
admission layer in front of any OpenAI-compatible server, and a black-box audit of a live endpoint.

serve and gateway run until Ctrl-C (exit 130) or SIGTERM (143); each prints one line when it listens
(``--json``: one JSON object with ``url``), so a script can start it with ``--port 0`` and read the port.
audit exits 0 when no cross-tenant reuse was detected, 1 when it was, 4 when it could not check (the
server down, no timing signal, a failed control), 2 on a usage or input error.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import urllib.parse
from fractions import Fraction
from pathlib import Path

from pydantic import BaseModel

from pycert import prove
from pycert.cli import add_backend, add_common
from pycert.core.console import Progress, emit
from pycert.core.errors import EXIT_NOT_CHECKED, EXIT_OK, EXIT_REJECTED, InputError, UsageError
from pycert.core.extras import install_hint
from pycert.core.files import atomic_write
from pycert.core.gate import named
from pycert.core.limits import MAX_KEYS_BYTES, in_path, int_list, int_range, out_dir, seed
from pycert.families import producer
from pycert.families.leak_audit import log_figures
from pycert.leak import audit, audit_figures
from pycert.leak import log as leaklog
from pycert.leak.admission import Admission
from pycert.leak.audit_plan import MAX_SAMPLES, MAX_TOKENS, AuditHeader
from pycert.leak.gateway import Gateway, read_keys
from pycert.leak.httpd import Server
from pycert.leak.serve import App


def register(lsub: argparse._SubParsersAction) -> None:
    s = lsub.add_parser("serve", help="serve the in-process engine over HTTP with vLLM's OpenAI-compatible fields",
                        description="transformers continuous batching (CPU, the small random-weight model unless "
                                    "--model) on 127.0.0.1: /v1/models, streamed /v1/completions of token ids with "
                                    "cache_salt and usage.prompt_tokens_details.cached_tokens, /reset_prefix_cache.")
    s.add_argument("--port", type=int_range(0, 65535), default=8000, help="port on 127.0.0.1 (0: a free one; default 8000)")
    s.add_argument("--seed", type=seed, default=0, help="seed of the random model (default 0)")
    s.add_argument("--model", type=in_path, default=None, metavar="DIR",
                   help="a local checkpoint directory (transformers layout) instead of the random model")
    s.add_argument("--served-model-name", default=None, metavar="NAME",
                   help="the model id clients send (default pycert-small-seed<SEED>, or the checkpoint's name)")
    s.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    s.add_argument("--page-size", type=int_range(4, 1 << 16), default=256, help="tokens per cache block (default 256)")
    s.add_argument("--num-blocks", type=int_range(4, 1 << 20), default=32, help="cache blocks (default 32)")
    add_common(s)
    s.set_defaults(func=cmd_serve)

    g = lsub.add_parser("gateway", help="bind each client key to its tenant and salt its requests to an upstream",
                        description="Authorization: Bearer KEY -> tenant (keys file: one 'TENANT KEY' a line); 401 "
                                    "without a known key, nothing forwarded; every forwarded completion carries the "
                                    "tenant's keyed salt HMAC-SHA256(secret, tenant).")
    g.add_argument("--upstream", required=True, metavar="URL", help="the OpenAI-compatible server (http://host:port)")
    g.add_argument("--port", type=int_range(0, 65535), default=8001, help="port on 127.0.0.1 (0: a free one)")
    g.add_argument("--keys", type=in_path, required=True, metavar="FILE", help="one 'TENANT KEY' per line")
    g.add_argument("--secret-file", type=in_path, default=None, metavar="PATH",
                   help="the server secret the salts are keyed with (default: 32 fresh random bytes, never written)")
    g.add_argument("--salt-in", choices=("field", "tokens"), default="field",
                   help="field: the upstream's salt field (vLLM's cache_salt); tokens: prepended token ids, for an "
                        "upstream without one")
    g.add_argument("--salt-field", default="cache_salt", help="the upstream's salt field (default cache_salt)")
    g.add_argument("--vocab", type=int_range(64, 1 << 24), default=None,
                   help="with --salt-in tokens: salt token ids are drawn below this")
    add_common(g)
    g.set_defaults(func=cmd_gateway)

    a = lsub.add_parser("audit", help="black-box audit of a live endpoint for cross-tenant prefix-cache reuse",
                        description="Own repeats, cross-tenant repeats, fresh prompts and shared prefixes, shuffled; "
                                    "an exact two-sample Kolmogorov-Smirnov test on time to first token against the "
                                    "fresh arm, the server's cached-token counts where it reports them; an observed "
                                    "certificate of what it found.")
    a.add_argument("--endpoint", required=True, metavar="URL", help="the server or gateway (http://host:port)")
    a.add_argument("--keys", type=in_path, required=True, metavar="FILE",
                   help="one 'TENANT KEY' per line; the first two tenants are A and B")
    a.add_argument("--samples", type=int_range(2, MAX_SAMPLES), default=250,
                   help="units per arm of own, cross and fresh (default 250, as Gu et al.)")
    a.add_argument("--prefix-samples", type=int_range(0, MAX_SAMPLES), default=50,
                   help="units per shared-prefix length (default 50; 0: no prefix arms)")
    a.add_argument("--prefixes", type=int_list(1, MAX_TOKENS), default=[16, 64, 256, 512],
                   help="shared prefix lengths in tokens (default 16,64,256,512)")
    a.add_argument("--seed", type=int_range(0, (1 << 62)), default=0, help="seed of the prompts and the order")
    a.add_argument("--min-tokens", type=int_range(2, MAX_TOKENS), default=544, help="shortest prompt (default 544)")
    a.add_argument("--max-tokens", type=int_range(2, MAX_TOKENS), default=784, help="longest prompt (default 784)")
    a.add_argument("--vocab", type=int_range(64, 1 << 24), default=8192,
                   help="prompt token ids are drawn below this (default 8192)")
    a.add_argument("--alpha", type=level, default="0.01", help="level of the KS tests (default 0.01)")
    a.add_argument("--confidence", type=level, default="0.95", help="confidence of the counter's bound (default 0.95)")
    a.add_argument("--power-sims", type=int_range(1, 100_000), default=1000, help="simulated tests for the power")
    a.add_argument("--model", default=None, metavar="NAME", help="the model id to send (default: /v1/models' first)")
    a.add_argument("--out", type=out_dir, required=True, help="certificate directory: the log goes to its inputs/")
    add_common(a)
    add_backend(a)
    a.set_defaults(func=cmd_audit)


def level(text: str) -> str:
    """A level as a log writes it: ``0.`` and 1 to 6 digits, not all zero."""
    head, dot, tail = text.partition(".")
    if not (head == "0" and dot and 1 <= len(tail) <= 6 and tail.isdigit() and int(tail) > 0):
        raise argparse.ArgumentTypeError(f"expected a decimal strictly between 0 and 1 with at most 6 places "
                                         f"(like 0.95), got {text!r}")
    return text


def http_url(text: str, flag: str) -> str:
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"expected http://HOST:PORT, got {text!r}", where=flag)
    return text.rstrip("/")


def _listen(server: Server, as_json: bool, what: dict) -> int:
    """Announce, then serve until Ctrl-C or SIGTERM (the CLI's handlers turn them into 130 and 143)."""
    print(json.dumps({"url": server.url, **what}) if as_json else f"listening on {server.url} ({what})", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    progress = Progress(enabled=not args.json)
    if args.model is not None and not args.model.is_dir():
        raise InputError("not a directory: --model names a local checkpoint directory", where=str(args.model))
    try:
        # imported here: torch and transformers take 8-10 s to import, which --help must not pay
        from pycert.leak.engines.transformers import TransformersEngine
    except ImportError as exc:
        raise InputError(f"the engine needs torch and transformers ({exc.name} is missing): {install_hint('leak')}",
                         where="pycert leak serve") from None
    name = args.served_model_name or (args.model.name if args.model else f"pycert-small-seed{args.seed}")
    server = Server(args.port, {}, log=progress)  # the port first: a taken one is refused before the engine loads
    try:
        engine = TransformersEngine(model_dir=args.model, device=args.device, seed=args.seed,
                                    page_size=args.page_size, num_blocks=args.num_blocks)
    except BaseException:
        server.server_close()
        raise
    try:
        server.routes = App(engine, name).routes()
        return _listen(server, args.json, {"model": name, "engine": f"{engine.name} ({engine.version})"})
    finally:
        engine.close()


def cmd_gateway(args: argparse.Namespace) -> int:
    upstream = http_url(args.upstream, "--upstream")
    keys = read_keys(args.keys)
    secret = named(args.secret_file).read("a secret file", MAX_KEYS_BYTES) if args.secret_file else os.urandom(32)
    gateway = Gateway(upstream, keys, Admission(secret), salt_in=args.salt_in, salt_field=args.salt_field,
                      vocab=args.vocab)
    server = Server(args.port, gateway.routes(), log=Progress(enabled=not args.json))
    return _listen(server, args.json, {"upstream": upstream, "tenants": len(keys.tenants), "salt_in": args.salt_in})


class ArmResult(BaseModel):
    detected: bool | None
    """Told apart from fresh prompts (None: the audit could not check)."""
    samples: int
    ks: float | None = None
    p_value: float | None = None
    cached_hits: int
    ttft_median_ms: float


class AuditResult(BaseModel):
    status: str
    cross_tenant_reuse: ArmResult
    own_reuse: ArmResult
    fresh: ArmResult
    prefixes: dict[str, ArmResult]
    smallest_prefix_detected: int | None
    alpha: str
    ks_critical: float
    power: float
    counter_reported: bool
    cross_rate_upper: float | None
    not_checked: list[str]
    wall_s: float
    log: str
    certificate: str | None = None


def _arm(figs: dict[str, Fraction], medians: dict[str, float], arm: str, detected: bool | None) -> ArmResult:
    k = arm.replace("-", "_")
    return ArmResult(detected=detected, samples=int(figs[f"{k}_samples"]), cached_hits=int(figs[f"{k}_cached_hits"]),
                     ks=float(figs[f"{k}_ks"]) if f"{k}_ks" in figs else None,
                     p_value=float(figs[f"{k}_p_value"]) if f"{k}_p_value" in figs else None,
                     ttft_median_ms=medians[arm])


def summarize(log: audit_figures.AuditLog, figs: dict[str, Fraction], why: list[str], wall: float, path: Path,
              cert: str | None) -> AuditResult:
    checked = not why
    medians = audit_figures.ttft_medians_ms(log)
    told = {arm: figs[f"{arm.replace('-', '_')}_p_value"] <= figs["alpha"] or bool(
        figs["counter_reported"] and figs[f"{arm.replace('-', '_')}_cached_hits"])
        for arm in audit_figures.arms(log.header) if arm != "fresh"}
    status = ("not checked" if not checked else
              "cross-tenant reuse DETECTED" if figs["cross_detected"] else "no cross-tenant reuse detected")
    return AuditResult(
        status=status, cross_tenant_reuse=_arm(figs, medians, "cross", bool(figs["cross_detected"]) if checked else None),
        own_reuse=_arm(figs, medians, "own", told["own"]), fresh=_arm(figs, medians, "fresh", None),
        prefixes={arm.removeprefix("prefix-"): _arm(figs, medians, arm, told[arm] if checked else None)
                  for arm in told if arm.startswith("prefix-")},
        smallest_prefix_detected=int(figs["smallest_prefix_detected"]) or None if checked else None,
        alpha=log.header.alpha, ks_critical=float(figs["ks_critical"]), power=float(figs["power"]),
        counter_reported=bool(figs["counter_reported"]),
        cross_rate_upper=float(figs["cross_rate_upper"]) if figs["counter_reported"] else None,
        not_checked=why, wall_s=round(wall, 1), log=str(path), certificate=cert)


def render(res: AuditResult) -> str:
    rows = [("own (A repeats A)", res.own_reuse), ("cross (B repeats A)", res.cross_tenant_reuse),
            ("fresh (B, new)", res.fresh), *((f"prefix {k} tokens", v) for k, v in res.prefixes.items())]
    lines = [f"{'arm':22} {'samples':>7} {'TTFT median ms':>14} {'KS D':>7} {'p':>9} {'cached hits':>11}  told apart"]
    for name, r in rows:
        lines.append(f"{name:22} {r.samples:>7} {r.ttft_median_ms:>14.1f} {'' if r.ks is None else f'{r.ks:.4f}':>7} "
                     f"{'' if r.p_value is None else f'{r.p_value:.6f}':>9} "
                     f"{r.cached_hits if res.counter_reported else '-':>11}  {'' if r.detected is None else r.detected}")
    lines.append(f"alpha {res.alpha}; KS critical D {res.ks_critical:.4f}; power {res.power:.3f} against the own-repeat "
                 f"shift; smallest shared prefix detected: {res.smallest_prefix_detected or 'none'}; {res.wall_s} s")
    lines += [f"  not checked: {w}" for w in res.not_checked]
    lines.append(f"{res.status.upper()}: log {res.log}" + (f", certificate {res.certificate}" if res.certificate else ""))
    return "\n".join(lines)


def _stem(h: AuditHeader) -> str:
    slug = re.sub(r"[^a-z0-9.-]+", "-", h.model.lower()).strip("-.")[:60] or "model"
    return f"audit-{slug}-s{h.samples}-seed{h.seed}"


def cmd_audit(args: argparse.Namespace) -> int:
    progress = Progress(enabled=not args.json, force=True)
    endpoint_url = http_url(args.endpoint, "--endpoint")
    if args.min_tokens > args.max_tokens:
        raise InputError(f"--min-tokens {args.min_tokens} exceeds --max-tokens {args.max_tokens}", where="--min-tokens")
    keys = read_keys(args.keys)
    if len(keys.tenants) < 2:
        raise InputError("an audit needs two tenants (A primes, B probes)", where=str(args.keys))
    tenants = (keys.tenants[0], keys.tenants[1])
    endpoint = audit.Endpoint(endpoint_url, keys)
    t0 = time.perf_counter()
    model = args.model or endpoint.model(tenants[0])
    try:
        header = AuditHeader(model=model, server=endpoint.server(tenants[0]), tenants=tenants, seed=args.seed,
                             samples=args.samples, prefix_samples=args.prefix_samples,
                             prefixes=tuple(sorted(set(args.prefixes))) if args.prefix_samples else (),
                             min_tokens=args.min_tokens, max_tokens=args.max_tokens, vocab=args.vocab, alpha=args.alpha,
                             confidence=args.confidence, power_sims=args.power_sims)
    except ValueError as exc:
        raise InputError(" ".join(str(exc).split())[:300], where="--prefixes") from None
    progress(f"auditing {endpoint_url} ({model}; {header.server}) as {tenants[0]} and {tenants[1]}")
    log = audit.run(endpoint, header, progress)
    figs, rejections = log_figures(log)
    why = [r.detail for r in rejections]
    out = args.out.resolve()
    stem = _stem(header)
    cert = None
    if why:  # nothing to certify: the log is kept where runs are recorded, out of inputs/
        path = out / "runs" / f"{stem}.jsonl"
        atomic_write(path, leaklog.render_lines(log.header, log.requests))
    else:
        path = out / "inputs" / f"{stem}.jsonl"
        atomic_write(path, leaklog.render_lines(log.header, log.requests))
        res = prove.prove([(producer("leak-audit"), producer("leak-audit").options())], backend=args.backend,
                          out_dir=out, progress=progress)
        cert = next((w for w in res.written if Path(w).name == f"{stem}.json"), None)
        if cert is None:
            failed = "; ".join(f"{s.name}: {s.detail}" for s in res.stages if s.status == "rejected")
            raise InputError(f"the audit ran but its certificate was not written ({failed or 'none written'})",
                             where=str(out))
    result = summarize(log, figs, why, time.perf_counter() - t0, path, cert)
    emit(args.json, result, lambda: render(result))
    sys.stdout.flush()
    return EXIT_NOT_CHECKED if why else EXIT_REJECTED if figs["cross_detected"] else EXIT_OK
