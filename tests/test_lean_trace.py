"""The whole-trace emitter: packing round trips, validation, and real kernel checks of whole traces
with hash-like 64-bit ids in any order, merges of traces, and planted defects."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pycert.core.errors import InputError
from pycert.data import synthetic
from pycert.data.traces import read_trace, trace_from_bytes
from pycert.lean import build
from pycert.lean.emit import benes
from pycert.lean.emit import packed_trace as lt
from tests.conftest import SHARED_TRACES, nonce

SHA = hashlib.sha256(b"test").hexdigest()
ids64 = st.integers(min_value=0, max_value=lt.MAX_ID)


def hash_trace(n: int, distinct: int, seed: int) -> list[int]:
    """64-bit ids in no particular order, reuse skewed towards recently introduced blocks."""
    rng = random.Random(seed)
    pool = [rng.getrandbits(64) for _ in range(distinct)]
    return [rng.choice(pool[: 1 + i * distinct // n]) for i in range(n)]


def merged(a: list[dict], b: list[dict], offset: int) -> bytes:
    """Two Mooncake traces interleaved by timestamp, the second's ids moved by ``offset``."""
    moved = [dict(r, hash_ids=[h + offset for h in r["hash_ids"]]) for r in b]
    both = sorted([*a, *moved], key=lambda r: r["timestamp"])
    return synthetic.to_jsonl(both)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.one_of(ids64, st.integers(0, 40)), max_size=300))
def test_encoder_round_trips(refs: list[int]) -> None:
    inst = lt.plan(refs, SHA, "t")
    assert lt.decode(inst) == refs
    assert inst.refs == len(refs) and inst.distinct == len(set(refs))
    counter = lt.unpack(inst.k, inst.w + 1, len(refs) + 1)
    assert counter == [len(set(refs[:j])) for j in range(len(refs) + 1)]


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.lists(st.integers(0, 2**20), max_size=200), st.integers(1, 70))
def test_pack_unpack(values: list[int], extra: int) -> None:
    width = max(values, default=0).bit_length() + extra
    assert lt.unpack(lt.pack(values, width), width, len(values)) == values


def test_the_table_is_sorted_and_the_network_routes_first_uses_to_it() -> None:
    assert not lt.plan([5, 9, 5, 12], SHA, "t").net  # first uses already increase: no layers
    inst = lt.plan([9, 5, 9, 12], SHA, "t")
    assert lt.unpack(inst.t, inst.wt + 1, 3) == [5, 9, 12]
    assert benes.route_all(inst.net, 3).tolist() == [1, 0, 2]  # block 0 (id 9) is sorted id 1
    assert [k for k, _ in inst.net] == [1, 0, 1]  # 3 blocks: a Beneš network on 4 places


def test_numpy_refs_are_accepted() -> None:
    refs = np.array(hash_trace(200, 50, seed=3), dtype=np.uint64)
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
        ([0, -1], SHA, "t", r"outside the block-id range \[0, 2\^64\)"),
        ([0, 1 << 64], SHA, "t", r"outside the block-id range"),
        ([0, 1.5], SHA, "t", "not an integer"),
        ([0, True], SHA, "t", "not a block id"),
    ],
)
def test_bad_input_is_an_input_error(refs, sha, name, match) -> None:
    with pytest.raises(InputError, match=match):
        lt.emit_instance(refs, sha, name)


def test_rendered_file_states_the_numbers_and_the_hash() -> None:
    refs = hash_trace(700, 300, seed=9)
    src = lt.emit_instance(refs, SHA, "win")
    assert f'def sha256 : String := "{SHA}"' in src
    assert f"theorem refs_eq : trace.length = {len(refs)}" in src
    assert f"theorem distinct_eq : Pycert.distinct trace = {len(set(refs))}" in src
    assert "native_decide" not in src and "sorry" not in src and "axiom" not in src
    assert "import Pycert.PackedTrace" in src and "(traceOK_sound net checked).2" in src
    assert src.count("noncomputable def C") == 2 * (len(set(refs)) - 1).bit_length() - 1  # the layers


def test_a_64_bit_trace_file_is_read_whole() -> None:
    refs = hash_trace(50, 20, seed=1) + [lt.MAX_ID]
    trace = trace_from_bytes("".join(f"{r}\n" for r in refs).encode(), "h.ids")
    assert trace.refs.tolist() == refs


# ---------------------------------------------------------------------------- on the kernel


def _check(lean_dir: Path, files: dict[str, str]) -> dict[str, build.CheckResult]:
    paths = []
    for name, text in files.items():
        (lean_dir / f"{name}.lean").write_text(nonce() + text)
        paths.append(lean_dir / f"{name}.lean")
    return build.check_files(paths, backend="wasm", timeout=1200).by_module()


def _failing_decls(path: Path, res: build.CheckResult) -> set[str]:
    lines = path.read_text().splitlines()
    out = set()
    for d in res.failures:
        head = next(lines[i] for i in range(d.line - 1, -1, -1) if lines[i].startswith("theorem "))
        out.add(head.split()[1])
    return out


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_hash_ids_and_a_merge_are_proved_and_defects_are_rejected(wasm, lean_dir: Path) -> None:
    hashed = hash_trace(30_000, 12_000, seed=4)
    a = synthetic.generate(1, requests=400)
    b = synthetic.generate(2, requests=400)
    merge = trace_from_bytes(merged(a, b, offset=1 << 63), "merge.jsonl")
    mrefs = merge.refs.tolist()
    assert lt.plan(hashed, SHA, "h").net and lt.plan(mrefs, merge.sha256, "m").net  # both need the network

    wrong_distinct = lt.render(lt.plan(hashed, SHA, "WrongD")).replace(
        f" {len(set(hashed))} S = true", f" {len(set(hashed)) + 1} S = true")
    p = lt.plan(hashed, SHA, "DupTable")
    dup_table = lt.render(p.model_copy(update={"t": lt.set_field(p.t, p.wt + 1, 1, p.t & ((1 << (p.wt + 1)) - 1))}))
    q = lt.plan(mrefs, merge.sha256, "OneRef")
    j = next(i for i in range(1, q.refs) if mrefs[i] in mrefs[:i])  # a repeat, recoded as fresh
    one_ref = lt.render(q.model_copy(update={"x": lt.set_field(q.x, q.w + 1, j, len(set(mrefs[:j])))}))
    # A flipped control bit is still a bijection: the kernel accepts the counts, but the instance now
    # stands for another trace, which is what verify's regeneration (sha256 of the file) is for.
    f = lt.plan(hashed, SHA, "FlipNet")
    flipped = f.model_copy(update={"net": [(f.net[0][0], f.net[0][1] ^ 1), *f.net[1:]]})
    assert lt.decode(flipped) != hashed and len(set(lt.decode(flipped))) == len(set(hashed))
    res = _check(lean_dir, {
        "Hashed": lt.emit_instance(hashed, SHA, "Hashed"),
        "Merged": lt.emit_instance(mrefs, merge.sha256, "Merged"),
        "WrongD": wrong_distinct, "DupTable": dup_table, "OneRef": one_ref, "FlipNet": lt.render(flipped),
    })
    for ok in ("Hashed", "Merged", "FlipNet"):
        assert res[ok].ok, [d.render() for d in res[ok].diagnostics]
    assert _failing_decls(lean_dir / "WrongD.lean", res["WrongD"]) >= {"checked"}
    assert "checked" in _failing_decls(lean_dir / "DupTable.lean", res["DupTable"])
    assert "checked" in _failing_decls(lean_dir / "OneRef.lean", res["OneRef"])


@pytest.mark.slow
@pytest.mark.timeout(1500)
@pytest.mark.skipif(not SHARED_TRACES.is_dir(), reason="../shared/traces is not present")
def test_real_traces_are_kernel_checked_whole(wasm, lean_dir: Path) -> None:
    files = {}
    for stem, name in (("conversation_trace", "ConvWhole"), ("synthetic_trace", "SynthWhole")):
        t = read_trace(SHARED_TRACES / f"{stem}.jsonl")
        files[name] = lt.emit_instance(t.refs, t.sha256, name)
    # The whole conversation trace as a production trace would carry it: 64-bit block hashes in no order.
    conv = read_trace(SHARED_TRACES / "conversation_trace.jsonl").refs.tolist()
    rng, hashed = random.Random(11), {}
    for b in dict.fromkeys(conv):
        hashed[b] = rng.getrandbits(64)
    assert len(set(hashed.values())) == len(hashed)
    files["ConvHashed"] = lt.emit_instance([hashed[b] for b in conv], SHA, "ConvHashed")
    res = _check(lean_dir, files)
    for name in files:
        assert res[name].ok, [d.render() for d in res[name].diagnostics]
    for name in ("ConvWhole", "ConvHashed"):
        assert "trace.length = 288500" in files[name] and "distinct trace = 182790" in files[name]
    assert "noncomputable def net : List (Nat × Nat) := []" in files["ConvWhole"]  # Mooncake: ids in first-use order
    assert "(17, C0)" in files["ConvHashed"]  # 182,790 ids: a Beneš network on 2^18 places
