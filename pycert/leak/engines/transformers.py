"""transformers' continuous batching, in process: the default engine of ``pycert leak run``.

``model.init_continuous_batching()`` gives a manager whose paged cache hashes every full block of a
prompt (``page_size`` tokens, 256 by default) chained to its prefix, and shares a block with any
later request whose prompt has the same prefix (``allow_block_sharing``, on by default).

**Where the cached-token count comes from.** transformers reports no per-request cache figure (vLLM
has ``usage.prompt_tokens_details.cached_tokens``). The one place the engine decides it is
``PagedAttentionCache.search_prefix_match(request_id, prompt_ids)``, which its scheduler calls once
for every new request and whose return value is the number of prompt tokens it will not recompute
(the request's ``position_offset`` is advanced by exactly that). :class:`TransformersEngine` wraps
that bound method on the live cache object: the wrapper calls the engine's own method and records
what it returned, keyed by request id. A request the scheduler never asked about is an error, never
a zero.

**Measured facts** (transformers 5.25.0, torch 2.13.0, CPU): a request with ``max_new_tokens=1``
finishes in the step that completes its prompt blocks, before ``mark_complete_blocks`` hashes them
(it returns early for a finished request), so such a request leaves nothing to share; the engine
generates 2 tokens per request for that reason. The time to first token is the first generated
token's timestamp minus the request's creation time, both the engine's ``perf_counter`` readings
(``record_timestamps=True``).

A salt is prepended as :data:`SALT_TOKENS` token ids drawn from its bytes: the engine has no salt
field, and a prefix that differs in its first block changes every block hash after it.
"""

from __future__ import annotations

import hashlib
import queue
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import torch
import transformers
from transformers import AutoModelForCausalLM, GenerationConfig, Qwen2Config, Qwen2ForCausalLM
from transformers.generation.configuration_utils import ContinuousBatchingConfig

from pycert.core.errors import InputError
from pycert.leak.admission import SALT_TOKENS, EngineRequest, salt_tokens
from pycert.leak.engines import Served
from pycert.leak.engines.paged import LABELS

GENERATED = 2
"""Tokens generated per request: with 1 the engine never hashes the prompt's blocks (module docstring)."""
RESULT_TIMEOUT_S = 600.0
SMALL = {"vocab_size": 8192, "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 4096}
"""The default model: Qwen2-shaped, random weights (no download), small enough for a CPU in CI."""
TINY = {**SMALL, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 1,
        "num_key_value_heads": 1, "max_position_embeddings": 1 << 22}
"""The model ``pycert engine replay`` drives: the cache's decisions (which blocks it keeps, which it
serves) do not depend on the weights or the width, only on every layer being full attention, and a
trace replays millions of tokens; this shape prefills about five times faster than :data:`SMALL` on
the project's CPUs (docs/engine-measured.md). Its positions reach the longest prompt a replay allows."""


def _small_model(seed: int, shape: dict[str, int], positions: int | None) -> tuple[torch.nn.Module, str]:
    # rotary positions hold no weights, so the same seed gives the same model at any number of positions
    s = shape if positions is None else {**shape, "max_position_embeddings": positions}
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(Qwen2Config(**s))
    layers, heads = s["num_hidden_layers"], s["num_attention_heads"]
    more = "" if s["max_position_embeddings"] == shape["max_position_embeddings"] else f", {positions} positions"
    return model, (f"random-weight Qwen2 ({layers} layer{'s' if layers != 1 else ''}, hidden {s['hidden_size']}, "
                   f"{heads} head{'s' if heads != 1 else ''} / {s['num_key_value_heads']} KV, vocab {s['vocab_size']}"
                   f"{more}, torch seed {seed})")


def _local_model(path: Path) -> tuple[torch.nn.Module, str]:
    if not (path / "config.json").is_file():
        raise InputError("no config.json: --model names a local checkpoint directory (transformers layout)",
                         where=str(path))
    try:
        model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=torch.float32)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot load the checkpoint: {' '.join(str(exc).split())[:300]}", where=str(path)) from None
    digest = hashlib.sha256((path / "config.json").read_bytes()).hexdigest()[:12]
    return model, f"local checkpoint {path.name} (config.json sha256 {digest}...)"


class TransformersEngine:
    """One continuous-batching manager over one model, with the cache tap of the module docstring."""

    name = LABELS["transformers"]
    salt_form = f"{SALT_TOKENS} prepended tokens from the salt's bytes"
    generated = GENERATED

    def __init__(self, *, model_dir: Path | None = None, device: str = "cpu", seed: int = 0, page_size: int = 256,
                 num_blocks: int = 32, max_batch_tokens: int = 2048, shape: dict[str, int] = SMALL,
                 max_positions: int | None = None, threads: int | None = None) -> None:
        if device == "cuda" and not torch.cuda.is_available():
            raise InputError(f"--device cuda: this torch ({torch.__version__}) sees no CUDA device", where="--device")
        if threads is not None:
            # torch's intra-op threads, for the whole process: on a loaded 2-core machine two threads that
            # wait on each other made a replay 12x slower than one (docs/engine-measured.md: measured)
            torch.set_num_threads(threads)
        self.version = f"transformers {transformers.__version__}, torch {torch.__version__}"
        self.device = device
        model, self.model = _local_model(model_dir) if model_dir else _small_model(seed, shape, max_positions)
        self.vocab = int(model.config.get_text_config().vocab_size)
        self.max_len = int(getattr(model.config.get_text_config(), "max_position_embeddings", 0) or 4096)
        self._model = model.to(device).eval()
        self._matched: dict[str, int] = {}
        self._waiting: dict[str, queue.Queue] = {}
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._count = 0
        generation = GenerationConfig(max_new_tokens=GENERATED, do_sample=False, eos_token_id=-1)
        config = ContinuousBatchingConfig(page_size=page_size, num_blocks=num_blocks, max_batch_tokens=max_batch_tokens,
                                          seed=seed)
        self._manager = self._model.init_continuous_batching(generation_config=generation,
                                                             continuous_batching_config=config)
        self._manager.start()
        deadline = time.monotonic() + RESULT_TIMEOUT_S
        while self._manager.batch_processor is None:
            if not self._manager.is_running() or time.monotonic() > deadline:
                raise InputError("the continuous-batching manager did not start", where="engine")
            time.sleep(0.01)
        self._cache = self._manager.batch_processor.cache
        self.page_size = min(a.tokens_per_page for a in self._cache.cache_allocators.values())
        self.num_blocks = int(self._cache.num_blocks)
        """Blocks of ``page_size`` tokens the engine's cache holds, as the engine counts them."""
        self.safety_margin = float(self._manager.batch_processor.scheduler.safety_margin)
        """The free fraction under which the scheduler evicts every cached block at once."""
        self.scheduler = type(self._manager.batch_processor.scheduler).__name__
        self.evicted_blocks = 0
        """Cached blocks the engine has evicted so far, as its own ledgers list them."""
        if not self._cache.use_prefix_sharing:
            self.close()
            raise InputError(f"{self.model}: this model's cache cannot share blocks (not every layer is full "
                             "attention), so there is no prefix cache to observe", where="engine")
        engine_match = self._cache.search_prefix_match

        def tap(request_id: str, prompt_ids: list[int]) -> int:
            matched = engine_match(request_id, prompt_ids)
            with self._lock:
                self._matched[request_id] = matched
            return matched

        self._cache.search_prefix_match = tap
        engine_evict = self._cache.evict_cached_blocks

        def evict() -> bool:
            # the engine's own ledgers, read before its eviction empties them
            cached = sum(len(a.ledger.cached_blocks) for a in self._cache.cache_allocators.values())
            evicted = engine_evict()
            with self._lock:
                self.evicted_blocks += cached if evicted else 0
            return evicted

        self._cache.evict_cached_blocks = evict
        self._router = threading.Thread(target=self._route, name="pycert-engine-router", daemon=True)
        self._router.start()

    def _tokens(self, request: EngineRequest) -> list[int]:
        if any(not 0 <= t < self.vocab for t in request.tokens):
            raise InputError(f"a prompt token id lies outside the model's vocabulary of {self.vocab}", where="engine")
        salt = salt_tokens(request.salt, self.vocab) if request.salt is not None else []
        return salt + list(request.tokens)

    def _submit(self, request: EngineRequest, max_new_tokens: int, streaming: bool) -> tuple[str, int, queue.Queue]:
        with self._lock:
            rid = f"pycert-{self._count}"
            self._count += 1
            outputs: queue.Queue = queue.Queue()
            self._waiting[rid] = outputs
        tokens = self._tokens(request)
        self._manager.add_request(tokens, request_id=rid, max_new_tokens=max_new_tokens, record_timestamps=True,
                                  eos_token_id=-1, streaming=streaming)
        return rid, len(tokens), outputs

    def _route(self) -> None:
        """The one reader of the engine's output queue: each output goes to its request's own queue, so
        that requests from many threads (the HTTP server's) never take each other's results."""
        while not self._closing.is_set():
            out = self._manager.get_result(timeout=0.2)
            if out is None:
                if not self._manager.is_running():
                    break
                continue
            with self._lock:
                waiting = self._waiting.get(out.request_id)
            if waiting is not None:
                waiting.put(out)
        with self._lock:
            for waiting in self._waiting.values():
                waiting.put(None)

    def _outputs(self, rid: str, outputs: queue.Queue) -> Iterator:
        """The request's outputs until it finishes, within :data:`RESULT_TIMEOUT_S`."""
        deadline = time.monotonic() + RESULT_TIMEOUT_S
        try:
            while True:
                try:
                    out = outputs.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    raise InputError(f"the engine did not answer request {rid} in {RESULT_TIMEOUT_S:.0f} s",
                                     where="engine") from None
                if out is None:
                    raise InputError("the engine's generation loop stopped", where="engine")
                if out.error:
                    raise InputError(f"request {rid} failed: {out.error}", where="engine")
                yield out
                if out.is_finished():
                    return
        finally:
            with self._lock:
                self._waiting.pop(rid, None)

    def _served(self, rid: str, engine_tokens: int, out) -> Served:  # noqa: ANN001 (transformers' GenerationOutput)
        with self._lock:
            matched = self._matched.pop(rid, None)
        if matched is None:
            raise InputError(f"the scheduler never looked request {rid} up in the prefix cache", where="engine")
        first = out.timestamps[0] if out.timestamps else out.lifespan[1]
        return Served(cached_tokens=matched, engine_tokens=engine_tokens, ttft_s=max(0.0, first - out.created_time),
                      generated=len(out.generated_tokens))

    def stream(self, request: EngineRequest, max_new_tokens: int = GENERATED) -> Iterator[list[int] | Served]:
        """The request's new token ids as the engine generates them, then what it served."""
        rid, n, outputs = self._submit(request, max_new_tokens, streaming=True)
        seen, last = 0, None
        for out in self._outputs(rid, outputs):
            if len(out.generated_tokens) > seen:
                yield list(out.generated_tokens[seen:])
                seen = len(out.generated_tokens)
            last = out
        yield self._served(rid, n, last)

    def serve(self, request: EngineRequest) -> Served:
        return self.serve_many([request])[0]

    def serve_many(self, requests: Sequence[EngineRequest]) -> list[Served]:
        submitted = [self._submit(r, GENERATED, streaming=False) for r in requests]
        return [self._served(rid, n, list(self._outputs(rid, outputs))[-1]) for rid, n, outputs in submitted]

    def empty_cache(self) -> None:
        # only between requests, with the generation loop paused: the engine's own reset, ledgers included
        with self._manager.pause():
            self._cache.reset()

    def close(self) -> None:
        self._closing.set()
        if self._manager.is_running():
            self._manager.stop(block=True, timeout=60)
