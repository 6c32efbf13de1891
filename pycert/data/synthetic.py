"""A seeded generator of Mooncake-format traces: shared system prompts and multi-turn sessions.

The model, chosen to give the two kinds of reuse the real traces show:

- A few shared **system prompts** (prefixes of 2-16 blocks) with Zipf-like popularity; every
  request of a session starts with its session's prompt, so popular prefixes are reused across
  sessions.
- **Sessions** arrive as a Poisson process. Each turn sends the prompt, the whole conversation so
  far (earlier questions and answers, as blocks) and a new question of 1-8 fresh blocks; the answer
  becomes 0-2 more blocks of history. After each turn the session continues with probability
  ``1 - 1/mean_turns`` after an exponential think time, until its context would exceed
  ``max_context_blocks``. Sessions interleave, so reuse distances spread out as in a real server.

Block ids are handed out in order of first use, as in the released traces, and every line satisfies
``len(hash_ids) == ceil(input_length / 512)``. The same arguments always give the same trace
(``random.Random(seed)`` only).
"""

from __future__ import annotations

import heapq
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pycert.core.files import atomic_write
from pycert.data.traces import MOONCAKE_BLOCK_TOKENS, Trace, trace_from_bytes

DEFAULT_REQUESTS = 250
"""About five thousand block references (ceiling about 0.75) with seed 0: small enough for every
figure to be instant, large enough to show prefix and session reuse."""


def generate(seed: int, requests: int = DEFAULT_REQUESTS, **options: Any) -> list[dict]:
    """``requests`` Mooncake records (dicts with timestamp, input_length, output_length, hash_ids)."""
    return list(records(seed, requests, **options))


def records(seed: int, requests: int = DEFAULT_REQUESTS, *, system_prompts: int = 12, mean_turns: float = 2.5,
            session_gap_ms: float = 2_000.0, think_ms: float = 20_000.0,
            max_context_blocks: int = 64) -> Iterator[dict]:
    """The records of :func:`generate`, one at a time: memory stays bounded by the live sessions, so a
    trace of 10^8 references streams to its file."""
    if requests < 0 or system_prompts < 1 or mean_turns < 1 or max_context_blocks < 20:
        raise ValueError("need requests >= 0, system_prompts >= 1, mean_turns >= 1, max_context_blocks >= 20")
    rng = random.Random(seed)
    next_id = 0

    def fresh(k: int) -> list[int]:
        nonlocal next_id
        next_id += k
        return list(range(next_id - k, next_id))

    prompts: list[list[int] | None] = [None] * system_prompts  # created on first use: ids in first-use order
    prompt_len = [rng.randint(2, 16) for _ in range(system_prompts)]
    weights = [1.0 / (r + 1) for r in range(system_prompts)]
    # session -> (prompt index, conversation blocks so far, blocks of the last answer). The answer's
    # ids are handed out when the next turn sends it, so ids stay in first-use order.
    history: dict[int, tuple[int, list[int], int]] = {}
    # Events: (time ms, sequence, session or -1 for "a new session arrives").
    events: list[tuple[float, int, int]] = [(0.0, 0, -1)]
    seq = n_sessions = made = 0
    while made < requests:
        now, _, session = heapq.heappop(events)
        seq += 1
        if session < 0:
            session, n_sessions = n_sessions, n_sessions + 1
            p = rng.choices(range(system_prompts), weights)[0]
            history[session] = (p, [], 0)
            heapq.heappush(events, (now + rng.expovariate(1.0 / session_gap_ms), seq, -1))
        p, conversation, answered = history[session]
        if prompts[p] is None:
            prompts[p] = fresh(prompt_len[p])
        blocks = prompts[p] + conversation + fresh(answered) + fresh(rng.randint(1, 8))
        output_length = rng.randint(1, 2 * MOONCAKE_BLOCK_TOKENS)
        made += 1
        yield {
            "timestamp": int(now),
            "input_length": (len(blocks) - 1) * MOONCAKE_BLOCK_TOKENS + rng.randint(1, MOONCAKE_BLOCK_TOKENS),
            "output_length": output_length,
            "hash_ids": blocks,
        }
        answer = output_length // MOONCAKE_BLOCK_TOKENS
        conversation = blocks[len(prompts[p]):]
        if rng.random() < 1 - 1 / mean_turns and len(blocks) + answer + 8 <= max_context_blocks:
            history[session] = (p, conversation, answer)
            heapq.heappush(events, (now + rng.expovariate(1.0 / think_ms), seq, session))
        else:
            del history[session]


def to_jsonl(records: list[dict]) -> bytes:
    """The records as Mooncake JSONL bytes (the released files' separators, one record a line)."""
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def write_trace(path: Path, seed: int = 0, requests: int = DEFAULT_REQUESTS, **options: Any) -> Path:
    """Write ``generate(seed, requests, **options)`` to ``path`` as Mooncake JSONL (atomically: an
    interrupted run leaves the old file or none, never half a trace)."""

    path = Path(path)
    atomic_write(path, ((json.dumps(r) + "\n").encode() for r in records(seed, requests, **options)))
    return path


def default_trace(seed: int = 0, requests: int = DEFAULT_REQUESTS, block_tokens: int | None = None) -> Trace:
    """The embedded trace used when no trace file is given, parsed by the same reader as a file
    (its sha256 is that of the JSONL bytes :func:`write_trace` would write), ``--block-tokens`` too."""
    return trace_from_bytes(to_jsonl(generate(seed, requests)), name=f"synthetic(seed={seed}, requests={requests})",
                            fmt="mooncake", block_tokens=block_tokens)
