"""The engines ``pycert engine replay`` (and a fleet's per-host replay) can drive, by name: each opened
as a :class:`pycert.leak.replay.PagedEngine` holding ``num_blocks`` blocks of ``block_tokens`` tokens.

- ``transformers``: transformers' continuous batching on a small random-weight model, in process
  (:mod:`pycert.leak.engines.transformers`; the ``leak`` extra).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pycert.core.errors import InputError, ResourcesExhausted

if TYPE_CHECKING:
    from pycert.leak.replay import PagedEngine

LABELS = {"transformers": "transformers continuous batching"}
"""Each engine's name as its replay log's header and certificate say it (``engine``)."""
ENGINES = tuple(LABELS)
"""The names :func:`open_engine` takes."""
MAX_BATCH_TOKENS = 512
"""Prompt tokens per forward pass of the transformers engine: transformers allocates its attention mask
for this many rows over the whole cache, so fewer rows keep memory down (DEVELOPERS.md: measured)."""
TORCH_THREADS = 1
"""torch's intra-op threads during a transformers replay: the replay's model is too small to gain from a
second one, and on a loaded machine two that wait on each other ran 12x slower (DEVELOPERS.md,
BENCHMARKS.md: measured)."""


def engine_key(label: str) -> str:
    """The :data:`ENGINES` name of the engine a log's header calls ``label``."""
    if (key := next((k for k, v in LABELS.items() if v == label), None)) is None:
        raise InputError(f"a replay log of engine {label!r}, which pycert cannot run again (it runs "
                         f"{', '.join(LABELS.values())})", where="header.engine")
    return key


def open_engine(engine: str, num_blocks: int, block_tokens: int, seed: int) -> PagedEngine:
    """Engine ``engine`` (one of :data:`ENGINES`) with a cache of ``num_blocks`` blocks of ``block_tokens``
    tokens; ``seed`` seeds what the engine draws (the transformers model's weights). A missing package
    or an engine that does not start is an :class:`InputError` naming it; a cache that cannot be
    allocated, :class:`ResourcesExhausted`. The caller closes it."""
    if engine not in ENGINES:
        raise InputError(f"no engine {engine!r}: one of {', '.join(ENGINES)}", where="--engine")
    try:
        # imported here, not at the top: torch and transformers take 8-10 s to import on this machine,
        # which every other pycert command (and --help) would pay
        from pycert.leak.engines.transformers import TINY, TransformersEngine
    except ImportError as exc:
        raise InputError(f"the engine needs torch and transformers ({exc.name} is missing): pip install 'pycert-kv[leak]'",
                         where="pycert engine replay") from None
    try:
        return TransformersEngine(seed=seed, page_size=block_tokens, num_blocks=num_blocks,
                                  max_batch_tokens=MAX_BATCH_TOKENS, shape=TINY, threads=TORCH_THREADS)
    except MemoryError as exc:
        raise ResourcesExhausted(f"the engine cannot allocate a cache of {num_blocks:,} blocks of {block_tokens} tokens "
                                 f"here: {' '.join(str(exc).split())[:200]}", where="engine") from None
    except (ValueError, RuntimeError, OSError) as exc:
        raise InputError(f"the engine did not start: {' '.join(str(exc).split())[:300]}", where="engine") from None
