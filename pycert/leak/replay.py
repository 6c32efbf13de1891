"""``pycert engine replay``: a block trace's requests sent to a real engine's prefix cache, one at a time,
and the per-request log of what the engine served from its cache.

**Blocks to tokens.** Each trace block id becomes ``B`` token ids fixed by the seed
(:func:`block_tokens`: SHAKE-256 of ``"<seed>:<id>"``, two bytes a token, folded into the vocabulary above
the ids a tokenizer may reserve), and a request's prompt is its blocks' tokens in order, then one more
token (:data:`TAIL`). The engine never serves a prompt's last token from cache (transformers matches
``(len - 1) // B`` blocks at most), so without the extra token a request's last block could never be a
hit; with it, every trace block can be, and the extra token, with the two generated ones, sits in a
partial block that is never hashed. Two blocks with the same tokens would be one block to the engine: a
collision among the blocks a replay sends is refused (:class:`TokenMap`), so the engine's block
identity is the trace's.

**One request at a time, in trace order.** Each request is sent when the one before it has finished,
so the engine's cache holds exactly what the requests before it left, as in the cache models pycert
certifies (every reference sees the cache the earlier references made): the engine's count is then
comparable with LRU's and with the optimum at the same capacity. Batched requests would be looked up
before their predecessors' blocks are hashed, which depends on timing, not on the trace.

The engine's count per request is the return value of its own ``search_prefix_match``
(:mod:`pycert.leak.engines.transformers`), always whole blocks; nothing is simulated. Every figure of
a replay is a pure function of its log and the trace (:mod:`pycert.families.engine`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from pycert.core.errors import InputError, Rejection
from pycert.core.gate import Source, named
from pycert.core.limits import MAX_JSON_BYTES
from pycert.leak.admission import FIRST_ID, EngineRequest
from pycert.leak.engines import Served
from pycert.leak.log import parse_lines, render_lines

LOG_SCHEMA = "pycert-engine-log/1"
TAIL = FIRST_ID
"""The token after a request's blocks (module docstring)."""
TOKEN_MAP = "shake256('<seed>:<block id>'), 2 bytes a token, mod (vocab - 16) + 16"
MAX_REQUESTS = 10_000_000
Text = Field(min_length=1, max_length=300, pattern=r"^[^\n]+$")
Digest = Field(pattern=r"^[0-9a-f]{64}$")

Progress = Callable[[str], None]


class _Line(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, populate_by_name=True)


class ReplayHeader(_Line):
    """What the replay ran on, what it asked for and what the engine says it had."""

    kind: Literal["header"] = "header"
    schema_id: Literal["pycert-engine-log/1"] = Field(default=LOG_SCHEMA, alias="schema")
    engine: str = Text
    engine_version: str = Text
    model: str = Text
    device: str = Field(min_length=1, max_length=40, pattern=r"^[a-z0-9:_-]+$")
    seed: int = Field(ge=-(1 << 63), le=(1 << 63) - 1)
    num_blocks: int = Field(ge=2, le=1 << 20, description="C: the cache's blocks, as asked")
    block_tokens: int = Field(ge=4, le=1 << 12, description="B: tokens each trace block becomes, the page size asked")
    engine_blocks: int = Field(ge=0, description="blocks the engine's cache holds, as the engine counts them")
    page_size: int = Field(ge=0, description="tokens per block, as the engine counts them (0: a server that does not say)")
    scheduler: str = Text
    safety_margin: str = Field(pattern=r"^([0-9.]{1,12}|unknown)$",
                               description="the free fraction under which the engine evicts every cached block "
                                           "(unknown: a server's)")
    generated: int = Field(ge=0, le=64, description="tokens generated per request (0: no model, nothing decoded)")
    vocab: int = Field(ge=FIRST_ID + 2, le=1 << 24)
    token_map: str = Text
    trace: str = Field(min_length=1, max_length=255, pattern=r"^[^/\x00\n]*[^/\x00\n.][^/\x00\n]*$",
                       description="the trace's file name (no directory; not . or ..)")
    trace_sha256: str = Digest
    requests: int = Field(ge=1, le=MAX_REQUESTS)
    refs: int = Field(ge=0)


    @property
    def max_requests(self) -> int:
        """The request lines a replay of this header's trace has: one a request."""
        return self.requests


class ReplayRequest(_Line):
    """One request as the engine served it."""

    kind: Literal["request"] = "request"
    request: int = Field(ge=0, lt=MAX_REQUESTS, description="its place in the trace, from 0")
    blocks: int = Field(ge=0, description="trace blocks the request references")
    blocks_sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="sha256 of the block ids (blocks_digest)")
    engine_tokens: int = Field(ge=1, description="prompt tokens the engine received")
    cached_tokens: int = Field(ge=0, description="prompt tokens the engine reported serving from its cache")
    evicted_blocks: int = Field(ge=0, description="cached blocks the engine evicted while serving the request")
    ttft_s: float = Field(ge=0, le=86_400, description="time to first token, by the engine's clock")

    @model_validator(mode="after")
    def _consistent(self) -> ReplayRequest:
        if self.cached_tokens > self.engine_tokens:
            raise ValueError(f"cached_tokens {self.cached_tokens} exceeds the {self.engine_tokens} tokens the engine received")
        return self


class ReplayLog(BaseModel):
    model_config = ConfigDict(frozen=True)

    header: ReplayHeader
    requests: tuple[ReplayRequest, ...]


def blocks_digest(blocks: Sequence[int]) -> str:
    """sha256 of a request's block ids, written as decimal numbers joined by commas."""
    return hashlib.sha256(",".join(map(str, blocks)).encode()).hexdigest()


def block_stream(block: int, seed: int, width: int) -> bytes:
    """The ``2 * width`` bytes that trace block ``block``'s tokens are read from under ``seed``."""
    return hashlib.shake_256(f"{seed}:{block}".encode()).digest(2 * width)


def stream_tokens(streams: bytes, vocab: int) -> np.ndarray:
    """:data:`TOKEN_MAP` on the concatenated streams of one or more blocks: one token per two bytes."""
    return np.frombuffer(streams, ">u2").astype(np.int64) % (vocab - FIRST_ID) + FIRST_ID


def block_tokens(block: int, seed: int, width: int, vocab: int) -> tuple[int, ...]:
    """The ``width`` token ids trace block ``block`` becomes under ``seed`` (:data:`TOKEN_MAP`)."""
    return tuple(stream_tokens(block_stream(block, seed, width), vocab).tolist())


class TokenMap:
    """A prompt's tokens, made for all its blocks at once; the first time a block is met, its tokens are
    checked against those of every block met before, and two blocks with the same tokens are refused
    (module docstring). Tokens are not kept: a block's are remade at each reference (a few microseconds),
    where keeping them cost 4 GiB on the whole conversation trace at 512 tokens a block (docs/engine-measured.md)."""

    def __init__(self, seed: int, width: int, vocab: int) -> None:
        self.seed, self.width, self.vocab = seed, width, vocab
        self._owner: dict[bytes, int] = {}
        """A 16-byte digest of each block's tokens -> the block: equal tokens give equal digests, so every
        collision is found (two different token runs with one digest would be refused, never passed)."""
        self._met: set[int] = set()

    def tokens(self, blocks: Sequence[int]) -> np.ndarray:
        w = self.width
        tokens = stream_tokens(b"".join(block_stream(b, self.seed, w) for b in blocks), self.vocab)
        for i, block in enumerate(blocks):
            if block in self._met:
                continue
            digest = hashlib.blake2b(tokens[i * w:(i + 1) * w].tobytes(), digest_size=16).digest()
            if (other := self._owner.setdefault(digest, block)) != block:
                raise InputError(f"blocks {other} and {block} get the same {w} tokens under seed {self.seed}: "
                                 "the engine could not tell them apart; give another --seed", where="--seed")
            self._met.add(block)
        return tokens

    def __call__(self, block: int) -> tuple[int, ...]:
        return tuple(self.tokens([block]).tolist())

    def prompt(self, blocks: Sequence[int]) -> tuple[int, ...]:
        return (*self.tokens(blocks).tolist(), TAIL)


class PagedEngine(Protocol):
    """What a replay needs of an engine beyond serving: its own counts of its cache."""

    name: str
    version: str
    model: str
    device: str
    vocab: int
    page_size: int
    num_blocks: int
    scheduler: str
    safety_margin: float | None
    """None: not known (a server's)."""
    evicted_blocks: int
    generated: int

    def serve(self, request: EngineRequest) -> Served: ...


def replay(engine: PagedEngine, requests: Sequence[Sequence[int]], header: ReplayHeader,
           progress: Progress = lambda _m: None) -> ReplayLog:
    """Send every request in order, each once the one before it has finished; ``header`` is the run's,
    with the engine's own fields filled in from ``engine``."""
    tokens = TokenMap(header.seed, header.block_tokens, engine.vocab)
    records, hits, refs, step = [], 0, 0, max(1, len(requests) // 20)
    for i, blocks in enumerate(requests):
        before = engine.evicted_blocks
        served = engine.serve(EngineRequest(tokens.prompt(blocks), None))
        records.append(ReplayRequest(request=i, blocks=len(blocks), blocks_sha256=blocks_digest(blocks),
                                     engine_tokens=served.engine_tokens, cached_tokens=served.cached_tokens,
                                     evicted_blocks=engine.evicted_blocks - before, ttft_s=round(served.ttft_s, 6)))
        hits, refs = hits + served.cached_tokens // header.block_tokens, refs + len(blocks)
        if (i + 1) % step == 0 or i + 1 == len(requests):
            progress(f"request {i + 1:,}/{len(requests):,}: {refs:,} references, {hits:,} served from the engine's cache")
    return ReplayLog(header=header, requests=tuple(records))


def engine_header(engine: PagedEngine, **fields: object) -> ReplayHeader:
    """A log's header: the engine's own account of itself, and the run's ``fields``."""
    return ReplayHeader(engine=engine.name, engine_version=engine.version, model=engine.model, device=engine.device,
                        engine_blocks=engine.num_blocks, page_size=engine.page_size, scheduler=engine.scheduler,
                        safety_margin="unknown" if engine.safety_margin is None else f"{engine.safety_margin:g}", vocab=engine.vocab, generated=engine.generated,
                        token_map=TOKEN_MAP, **fields)  # type: ignore[arg-type]


def render(log: ReplayLog) -> bytes:
    """The log as JSON Lines, fields in schema order: the same log gives the same bytes."""
    return render_lines(log.header, log.requests)


def parse(data: bytes, where: str) -> ReplayLog:
    header, requests = parse_lines(data, where, ReplayHeader, ReplayRequest, "an engine replay log")
    return ReplayLog(header=header, requests=tuple(requests))


def read(source: Source | Path) -> ReplayLog:
    """The log in a certificate directory (:func:`pycert.core.gate.inside`) or at a path pycert wrote: a
    regular file of at most :data:`~pycert.core.limits.MAX_JSON_BYTES`, its size checked before a byte is read."""
    source = source if isinstance(source, Source) else named(source)
    return parse(source.read("an engine replay log", MAX_JSON_BYTES), str(source))


def replay_differences(recorded: ReplayLog, again: ReplayLog) -> list[Rejection]:
    """Where a re-run on the recorded settings disagrees with the log: the engine's setting, each
    request's blocks and its cached tokens. Times and evictions are not compared: times are of the
    moment, and an eviction that changes no hit changes no figure."""
    out = []
    for field in ("engine", "model", "device", "seed", "num_blocks", "block_tokens", "engine_blocks", "page_size",
                  "scheduler", "safety_margin", "generated", "vocab", "token_map", "trace_sha256", "requests"):
        if (a := getattr(recorded.header, field)) != (b := getattr(again.header, field)):
            out.append(Rejection.mismatch(f"header.{field}", str(a), str(b)))
    for i, (a, b) in enumerate(zip(recorded.requests, again.requests), 2):
        if a.blocks_sha256 != b.blocks_sha256:
            out.append(Rejection.mismatch(f"log line {i} (request {a.request}).blocks_sha256", a.blocks_sha256,
                                          b.blocks_sha256))
        elif a.cached_tokens != b.cached_tokens:
            out.append(Rejection.mismatch(f"log line {i} (request {a.request}).cached_tokens", str(a.cached_tokens),
                                          str(b.cached_tokens)))
    if len(recorded.requests) != len(again.requests):
        out.append(Rejection.mismatch("requests", str(len(recorded.requests)), str(len(again.requests))))
    return out
