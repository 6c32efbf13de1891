"""The one-pass OPT curve against per-capacity Belady, an exhaustive optimum and a textbook OPT stack."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pycert.analysis.cachesim import COLD, belady_hits, lru_hit_curve
from pycert.analysis.optcurve import block_ids, opt_hit_curve, opt_stack_distances
from pycert.analysis.plot import log_capacities
from pycert.data import synthetic
from pycert.data.traces import read_trace

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "traces" / "mooncake-fast25"
MOONCAKE = [SHARED / "conversation_trace.jsonl", SHARED / "synthetic_trace.jsonl"]


def optimal_hits(refs: list[int], capacity: int) -> int:
    """Exhaustive search over every eviction choice (demand paging, no bypass): the true optimum."""
    @functools.cache
    def best(i: int, cache: frozenset[int]) -> int:
        if i == len(refs):
            return 0
        x = refs[i]
        if x in cache:
            return 1 + best(i + 1, cache)
        if len(cache) < capacity:
            return best(i + 1, cache | {x})
        return max(best(i + 1, (cache - {v}) | {x}) for v in cache)

    return 0 if capacity == 0 else best(0, frozenset())


def mattson_opt_distances(refs: list[int]) -> list[int]:
    """Mattson's OPT priority stack, O(V) per access: the referenced block goes on top and the old
    top is carried down, leaving at each position whichever of the two is used again sooner."""
    n = len(refs)
    next_use, later = [0] * n, {}
    for i in range(n - 1, -1, -1):
        next_use[i] = later.get(refs[i], n + i)  # never again: later than any real use
        later[refs[i]] = i
    stack: list[int] = []
    prio: dict[int, int] = {}
    out = []
    for i, x in enumerate(refs):
        if x in stack:
            pos = stack.index(x)
            out.append(pos + 1)
        else:
            stack.append(x)
            pos = len(stack) - 1
            out.append(COLD)
        if pos > 0:
            carried = stack[0]
            for k in range(1, pos):
                if prio[stack[k]] > prio[carried]:
                    stack[k], carried = carried, stack[k]
            stack[pos] = carried
        stack[0] = x
        prio[x] = next_use[i]
    return out


def critical_times_distances(refs: list[int]) -> list[int]:
    """The algorithm of pycert.analysis.optcurve without its tree, O(n) per access, asserting the imbalance
    invariant its search relies on: H(t + 1) >= 0 at every last-use time t."""
    n = len(refs)
    w = [0] * (n + 1)  # (a critical time at t) - (a last use at t)
    last_use: dict[int, int] = {}
    tau: dict[int, int] = {}  # capacity label -> critical time
    out = []
    for now, x in enumerate(refs):
        suffix = [0] * (now + 1)  # suffix[t] = H(t + 1) = sum of w after t
        for t in range(now - 1, -1, -1):
            suffix[t] = suffix[t + 1] + w[t + 1]
        assert all(suffix[t] >= 0 for t in last_use.values())
        p = last_use.get(x)
        if p is None:
            if last_use:  # label 0 answers "used just before" and is never searched
                tau[len(last_use)] = now
                w[now] += 1
            out.append(COLD)
        elif p == now - 1:
            out.append(1)
        else:
            tz = min(t for t in last_use.values() if p < t and suffix[t] == 0)
            d = min(label for label, t in tau.items() if t <= tz)
            out.append(d + 1)
            w[tau[d]] -= 1
            tau[d] = now
            w[now] += 1
        if p is not None:
            w[p] += 1
        w[now] -= 1
        last_use[x] = now
    return out


@settings(deadline=None, max_examples=300)
@given(st.lists(st.integers(0, 8), max_size=60))
def test_the_tree_computes_the_critical_time_recurrence(refs: list[int]) -> None:
    assert opt_stack_distances(refs).tolist() == critical_times_distances(refs) == mattson_opt_distances(refs)


@settings(deadline=None, max_examples=300)
@given(st.lists(st.integers(0, 5), max_size=13))
def test_equals_the_exhaustive_optimum_at_every_capacity(refs: list[int]) -> None:
    curve = opt_hit_curve(refs)
    for c in range(len(set(refs)) + 2):
        assert curve.hits(c) == optimal_hits(refs, c) == belady_hits(refs, c), c


@settings(deadline=None, max_examples=300)
@given(st.lists(st.integers(0, 40), max_size=400))
def test_equals_mattson_opt_stack_and_per_capacity_belady(refs: list[int]) -> None:
    d = opt_stack_distances(refs)
    assert d.tolist() == mattson_opt_distances(refs)
    curve, lru = opt_hit_curve(refs), lru_hit_curve(refs)
    assert curve.refs == len(refs) and curve.distinct == len(set(refs))
    for c in range(len(set(refs)) + 2):
        assert curve.hits(c) == belady_hits(refs, c), c
        assert lru.hits(c) <= curve.hits(c)  # nothing beats OPT
    assert curve.hits(curve.distinct) == len(refs) - curve.distinct  # everything fits: cold misses only


@settings(deadline=None, max_examples=100)
@given(st.lists(st.integers(0, 12), max_size=200), st.sampled_from([1, -1, 2**40 + 7, -(2**50)]))
def test_block_names_do_not_matter(refs: list[int], scale: int) -> None:
    renamed = [x * scale + 3 for x in refs]  # negative and huge ids take the renumbering path
    assert opt_stack_distances(renamed).tolist() == opt_stack_distances(refs).tolist()


def test_small_id_fast_path_and_renumbering() -> None:
    arr = np.array([5, 0, 5, 3], dtype=np.int64)  # ids below 2 * refs index a table directly
    ids, n_ids = block_ids(arr)
    assert ids is arr and n_ids == 6
    ids, n_ids = block_ids(np.array([10**12, -4, 10**12], dtype=np.int64))
    assert ids.tolist() == [1, 0, 1] and n_ids == 2
    assert opt_stack_distances([]).tolist() == [] and opt_hit_curve([]).hits(5) == 0


def test_many_compactions_stay_exact() -> None:
    # 40 blocks give a tree of 128 time positions, so 20,000 references compact it hundreds of times
    rng = np.random.default_rng(4)
    refs = np.concatenate([rng.integers(0, 40, size=10_000), rng.zipf(1.3, size=10_000) % 40])
    curve = opt_hit_curve(refs)
    for c in range(42):
        assert curve.hits(c) == belady_hits(refs, c), c


def test_embedded_synthetic_trace_at_every_capacity() -> None:
    refs = synthetic.default_trace().refs
    curve = opt_hit_curve(refs)
    assert curve.hits(curve.max_distance) == len(refs) - curve.distinct
    assert curve.hits(curve.max_distance - 1) < curve.hits(curve.max_distance)
    for c in range(curve.max_distance + 2):
        assert curve.hits(c) == belady_hits(refs, c), c


@pytest.mark.slow
@pytest.mark.parametrize("path", MOONCAKE, ids=lambda p: p.stem)
def test_mooncake_traces_equal_per_capacity_belady(path: Path) -> None:
    if not path.exists():
        pytest.skip(f"Mooncake trace absent: {path}")
    refs = read_trace(path).refs
    curve = opt_hit_curve(refs)
    # the whole trace at log-spaced capacities, every one up to 64 and a few seeded random ones
    rng = np.random.default_rng(0)
    caps = sorted(set(log_capacities(curve.max_distance + 1, 14)) | set(range(65))
                  | set(rng.integers(1, curve.max_distance + 1, size=4).tolist()))
    for c in caps:
        assert curve.hits(c) == belady_hits(refs, c), c
    # and every capacity on windows of the trace (a window is a trace of its own)
    for start in (0, len(refs) // 2):
        window = refs[start:start + 2_500]
        wcurve = opt_hit_curve(window)
        for c in range(wcurve.max_distance + 2):
            assert wcurve.hits(c) == belady_hits(window, c), (start, c)
