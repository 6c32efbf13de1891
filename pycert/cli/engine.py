"""``pycert engine replay``: a trace's requests on an engine's prefix cache, one at a time (transformers'
continuous batching, vLLM's own cache manager, or a live OpenAI-compatible server with ``--endpoint``),
its own prefix-cache hits recorded per request and certified (family ``engine``), beside the capacity
and ceiling certificates of the same trace at the same capacity, proved by the same command.

Exit 0 when every certificate holds, 1 when one is rejected (the log then goes to ``--out``'s ``runs/``,
uncertified: an engine count above what any cache of its size can hit is such a rejection), 2 on a
usage or input error (checked before an engine is imported or a server asked; a server's answer that no
cache could give is one too), 3 when the engine cannot allocate its cache or its process is killed, 4
when a server reported no cached-token count on any response (nothing observed).
``--replay CERT`` verifies an engine certificate, runs the engine again on its recorded settings and
compares every request's cached tokens with its log (exit 1 on any difference); it writes nothing.
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from pycert import prove
from pycert.certify.documents import load_certificate
from pycert.certify.inputs import Locator
from pycert.certify.verify import verify_certificate
from pycert.cli import add_backend, add_common, help_of
from pycert.cli.leak_http import http_url
from pycert.core.console import Progress, emit, plural, table
from pycert.core.errors import EXIT_OK, EXIT_REJECTED, InputError, Rejected, Rejection, ResourcesExhausted
from pycert.core.files import atomic_write, certificate_root
from pycert.core.gate import Source, named
from pycert.core.limits import (
    MAX_REPLAY_BLOCK_TOKENS,
    MAX_REPLAY_BLOCKS,
    MAX_REPLAY_CACHE_TOKENS,
    MAX_REPLAY_PROMPT_TOKENS,
    MAX_STRANGER_REPLAY_TOKENS,
    MAX_VLLM_PROMPT_TOKENS,
    MAX_VLLM_REPLAY_TOKENS,
    MAX_TRACE_BYTES,
    in_path,
    int_range,
    named_path,
    out_dir,
    seed,
)
from pycert.data.traces import Trace, read_trace
from pycert.families import producer
from pycert.families.base import Options, Setting, input_path
from pycert.families.engine import names
from pycert.families.engine.beside import Beside, beside
from pycert.families.engine.figures import observed, oversized, requests_of
from pycert.families.engine.produce import log_path
from pycert.leak import replay as replaylog
from pycert.leak.admission import FIRST_ID
from pycert.leak.engines.openai import ReplayEndpoint
from pycert.leak.engines.paged import ENDPOINT, ENGINES, VLLM_PYTHON, engine_key, open_engine

class ReplayResult(BaseModel):
    holds: bool
    engine: str
    model: str
    trace: str
    requests: int
    refs: int
    num_blocks: int
    block_tokens: int
    seed: int
    engine_hits: int
    engine_cached_tokens: int
    """What the engine reports serving from its cache, in its own tokens (block_tokens a block)."""
    evicted_blocks: int
    replay_seconds: float
    replay_cpu_seconds: float
    """CPU time over the replay, of this process (the transformers engine runs in a thread of it) and of the
    engine's child process where it runs in one: steadier than the wall time on a shared machine."""
    beside: Beside | None = None
    rejections: list[Rejection] = []
    log: str
    certificates: list[str] = []
    replay_of: str | None = None


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("engine", help=help_of("engine"))
    esub = p.add_subparsers(dest="action", metavar="ACTION")
    esub.required = True
    r = esub.add_parser(
        "replay", help="replay a trace on a real engine's prefix cache, certify its own hits beside the optimum",
        description="Each trace block becomes --block-tokens seeded token ids; the trace's requests go one at a time, "
                    "in order, to the engine (--engine transformers: transformers' continuous batching, CPU, a small "
                    "random-weight Qwen2-shaped model, the 'leak' extra; --engine vllm: vLLM's own KVCacheManager, no "
                    "model; --endpoint: a live OpenAI-compatible server) with a cache of --num-blocks blocks of "
                    "--block-tokens tokens; the engine's own prefix-cache hits are recorded per request and certified "
                    "beside the capacity certificate of the trace at --num-blocks and its ceiling certificate, all "
                    "proved by this command.")
    r.add_argument("--trace", type=in_path, default=None, metavar="PATH",
                   help="the trace (its lines are requests: Mooncake, Qwen-Bailian or AIPerf JSONL, or prompts as token "
                        "ids, the layout read off its first line); with --replay, where the certificate's trace is")
    r.add_argument("--num-blocks", type=int_range(2, MAX_REPLAY_BLOCKS), default=None, metavar="C",
                   help="blocks the engine's cache holds (the capacity the optimum is certified at); with --endpoint, "
                        "the server's cache in blocks of --block-tokens, as you know it")
    r.add_argument("--block-tokens", type=int_range(4, MAX_REPLAY_BLOCK_TOKENS), default=None, metavar="B",
                   help="tokens each trace block becomes: the engine's page size (at least 4; default: the trace's own "
                        "block size, where it gives one); with --endpoint, a multiple of the server's block size")
    r.add_argument("--engine", choices=ENGINES, default=None,
                   help="whose cache code replays the trace: transformers (default; the 'leak' extra) or vllm (vLLM's "
                        f"own KVCacheManager, no model: the 'vllm' extra, or {VLLM_PYTHON} naming another Python)")
    r.add_argument("--endpoint", default=None, metavar="URL",
                   help="replay through a live OpenAI-compatible server (http://host:port, e.g. a vLLM started with "
                        "--enable-prompt-tokens-details) instead of an engine here, reading each response's "
                        "usage.prompt_tokens_details.cached_tokens")
    r.add_argument("--model", default=None, metavar="NAME",
                   help="with --endpoint: the model the server serves (default: the first /v1/models lists)")
    r.add_argument("--vocab", type=int_range(FIRST_ID + 2, 1 << 24), default=8192, metavar="V",
                   help="with --endpoint: token ids are drawn below V (default 8192, below any model's vocabulary "
                        "and pycert leak serve's)")
    r.add_argument("--seed", type=seed, default=0, help="seed of the block tokens and of the random model (default 0)")
    r.add_argument("--out", type=out_dir, default=None, metavar="DIR",
                   help="certificate directory: the log goes to its inputs/, the certificates beside it")
    r.add_argument("--replay", type=in_path, default=None, metavar="CERT",
                   help="verify an engine certificate, re-run the engine on its recorded settings, compare with its log")
    r.add_argument("--max-tokens", type=int_range(1), default=MAX_STRANGER_REPLAY_TOKENS, metavar="N",
                   help="with --replay of a transformers replay: refuse, before the engine starts, a certificate whose replay sends more than N "
                        "prompt tokens in all, or prompts whose attention (each prompt's tokens squared, summed) costs "
                        f"more than one prompt of N/8 tokens (default {MAX_STRANGER_REPLAY_TOKENS:,}: about 20 s of "
                        "engine here; the certificate is a stranger's, and its replay your machine's time; vLLM's cache manager, which "
                        f"computes nothing, is held to {MAX_VLLM_REPLAY_TOKENS:,} prompt tokens instead)")
    r.add_argument("--input", type=named_path, action="append", default=[], metavar="NAME=PATH",
                   help="with --replay: where an input the certificate names by file name is (default: beside its "
                        "directory)")
    add_common(r)
    add_backend(r)
    r.set_defaults(func=cmd_replay)


def checked_trace(path: Path | Source, num_blocks: int, block_tokens: int | None,
                  engine: str = "transformers") -> tuple[Trace, list[list[int]], int]:
    """The trace, its requests and the tokens a block (``block_tokens``, or the trace's own block size),
    refused before any engine is loaded when ``engine`` (one of :data:`ENGINES`, or ``endpoint``) cannot
    replay it on a cache of ``num_blocks`` blocks within the limits (README: Limits)."""
    on_transformers = engine == "transformers"

    def cache_fits(b: int) -> None:  # transformers allocates its attention mask over the whole cache
        if on_transformers and num_blocks * b > MAX_REPLAY_CACHE_TOKENS:
            raise InputError(f"{num_blocks:,} blocks of {b:,} tokens is a cache of {num_blocks * b:,} tokens; at most "
                             f"{MAX_REPLAY_CACHE_TOKENS:,} (README: Limits)", where="--num-blocks")

    if block_tokens is not None:
        cache_fits(block_tokens)
    source = path if isinstance(path, Source) else named(path)
    source.check("a trace file", MAX_TRACE_BYTES, missing="no such trace file")
    trace = read_trace(source)
    requests = requests_of(trace)
    if block_tokens is None:
        if trace.block_tokens is None or not 4 <= trace.block_tokens <= MAX_REPLAY_BLOCK_TOKENS:
            raise InputError(f"the trace gives {trace.block_tokens or 'no'} tokens a block; give --block-tokens "
                             f"(4 to {MAX_REPLAY_BLOCK_TOKENS:,})", where="--block-tokens")
        block_tokens = trace.block_tokens
        cache_fits(block_tokens)
    if (big := oversized(requests, num_blocks)) is not None:
        raise InputError(f"request {big[0]} (0-based) has {plural(big[1], 'block')}: a cache of {num_blocks:,} cannot hold "
                         f"it beside its partial last block (give --num-blocks {big[1] + 1} or more)",
                         where=f"{path}:{big[0] + 1}")  # a request a line, blank lines only at the end: line = index + 1
    longest_limit = MAX_REPLAY_PROMPT_TOKENS if on_transformers else MAX_VLLM_PROMPT_TOKENS
    if (longest := max(map(len, requests)) * block_tokens + 1) > longest_limit:
        raise InputError(f"its longest request makes a prompt of {longest:,} tokens at {block_tokens} a block; at most "
                         f"{longest_limit:,} (README: Limits)", where=str(path))
    if not on_transformers and (total := trace.n_refs * block_tokens + len(requests)) > MAX_VLLM_REPLAY_TOKENS:
        raise InputError(f"its requests make {total:,} prompt tokens at {block_tokens} a block; a replay sends at most "
                         f"{MAX_VLLM_REPLAY_TOKENS:,} (README: Limits; fewer tokens a block make fewer)", where=str(path))
    return trace, requests, block_tokens


def run_replay(opened: Callable[[], replaylog.PagedEngine], requests: list[list[int]], trace: Trace, num_blocks: int,
               block_tokens: int, seed_: int, progress: Progress) -> tuple[replaylog.ReplayLog, tuple[float, float]]:
    """The replay's log on the engine ``opened`` gives, and its wall and CPU seconds."""
    failed: list[BaseException] = []
    previous = threading.excepthook
    # the engine's own threads: a failure there (out of memory) is said in one line below, not as a traceback
    threading.excepthook = lambda a: failed.append(a.exc_value) if a.exc_value is not None else None
    try:
        return _replayed(opened, requests, trace, num_blocks, block_tokens, seed_, progress)
    except (InputError, MemoryError, RuntimeError) as exc:
        why = failed[0] if failed else exc
        if isinstance(why, MemoryError) or "allocate" in str(why) or "out of memory" in str(why):
            raise ResourcesExhausted(f"the engine ran out of memory: {' '.join(str(why).split())[:200]}",
                                     where="engine") from None
        if isinstance(exc, InputError):
            raise
        raise InputError(f"the engine failed: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}",
                         where="engine") from None
    finally:
        threading.excepthook = previous


def _replayed(opened: Callable[[], replaylog.PagedEngine], requests: list[list[int]], trace: Trace, num_blocks: int,
              block_tokens: int, seed_: int, progress: Progress) -> tuple[replaylog.ReplayLog, tuple[float, float]]:
    engine = opened()
    size = (f"{engine.num_blocks:,} blocks of {engine.page_size} tokens" if engine.page_size else
            "its cache's size not reported")
    progress(f"engine: {engine.name} ({engine.version}); {engine.model}; {size}; {plural(len(requests), 'request')} "
             "one at a time")
    t0, cpu0 = time.monotonic(), time.process_time()
    try:
        header = replaylog.engine_header(engine, seed=seed_, num_blocks=num_blocks, block_tokens=block_tokens,
                                         trace=Path(trace.name).name,
                                         trace_sha256=trace.sha256, requests=len(requests), refs=trace.n_refs)
        log = replaylog.replay(engine, requests, header, progress)
        if isinstance(engine, ReplayEndpoint):
            engine.check_reported()
    finally:
        engine.close()  # the engine's thread would otherwise keep the process alive
    other = getattr(engine, "cpu_seconds", 0.0)  # an engine in a child process (pycert.leak.engines.worker)
    return log, (time.monotonic() - t0, time.process_time() - cpu0 + other)


def _summary(replayed: replaylog.ReplayLog, seconds: tuple[float, float], **fields: object) -> ReplayResult:
    h = replayed.header
    observed_ = observed(replayed)
    return ReplayResult(engine=f"{h.engine} ({h.engine_version})", model=h.model, trace=h.trace, requests=h.requests,
                        refs=h.refs, num_blocks=h.num_blocks, block_tokens=h.block_tokens, seed=h.seed,
                        engine_hits=int(observed_["engine_hits"]),
                        engine_cached_tokens=int(observed_["engine_cached_tokens"]),
                        evicted_blocks=sum(r.evicted_blocks for r in replayed.requests),
                        replay_seconds=round(seconds[0], 1), replay_cpu_seconds=round(seconds[1], 1), **fields)  # type: ignore[arg-type]


def record(args: argparse.Namespace, progress: Progress) -> tuple[ReplayResult, int]:
    for flag, value in (("--trace", args.trace), ("--num-blocks", args.num_blocks), ("--out", args.out)):
        if value is None:
            raise InputError("give --trace, --num-blocks and --out (or --replay CERT)", where=flag)
    if args.endpoint and args.engine:
        raise InputError("--endpoint replays through a server: leave --engine out", where="--engine")
    if args.model and not args.endpoint:
        raise InputError("--model names a server's model: give --endpoint", where="--model")
    url = http_url(args.endpoint, "--endpoint") if args.endpoint else None
    engine = "endpoint" if url else args.engine or "transformers"
    c = args.num_blocks
    trace, requests, b = checked_trace(args.trace, c, args.block_tokens, engine)
    out = args.out.resolve()
    jobs: list[tuple[object, Options]] = [
        (producer("ceiling"), producer("ceiling").options(trace=[args.trace])),
        (producer("capacity"), producer("capacity").options(trace=[args.trace], capacity_blocks=[c], required=True))]
    for made, options in jobs:  # a name clash in --out is refused before the engine runs, not after
        made.check(Setting(out_dir=out, options=options))  # type: ignore[attr-defined]
    if url:
        def opened() -> replaylog.PagedEngine:
            return ReplayEndpoint(url, args.model, vocab=args.vocab)
    else:
        def opened() -> replaylog.PagedEngine:
            return open_engine(engine, c, b, args.seed)
    log, seconds = run_replay(opened, requests, trace, c, b, args.seed, progress)
    data = replaylog.render(log)
    engine_job = (producer("engine"), producer("engine").options(log=data, trace=args.trace))
    res = prove.prove([*jobs, engine_job], backend=args.backend, out_dir=out, progress=progress)  # type: ignore[list-item]
    stem = names(log.header.trace, c, b, args.seed, log.header.engine)
    written = {Path(w).stem: Path(w) for w in res.written}
    rejections = [Rejection(subject=r.certificate, reason="rejected", detail=r.claim) for r in res.rows
                  if r.status != "holds"]
    rejections += [Rejection(subject="prove", reason="rejected", detail=f"{s.name}: {s.detail}")
                   for s in res.stages if s.status == "rejected" and not rejections]
    path = out / log_path(stem)
    if stem not in written:  # not certified: the observation is kept where runs are recorded, out of inputs/
        path = out / "runs" / f"{stem}.jsonl"
        atomic_write(path, data)
    side = None
    if not rejections:
        side = _beside([written[k] for k in written], {trace_name(trace): args.trace})
    result = _summary(log, seconds, holds=not rejections, beside=side, rejections=rejections, log=str(path),
                      certificates=[str(p) for p in written.values()])
    return result, EXIT_OK if result.holds else EXIT_REJECTED


def trace_name(trace: Trace) -> str:
    return Path(trace.name).name


def _beside(paths: list[Path], given: dict[str, Path]) -> Beside:
    """The engine certificate of ``paths`` beside the capacity and ceiling ones, each verified here first."""
    by_family = {}
    for path in paths:
        result = verify_certificate(path, inputs=given)
        if result.unchecked and not result.failures:
            raise ResourcesExhausted(f"could not be verified: {result.unchecked[0]}", where=str(path))
        if (why := result.first_problem()) is not None:
            raise Rejected(Rejection(subject=str(path), reason="does-not-verify", detail=f"does not verify: {why}"))
        cert = load_certificate(path)
        by_family[cert.family] = cert
    return beside(by_family["engine"], by_family.get("capacity"), by_family.get("ceiling"))


def replay(args: argparse.Namespace, progress: Progress) -> tuple[ReplayResult, int]:
    """The engine run again on a certificate's recorded settings, once the certificate verifies offline
    in this run (one that does not is refused, naming why, before any engine starts)."""
    given = dict(args.input)
    if args.trace is not None:  # its trace, where the user says it is
        given |= {Path(i.path).name: args.trace for i in load_certificate(args.replay).inputs if i.role == "trace"}
    checked = verify_certificate(args.replay, inputs=given or None)
    if checked.failures:
        raise Rejected(Rejection(subject=str(args.replay), reason="does-not-verify",
                                 detail=f"does not verify, so it is not replayed: {checked.first_problem()}"))
    if checked.unchecked:
        raise ResourcesExhausted(f"could not be verified, so it is not replayed: {checked.first_problem()}",
                                 where=str(args.replay))
    if not checked.ok:
        raise InputError(f"could not be verified, so it is not replayed: {checked.first_problem()}",
                         where=str(args.replay))
    cert = load_certificate(args.replay)
    if cert.family != "engine":
        raise InputError(f"a {cert.family} certificate: --replay takes an engine certificate", where=str(args.replay))
    where = Locator(root=certificate_root(args.replay.resolve().parent), external=given)
    log_file = input_path(cert.inputs, "log", where)
    recorded = replaylog.read(log_file)
    h = recorded.header
    key = engine_key(h.engine)
    trace, requests, _ = checked_trace(input_path(cert.inputs, "trace", where), h.num_blocks, h.block_tokens, key)
    prompts = [len(r) * h.block_tokens + 1 for r in requests]
    longest = args.max_tokens // 8
    # the transformers engine's time grows with its prompts' attention; vLLM's cache manager computes nothing and
    # is bounded by MAX_VLLM_REPLAY_TOKENS in checked_trace
    if key == "transformers" and ((sent := sum(prompts)) > args.max_tokens
                                  or sum(p * p for p in prompts) > longest * longest):
        what = (f"{sent:,} prompt tokens in all, more than --max-tokens {args.max_tokens:,}" if sent > args.max_tokens
                else f"prompts whose attention costs more than one of {longest:,} tokens (--max-tokens / 8)")
        raise InputError(f"its replay sends {what}: refused before the engine starts (a stranger's certificate, your "
                         "machine's time); give a larger --max-tokens to spend that time on it", where=str(args.replay))
    progress(f"replay of {args.replay}")
    again, seconds = run_replay(lambda: open_engine(key, h.num_blocks, h.block_tokens, h.seed), requests, trace,
                                h.num_blocks, h.block_tokens, h.seed, progress)
    diffs = replaylog.replay_differences(recorded, again)
    return (_summary(again, seconds, holds=not diffs, rejections=diffs, log=str(log_file), replay_of=str(args.replay)),
            EXIT_OK if not diffs else EXIT_REJECTED)


def render(res: ReplayResult) -> str:
    lines = [f"{res.engine}; {res.model}; {res.num_blocks:,} blocks of {res.block_tokens} tokens; seed {res.seed}",
             f"{res.trace}: {plural(res.requests, 'request')}, {plural(res.refs, 'block reference')}, replayed one at a "
             f"time in {res.replay_seconds:.1f} s ({res.replay_cpu_seconds:.1f} s of CPU); "
             + ("a server reports no evictions" if res.engine.startswith(ENDPOINT) else
                f"the engine evicted {plural(res.evicted_blocks, 'cached block')}")]
    s = res.beside
    if s is not None:
        lines += ["", table(["at " + plural(s.capacity_blocks, "block"), "hits", "hit rate", "tokens", "evidence"],
                            s.rows()), ""]
        lines.append(s.said())
    else:
        lines.append(f"the engine served {res.engine_hits:,} references ({res.engine_cached_tokens:,} of its tokens) from its cache")
    lines += [f"  {r.render()}" for r in res.rejections]
    if res.replay_of:
        lines.append(f"{'REPLAY AGREES' if res.holds else 'REPLAY DIFFERS'}: {res.replay_of} (log {res.log})")
    else:
        lines.append(f"{'CERTIFIED' if res.holds else 'NOT CERTIFIED'}: log {res.log}"
                     + "".join(f"\n  {c}" for c in res.certificates))
    return "\n".join(lines)


def cmd_replay(args: argparse.Namespace) -> int:
    progress = Progress(enabled=not args.json, force=True)
    res, code = (replay if args.replay else record)(args, progress)
    emit(args.json, res, lambda: render(res))
    return code
