"""Each host's sub-trace replayed on an engine's own cache code (``pycert prove fleet --engine``): one engine a
host, each starting empty with a cache of ``C`` blocks (one child process for them all, where the engine runs in
one: :func:`pycert.leak.engines.paged.fresh_engines`), the host's requests sent one at a time in trace order
(:func:`pycert.leak.replay.replay`, the same replay as ``pycert engine replay``), one replay log a host. The
logs are the certificate's observed inputs; :func:`pycert.families.fleet.derive.engine_figures` reads them. The
engines are ``pycert engine replay``'s (:mod:`pycert.leak.engines.paged`), opened by name."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pycert.core.errors import InputError
from pycert.families.fleet import EngineSetting
from pycert.families.fleet.derive import Split, host_requests
from pycert.leak import replay as replaylog
from pycert.leak.engines.paged import fresh_engines

if TYPE_CHECKING:
    from pycert.leak.replay import PagedEngine

SEED = 0
"""The replay's seed (the block tokens' and the transformers model's weights): recorded in the certificate."""


def engines(engine: str, block_tokens: int) -> contextlib.AbstractContextManager[Callable[[int], PagedEngine]]:
    """The maker of fresh engines every host of a run is replayed on (one child process for the run's every
    certificate, where the engine runs in one)."""
    return fresh_engines(engine, block_tokens, SEED)


def replay_hosts(fresh: Callable[[int], PagedEngine], s: Split, capacity: int, block_tokens: int,
                 progress: Callable[[str], None]) -> tuple[EngineSetting, list[bytes]]:
    """Every host that receives a reference, replayed on a fresh engine of ``capacity`` blocks (from
    :func:`engines`): the engine's setting (the same for all) and each host's log, in host order."""
    logs, setting = [], None
    for k, sub in enumerate(s.subs):
        if not sub.n_refs:
            continue
        requests = host_requests(sub)  # each shorter than the capacity: the producer refused a longer one
        opened = fresh(capacity)
        progress(f"host {k}: {opened.name} ({opened.version}), a fresh cache, {len(requests):,} requests one at a time")
        header = replaylog.engine_header(opened, seed=SEED, num_blocks=capacity, block_tokens=block_tokens,
                                         trace=Path(s.trace.name).name, trace_sha256=s.trace.sha256,
                                         requests=len(requests), refs=sub.n_refs)
        log = replaylog.replay(opened, requests, header, lambda m, k=k: progress(f"  host {k}: {m}"))
        h = log.header
        setting = setting or EngineSetting(engine=h.engine, engine_version=h.engine_version, model=h.model,
                                           device=h.device, seed=h.seed, block_tokens=h.block_tokens)
        logs.append(replaylog.render(log))
    if setting is None:
        raise InputError("no host receives a reference: nothing to replay", where="--engine")
    return setting, logs
