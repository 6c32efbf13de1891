"""The trace-instance emitter: encoding round trips, validation, and real kernel checks of a window."""

from __future__ import annotations

import hashlib
import random
import re
from pathlib import Path

import numpy as np
import pytest

from pycert import kernel, lean_trace as lt
from pycert.errors import InputError
from tests.conftest import SHARED_TRACES, nonce

SHA = hashlib.sha256(b"test").hexdigest()


def dense_trace(n: int, seed: int) -> list[int]:
    """Ids in first-occurrence order, with reuse skewed towards a few hot ids (like Mooncake's)."""
    rng = random.Random(seed)
    refs: list[int] = []
    k = 0
    for _ in range(n):
        if k and rng.random() < 0.4:
            refs.append(rng.choice([0, 0, 0, rng.randrange(k)]))
        else:
            refs.append(k)
            k += 1
    return refs


@pytest.mark.parametrize("seed", range(5))
def test_encode_decode_round_trip_any_ids(seed: int) -> None:
    rng = random.Random(seed)
    refs = [rng.randrange(1 << rng.randrange(1, 40)) for _ in range(300)]
    m = rng.randrange(50)
    w, d, m_after = lt.encode_chunk(refs, m)
    assert lt.decode_chunk(len(refs), w, m, d) == refs
    nxt = m
    for x in refs:
        nxt += x == nxt
    assert m_after == nxt


def test_fresh_ids_cost_one_bit() -> None:
    refs = list(range(100))
    w, d, m_after = lt.encode_chunk(refs, 0)
    assert (w, d, m_after) == (0, 0, 100)
    assert lt.decode_chunk(100, w, 0, d) == refs


@pytest.mark.parametrize("chunk", [1, 7, 64, 5000])
def test_plan_chains_the_counter_state(chunk: int) -> None:
    refs = dense_trace(1500, seed=chunk)
    inst = lt.plan(refs, SHA, "t", chunk_refs=chunk)
    assert inst.refs == len(refs) and inst.distinct == len(set(refs))
    assert inst.chunks[0].k_in == 0 and inst.chunks[-1].k_out == inst.distinct
    decoded: list[int] = []
    for a, b in zip(inst.chunks, inst.chunks[1:]):
        assert a.k_out == b.k_in
    for c in inst.chunks:
        assert c.m == c.k_in  # the fused kernel counter relies on it
        assert lt.dense_run(c.k_in, lt.decode_chunk(c.n, c.w, c.m, c.d)) == c.k_out
        decoded += lt.decode_chunk(c.n, c.w, c.m, c.d)
    assert decoded == refs


def test_numpy_refs_are_accepted() -> None:
    refs = np.array(dense_trace(200, seed=3), dtype=np.int64)
    assert lt.plan(refs, SHA, "t").distinct == len(set(refs.tolist()))


def test_empty_trace() -> None:
    src = lt.emit_instance([], SHA, "empty")
    assert "theorem distinct_eq : Pycert.distinct trace = 0" in src
    assert "theorem refs_eq : trace.length = 0" in src


@pytest.mark.parametrize(
    ("refs", "sha", "name", "match"),
    [
        ([0, 1], SHA, "bad-name", "not a Lean identifier"),
        ([0, 1], "abc", "t", "64 lowercase hex"),
        ([0, -1], SHA, "t", "non-negative"),
        ([0, 1.5], SHA, "t", "not an integer"),
        ([0, 2, 1], SHA, "t", "not numbered densely"),
    ],
)
def test_bad_input_is_an_input_error(refs, sha, name, match) -> None:
    with pytest.raises(InputError, match=match):
        lt.emit_instance(refs, sha, name)


def test_rendered_file_states_the_numbers_and_the_hash() -> None:
    refs = dense_trace(700, seed=9)
    src = lt.emit_instance(refs, SHA, "win", chunk_refs=256)
    assert f'def sha256 : String := "{SHA}"' in src
    assert f"theorem refs_eq : trace.length = {len(refs)}" in src
    assert f"theorem distinct_eq : Pycert.distinct trace = {len(set(refs))}" in src
    assert "native_decide" not in src and "sorry" not in src and "axiom" not in src
    assert src.count("by decide +kernel") == 3 + 1  # three chunk lemmas and the length sum
    assert re.search(r"^import Pycert\.TraceCheck$", src, re.M)


def window(n: int) -> tuple[list[int], str]:
    from pycert.traces import read_trace

    t = read_trace(SHARED_TRACES / "conversation_trace.jsonl")
    return t.refs[:n].tolist(), t.sha256


@pytest.mark.slow
@pytest.mark.skipif(not SHARED_TRACES.is_dir(), reason="../shared/traces is not present")
def test_real_window_passes_and_a_wrong_count_is_rejected(wasm, lean_dir: Path) -> None:
    refs, sha = window(4096)
    good = lean_dir / "ConvWindow.lean"
    good.write_text(nonce() + lt.emit_instance(refs, sha, "convWindow", chunk_refs=1024))
    inst = lt.plan(refs, sha, "convWrong", chunk_refs=1024)
    inst.chunks[2].k_out += 1  # one chunk lemma now claims one distinct block too many
    inst.chunks[3].k_in += 1
    inst.distinct += 1
    bad = lean_dir / "ConvWrong.lean"
    bad.write_text(nonce() + lt.render(inst))
    res = kernel.check_files([good, bad], backend="wasm", timeout=1200).by_module()
    assert res["ConvWindow"].ok, [d.render() for d in res["ConvWindow"].diagnostics]
    assert not res["ConvWrong"].ok
    lines = bad.read_text().splitlines()
    c2_line = next(i for i, line in enumerate(lines, 1) if line.startswith("theorem c2_run"))
    assert any(d.line == c2_line for d in res["ConvWrong"].failures), [d.render() for d in res["ConvWrong"].failures]
