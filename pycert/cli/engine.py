"""``pycert engine replay``: a trace's requests on transformers' continuous batching, one at a time, its
own prefix-cache hits recorded per request and certified (family ``engine``), beside the capacity and
ceiling certificates of the same trace at the same capacity, proved by the same command.

Exit 0 when every certificate holds, 1 when one is rejected (the log then goes to ``--out``'s ``runs/``,
uncertified: an engine count above what any cache of its size can hit is such a rejection), 2 on a
usage or input error (checked before torch is imported), 3 when the engine cannot allocate its cache.
``--replay CERT`` verifies an engine certificate, runs the engine again on its recorded settings and
compares every request's cached tokens with its log (exit 1 on any difference); it writes nothing.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from pydantic import BaseModel

from pycert import prove
from pycert.certify.documents import load_certificate
from pycert.certify.inputs import Locator
from pycert.certify.verify import verify_certificate
from pycert.cli import add_backend, add_common, help_of
from pycert.core.console import Progress, emit, plural, table
from pycert.core.errors import EXIT_OK, EXIT_REJECTED, InputError, Rejected, Rejection
from pycert.core.files import atomic_write, certificate_root
from pycert.core.gate import Source, named
from pycert.core.limits import (
    MAX_REPLAY_BLOCK_TOKENS,
    MAX_REPLAY_CACHE_TOKENS,
    MAX_REPLAY_PROMPT_TOKENS,
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
from pycert.families.engine.figures import oversized, requests_of
from pycert.families.engine.produce import log_path
from pycert.leak import replay as replaylog
from pycert.leak.engines.paged import ENGINES, engine_key, open_engine

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
    """This process's CPU time over the replay (the engine runs in a thread of it): steadier than the wall
    time on a shared machine."""
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
                    "in order, to transformers' continuous batching (CPU, a small random-weight Qwen2-shaped model; the "
                    "'leak' extra) with a cache of --num-blocks blocks of --block-tokens tokens; the engine's own "
                    "prefix-cache hits are recorded per request and certified beside the capacity certificate of the "
                    "trace at --num-blocks and its ceiling certificate, all proved by this command.")
    r.add_argument("--trace", type=in_path, default=None, metavar="PATH",
                   help="the trace (its lines are requests: Mooncake, Qwen-Bailian or AIPerf JSONL, or prompts as token "
                        "ids, the layout read off its first line); with --replay, where the certificate's trace is")
    r.add_argument("--num-blocks", type=int_range(2, MAX_REPLAY_CACHE_TOKENS // 4), default=None, metavar="C",
                   help="blocks the engine's cache holds (the capacity the optimum is certified at)")
    r.add_argument("--block-tokens", type=int_range(4, MAX_REPLAY_BLOCK_TOKENS), default=None, metavar="B",
                   help="tokens each trace block becomes: the engine's page size (at least 4)")
    r.add_argument("--engine", choices=ENGINES, default="transformers",
                   help="whose cache code replays the trace (default transformers)")
    r.add_argument("--seed", type=seed, default=0, help="seed of the block tokens and of the random model (default 0)")
    r.add_argument("--out", type=out_dir, default=None, metavar="DIR",
                   help="certificate directory: the log goes to its inputs/, the certificates beside it")
    r.add_argument("--replay", type=in_path, default=None, metavar="CERT",
                   help="verify an engine certificate, re-run the engine on its recorded settings, compare with its log")
    r.add_argument("--input", type=named_path, action="append", default=[], metavar="NAME=PATH",
                   help="with --replay: where an input the certificate names by file name is (default: beside its "
                        "directory)")
    add_common(r)
    add_backend(r)
    r.set_defaults(func=cmd_replay)


def checked_trace(path: Path | Source, num_blocks: int, block_tokens: int) -> tuple[Trace, list[list[int]]]:
    """The trace and its requests, refused before any engine is loaded when a cache of ``num_blocks``
    blocks of ``block_tokens`` tokens cannot replay it."""
    if num_blocks * block_tokens > MAX_REPLAY_CACHE_TOKENS:
        raise InputError(f"{num_blocks:,} blocks of {block_tokens:,} tokens is a cache of {num_blocks * block_tokens:,} "
                         f"tokens; at most {MAX_REPLAY_CACHE_TOKENS:,} (README: Limits)", where="--num-blocks")
    source = path if isinstance(path, Source) else named(path)
    source.check("a trace file", MAX_TRACE_BYTES, missing="no such trace file")
    trace = read_trace(source)
    requests = requests_of(trace)
    if (big := oversized(requests, num_blocks)) is not None:
        raise InputError(f"request {big[0]} (0-based) has {plural(big[1], 'block')}: a cache of {num_blocks:,} cannot hold "
                         f"it beside its partial last block (give --num-blocks {big[1] + 1} or more)",
                         where=f"{path}:{big[0] + 1}")  # a request a line, blank lines only at the end: line = index + 1
    if (longest := max(map(len, requests)) * block_tokens + 1) > MAX_REPLAY_PROMPT_TOKENS:
        raise InputError(f"its longest request makes a prompt of {longest:,} tokens at {block_tokens} a block; at most "
                         f"{MAX_REPLAY_PROMPT_TOKENS:,} (README: Limits)", where=str(path))
    return trace, requests


def run_replay(engine_name: str, requests: list[list[int]], trace: Trace, num_blocks: int, block_tokens: int,
               seed_: int, progress: Progress) -> tuple[replaylog.ReplayLog, tuple[float, float]]:
    """The replay's log, and its wall and CPU seconds."""
    engine = open_engine(engine_name, num_blocks, block_tokens, seed_)
    progress(f"engine: {engine.name} ({engine.version}); {engine.model}; {engine.num_blocks:,} blocks of "
             f"{engine.page_size} tokens; {plural(len(requests), 'request')} one at a time")
    t0, cpu0 = time.monotonic(), time.process_time()
    try:
        header = replaylog.engine_header(engine, seed=seed_, num_blocks=num_blocks, block_tokens=block_tokens,
                                         trace=Path(trace.name).name,
                                         trace_sha256=trace.sha256, requests=len(requests), refs=trace.n_refs)
        log = replaylog.replay(engine, requests, header, progress)
    finally:
        engine.close()  # the engine's thread would otherwise keep the process alive
    return log, (time.monotonic() - t0, time.process_time() - cpu0)


def _summary(replayed: replaylog.ReplayLog, seconds: tuple[float, float], **fields: object) -> ReplayResult:
    h = replayed.header
    cached = sum(r.cached_tokens for r in replayed.requests)
    return ReplayResult(engine=f"{h.engine} ({h.engine_version})", model=h.model, trace=h.trace, requests=h.requests,
                        refs=h.refs, num_blocks=h.num_blocks, block_tokens=h.block_tokens, seed=h.seed,
                        engine_hits=cached // h.block_tokens, engine_cached_tokens=cached,
                        evicted_blocks=sum(r.evicted_blocks for r in replayed.requests),
                        replay_seconds=round(seconds[0], 1), replay_cpu_seconds=round(seconds[1], 1), **fields)  # type: ignore[arg-type]


def record(args: argparse.Namespace, progress: Progress) -> tuple[ReplayResult, int]:
    for flag, value in (("--trace", args.trace), ("--num-blocks", args.num_blocks), ("--block-tokens", args.block_tokens),
                        ("--out", args.out)):
        if value is None:
            raise InputError("give --trace, --num-blocks, --block-tokens and --out (or --replay CERT)", where=flag)
    c, b = args.num_blocks, args.block_tokens
    trace, requests = checked_trace(args.trace, c, b)
    out = args.out.resolve()
    jobs: list[tuple[object, Options]] = [
        (producer("ceiling"), producer("ceiling").options(trace=[args.trace])),
        (producer("capacity"), producer("capacity").options(trace=[args.trace], capacity_blocks=[c], required=True))]
    for made, options in jobs:  # a name clash in --out is refused before the engine runs, not after
        made.check(Setting(out_dir=out, options=options))  # type: ignore[attr-defined]
    log, seconds = run_replay(args.engine, requests, trace, c, b, args.seed, progress)
    data = replaylog.render(log)
    engine_job = (producer("engine"), producer("engine").options(log=data, trace=args.trace))
    res = prove.prove([*jobs, engine_job], backend=args.backend, out_dir=out, progress=progress)  # type: ignore[list-item]
    stem = names(log.header.trace, c, b, args.seed)
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
    trace, requests = checked_trace(input_path(cert.inputs, "trace", where), h.num_blocks, h.block_tokens)
    progress(f"replay of {args.replay}")
    again, seconds = run_replay(engine_key(h.engine), requests, trace, h.num_blocks, h.block_tokens, h.seed, progress)
    diffs = replaylog.replay_differences(recorded, again)
    return (_summary(again, seconds, holds=not diffs, rejections=diffs, log=str(log_file), replay_of=str(args.replay)),
            EXIT_OK if not diffs else EXIT_REJECTED)


def render(res: ReplayResult) -> str:
    lines = [f"{res.engine}; {res.model}; {res.num_blocks:,} blocks of {res.block_tokens} tokens; seed {res.seed}",
             f"{res.trace}: {plural(res.requests, 'request')}, {plural(res.refs, 'block reference')}, replayed one at a "
             f"time in {res.replay_seconds:.1f} s ({res.replay_cpu_seconds:.1f} s of CPU); the engine evicted {plural(res.evicted_blocks, 'cached block')}"]
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
