"""Each host's sub-trace replayed on an engine's own cache code (``pycert prove fleet --engine``): one engine a
host, each starting empty with a cache of ``C`` blocks, the host's requests sent one at a time in trace order
(:func:`pycert.leak.replay.replay`, the same replay as ``pycert engine replay``), one replay log a host. The
logs are the certificate's observed inputs; :func:`pycert.families.fleet.derive.engine_figures` reads them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pycert.core.errors import InputError, ResourcesExhausted
from pycert.families.fleet import EngineSetting
from pycert.families.fleet.derive import Split, host_requests
from pycert.leak import replay as replaylog

ENGINES = ("transformers",)
"""The engines ``--engine`` takes."""
SEED = 0
"""The replay's seed (the block tokens' and the transformers model's weights): recorded in the certificate."""
MAX_BATCH_TOKENS = 512
TORCH_THREADS = 1
"""The transformers engine as ``pycert engine replay`` runs it (DEVELOPERS.md: measured there)."""


def open_engine(engine: str, num_blocks: int, block_tokens: int, seed: int) -> replaylog.PagedEngine:
    """Engine ``engine`` with a cache of ``num_blocks`` blocks of ``block_tokens`` tokens, started empty."""
    if engine not in ENGINES:
        raise InputError(f"no engine {engine!r}: one of {', '.join(ENGINES)}", where="--engine")
    try:
        # imported here: torch and transformers take 8-10 s to import, which no other prove pays
        from pycert.leak.engines.transformers import TINY, TransformersEngine
    except ImportError as exc:
        raise InputError(f"the engine needs torch and transformers ({exc.name} is missing): pip install "
                         "'pycert-kv[leak]'", where="--engine") from None
    try:
        return TransformersEngine(seed=seed, page_size=block_tokens, num_blocks=num_blocks,
                                  max_batch_tokens=MAX_BATCH_TOKENS, shape=TINY, threads=TORCH_THREADS)
    except MemoryError as exc:
        raise ResourcesExhausted(f"the engine cannot allocate a cache of {num_blocks:,} blocks of {block_tokens} tokens "
                                 f"here: {' '.join(str(exc).split())[:200]}", where="--engine") from None
    except (ValueError, RuntimeError, OSError) as exc:
        raise InputError(f"the engine did not start: {' '.join(str(exc).split())[:300]}", where="--engine") from None


def replay_hosts(engine: str, s: Split, capacity: int, block_tokens: int,
                 progress: Callable[[str], None]) -> tuple[EngineSetting, list[bytes]]:
    """Every host that receives a reference, replayed on a fresh engine: the engine's setting (the same for all)
    and each host's log, in host order."""
    logs, setting = [], None
    for k, sub in enumerate(s.subs):
        if not sub.n_refs:
            continue
        requests = host_requests(sub)  # each shorter than the capacity: the producer refused a longer one
        opened = open_engine(engine, capacity, block_tokens, SEED)
        progress(f"host {k}: {engine} ({opened.version}), {len(requests):,} requests one at a time")
        try:
            header = replaylog.engine_header(opened, seed=SEED, num_blocks=capacity, block_tokens=block_tokens,
                                             trace=Path(s.trace.name).name, trace_sha256=s.trace.sha256,
                                             requests=len(requests), refs=sub.n_refs)
            log = replaylog.replay(opened, requests, header, lambda m, k=k: progress(f"  host {k}: {m}"))
        finally:
            opened.close()  # type: ignore[attr-defined]
        h = log.header
        setting = setting or EngineSetting(engine=h.engine, engine_version=h.engine_version, model=h.model,
                                           device=h.device, seed=h.seed, block_tokens=h.block_tokens)
        logs.append(replaylog.render(log))
    if setting is None:
        raise InputError("no host receives a reference: nothing to replay", where="--engine")
    return setting, logs
