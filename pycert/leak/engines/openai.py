"""An OpenAI-compatible completions endpoint (vLLM, and servers that copy its fields).

Each request is a streamed ``POST {base}/v1/completions`` whose ``prompt`` is the list of token ids
(vLLM takes token ids there, so no tokenizer is needed here), with ``max_tokens`` 2, and, for a
salted request, the salt in the engine's own field: vLLM's ``cache_salt`` (a non-empty string; the
salt's hex digits), which vLLM mixes into the hash of the first block. ``stream_options.include_usage``
asks for the usage object in the last chunk; its ``prompt_tokens_details.cached_tokens`` is the
engine's count of prompt tokens served from its prefix cache (vLLM reports it when started with
``--enable-prompt-tokens-details``). The time to first token is the arrival of the first chunk that
carries text, on this machine's clock. Between prompts the cache is emptied with vLLM's
``POST {base}/reset_prefix_cache`` (served when vLLM runs with ``VLLM_SERVER_DEV_MODE=1``).

Untested against a real vLLM or SGLang server: none can run on the machines this was written on
(no GPU). The request body and the reading of the stream are pure functions, tested on their own.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from pycert.core.errors import InputError
from pycert.leak import wire
from pycert.leak.admission import EngineRequest
from pycert.leak.engines import Served
from pycert.leak.wire import read_stream

GENERATED = 2
TIMEOUT_S = 600.0


def request_body(model: str, request: EngineRequest, salt_field: str = "cache_salt") -> dict:
    return wire.request_body(model, request.tokens, GENERATED, salt_field,
                             None if request.salt is None else request.salt.hex())


def cached_tokens(usage: dict | None, where: str) -> tuple[int, int]:
    """(cached prompt tokens, prompt tokens) from a usage object; an engine that does not report the
    cached count is an error, never a zero."""
    details = (usage or {}).get("prompt_tokens_details") or {}
    if not isinstance(details.get("cached_tokens"), int) or not isinstance((usage or {}).get("prompt_tokens"), int):
        raise InputError("the server reported no usage.prompt_tokens_details.cached_tokens (vLLM: start it with "
                         "--enable-prompt-tokens-details)", where=where)
    return details["cached_tokens"], usage["prompt_tokens"]


class OpenAIEngine:
    name = "OpenAI-compatible endpoint"
    page_size = None

    def __init__(self, base: str, model: str, *, vocab: int = 32000, salt_field: str = "cache_salt") -> None:
        self.base = base.rstrip("/")
        self.model = model
        self.vocab = vocab
        self.salt_field = salt_field
        self.salt_form = f"the request field {salt_field} (hex)"
        self.device = "server"
        self.version = self._version()

    def _open(self, path: str, body: dict | None = None) -> urllib.request.addinfourl:
        """GET ``path`` when ``body`` is None, else POST it as JSON."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, headers={"Content-Type": "application/json"})
        try:
            return urllib.request.urlopen(req, timeout=TIMEOUT_S)
        except urllib.error.HTTPError as exc:
            raise InputError(f"HTTP {exc.code} {exc.reason}", where=self.base + path) from None
        except (urllib.error.URLError, OSError) as exc:
            raise InputError(f"cannot reach the server: {getattr(exc, 'reason', exc)}", where=self.base + path) from None

    def _version(self) -> str:
        try:
            with self._open("/version") as resp:
                return f"server {json.loads(wire.body(resp, self.base)).get('version', 'unknown')}"
        except (InputError, ValueError):
            return "server version unknown"

    def serve(self, request: EngineRequest) -> Served:
        where = f"{self.base}/v1/completions"
        t0 = time.perf_counter()
        with self._open("/v1/completions", request_body(self.model, request, self.salt_field)) as resp:
            first, usage = read_stream(wire.events(resp))
        cached, prompt = cached_tokens(usage, where)
        generated = int((usage or {}).get("completion_tokens") or 0)
        return Served(cached_tokens=cached, engine_tokens=prompt,
                      ttft_s=(first if first is not None else time.perf_counter()) - t0, generated=generated)

    def serve_many(self, requests: Sequence[EngineRequest]) -> list[Served]:
        with ThreadPoolExecutor(max_workers=min(32, max(1, len(requests)))) as pool:
            return list(pool.map(self.serve, requests))

    def empty_cache(self) -> None:
        with self._open("/reset_prefix_cache", {}):
            pass

    def close(self) -> None:
        pass
