"""The engines ``pycert engine replay`` (and a fleet's per-host replay) can drive, by name: each opened
as a :class:`pycert.leak.replay.PagedEngine` holding ``num_blocks`` blocks of ``block_tokens`` tokens.

- ``transformers``: transformers' continuous batching on a small random-weight model, in process
  (:mod:`pycert.leak.engines.transformers`; the ``leak`` extra).
- ``vllm``: vLLM's own v1 ``KVCacheManager``, no model, no GPU (:mod:`pycert.leak.engines.vllm`): in
  process where this Python imports ``vllm`` (a user's own, or the ``vllm`` extra's CPU build), else in
  the Python that :data:`VLLM_PYTHON` names (:mod:`pycert.leak.engines.worker`), which is how pycert's
  own test environment runs it: vLLM's transformers pin excludes the ``leak`` extra's.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from pycert.core.errors import InputError, ResourcesExhausted
from pycert.core.extras import install_hint

if TYPE_CHECKING:
    from pycert.leak.replay import PagedEngine

LABELS = {"transformers": "transformers continuous batching", "vllm": "vLLM KVCacheManager"}
"""Each engine's name as its replay log's header and certificate say it (``engine``)."""
ENDPOINT = "OpenAI-compatible endpoint"
"""The engine a replay through ``--endpoint`` names (:class:`pycert.leak.engines.openai.OpenAIEngine`):
pycert cannot run a server again, so it is not one of :data:`ENGINES`."""
ENGINES = tuple(LABELS)
"""The names :func:`open_engine` takes."""
VLLM_PYTHON = "PYCERT_VLLM_PYTHON"
"""The environment variable naming a Python whose environment has vLLM: when set, the ``vllm`` engine
runs there, in a child process, even where this Python imports vLLM too."""
MAX_BATCH_TOKENS = 512
"""Prompt tokens per forward pass of the transformers engine: transformers allocates its attention mask
for this many rows over the whole cache, so fewer rows keep memory down (docs/engine-measured.md: measured)."""
TORCH_THREADS = 1
"""torch's intra-op threads during a transformers replay: the replay's model is too small to gain from a
second one, and on a loaded machine two that wait on each other ran 12x slower (docs/engine-measured.md,
BENCHMARKS.md: measured)."""
BROKEN_TORCH_COMPANIONS = "pip uninstall torchvision torchaudio torchcodec"
"""What mends a vLLM that fails to import beside a CPU torch: PyPI's builds of these three are for
another torch (their native operators fail to load), and the cache manager needs none of them."""


def engine_key(label: str) -> str:
    """The :data:`ENGINES` name of the engine a log's header calls ``label``."""
    if label == ENDPOINT:
        raise InputError("a replay through a server: pycert cannot run the server again (replay the trace through it "
                         "with --endpoint)", where="header.engine")
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
    if engine == "vllm" and (python := os.environ.get(VLLM_PYTHON)):
        from pycert.leak.engines.worker import EngineProcess  # subprocess and select: only for this engine

        return EngineProcess(python, engine, num_blocks, block_tokens, seed)
    return open_here(engine, num_blocks, block_tokens, seed)


@contextlib.contextmanager
def fresh_engines(engine: str, block_tokens: int, seed: int) -> Iterator[Callable[[int], PagedEngine]]:
    """A maker of engines as :func:`open_engine` opens them, each fresh (an empty cache of the blocks it is
    asked for), the one before it dropped: in one child process for them all where one runs the engine (its
    import paid once), else in this process (whose imports Python keeps). A fleet's hosts are replayed so."""
    child: PagedEngine | None = None
    last: PagedEngine | None = None

    def fresh(num_blocks: int) -> PagedEngine:
        nonlocal child, last
        if child is not None:
            child.reopen(num_blocks, block_tokens, seed)  # type: ignore[attr-defined]
            return child
        if last is not None:
            last.close()  # type: ignore[attr-defined]
        last = open_engine(engine, num_blocks, block_tokens, seed)
        if hasattr(last, "reopen"):
            child = last
        return last

    try:
        yield fresh
    finally:
        if last is not None:
            last.close()  # type: ignore[attr-defined]


def open_here(engine: str, num_blocks: int, block_tokens: int, seed: int) -> PagedEngine:
    """:func:`open_engine` in this process."""
    try:
        if engine == "vllm":
            return _vllm(num_blocks, block_tokens)
        # imported here, not at the top: torch and transformers take 8-10 s to import on this machine,
        # which every other pycert command (and --help) would pay
        try:
            from pycert.leak.engines.transformers import TINY, TransformersEngine
        except ImportError as exc:
            raise InputError(f"the engine needs torch and transformers ({exc.name} is missing): "
                             f"{install_hint('leak')}", where="pycert engine replay") from None
        return TransformersEngine(seed=seed, page_size=block_tokens, num_blocks=num_blocks,
                                  max_batch_tokens=MAX_BATCH_TOKENS, shape=TINY, threads=TORCH_THREADS)
    except MemoryError as exc:
        raise ResourcesExhausted(f"the engine cannot allocate a cache of {num_blocks:,} blocks of {block_tokens} tokens "
                                 f"here: {' '.join(str(exc).split())[:200]}", where="engine") from None
    except (ValueError, RuntimeError, OSError) as exc:
        raise InputError(f"the engine did not start: {' '.join(str(exc).split())[:300]}", where="engine") from None


def _vllm(num_blocks: int, block_tokens: int) -> PagedEngine:
    if importlib.util.find_spec("vllm") is None:
        raise InputError(f"the vllm engine needs vLLM: pip install 'pycert-kv[vllm]' (a CPU build), or set {VLLM_PYTHON} "
                         "to the Python of an environment that has it (pycert's test environment: .venv-vllm/bin/python)",
                         where="--engine vllm")
    # vLLM logs to stdout by default, which would mix its lines into --json output
    os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    try:
        # imported here: vLLM takes 12-18 s to import on this machine
        from pycert.leak.engines.vllm import VllmEngine
    except ImportError as exc:
        raise InputError(f"vLLM did not import ({exc.name or exc} is missing)", where="--engine vllm") from None
    except (RuntimeError, OSError) as exc:  # a native operator of a torch companion built for another torch
        raise InputError(f"vLLM did not import: {' '.join(str(exc).split())[:200]} (where torchvision, torchaudio or "
                         f"torchcodec are built for another torch: {BROKEN_TORCH_COMPANIONS}; the engine needs none)",
                         where="--engine vllm") from None
    return VllmEngine(num_blocks, block_tokens)
