"""vLLM's OpenAI-compatible completions wire format, as pycert's server, gateway and clients speak it.

One module for both sides, so that what ``pycert leak serve`` writes is what ``pycert leak audit`` and
the endpoint engine read. The fields follow vLLM's OpenAI server (``vllm/entrypoints/openai``):

- a request (:class:`CompletionRequest`) takes ``prompt`` as token ids (vLLM accepts a list of ints
  there), ``max_tokens`` (vLLM's default 16), ``stream`` and ``stream_options.include_usage``, and
  ``cache_salt``: a non-empty string that vLLM mixes into the hash of the prompt's first block, so
  that requests with different salts never share a cached block ("Parameter 'cache_salt' must be a
  non-empty string if provided." is vLLM's own refusal);
- a streamed answer is Server-Sent Events: one ``text_completion`` chunk per generated token, then,
  when ``include_usage`` is set, a last chunk with ``choices: []`` and the ``usage`` object, then
  ``data: [DONE]``;
- ``usage.prompt_tokens_details.cached_tokens`` is the engine's count of prompt tokens served from its
  prefix cache. vLLM reports it only with ``--enable-prompt-tokens-details`` and, in the versions read
  here (``serving_completion.py``: ``if self.enable_prompt_tokens_details and num_cached_tokens``),
  leaves ``prompt_tokens_details`` out when the count is 0; pycert's server always writes it;
- an error is ``{"error": {"message", "type", "param", "code"}}`` (vLLM's current shape).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from typing import BinaryIO

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pycert.core.errors import InputError

MAX_RESPONSE_BYTES = 1 << 20
"""Longest response body, or event of a stream, pycert reads from a server it audits (a server is data)."""
MAX_EVENTS = 1 << 12
"""Most lines of one completion's event stream (a request asks for at most MAX_NEW_TOKENS tokens)."""
MAX_NEW_TOKENS = 256
"""The most tokens pycert's CPU server generates for one request (a bound on one request's time)."""
MAX_PROMPT_TOKENS = 1 << 16
DEFAULT_MAX_TOKENS = 16
"""vLLM's default ``max_tokens`` for a completion."""


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="ignore")

    include_usage: bool = False


class CompletionRequest(BaseModel):
    """The fields of a completions request that pycert reads; others are accepted and ignored (as vLLM
    ignores unknown fields with a warning)."""

    model_config = ConfigDict(extra="ignore")

    model: str = Field(min_length=1, max_length=300)
    prompt: list[int] = Field(min_length=1, max_length=MAX_PROMPT_TOKENS,
                              description="token ids (a string prompt needs a tokenizer, which pycert's server has not)")
    max_tokens: int = Field(default=DEFAULT_MAX_TOKENS, ge=1, le=MAX_NEW_TOKENS)
    stream: bool = False
    stream_options: StreamOptions | None = None
    cache_salt: str | None = None

    @field_validator("cache_salt")
    @classmethod
    def _salt(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("Parameter 'cache_salt' must be a non-empty string if provided.")
        return v

    @field_validator("prompt", mode="before")
    @classmethod
    def _not_text(cls, v: object) -> object:
        if isinstance(v, str):
            raise ValueError("send the prompt as token ids (a list of ints): a text prompt needs a tokenizer")
        return v

    @field_validator("prompt")
    @classmethod
    def _ids(cls, v: list[int]) -> list[int]:
        if any(t < 0 for t in v):
            raise ValueError("prompt token ids must be non-negative")
        return v

    @property
    def include_usage(self) -> bool:
        return bool(self.stream_options and self.stream_options.include_usage)


def parse_request(body: bytes) -> CompletionRequest:
    """A completions request from its bytes; any defect is an :class:`InputError` naming the field."""
    try:
        return CompletionRequest.model_validate_json(body)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "body"
        raise InputError(err["msg"].removeprefix("Value error, "), where=field) from None


def error_body(message: str, code: int, kind: str = "BadRequestError", param: str | None = None) -> dict:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def usage(prompt_tokens: int, completion_tokens: int, cached_tokens: int | None) -> dict:
    out: dict = {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens + completion_tokens,
                 "completion_tokens": completion_tokens}
    if cached_tokens is not None:
        out["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    return out


def chunk(rid: str, created: int, model: str, text: str, finish: str | None) -> dict:
    """One streamed ``text_completion`` chunk with one choice."""
    return {"id": rid, "object": "text_completion", "created": created, "model": model,
            "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": finish, "stop_reason": None}],
            "usage": None}


def usage_chunk(rid: str, created: int, model: str, use: dict) -> dict:
    """The last chunk when ``stream_options.include_usage`` is set: no choices, the usage."""
    return {"id": rid, "object": "text_completion", "created": created, "model": model, "choices": [], "usage": use}


def event(obj: dict | str) -> bytes:
    """One Server-Sent Event: ``data: <json>`` (or ``data: [DONE]``) and a blank line."""
    return f"data: {obj if isinstance(obj, str) else json.dumps(obj, separators=(',', ':'))}\n\n".encode()


DONE = "[DONE]"


def token_text(token: int) -> str:
    """How pycert's server writes a generated token without a tokenizer: vLLM's ``token_id:<id>`` form
    (what vLLM writes with ``return_tokens_as_token_ids``)."""
    return f"token_id:{token}"


def request_body(model: str, prompt: Iterable[int], max_tokens: int, salt_field: str | None = None,
                 salt: str | None = None) -> dict:
    """A streamed completions request asking for the usage chunk, with ``salt`` in ``salt_field``."""
    body: dict = {"model": model, "prompt": list(prompt), "max_tokens": max_tokens, "temperature": 0,
                  "stream": True, "stream_options": {"include_usage": True}}
    if salt is not None and salt_field:
        body[salt_field] = salt
    return body


def data_of(raw: bytes) -> dict | str | None:
    """The payload of one event-stream line: a JSON object, ``[DONE]``, or None for any other line."""
    line = raw.decode("utf-8", "replace").strip()
    if not line.startswith("data:"):
        return None
    data = line[5:].strip()
    if data == DONE:
        return DONE
    try:
        obj = json.loads(data)
    except json.JSONDecodeError:
        raise InputError(f"a stream event is not JSON: {data[:80]!r}", where="stream") from None
    if not isinstance(obj, dict):
        raise InputError("a stream event is not a JSON object", where="stream")
    return obj


def body(resp: BinaryIO, where: str) -> bytes:
    """A server's response body, refused past :data:`MAX_RESPONSE_BYTES` before more is read."""
    data = resp.read(MAX_RESPONSE_BYTES + 1)
    if len(data) > MAX_RESPONSE_BYTES:
        raise InputError(f"a response longer than {MAX_RESPONSE_BYTES:,} bytes: refused, not read", where=where)
    return data


def events(resp: BinaryIO) -> Iterator[bytes]:
    """A completion stream's lines, each at most :data:`MAX_RESPONSE_BYTES`, at most :data:`MAX_EVENTS` of
    them: a server that streams without end is refused, not followed."""
    for _ in range(MAX_EVENTS):
        if not (line := resp.readline(MAX_RESPONSE_BYTES + 1)):
            return
        if len(line) > MAX_RESPONSE_BYTES:
            raise InputError(f"a stream event longer than {MAX_RESPONSE_BYTES:,} bytes: refused", where="stream")
        yield line
    raise InputError(f"a stream of more than {MAX_EVENTS:,} lines for one completion: refused", where="stream")


def read_stream(lines: Iterable[bytes], clock=time.perf_counter) -> tuple[float | None, dict | None]:  # noqa: ANN001
    """(when the first text arrived, the usage object) from a completions event stream. An event that
    carries an error (vLLM streams ``{"error": ...}`` when a request fails mid-way) is an error here."""
    first, use = None, None
    for raw in lines:
        obj = data_of(raw)
        if obj is None:
            continue
        if obj == DONE:
            break
        assert isinstance(obj, dict)
        if obj.get("error"):
            err = obj["error"]
            raise InputError(f"the server failed the request: {err.get('message', err) if isinstance(err, dict) else err}",
                             where="stream")
        if first is None and any(isinstance(c, dict) and c.get("text") for c in obj.get("choices") or []):
            first = clock()
        if obj.get("usage"):
            use = obj["usage"]
    return first, use


def cached_count(use: dict | None) -> int | None:
    """``usage.prompt_tokens_details.cached_tokens``, or None where the server wrote none."""
    details = (use or {}).get("prompt_tokens_details")
    value = details.get("cached_tokens") if isinstance(details, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
