"""The per-request log of a ``pycert leak run``: what a leak certificate names as its input.

JSON Lines: a header line (the engine, model, device and seed the run measured on, the prompt
plan, the levels the claim uses), then one line per request in the order they were sent. Each
request says which arm and prompt it belongs to, whether it primed the cache or probed it, the
tenant, the salt the admission layer was asked for and a short fingerprint of the salt the engine
actually received, and the two numbers the engine reported: ``cached_tokens`` (prompt tokens it
served from its cache) and ``ttft_s`` (time to first token, by the engine's own clock).
Everything a certificate says is re-derived from these lines (:mod:`pycert.leak.observation`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from pycert.core import strict_json
from pycert.core.errors import InputError
from pycert.core.gate import Source, named
from pycert.core.limits import MAX_JSON_BYTES, json_depth_error
from pycert.leak.admission import EngineRequest
from pycert.leak.engines import Engine

LOG_SCHEMA = "pycert-leak-log/1"
MAX_PROMPTS = 10_000
MAX_PROMPT_TOKENS = 1 << 20

ArmName = Literal["unsalted-cross", "keyed-cross", "keyed-own", "attacker-unkeyed", "attacker-keyed"]
SaltKind = Literal["none", "keyed", "unkeyed", "forged-unkeyed"]
H = TypeVar("H", bound=BaseModel)
L = TypeVar("L", bound=BaseModel)
Text = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[^\n]+$")]
"""One line of text naming an engine, its version or how it takes a salt."""
ModelName = Annotated[str, Field(min_length=1, max_length=300, pattern=r"^[^\n]+$")]
Device = Annotated[str, Field(min_length=1, max_length=40, pattern=r"^[a-z0-9:_-]+$")]
Level = Annotated[str, Field(pattern=r"^0\.[0-9]{1,6}$", description="a level in (0, 1), as written: 0.95")]


class LogLine(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, populate_by_name=True)


class Header(LogLine):
    """What the run measured on, and the levels its claim uses."""

    kind: Literal["header"] = "header"
    schema_id: Literal["pycert-leak-log/1"] = Field(default=LOG_SCHEMA, alias="schema")
    engine: Text
    engine_version: Text
    model: ModelName
    device: Device
    seed: int = Field(ge=-(1 << 63), le=(1 << 63) - 1)
    prompts: int = Field(ge=1, le=MAX_PROMPTS)
    min_tokens: int = Field(ge=1, le=MAX_PROMPT_TOKENS)
    max_tokens: int = Field(ge=1, le=MAX_PROMPT_TOKENS)
    page_size: int | None = Field(default=None, ge=1, le=MAX_PROMPT_TOKENS,
                                  description="tokens per cache block, where the engine says")
    salt_form: Text = Field(description="how the engine receives a salt (prepended tokens, a request field)")
    confidence: Level = "0.95"
    underpowered_above: Level = "0.05"

    @model_validator(mode="after")
    def _lengths(self) -> Header:
        if self.min_tokens > self.max_tokens:
            raise ValueError(f"min_tokens {self.min_tokens} exceeds max_tokens {self.max_tokens}")
        return self

    @property
    def max_requests(self) -> int:
        """Five arms, a prime and a probe each, for every prompt."""
        return 10 * self.prompts

    def level(self, name: Literal["confidence", "underpowered_above"]) -> Fraction:
        return Fraction(getattr(self, name))


class Request(LogLine):
    """One request as the engine served it."""

    kind: Literal["request"] = "request"
    arm: ArmName
    prompt: int = Field(ge=0, lt=MAX_PROMPTS)
    role: Literal["prime", "probe"]
    tenant: str = Field(min_length=1, max_length=100, pattern=r"^[a-z0-9-]+$")
    salt: SaltKind = Field(description="the salt the request was meant to carry")
    salt_id: str | None = Field(default=None, pattern=r"^[0-9a-f]{16}$",
                                description="first 16 hex digits of sha256 of the salt the engine received; "
                                            "null when it received none")
    prompt_tokens: int = Field(ge=1, le=MAX_PROMPT_TOKENS)
    prompt_sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="sha256 of the prompt's token ids")
    engine_tokens: int = Field(ge=1, le=2 * MAX_PROMPT_TOKENS, description="prompt tokens the engine received")
    cached_tokens: int = Field(ge=0, description="prompt tokens the engine reported serving from its cache")
    ttft_s: float = Field(ge=0, le=86_400, description="time to first token, by the engine's clock")

    @field_validator("ttft_s", mode="before")
    @classmethod
    def _number(cls, v: object) -> object:
        return float(v) if isinstance(v, int) and not isinstance(v, bool) else v

    @model_validator(mode="after")
    def _consistent(self) -> Request:
        if self.cached_tokens > self.engine_tokens:
            raise ValueError(f"cached_tokens {self.cached_tokens} exceeds the {self.engine_tokens} tokens the engine received")
        return self


class Log(BaseModel):
    model_config = ConfigDict(frozen=True)

    header: Header
    requests: tuple[Request, ...]


def served_fields(engine: Engine, request: EngineRequest) -> dict[str, object]:
    """Serve ``request`` and return what every log line records of it: the prompt and the salt the engine
    received (by digest), and what the engine said."""
    served = engine.serve(request)
    return {"salt_id": salt_id(request.salt), "prompt_tokens": len(request.tokens),
            "prompt_sha256": prompt_digest(request.tokens), "engine_tokens": served.engine_tokens,
            "cached_tokens": served.cached_tokens, "ttft_s": round(served.ttft_s, 6)}


def prompt_digest(tokens: Sequence[int]) -> str:
    """sha256 of a prompt's token ids, written as decimal numbers joined by commas."""
    return hashlib.sha256(",".join(map(str, tokens)).encode()).hexdigest()


def salt_id(salt: bytes | None) -> str | None:
    """A short public fingerprint of a salt: shows whether two requests carried the same salt, and
    nothing of the secret it was keyed with."""
    return None if salt is None else hashlib.sha256(salt).hexdigest()[:16]


def render(log: Log) -> bytes:
    """The log as JSON Lines, fields in schema order: the same log gives the same bytes."""
    return render_lines(log.header, log.requests)


def parse_lines(data: bytes, where: str, header_type: type[H], line_type: type[L], what: str) -> tuple[H, list[L]]:
    """A JSON Lines log from its bytes: a ``header_type`` line, then ``line_type`` lines; any malformed
    line is an :class:`InputError` naming ``where:line`` (``what`` names the kind of log)."""
    if len(data) > MAX_JSON_BYTES:
        raise InputError(f"larger than {MAX_JSON_BYTES >> 20} MiB: not {what}", where=where)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 (byte {exc.start}): not {what}", where=where) from None
    lines = text.splitlines()
    if not lines:
        raise InputError(f"empty: {what} starts with its header line", where=where)
    header: H | None = None
    records: list[L] = []
    for i, line in enumerate(lines, 1):
        if i == 2 and header is not None and len(lines) - 1 > (most := header.max_requests):  # before parsing them
            raise InputError(f"{len(lines) - 1:,} request lines where the header plans {most:,}: not the log of one "
                             "run", where=where)
        if (deep := json_depth_error(line)) is not None:
            raise InputError(deep, where=f"{where}:{i}")
        try:
            obj = strict_json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"not JSON ({exc.msg})", where=f"{where}:{i}") from None
        except strict_json.DuplicateKey as exc:
            raise InputError(f"the key {json.dumps(exc.key)[:80]} is named twice in one object",
                             where=f"{where}:{i}") from None
        try:
            if i == 1:
                header = header_type.model_validate(obj)
            else:
                records.append(line_type.model_validate(obj))
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"]) or "(line)"
            kind = "the header" if i == 1 else "a request"
            raise InputError(f"{kind}: {field}: {err['msg']}", where=f"{where}:{i}") from None
    assert header is not None
    return header, records


def render_lines(header: BaseModel, records: Sequence[BaseModel]) -> bytes:
    """A log as JSON Lines, fields in schema order: the same log gives the same bytes."""
    return ("\n".join([header.model_dump_json(by_alias=True), *(r.model_dump_json() for r in records)]) + "\n").encode()


def parse(data: bytes, where: str) -> Log:
    """A leak log from its bytes (:func:`parse_lines`)."""
    header, requests = parse_lines(data, where, Header, Request, "a leak log")
    return Log(header=header, requests=tuple(requests))


def read(source: Source | Path) -> Log:
    """The log in a certificate directory (:func:`pycert.core.gate.inside`) or at a path pycert wrote: a
    regular file of at most :data:`~pycert.core.limits.MAX_JSON_BYTES`, its size checked before a byte is read."""
    source = source if isinstance(source, Source) else named(source)
    return parse(source.read("a leak log", MAX_JSON_BYTES), str(source))
