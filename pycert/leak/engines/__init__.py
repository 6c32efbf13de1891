"""The engines a leak run drives, behind one small interface (:class:`Engine`).

- :mod:`~pycert.leak.engines.transformers`: transformers' continuous batching, in process (the
  default; needs the ``leak`` extra: torch and transformers);
- :mod:`~pycert.leak.engines.openai`: any OpenAI-compatible completions endpoint that takes vLLM's
  ``cache_salt`` and reports ``usage.prompt_tokens_details.cached_tokens`` (standard library only).

An engine reports, for every request, what *it* says it served from cache; nothing here infers a
hit from timing or from the prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pycert.core.errors import InputError
from pycert.core.extras import install_hint
from pycert.leak.admission import EngineRequest


@dataclass(frozen=True)
class Served:
    """The engine's answer about one request."""

    cached_tokens: int
    """Prompt tokens the engine served from its cache, as the engine reports it."""
    engine_tokens: int
    """Prompt tokens the engine received (the prompt, plus salt tokens where the salt is prepended)."""
    ttft_s: float
    """Time from submission to the first generated token, by the engine's clock."""
    generated: int
    """Tokens generated."""


class Engine(Protocol):
    name: str
    version: str
    model: str
    device: str
    page_size: int | None
    salt_form: str
    vocab: int
    """Token ids of generated prompts are drawn below this."""

    def serve(self, request: EngineRequest) -> Served:
        """Send one request and wait for it."""

    def serve_many(self, requests: Sequence[EngineRequest]) -> list[Served]:
        """Send all at once (the engine batches them as it likes) and wait for every one."""

    def empty_cache(self) -> None:
        """Drop every cached block, so the next request finds nothing to reuse."""

    def close(self) -> None: ...


def transformers_engine(where: str, **settings: Any) -> Engine:
    """The in-process engine (:class:`pycert.leak.engines.transformers.TransformersEngine`), or a one-line
    :class:`InputError` naming the missing package."""
    try:
        # imported here, not at the top: torch and transformers take 8-10 s to import on this machine,
        # which every other pycert command (and --help) would pay
        from pycert.leak.engines.transformers import TransformersEngine
    except ImportError as exc:
        raise InputError(f"the in-process engine needs torch and transformers ({exc.name} is missing): "
                         f"{install_hint('leak')}", where=where) from None
    return TransformersEngine(**settings)
