"""``pycert leak run``: reproduce the cross-tenant prefix-cache leak and its closure on a real engine.

Drives the engine through the five arms (:mod:`pycert.leak.observation`), records every request's
cached tokens as the engine reports them, writes the log to ``--out``'s ``inputs/`` and certifies it
(``pycert prove leak``: the ``leak`` family). Exit 0 when the observation shows the leak and its
closure, 1 when it does not (the log then goes to ``runs/``, uncertified), 2 on a usage or input
error. ``--replay CERT`` runs the engine again on the certificate's recorded settings and compares
every request's cached tokens with its log (exit 1 on any difference), after checking the certificate
itself as plain ``pycert verify`` does (a certificate that does not verify is exit 1 before the engine
starts); it writes nothing.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from statistics import median

from pydantic import BaseModel

from pycert import prove
from pycert.certify.documents import load_certificate
from pycert.certify.inputs import Locator
from pycert.certify.verify import verify_certificate
from pycert.cli import add_backend, add_common, help_of, leak_http
from pycert.cli.leak_http import level
from pycert.core.console import Progress, emit, escaped, table
from pycert.core.errors import EXIT_OK, EXIT_REJECTED, InputError, Rejected, Rejection, ResourcesExhausted
from pycert.core.files import atomic_write, certificate_root
from pycert.core.gate import confined, named
from pycert.core.limits import in_path, int_range, out_dir, seed
from pycert.core.resources import default_certificate_dir
from pycert.core.schema import decimal_of
from pycert.families import producer
from pycert.families.base import input_path
from pycert.families.leak import log_figures, log_path
from pycert.leak import log as leaklog
from pycert.leak.admission import Admission
from pycert.leak.engines import Engine, transformers_engine
from pycert.leak.engines.openai import OpenAIEngine
from pycert.leak.observation import ARMS
from pycert.leak.run import Plan, replay_differences, run_arms


class ArmRow(BaseModel):
    arm: str
    meaning: str
    requests: int
    hits: int
    cached_tokens: int
    prime_ttft_ms: float
    probe_ttft_ms: float


class LeakResult(BaseModel):
    holds: bool
    engine: str
    model: str
    device: str
    arms: list[ArmRow]
    residual_rate_upper: str
    """Exact, as a fraction (the certificate's figure); ``bound`` is its decimal."""
    bound: str
    rule_of_three: str
    underpowered: bool
    rejections: list[Rejection]
    log: str
    certificate: str | None = None
    replay_of: str | None = None


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("leak", help=help_of("leak"))
    lsub = p.add_subparsers(dest="action", metavar="ACTION")
    lsub.required = True
    r = lsub.add_parser(
        "run", help="run the five arms on an engine, record every request, certify the observation",
        description="Unsalted cross-tenant, keyed-salt cross-tenant, own reuse under the salt, an attacker who knows "
                    "an unkeyed salt scheme, and the same attacker against the keyed scheme: each on every prompt, "
                    "from an empty cache. Default engine: transformers continuous batching in process with a small "
                    "random-weight Qwen2-shaped model (the 'leak' extra: torch, transformers).")
    r.add_argument("--prompts", type=int_range(1, leaklog.MAX_PROMPTS), default=12, help="prompts per arm (default 12)")
    r.add_argument("--seed", type=seed, default=0, help="seed of the prompts and of the random model (default 0)")
    r.add_argument("--min-tokens", type=int_range(2, 1 << 16), default=544, help="shortest prompt (default 544)")
    r.add_argument("--max-tokens", type=int_range(2, 1 << 16), default=784, help="longest prompt (default 784)")
    r.add_argument("--model", type=in_path, default=None, metavar="DIR",
                   help="a local checkpoint directory (transformers layout) instead of the random model")
    r.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where the in-process engine runs")
    r.add_argument("--page-size", type=int_range(4, 1 << 16), default=256,
                   help="tokens per cache block of the in-process engine (default 256, transformers' default)")
    r.add_argument("--endpoint", default=None, metavar="URL",
                   help="an OpenAI-compatible server (e.g. vLLM) instead of the in-process engine; untested against "
                        "a real one")
    r.add_argument("--served-model", default=None, metavar="NAME", help="the model name the --endpoint serves")
    r.add_argument("--vocab", type=int_range(64, 1 << 24), default=32000,
                   help="with --endpoint: prompt token ids are drawn below this (default 32000)")
    r.add_argument("--salt-field", default="cache_salt", help="with --endpoint: the request's salt field (vLLM: cache_salt)")
    r.add_argument("--secret-file", type=in_path, default=None, metavar="PATH",
                   help="the admission layer's server secret (default: 32 fresh random bytes, never written)")
    r.add_argument("--confidence", type=level, default="0.95", help="confidence of the bound (default 0.95)")
    r.add_argument("--underpowered-above", type=level, default="0.05",
                   help="call the run underpowered when the bound is above this (default 0.05)")
    r.add_argument("--out", type=out_dir, default=None,
                   help="certificate directory (default: as pycert prove); the log goes to its inputs/")
    r.add_argument("--replay", type=in_path, default=None, metavar="CERT",
                   help="re-run the engine on a leak certificate's recorded settings and compare with its log")
    add_common(r)
    add_backend(r)
    r.set_defaults(func=cmd_run)
    leak_http.register(lsub)


def open_engine(args: argparse.Namespace, model: Path | None, seed_: int) -> Engine:
    if args.endpoint:
        if not args.served_model:
            raise InputError("--endpoint needs --served-model NAME (the model the server serves)", where="--served-model")
        return OpenAIEngine(args.endpoint, args.served_model, vocab=args.vocab, salt_field=args.salt_field)
    if model is not None and not model.is_dir():
        raise InputError("not a directory: --model names a local checkpoint directory", where=str(model))
    return transformers_engine("pycert leak run", model_dir=model, device=args.device, seed=seed_,
                               page_size=args.page_size)


def _secret(args: argparse.Namespace) -> bytes:
    return named(args.secret_file).read("a secret file", 1 << 20) if args.secret_file else os.urandom(32)


def summarize(log: leaklog.Log, path: Path, certificate: str | None = None, replay_of: str | None = None,
              extra: list[Rejection] | None = None) -> LeakResult:
    figures, rejections = log_figures(log)
    rows = []
    for arm in ARMS:
        mine = [r for r in log.requests if r.arm == arm.name]
        ttft = {role: [r.ttft_s * 1000 for r in mine if r.role == role] for role in ("prime", "probe")}
        rows.append(ArmRow(arm=arm.name, meaning=arm.meaning, requests=int(figures.get(f"{arm.key}_requests", 0)),
                           hits=int(figures.get(f"{arm.key}_hits", 0)),
                           cached_tokens=int(figures.get(f"{arm.key}_cached_tokens", 0)),
                           prime_ttft_ms=round(median(ttft["prime"]), 1) if ttft["prime"] else 0.0,
                           probe_ttft_ms=round(median(ttft["probe"]), 1) if ttft["probe"] else 0.0))
    rejections = [*(extra or []), *rejections]
    h = log.header
    return LeakResult(holds=not rejections, engine=f"{h.engine} ({h.engine_version})", model=h.model, device=h.device,
                      arms=rows, residual_rate_upper=str(figures.get("residual_rate_upper", "")),
                      bound=decimal_of(figures["residual_rate_upper"]) if figures else "",
                      rule_of_three=str(figures.get("rule_of_three", "")), underpowered=bool(figures.get("underpowered")),
                      rejections=rejections, log=str(path), certificate=certificate, replay_of=replay_of)


def render(res: LeakResult) -> str:
    arms = table(["arm", "prompts", "served from cache", "cached tokens", "TTFT prime/probe (ms, median)", "meaning"],
                 [(a.arm, a.requests, a.hits, a.cached_tokens, f"{a.prime_ttft_ms:.1f} / {a.probe_ttft_ms:.1f}", a.meaning)
                  for a in res.arms])
    bound = res.bound
    lines = [f"{res.engine}; {res.model}; {res.device}", "", arms, "",
             f"residual cross-tenant rate under the keyed salt: exact Clopper-Pearson upper bound {bound}"
             f"{' (underpowered)' if res.underpowered else ''}; rule of three {res.rule_of_three} (not the bound)"]
    lines += [f"  {escaped(r.render())}" for r in res.rejections]
    if res.replay_of:
        verdict = "REPLAY AGREES" if res.holds else "REPLAY DIFFERS"
        lines.append(f"{verdict}: {escaped(res.replay_of)} (log {escaped(res.log)})")
    else:
        lines.append(f"{'LEAK CLOSED' if res.holds else 'NOT SHOWN'}: log {escaped(res.log)}"
                     + (f", certificate {escaped(res.certificate)}" if res.certificate else ", no certificate"))
    return "\n".join(lines)


def _run_on(engine: Engine, plan: Plan, secret: bytes, progress: Progress) -> leaklog.Log:
    try:
        return run_arms(engine, plan, Admission(secret), progress)
    finally:
        engine.close()


def record(args: argparse.Namespace, progress: Progress) -> tuple[LeakResult, int]:
    if args.min_tokens > args.max_tokens:
        raise InputError(f"--min-tokens {args.min_tokens} exceeds --max-tokens {args.max_tokens}", where="--min-tokens")
    plan = Plan(prompts=args.prompts, seed=args.seed, min_tokens=args.min_tokens, max_tokens=args.max_tokens,
                confidence=args.confidence, underpowered_above=args.underpowered_above)
    secret = _secret(args)
    engine = open_engine(args, args.model, args.seed)
    progress(f"engine: {engine.name} ({engine.version}); {engine.model}; {engine.device}")
    log = _run_on(engine, plan, secret, progress)
    out = (args.out or default_certificate_dir()).resolve()
    stem = f"leak-{'endpoint' if args.endpoint else 'transformers'}-{log.header.device}-k{plan.prompts}-seed{plan.seed}"
    path = confined(out, log_path(out, stem))  # never into a link a received --out holds
    atomic_write(path, leaklog.render(log))
    res = prove.prove([(producer("leak"), producer("leak").options())], backend=args.backend, out_dir=out,
                      progress=progress)
    written = next((w for w in res.written if Path(w).name == f"{stem}.json"), None)
    if written is None:  # not certified: keep the observation where runs are recorded, out of inputs/
        kept = confined(out, out / "runs" / path.name)
        kept.parent.mkdir(parents=True, exist_ok=True)
        path.replace(kept)
        path = kept
    extra = []
    if written is None and not log_figures(log)[1]:  # the observation holds, but a stage of prove failed
        failed = [f"{s.name}: {s.detail}" for s in res.stages if s.status == "rejected"]
        extra = [Rejection(subject="certificate", reason="not-written", detail="; ".join(failed) or "none written")]
    result = summarize(log, path, certificate=written, extra=extra)
    return result, EXIT_OK if result.holds and written else EXIT_REJECTED


def replay(args: argparse.Namespace, progress: Progress) -> tuple[LeakResult, int]:
    """Verify the certificate offline first (its log's sha256, parameters, figures, claim: everything plain
    ``pycert verify`` checks), and run the engine only for one that verifies (one that does not is refused,
    naming why, before any engine starts)."""
    cert = load_certificate(args.replay)
    if cert.family != "leak":
        raise InputError(f"a {cert.family} certificate: --replay takes a leak certificate", where=str(args.replay))
    checked = verify_certificate(args.replay)
    if checked.unchecked and not checked.failures:
        raise ResourcesExhausted(f"could not be verified, so it was not replayed: {checked.unchecked[0]}",
                                 where=str(args.replay))
    if checked.missing or checked.errors:
        raise InputError(f"cannot be verified, so it was not replayed: {(checked.missing + checked.errors)[0]}",
                         where=str(args.replay))
    if not checked.ok:
        first = checked.failures[0]
        raise Rejected(Rejection(subject=str(args.replay), reason="not-verified", detail=f"does not verify, so it was "
                                 f"not replayed: {first.render()}", expected=first.expected, found=first.found))
    progress(f"{args.replay}: verifies offline ({', '.join(checked.checked)})")
    path = input_path(cert.inputs, "log", Locator(root=certificate_root(args.replay.resolve().parent)))
    recorded = leaklog.read(path)
    h = recorded.header
    plan = Plan(prompts=h.prompts, seed=h.seed, min_tokens=h.min_tokens, max_tokens=h.max_tokens,
                confidence=h.confidence, underpowered_above=h.underpowered_above)
    args.device = h.device if h.device in ("cpu", "cuda") else args.device
    if h.page_size:
        args.page_size = h.page_size
    engine = open_engine(args, args.model, h.seed)
    progress(f"replay of {args.replay}: {engine.name} ({engine.version}); {engine.model}; {engine.device}")
    again = _run_on(engine, plan, _secret(args), progress)
    diffs = replay_differences(recorded, again)
    return summarize(again, path, replay_of=str(args.replay), extra=diffs), EXIT_OK if not diffs else EXIT_REJECTED


def cmd_run(args: argparse.Namespace) -> int:
    progress = Progress(enabled=not args.json, force=True)
    res, code = (replay if args.replay else record)(args, progress)
    emit(args.json, res, lambda: render(res))
    return code
