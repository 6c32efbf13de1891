"""Our LRU and Belady figures against libCacheSim's, exactly.

libCacheSim is fed through its own C trace reader: the references are written as an oracleGeneral
binary trace (uint32 time, uint64 id, uint32 size, int64 next-access time per request) with every
object of size 1, so ``cache_size`` counts blocks. The next-access times let its Belady see the
future. Its result is a miss ratio (a double); hits = refs - round(ratio * refs), and the test
checks that the rounding is unambiguous.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pycert.analysis.cachesim import belady_bypass_flags, belady_hits, lru_hit_curve
from pycert.analysis.optcurve import admission_hit_curve, opt_hit_curve
from pycert.data import synthetic
from pycert.data.traces import read_trace

lcs = pytest.importorskip("libcachesim", reason="libCacheSim (PyPI libcachesim, test extra) is not installed")

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "traces" / "mooncake-fast25"
ORACLE_GENERAL = np.dtype([("time", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])


def oracle_general(refs: np.ndarray, path: Path) -> Path:
    n = len(refs)
    nxt = np.full(n, n, dtype=np.int64)
    later: dict[int, int] = {}
    for i in range(n - 1, -1, -1):  # computed here, independently of pycert.analysis.cachesim
        x = int(refs[i])
        nxt[i] = later.get(x, n)
        later[x] = i
    rec = np.zeros(n, dtype=ORACLE_GENERAL)
    rec["time"] = np.arange(n)
    rec["id"] = refs
    rec["size"] = 1
    rec["next"] = np.where(nxt < n, nxt + 1, -1)  # libCacheSim counts virtual time from 1; -1: never again
    rec.tofile(path)
    return path


def lcs_hits(path: Path, n: int, cache: type, capacity: int) -> int:
    reader = lcs.TraceReader(str(path), lcs.TraceType.ORACLE_GENERAL_TRACE)
    # hashpower only sizes libCacheSim's hash table (default 2**24 buckets, 0.2 s to allocate each time)
    miss_ratio, _ = cache(cache_size=capacity, hashpower=16).process_trace(reader)
    misses = miss_ratio * n
    assert abs(misses - round(misses)) < 1e-6
    return n - round(misses)


def check(refs: np.ndarray, tmp_path: Path, lru_caps: list[int], belady_caps: list[int]) -> None:
    path = oracle_general(refs, tmp_path / "trace.oracleGeneral")
    curve = lru_hit_curve(refs)
    for c in lru_caps:
        assert curve.hits(c) == lcs_hits(path, len(refs), lcs.LRU, c), f"LRU at {c}"
    opt = opt_hit_curve(refs)
    for c in belady_caps:
        theirs = lcs_hits(path, len(refs), lcs.Belady, c)
        assert belady_hits(refs, c) == theirs, f"Belady at {c}"
        assert opt.hits(c) == theirs, f"one-pass OPT curve at {c}"


def test_reader_sees_unit_sizes(tmp_path: Path) -> None:
    refs = np.array([0, 2, 0, 0, 5, 0], dtype=np.int64)
    path = oracle_general(refs, tmp_path / "t.oracleGeneral")
    reqs = list(lcs.TraceReader(str(path), lcs.TraceType.ORACLE_GENERAL_TRACE))
    assert [(r.obj_id, r.obj_size) for r in reqs] == [(0, 1), (2, 1), (0, 1), (0, 1), (5, 1), (0, 1)]
    # capacity 1: only the back-to-back reuse hits; capacity 2: three hits
    assert lcs_hits(path, 6, lcs.LRU, 1) == 1 == lru_hit_curve(refs).hits(1)
    assert lcs_hits(path, 6, lcs.LRU, 2) == 3 == lru_hit_curve(refs).hits(2)


def test_agreement_on_random_traces(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    for _ in range(20):
        refs = rng.integers(0, rng.integers(2, 60), size=int(rng.integers(1, 400)), dtype=np.int64)
        check(refs, tmp_path, [1, 2, 3, 5, 8, 13, 40], [1, 2, 3, 8])


def test_agreement_on_the_embedded_synthetic_trace(tmp_path: Path) -> None:
    refs = synthetic.default_trace().refs
    check(refs, tmp_path, [1, 2, 4, 16, 50, 64, 100, 256, 500, 1024, 5000], [4, 64, 256])


@pytest.mark.skipif(not (SHARED / "conversation_trace.jsonl").exists(), reason=f"Mooncake traces absent: {SHARED}")
def test_agreement_on_the_conversation_trace(tmp_path: Path) -> None:
    refs = read_trace(SHARED / "conversation_trace.jsonl").refs
    check(refs, tmp_path, [1, 128, 1024, 4096, 10_000, 65_536, 200_000], [16, 1024, 4096])


@pytest.mark.skipif(not (SHARED / "synthetic_trace.jsonl").exists(), reason=f"Mooncake traces absent: {SHARED}")
def test_agreement_on_the_mooncake_synthetic_trace(tmp_path: Path) -> None:
    refs = read_trace(SHARED / "synthetic_trace.jsonl").refs
    check(refs, tmp_path, [16, 512, 8192, 50_000], [64, 512, 4096])


def test_belady_with_bypass_is_libcachesims_belady_with_a_fresh_block_after_every_reference(tmp_path: Path) -> None:
    """libCacheSim has no Belady with bypass; a cache of C blocks that may leave a missed block out is a cache
    of C + 1 blocks that may not, on the trace with a fresh block after every reference (the fresh block
    holds the slot a declined block does not take). libCacheSim's Belady there, pycert's bypass simulation
    and its stack distances agree."""
    rng = np.random.default_rng(37)
    for _ in range(20):
        refs = rng.integers(0, rng.integers(2, 60), size=int(rng.integers(1, 300)), dtype=np.int64)
        mixed = np.empty(2 * len(refs), dtype=np.int64)
        mixed[0::2], mixed[1::2] = refs, refs.max() + 1 + np.arange(len(refs))
        path = oracle_general(mixed, tmp_path / "mixed.oracleGeneral")
        for c in (1, 2, 3, 8):
            theirs = lcs_hits(path, len(mixed), lcs.Belady, c + 1)
            assert int(belady_bypass_flags(refs, c).sum()) == theirs == admission_hit_curve(refs).hits(c), f"at {c}"
