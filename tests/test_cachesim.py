"""Exact cache figures: stack distances, the all-capacity LRU curve, Belady/MIN, unbounded, stats."""

from __future__ import annotations

import functools
import random
from collections import OrderedDict
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from pycert.analysis.cachesim import (
    COLD,
    belady_hits,
    lru_hit_curve,
    lru_hits,
    stack_distances,
    unbounded_hits,
)
from pycert.analysis.stats import trace_stats
from pycert.core.exact import Ratio
from pycert.data import synthetic
from pycert.data.traces import read_trace

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "traces" / "mooncake-fast25"
CONVERSATION = SHARED / "conversation_trace.jsonl"


def naive_distances(refs: list[int]) -> list[int]:
    """The textbook LRU stack: distance = 1 + depth of the block in the stack."""
    stack: list[int] = []
    out = []
    for x in refs:
        if x in stack:
            k = stack.index(x)
            out.append(k + 1)
            stack.pop(k)
        else:
            out.append(COLD)
        stack.insert(0, x)
    return out


def simulate_lru(refs: list[int], capacity: int) -> int:
    cache: OrderedDict[int, None] = OrderedDict()
    hits = 0
    for x in refs:
        if x in cache:
            hits += 1
            cache.move_to_end(x)
        elif capacity > 0:
            if len(cache) >= capacity:
                cache.popitem(last=False)
            cache[x] = None
    return hits


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
        return max(best(i + 1, (cache - {y}) | {x}) for y in cache)
    return best(0, frozenset()) if capacity > 0 else 0


def random_traces(seed: int, count: int, max_len: int, max_id: int) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randint(0, rng.randint(0, max_id)) for _ in range(rng.randint(0, max_len))] for _ in range(count)]


def test_stack_distances_match_the_textbook_stack() -> None:
    for refs in random_traces(1, 400, 80, 20):
        assert stack_distances(refs).tolist() == naive_distances(refs), refs


def test_stack_distances_on_large_sparse_ids() -> None:
    rng = random.Random(7)
    pool = [rng.randrange(1 << 62) for _ in range(300)]
    refs = [rng.choice(pool) for _ in range(3000)]
    assert stack_distances(refs).tolist() == naive_distances(refs)


def test_lru_curve_matches_simulation_at_every_capacity() -> None:
    for refs in random_traces(2, 60, 120, 30):
        curve = lru_hit_curve(refs)
        for c in range(0, len(set(refs)) + 3):
            assert lru_hits(curve, c) == simulate_lru(refs, c), (refs, c)


def test_lru_curve_on_the_synthetic_trace() -> None:
    refs = synthetic.default_trace(seed=2).refs.tolist()
    curve = lru_hit_curve(refs)
    assert curve.refs == len(refs) and curve.distinct == len(set(refs))
    for c in (1, 7, 64, 300, curve.max_distance, curve.max_distance + 10):
        assert curve.hits(c) == simulate_lru(refs, c)
    assert curve.hits(curve.max_distance) == unbounded_hits(refs) == len(refs) - len(set(refs))
    assert curve.hits(curve.max_distance - 1) < curve.hits(curve.max_distance)
    assert np.all(np.diff(curve.hits_at) >= 0)
    assert curve.hit_rate(64) == Fraction(curve.hits(64), len(refs))


def test_belady_is_optimal_on_small_traces() -> None:
    for refs in random_traces(3, 250, 13, 6):
        for c in (1, 2, 3):
            assert belady_hits(refs, c) == optimal_hits(refs, c), (refs, c)


def test_belady_bounds_on_the_synthetic_trace() -> None:
    refs = synthetic.default_trace(seed=1).refs
    curve = lru_hit_curve(refs)
    prev = 0
    for c in (1, 4, 16, 64, 256, 1024):
        b = belady_hits(refs, c)
        assert curve.hits(c) <= b <= unbounded_hits(refs)
        assert b >= prev  # MIN is a stack algorithm: more capacity never hurts
        prev = b
    assert belady_hits(refs, curve.distinct) == unbounded_hits(refs)  # everything fits: only cold misses
    assert belady_hits(refs, 0) == 0 and belady_hits([], 3) == 0


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        belady_hits([1, 2], -1)
    with pytest.raises(ValueError):
        lru_hit_curve([1, 2]).hits(-1)
    with pytest.raises(ValueError):
        stack_distances([[1, 2], [3, 4]])


def test_stats_and_ratio() -> None:
    t = synthetic.default_trace()
    st = trace_stats(t)
    assert st.refs == t.n_refs and st.distinct == len(set(t.refs.tolist()))
    assert st.cold_miss_floor.value == Fraction(st.distinct, st.refs)
    assert st.ceiling.value + st.cold_miss_floor.value == 1
    assert st.ceiling.decimal == float(st.ceiling.value)
    r = Ratio.of(Fraction(6, 4))
    assert (r.numerator, r.denominator, r.decimal) == (3, 2, 1.5)
    assert Ratio.model_validate_json(r.model_dump_json()) == r


@pytest.mark.skipif(not CONVERSATION.exists(), reason=f"Mooncake trace absent: {CONVERSATION}")
def test_conversation_trace_reference_lru_figures() -> None:
    curve = lru_hit_curve(read_trace(CONVERSATION).refs)
    assert (curve.refs, curve.distinct) == (288_500, 182_790)
    assert {c: round(float(curve.hit_rate(c)), 6) for c in (128, 1024, 10_000)} == {
        128: 0.040988, 1024: 0.044475, 10_000: 0.211165}


def test_offload_report_by_hand() -> None:
    from pycert.analysis.offload import offload_report
    from pycert.data.traces import trace_from_bytes

    lines = [[0, 1, 2], [0, 1, 3], [0, 1, 2]]
    data = "".join(f'{{"timestamp": 0, "input_length": {512 * len(ids)}, "output_length": 1, "hash_ids": {ids}}}\n'
                   for ids in lines).encode()
    # refs 0 1 2 0 1 3 0 1 2: stack distances -, -, -, 3, 3, -, 3, 3, 4
    rep = offload_report(trace_from_bytes(data, "mem"), capacity_tokens=1024, host_tokens=512, control_k=2)
    a = rep.primary
    assert (a.refs, a.distinct, a.capacity_blocks, a.host_blocks) == (9, 4, 2, 1)
    f = {k: v.value for k, v in a if isinstance(v, Ratio)}
    assert f["working_set_over_capacity"] == 2
    assert f["cold_miss_floor"] == Fraction(4, 9) and f["ceiling"] == Fraction(5, 9)
    assert f["gpu_only_hit_rate"] == 0  # LRU with 2 blocks never keeps the block that returns
    assert f["gpu_only_belady_hit_rate"] == Fraction(2, 9)
    assert f["host_backed_hit_rate"] == Fraction(4, 9)  # exclusive LRU over 2 + 1 blocks
    assert f["host_load_frac"] == Fraction(4, 9)
    assert f["headroom_pp"] == Fraction(500, 9)
    assert f["gpu_share_of_ceiling"] == 0
    # control: blocks of 2 -> A B A C A B; 1024 tokens = 1 block, host 512 tokens = 0 blocks
    c = rep.control
    assert (rep.control_k, c.granularity, c.block_tokens, c.refs, c.distinct, c.capacity_blocks, c.host_blocks) == (
        2, 2, 1024, 6, 3, 1, 0)
    assert c.gpu_only_hit_rate.value == 0 == c.host_backed_hit_rate.value
    assert c.headroom_pp.value == 50
    unbounded = offload_report(trace_from_bytes(data, "mem"), capacity_tokens=1024, control_k=1)
    assert unbounded.control is None and unbounded.primary.host_backed_hit_rate.value == Fraction(5, 9)
