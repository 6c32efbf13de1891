"""``pycert leak serve``: the in-process engine (transformers continuous batching) behind vLLM's
OpenAI-compatible fields, over HTTP on 127.0.0.1, so that a black-box audit has a real server to run on.

Routes, as vLLM names them:

- ``GET /v1/models``: one model card (``id``, ``max_model_len``);
- ``POST /v1/completions``: token-id prompts, streamed or not; ``stream_options.include_usage`` adds
  the last chunk with ``usage``; ``usage.prompt_tokens_details.cached_tokens`` is the engine's own
  count (the return value of its ``search_prefix_match``, :mod:`pycert.leak.engines.transformers`),
  written for every request, 0 included;
- ``POST /reset_prefix_cache``: empties the cache (vLLM serves it in its dev mode only);
- ``GET /version``, ``GET /health``.

**``cache_salt``.** vLLM mixes the salt into the hash of the prompt's first block. transformers has no
such field, so this server prepends :data:`~pycert.leak.admission.SALT_TOKENS` token ids drawn from
``sha256(cache_salt)`` (every character of the salt counts): a first block that differs changes every
block hash after it, which is the same separation. ``usage`` counts the client's prompt only:
``prompt_tokens`` is the prompt's length and ``cached_tokens`` the prompt tokens served from cache
(the engine's count less the salt tokens it matched).

The server binds 127.0.0.1 only: it has no authentication, and ``/reset_prefix_cache`` lets any
client empty the cache. Put ``pycert leak gateway`` in front of it for tenants.
"""

from __future__ import annotations

import hashlib
import itertools
import time
import uuid
from typing import Protocol

from pycert import __version__
from pycert.core.errors import InputError
from pycert.leak.admission import EngineRequest
from pycert.leak.engines import Served
from pycert.leak.httpd import Handler, HttpError, Route
from pycert.leak.wire import chunk, error_body, parse_request, token_text, usage, usage_chunk


class StreamingEngine(Protocol):
    name: str
    version: str
    vocab: int
    max_len: int

    def stream(self, request: EngineRequest, max_new_tokens: int): ...  # noqa: ANN201

    def empty_cache(self) -> None: ...


def salt_of(cache_salt: str | None) -> bytes | None:
    """The salt the engine receives for a request's ``cache_salt``: sha256 of its UTF-8 bytes."""
    return None if cache_salt is None else hashlib.sha256(cache_salt.encode("utf-8")).digest()


def prompt_cached(served: Served, prompt_tokens: int) -> int:
    """Of the client's prompt tokens, how many the engine served from cache (the salt tokens it
    prepended, and matched first, are not the client's)."""
    salt = served.engine_tokens - prompt_tokens
    return max(0, min(prompt_tokens, served.cached_tokens - salt))


class App:
    """The routes of :mod:`pycert.leak.serve` over one engine."""

    def __init__(self, engine: StreamingEngine, model: str) -> None:
        self.engine, self.model = engine, model
        self.created = int(time.time())

    def routes(self) -> dict[tuple[str, str], Route]:
        return {("GET", "/v1/models"): self.models, ("POST", "/v1/completions"): self.completions,
                ("POST", "/reset_prefix_cache"): self.reset, ("GET", "/version"): self.version,
                ("GET", "/health"): lambda h: h.send_json(200, {})}

    def models(self, h: Handler) -> None:
        h.send_json(200, {"object": "list", "data": [
            {"id": self.model, "object": "model", "created": self.created, "owned_by": "pycert", "root": self.model,
             "parent": None, "max_model_len": self.engine.max_len, "permission": []}]})

    def version(self, h: Handler) -> None:
        h.send_json(200, {"version": f"pycert {__version__} ({self.engine.name}, {self.engine.version})"})

    def reset(self, h: Handler) -> None:
        h.body()
        self.engine.empty_cache()
        h.send_json(200, {})

    def completions(self, h: Handler) -> None:
        req = parse_request(h.body())
        if req.model != self.model:
            raise HttpError(404, f"The model `{req.model}` does not exist.", "NotFoundError", "model")
        if bad := next((t for t in req.prompt if t >= self.engine.vocab), None):
            raise HttpError(400, f"Token id {bad} is out of vocabulary (the model's vocabulary is {self.engine.vocab})",
                            param="prompt")
        if len(req.prompt) + req.max_tokens > self.engine.max_len:
            raise HttpError(400, f"This model's maximum context length is {self.engine.max_len} tokens. However, you "
                                 f"requested {len(req.prompt) + req.max_tokens} tokens ({len(req.prompt)} in the "
                                 f"prompt, {req.max_tokens} for the completion).", param="max_tokens")
        rid, n = f"cmpl-{uuid.uuid4().hex}", len(req.prompt)
        steps = self.engine.stream(EngineRequest(tuple(req.prompt), salt_of(req.cache_salt)), req.max_tokens)
        if not req.stream:
            tokens: list[int] = []
            for step in steps:
                if isinstance(step, Served):
                    served = step
                else:
                    tokens += step
            h.send_json(200, {"id": rid, "object": "text_completion", "created": int(time.time()), "model": self.model,
                              "choices": [{"index": 0, "text": "".join(map(token_text, tokens)), "logprobs": None,
                                           "finish_reason": "length", "stop_reason": None}],
                              "usage": usage(n, served.generated, prompt_cached(served, n))})
            return
        created, sent = int(time.time()), 0
        first = next(steps)  # engine errors before the first token are still a plain error answer
        h.start_stream()
        try:
            for step in itertools.chain([first], steps):
                if isinstance(step, Served):
                    if req.include_usage:
                        use = usage(n, step.generated, prompt_cached(step, n))
                        h.send_event(usage_chunk(rid, created, self.model, use))
                    break
                for token in step:
                    sent += 1
                    h.send_event(chunk(rid, created, self.model, token_text(token),
                                       "length" if sent == req.max_tokens else None))
        except InputError as err:  # the headers are sent: the failure goes in the stream, as vLLM sends it
            h.send_event(error_body(err.message, 500, "InternalServerError"))
        h.send_event("[DONE]")
