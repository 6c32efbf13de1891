"""The ceiling at a capacity (issue 25): the bound's Python mirror against brute-force OPT, the cut-list
recipe's tightness, the emitter's mirror of what the kernel counts, and certificates end to end on the
kernel (a small trace of 64-bit ids in the fast suite, both Mooncake traces at 128 blocks in the slow one)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
import re
import shutil
from collections import OrderedDict
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pycert.analysis.cachesim as cachesim
import pycert.analysis.optcurve as optcurve
from pycert import prove
from pycert.analysis.capacity import belady_hit_flags, belady_pairs, bound, bound_pairs, cut_list, witness_ok
from pycert.analysis.offload import offload_report
from pycert.analysis.optcurve import admission_hit_curve, opt_hit_curve
from pycert.certify import report
from pycert.certify.card import pct
from pycert.certify.evidence import with_evidence
from pycert.certify.inputs import Locator
from pycert.certify.manifest import MANIFEST_NAME, render_manifest, write_certificates
from pycert.certify.verify import verify_certificate
from pycert.cli import main
from pycert.core.errors import InputError, PycertError, Rejected
from pycert.core.limits import MAX_PIECE_REFS
from pycert.data import synthetic
from pycert.data.traces import read_trace
from pycert.families import producer
from pycert.families.capacity import CLAIM
from pycert.families.capacity.produce import CapacityOptions, capacities
from pycert.lean.emit import CAPACITY_JOINTS_ENCODING as JOINTS_ENCODING
from pycert.lean.emit import capacity as emit_capacity
from pycert.lean.emit import joints as emit_joints
from pycert.lean.emit import pieces as emit_pieces
from tests.certs import make_cert, trace_input
from tests.conftest import SHARED_TRACES
from tests.test_cachesim import optimal_hits  # the exhaustive optimum: every eviction tried

small_traces = st.lists(st.integers(0, 4), min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(refs=small_traces, capacity=st.integers(1, 4), cuts=st.lists(st.integers(0, 11), max_size=6))
def test_the_bound_is_sound_for_any_cut_list(refs: list[int], capacity: int, cuts: list[int]) -> None:
    """Every cut list, in any order and with repeats (the Lean theorem's ``Y`` is any list), bounds every policy."""
    opt = optimal_hits(refs, capacity)
    assert bound(refs, capacity, cuts) >= opt
    assert bound_pairs(refs, capacity, [y for y in cuts if y < len(refs)]) >= opt


@settings(max_examples=300, deadline=None)
@given(refs=small_traces, capacity=st.integers(1, 4))
def test_the_recipe_is_tight(refs: list[int], capacity: int) -> None:
    opt = optimal_hits(refs, capacity)
    cuts = cut_list(refs, capacity)
    assert cuts == sorted(set(cuts)) and all(0 <= y < len(refs) for y in cuts)
    assert int(belady_hit_flags(refs, capacity).sum()) == opt
    assert bound_pairs(refs, capacity, cuts) == opt == bound(refs, capacity, cuts)


@settings(max_examples=300, deadline=None)
@given(refs=st.lists(st.integers(0, 5), min_size=1, max_size=14), capacity=st.integers(1, 4), pick=st.integers(0, 99))
def test_beladys_pairs_are_a_witness_and_one_more_pair_is_not(refs: list[int], capacity: int, pick: int) -> None:
    """The Python mirror of ``realise``'s hypotheses: Belady's hit pairs pass it and number the brute-force
    optimum; any reuse pair Belady misses, added, opens ``C`` pairs at some step (else a policy would beat
    the optimum), and so does any start without a later reference."""
    starts, ends = belady_pairs(refs, capacity)
    assert witness_ok(refs, capacity, starts)
    assert int(starts.sum()) == int(ends.sum()) == optimal_hits(refs, capacity)
    nxt = [next((j for j in range(i + 1, len(refs)) if refs[j] == refs[i]), len(refs)) for i in range(len(refs))]
    missed = [i for i in range(len(refs)) if not starts[i] and i + 2 <= nxt[i] < len(refs)]
    if missed:
        more = starts.copy()
        more[missed[pick % len(missed)]] = True
        assert not witness_ok(refs, capacity, more)
    last = [i for i in range(len(refs)) if nxt[i] == len(refs)]
    lonely = starts.copy()
    lonely[last[pick % len(last)]] = True
    assert not witness_ok(refs, capacity, lonely)


def test_the_greedy_is_not_tight_and_the_recipe_is() -> None:
    """The issue's example: the latest saturated point for each missed pair gives 5, the truth is 4."""
    refs = [3, 2, 1, 3, 2, 1, 3, 3, 3]
    assert optimal_hits(refs, 2) == 4
    assert bound(refs, 2, [2, 4]) == 4 and bound(refs, 2, [3, 4]) == 5
    assert bound(refs, 2, cut_list(refs, 2)) == 4


def test_the_bypass_model_would_be_too_loose() -> None:
    """``a b a`` at one block: the interval form allows one hit, the cache model none (C - 1 per cut)."""
    assert optimal_hits([0, 1, 0], 1) == 0 == bound([0, 1, 0], 1, cut_list([0, 1, 0], 1))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 300), v=st.integers(1, 40), capacity=st.integers(1, 20))
def test_the_emitter_states_the_pair_bound(seed: int, n: int, v: int, capacity: int) -> None:
    """What the emitted headline states, ``(C - 1)·m + F``, is the pair form of the bound for the cut list,
    Belady's hit count, on 64-bit ids in any order (the emitter also checks that its network sorts)."""
    rng = random.Random(seed)
    names = [rng.getrandbits(64) for _ in range(v)]
    refs = np.array([names[rng.randrange(v)] for _ in range(n)], dtype=np.uint64)
    cuts = cut_list(refs, capacity)
    text, plan = emit_capacity.emit_instance(refs, "0" * 64, "T", capacity, cuts)
    assert plan.max_hits == bound_pairs(refs, capacity, cuts) == opt_hit_curve(refs).hits(capacity)
    assert f"Pycert.Capacity.Bounded trace {n} {capacity} {plan.max_hits} :=" in text
    text, plan = emit_capacity.emit_instance(refs, "0" * 64, "T", capacity, cuts, witness=belady_pairs(refs, capacity))
    assert plan.witness_hits == plan.max_hits
    assert f"Pycert.Capacity.Optimum trace {n} {capacity} {plan.max_hits} :=" in text
    admitted = emit_capacity.Side(cut_list(refs, capacity, admission=True), belady_pairs(refs, capacity, admission=True))
    text, plan = emit_capacity.emit_instance(refs, "0" * 64, "T", capacity, cuts, witness=belady_pairs(refs, capacity),
                                             admission=admitted)
    ha = optcurve.admission_hit_curve(refs).hits(capacity)
    assert plan.admission is not None and plan.admission.witness_hits == plan.admission.max_hits == ha
    assert plan.admission.max_hits == bound_pairs(refs, capacity, admitted.cuts, admission=True)
    assert f"Pycert.Admission.Optima trace {n} {capacity} {plan.max_hits} {ha} :=" in text


def test_a_trace_whose_sort_would_not_fit_the_heap_is_refused_before_lean() -> None:
    refs = np.arange(524_289, dtype=np.uint64) % 40_000  # 2^20 places of 32-bit fields: 2^25 bits
    assert not emit_capacity.fits_one(len(refs), 40_000) and emit_capacity.fits_one(len(refs) - 1, 40_000)
    assert emit_capacity.fits_one(MAX_PIECE_REFS, MAX_PIECE_REFS)  # a piece always fits one instance
    with pytest.raises(InputError, match="need a sort of 2\\^25 bits"):
        emit_capacity.emit_instance(refs, "0" * 64, "T", 128, [])


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 400), v=st.integers(1, 30), capacity=st.integers(1, 6),
       max_refs=st.integers(2, 200))
def test_pieces_split_at_cuts_state_the_whole_traces_bound(seed: int, n: int, v: int, capacity: int,
                                                           max_refs: int) -> None:
    """Pieces split at cuts, each at most ``max_refs`` references and sharing its ends with its
    neighbours, state together (``piece_glue``'s sums) exactly the whole trace's bound, Belady's hit
    count; where no cut lies within reach the split is refused, never made elsewhere."""
    rng = random.Random(seed)
    names = [rng.getrandbits(64) for _ in range(v)]
    refs = np.array([names[rng.randrange(v)] for _ in range(n)], dtype=np.uint64)
    cuts = cut_list(refs, capacity)
    try:
        points = emit_pieces.split_points(n, cuts, max_refs)
    except InputError as e:
        assert ("no cut of the capacity bound lies between" in str(e) if cuts else "the cut list at this capacity is "
                "empty" in str(e))
        assert n > max_refs
        return
    assert points[0] == 0 and points[-1] == n - 1 and set(points[1:-1]) <= set(cuts)
    assert all(0 < b - a + 1 <= max_refs for a, b in zip(points, points[1:]))
    if len(points) == 2:
        return
    plans = [emit_pieces.emit_piece(refs[a:b + 1], "0" * 64, f"P{k}", capacity,
                                    emit_pieces.local_cuts(cuts, a, b))[1]
             for k, (a, b) in enumerate(zip(points, points[1:]))]
    text, whole = emit_pieces.emit_glue("W", "0" * 64, [f"P{k}" for k in range(len(plans))], plans, v)
    assert (whole.refs, whole.cuts) == (n, len(cuts))
    assert whole.max_hits == bound_pairs(refs, capacity, cuts) == opt_hit_curve(refs).hits(capacity)
    assert f"Pycert.Capacity.Bounded trace {n} {capacity} {whole.max_hits} :=" in text


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 400), v=st.integers(1, 30), capacity=st.integers(1, 6),
       max_refs=st.integers(2, 200))
def test_pieces_both_ways_state_the_whole_traces_optimum_with_admission(seed: int, n: int, v: int, capacity: int,
                                                                       max_refs: int) -> None:
    """Pieces after cuts with bypass, each starting with the blocks of the witness's pairs open there
    (the previous piece's open blocks, in order), state together (``both_glue``'s sums) exactly the whole trace's
    optimum with bypass, both its bound and its witness; where no cut lies within reach the split is
    refused, never made elsewhere."""
    rng = random.Random(seed)
    names = [rng.getrandbits(64) for _ in range(v)]
    refs = np.array([names[rng.randrange(v)] for _ in range(n)], dtype=np.uint64)
    cuts = cut_list(refs, capacity, admission=True)
    try:
        points = emit_joints.split_after_cuts(n, cuts, max_refs)
    except InputError as e:
        assert ("no cut of the bound with bypass lies between" in str(e) if cuts else
                "at this capacity is empty" in str(e))
        assert n > max_refs
        return
    assert points[0] == 0 and points[-1] == n and {t - 1 for t in points[1:-1]} <= set(cuts)
    assert all(0 < b - a <= max_refs for a, b in zip(points, points[1:]))
    starts, ends = belady_pairs(refs, capacity, admission=True)
    data = emit_joints.piece_data(refs, cuts, starts, ends, points)
    assert [len(d.refs) - len(d.opened) for d in data] == [b - a for a, b in zip(points, points[1:])]
    assert all(len(d.opened) <= capacity and len(set(d.opened)) == len(d.opened) for d in data)
    if len(points) == 2:
        return
    plans = [emit_joints.emit_joint_piece(d, "0" * 64, f"P{k}", capacity)[1] for k, d in enumerate(data)]
    assert all(a.left_open == b.opened for a, b in zip(plans, plans[1:]))
    text, whole = emit_joints.emit_joint_glue("W", "0" * 64, [f"P{k}" for k in range(len(plans))], plans, v)
    assert whole.admission is not None and (whole.refs, whole.admission.cuts) == (n, len(cuts))
    h = admission_hit_curve(refs).hits(capacity)
    assert whole.admission.max_hits == whole.admission.witness_hits == h
    assert f"Pycert.Admission.OptimumA trace {n} {capacity} {h} :=" in text


def test_the_emitter_refuses_an_unsorted_cut_list() -> None:
    refs = [1, 2, 3, 1, 2, 3, 1, 2, 3]
    with pytest.raises(PycertError, match="strictly increasing"):
        emit_capacity.emit_instance(refs, "0" * 64, "T", 2, [4, 2])


def test_capacities_in_tokens_become_whole_blocks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = synthetic.default_trace()  # Mooncake format: 512 tokens a block
    opts = CapacityOptions(capacity_blocks=[128, 4], capacity_tokens=[65_536, 1_000, 2_048])
    assert capacities(opts, trace) == [128, 4, 1]
    ids = write_ids(tmp_path / "ids.txt", 10, 3, seed=1)
    assert capacities(opts, read_trace(ids, block_tokens=1_000)) == [128, 4, 65, 1, 2]  # the flag is an ids trace's size
    with pytest.raises(InputError, match="1,000 tokens a block contradicts the trace"):  # never a Mooncake trace's
        synthetic.default_trace(block_tokens=1_000)
    assert main(["prove", "capacity", "--trace", str(ids), "--capacity-tokens", "1000", "--out",
                 str(tmp_path / "c")]) == 2
    assert "give --block-tokens" in capsys.readouterr().err and not (tmp_path / "c").exists()
    assert main(["prove", "capacity", "--trace", str(ids), "--out", str(tmp_path / "c")]) == 2
    assert "--capacity-blocks" in capsys.readouterr().err



def test_a_trace_that_would_replace_another_traces_certificates_is_refused(tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A stranger's session: `prove capacity` silently overwrote another trace's certificate of the same name."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "capacity-ids-c2.json").write_text(json.dumps({"inputs": [{"role": "trace", "path": "ids.txt"}]}))
    other = write_ids(tmp_path / "ids.dat", 10, 3, seed=2)
    assert main(["prove", "capacity", "--trace", str(other), "--capacity-blocks", "2", "--out", str(out)]) == 2
    assert "capacity-ids-c2.json certifies trace ids.txt" in capsys.readouterr().err
    a, b = write_ids(tmp_path / "t.txt", 10, 3, seed=3), write_ids(tmp_path / "t.dat", 10, 3, seed=4)
    assert main(["prove", "capacity", "--trace", str(a), "--trace", str(b), "--capacity-blocks", "2",
                 "--out", str(tmp_path / "o2")]) == 2
    assert "would both make capacity-t-c<C>" in capsys.readouterr().err and not (tmp_path / "o2").exists()


# ---------------------------------------------------------------------------- on the kernel


def write_ids(path: Path, n: int, v: int, seed: int) -> Path:
    rng = random.Random(seed)
    names = [rng.getrandbits(64) for _ in range(v)]
    path.write_text("".join(f"{names[rng.randrange(v)]}\n" for _ in range(n)))
    return path


def forge(cert: Path, edit) -> None:  # noqa: ANN001
    """Edit a certificate and re-forge its manifest line, as a forger would."""
    doc = json.loads(cert.read_text())
    edit(doc)
    cert.write_text(json.dumps(doc, indent=2) + "\n")
    manifest = cert.parent / MANIFEST_NAME
    entries = dict(reversed(line.split("  ", 1)) for line in manifest.read_text().splitlines())
    entries[cert.name] = hashlib.sha256(cert.read_bytes()).hexdigest()
    manifest.write_text(render_manifest(entries))


def prove_capacities(trace: Path, capacities: list[int], out: Path) -> prove.ProveResult:
    chosen = producer("capacity")
    return prove.prove([(chosen, CapacityOptions(trace=[trace], capacity_blocks=capacities, required=True))],
                       backend="wasm", out_dir=out)


@pytest.fixture(scope="module")
def proved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("capacity")
    # 512 = 2 ** 9 references: the sort's places end at the trace's end, and the running counts are
    # read one place further (the kernel refused such a trace's cut count before the emitter wrote it)
    trace = write_ids(d / "ids.txt", 512, 70, seed=25)
    res = prove_capacities(trace, [2, 16], d / "certs")
    assert res.ok, [s for s in res.stages if s.status != "ok"]
    return trace, d / "certs"


def figures_of(cert: Path) -> dict[str, int]:
    return {f["name"]: f["numerator"] for f in json.loads(cert.read_text())["figures"] if f["denominator"] == 1}


def test_certificates_at_two_capacities_hold_on_the_kernel(proved: tuple[Path, Path]) -> None:
    trace, certs = proved
    refs = np.array([int(x) for x in trace.read_text().split()], dtype=np.uint64)
    for c in (2, 16):
        cert = certs / f"capacity-ids-c{c}.json"
        doc = json.loads(cert.read_text())
        evidence = {f["name"]: f["evidence"] for f in doc["figures"]}
        assert figures_of(cert)["max_hits"] == opt_hit_curve(refs).hits(c) == figures_of(cert)["belady_hits"]
        assert figures_of(cert)["bypass_hits"] == optcurve.admission_hit_curve(refs).hits(c)
        assert evidence["max_hits"] == evidence["belady_hits"] == evidence["bypass_hits"] == "kernel-checked"
        h, ha = figures_of(cert)["max_hits"], figures_of(cert)["bypass_hits"]
        assert (f"caches that start empty, hold blocks of one size, fetch a block only when it is referenced (no "
                f"prefetch) and may bypass (skip storing a missed block) and evict any block at any step, of {c} blocks, hit "
                f"at most {ha} times, and one (offline, keeping no room for a running request's blocks, which a real "
                f"engine needs) hits exactly {ha}") in doc["claim"]
        assert f"Of these, the caches that store every missed block have the optimum {h} at {c} blocks" in doc["claim"]
        assert "prefix cache" not in doc["claim"] and "tokens" not in doc["claim"]  # a file of ids: no requests
        stated = doc["statements"][doc["theorems"][-1]]["statement"]
        assert " : Pycert.Admission.Optima " in stated and stated.endswith(f" 512 {c} {h} {ha}"), stated
        assert {"Pycert.Capacity.realise", "Pycert.Admission.realiseA"} <= set(doc["theorems"])
        assert doc["parameters"]["prefix_cache"] == "no-requests"
        assert any("has no request boundaries" in limit for limit in doc["does_not_prove"])
        assert any("both ways" in limit for limit in doc["does_not_prove"])
        assert not any("upper bound only" in limit for limit in doc["does_not_prove"])
        assert verify_certificate(cert).status == "ok"
    assert verify_certificate(certs / "capacity-ids-c2.json", kernel=True, backend="wasm").status == "ok"


def test_a_bound_only_certificate_states_bounded_and_says_so(tmp_path: Path) -> None:
    """The layout without the witness (pieced instances keep it) states ``Bounded``: the claim's figures, theorems,
    limits and evidence follow the parameters, and such a certificate verifies offline (no Lean here)."""
    trace = write_ids(tmp_path / "ids.txt", 200, 30, seed=7)
    params = {"capacity_blocks": 4, "lean_encoding": emit_capacity.ENCODING}
    cert = make_cert("capacity-ids-c4", "capacity", params, [trace_input(trace, tmp_path)], root=tmp_path)
    assert CLAIM.predicate(cert.parameters) == "Pycert.Capacity.Bounded"
    evidence = {f.name: f.evidence for f in cert.figures}
    assert evidence["max_hits"] == "kernel-checked" and evidence["belady_hits"] == "computed-cross-checked"
    assert any("upper bound only" in limit for limit in cert.does_not_prove)
    assert "Pycert.Capacity.realise" not in cert.theorems and "is the optimum" not in cert.claim
    witnessed = make_cert("capacity-ids-c4", "capacity", {**params, "lean_encoding": emit_capacity.OPTIMUM_ENCODING},
                          [trace_input(trace, tmp_path)], root=tmp_path)
    assert CLAIM.predicate(witnessed.parameters) == "Pycert.Capacity.Optimum"
    assert {f.name: f.evidence for f in witnessed.figures}["belady_hits"] == "kernel-checked"
    write_certificates([cert], tmp_path / "certificates")
    assert verify_certificate(tmp_path / "certificates" / "capacity-ids-c4.json", root=tmp_path).ok


def copy_proved(proved: tuple[Path, Path], dest: Path) -> Path:
    shutil.copy(proved[0], dest / proved[0].name)
    return Path(shutil.copytree(proved[1], dest / "certs"))


def test_a_claimed_bound_one_below_is_rejected(proved: tuple[Path, Path], tmp_path: Path) -> None:
    cert = copy_proved(proved, tmp_path) / "capacity-ids-c2.json"
    h = figures_of(cert)["max_hits"]

    def lower(doc: dict) -> None:
        f = next(f for f in doc["figures"] if f["name"] == "max_hits")
        f.update(numerator=h - 1, decimal=str(h - 1))
        doc["claim"] = doc["claim"].replace(f"more than {h} times", f"more than {h - 1} times")
    forge(cert, lower)
    res = verify_certificate(cert)
    assert res.status == "rejected" and any("max_hits" in f.render() for f in res.failures), res.failures


def test_a_dropped_cut_is_caught(proved: tuple[Path, Path], tmp_path: Path) -> None:
    """An instance whose cut list lost a cut still checks (any list is sound), but its bound is loose:
    verify regenerates the instance from the trace and refuses the shipped one, and the claim refuses a
    kernel bound above Belady's hit count as not optimal."""
    certs = copy_proved(proved, tmp_path)
    cert = certs / "capacity-ids-c2.json"
    refs = np.array([int(x) for x in (tmp_path / "ids.txt").read_text().split()], dtype=np.uint64)
    parsed = CLAIM.certificate.model_validate_json(cert.read_text())
    lean = next(i for i in parsed.inputs if i.role == "lean")
    text, plan = emit_capacity.emit_instance(refs, parsed.inputs[0].sha256, Path(lean.path).stem, 2,
                                             cut_list(refs, 2)[:-1])
    assert plan.max_hits > opt_hit_curve(refs).hits(2)
    (certs / lean.path).write_text(text)
    forge(cert, lambda d: d["inputs"][1].update(sha256=hashlib.sha256(text.encode()).hexdigest()))
    res = verify_certificate(cert)
    assert res.status == "rejected" and any("regenerated" in f.render() for f in res.failures), res.failures
    with pytest.raises(Rejected, match="not optimal"):
        CLAIM.figures(parsed.parameters, {"refs": plan.refs, "capacity_blocks": 2, "max_hits": plan.max_hits},
                      parsed.inputs, Locator(root=certs, external={"ids.txt": tmp_path / "ids.txt"}))


class OffByOne:
    """An OPT curve one hit high at every capacity."""

    def __init__(self, curve: object) -> None:
        self.curve = curve

    def hits(self, c: int) -> int:
        return self.curve.hits(c) + 1  # type: ignore[attr-defined]

    def hit_rate(self, c: int) -> Fraction:
        return Fraction(self.hits(c), self.curve.refs)  # type: ignore[attr-defined]


def test_a_belady_engine_off_by_one_is_caught(proved: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """The OPT curve one hit high: the second engine (a direct MIN simulation) disagrees. Both one high:
    they claim more hits than the kernel proved possible, and the claim names the engine."""
    cert = proved[1] / "capacity-ids-c2.json"
    real_curve, real_sim = optcurve.curve_from_distances, cachesim.belady_hits
    monkeypatch.setattr(optcurve, "curve_from_distances", lambda d: OffByOne(real_curve(d)))
    res = verify_certificate(cert)
    assert res.status == "rejected" and any(f.reason == "engine-disagrees" for f in res.failures), res.failures
    monkeypatch.setattr(cachesim, "belady_hits", lambda refs, c: real_sim(refs, c) + 1)
    res = verify_certificate(cert)
    assert res.status == "rejected" and any("more than the" in f.render() for f in res.failures), res.failures


@pytest.mark.timeout(1800)
def test_a_64_bit_trace_in_three_pieces_is_proved_on_ray(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`pycert prove capacity --shard-refs N` splits a trace after cuts with bypass into pieces of at
    most N references (with the blocks open where each starts), checks each as a Ray task on a local cluster it
    starts, and composes them in one module whose headline is the whole trace's optimum with bypass
    (Belady's count with bypass); verify regenerates every file, --kernel rebuilds them, and a piece dropped or
    edited is refused."""
    trace = write_ids(tmp_path / "ids.txt", 1200, 40, seed=26)
    out = tmp_path / "certs"
    assert main(["prove", "capacity", "--trace", str(trace), "--capacity-blocks", "4", "--shard-refs", "500",
                 "--out", str(out), "--backend", "wasm"]) == 0
    err = capsys.readouterr().err
    assert "a local Ray cluster" in err and "CapacityIdsC4Piece2: ok" in err, err
    cert = out / "capacity-ids-c4.json"
    doc = json.loads(cert.read_text())
    assert doc["parameters"] == {"capacity_blocks": 4, "lean_encoding": JOINTS_ENCODING,
                                 "prefix_cache": None, "pieces": 3, "piece_refs": 500, "trace_format": "ids",
                                 "block_tokens": None, "trace_order": "file", "curve": None}
    refs = np.array([int(x) for x in trace.read_text().split()], dtype=np.uint64)
    h = admission_hit_curve(refs).hits(4)
    assert figures_of(cert)["bypass_hits"] == h and figures_of(cert)["refs"] == 1200
    assert "max_hits" not in figures_of(cert)  # one model only: the sentence and the limits say so
    assert "Pycert.Joints.both_glue" in doc["theorems"] and any("3 pieces" in x for x in doc["does_not_prove"])
    assert any("store every missed block is not" in x for x in doc["does_not_prove"])
    assert "Every cache of that size that starts empty is one of these" not in doc["claim"]  # the wide wording
    assert "(Pycert.Admission.run_of_policy)" in doc["claim"] and "Pycert.Admission.run_of_policy" in doc["theorems"]
    lean = out / "lean" / "derived"
    assert sorted(p.name for p in lean.iterdir()) == ["CapacityIdsC4.lean", *(f"CapacityIdsC4Piece{k}.lean"
                                                                              for k in range(3))]
    assert f"public theorem headline : Pycert.Admission.OptimumA trace 1200 4 {h} :=" in (
        lean / "CapacityIdsC4.lean").read_text()
    inputs = {"ids.txt": trace}
    assert verify_certificate(cert, inputs=inputs).status == "ok"
    res = verify_certificate(cert, inputs=inputs, kernel=True, backend="wasm")
    assert res.ok and "figures off the kernel" in res.checked, res.failures
    piece = lean / "CapacityIdsC4Piece1.lean"
    kept = piece.read_text()
    piece.write_text(kept.replace("theorem headline", "theorem headline ", 1))
    bad = verify_certificate(cert, inputs=inputs)
    assert bad.status == "rejected" and any("CapacityIdsC4Piece1.lean" in f.subject for f in bad.failures), bad.failures
    piece.write_text(kept)
    # the offload report takes the certificate's own evidence: the optimum with bypass kernel-checked,
    # the other model's rate computed
    rep = with_evidence(offload_report(dataclasses.replace(read_trace(trace), block_tokens=16), 4 * 16,
                                       control_k=None), trace, out)
    assert rep.evidence["gpu_only_bypass_hit_rate"] == "kernel-checked"
    assert rep.evidence_by["gpu_only_bypass_hit_rate"] == "capacity-ids-c4.json"
    assert rep.evidence["gpu_only_belady_hit_rate"] == "computed"
    original = cert.read_text()
    for refs, field in ((2_000, "parameters.pieces"), (2, "parameters.piece_refs")):  # one piece; no split at all
        forge(cert, lambda doc, r=refs: doc["parameters"].update(piece_refs=r))
        bad = verify_certificate(cert, inputs=inputs)
        assert bad.status == "rejected" and [f.subject for f in bad.failures] == [field], bad.failures
        forge(cert, lambda doc, o=original: doc.update(json.loads(o)))
    assert verify_certificate(cert, inputs=inputs).status == "ok"
    forge(cert, lambda doc: doc.update(inputs=[i for i in doc["inputs"] if "Piece1" not in i["path"]]))
    bad = verify_certificate(cert, inputs=inputs)
    assert bad.status == "rejected" and any(f.reason == "missing-input" and "CapacityIdsC4Piece1.lean" in f.expected
                                            for f in bad.failures), bad.failures
    # proved again in one file into the same directory: the pieces the old certificate named are gone
    forge(cert, lambda doc, o=original: doc.update(json.loads(o)))
    assert main(["prove", "capacity", "--trace", str(trace), "--capacity-blocks", "4", "--out", str(out),
                 "--backend", "wasm"]) == 0
    assert sorted(p.name for p in lean.iterdir()) == ["CapacityIdsC4.lean"]
    assert verify_certificate(cert, inputs=inputs).status == "ok"


def test_a_trace_with_no_cut_within_a_piece_is_refused_in_one_line(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    trace = write_ids(tmp_path / "ids.txt", 60, 3, seed=1)  # 3 blocks fit 4: no cut at all
    assert main(["prove", "capacity", "--trace", str(trace), "--capacity-blocks", "4", "--shard-refs", "20",
                 "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert "at this capacity is empty" in err and "pycert prove ceiling" in err, err
    assert not (tmp_path / "c").exists()
    trace = write_ids(tmp_path / "ids.txt", 60, 30, seed=1)  # 30 blocks in 60 references: few cuts at 4 blocks
    assert main(["prove", "capacity", "--trace", str(trace), "--capacity-blocks", "4", "--shard-refs", "2",
                 "--out", str(tmp_path / "c")]) == 2
    assert "has no room beside the up to 4 blocks open where it starts" in capsys.readouterr().err
    assert main(["prove", "capacity", "--trace", str(trace), "--capacity-blocks", "4", "--shard-refs", "6",
                 "--out", str(tmp_path / "c")]) == 2
    assert "no cut of the bound with bypass lies between references" in capsys.readouterr().err
    assert main(["prove", "capacity", "--trace", str(trace), "--capacity-blocks", "4", "--shard-refs", "1",
                 "--out", str(tmp_path / "c")]) == 2
    assert "holds at least 2 references" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.skipif(not SHARED_TRACES.exists(), reason=f"Mooncake traces absent: {SHARED_TRACES}")
@pytest.mark.parametrize("name", ["conversation_trace.jsonl", "synthetic_trace.jsonl"])
def test_mooncake_traces_at_128_blocks(name: str, tmp_path: Path) -> None:
    trace = SHARED_TRACES / name
    res = prove_capacities(trace, [128], tmp_path / "certs")
    assert res.ok, [s for s in res.stages if s.status != "ok"]
    cert = tmp_path / "certs" / f"capacity-{name.removesuffix('.jsonl').replace('_', '-')}-c128.json"
    refs = read_trace(trace).refs
    figures = figures_of(cert)
    assert figures["max_hits"] == opt_hit_curve(refs).hits(128)
    assert figures["bypass_hits"] == figures["prefix_cache_hits"] == optcurve.admission_hit_curve(refs).hits(128)
    assert figures["bypass_hits_tokens"] == 512 * figures["bypass_hits"]
    assert verify_certificate(cert, inputs={name: trace}).status == "ok"


def test_the_offload_report_marks_what_a_capacity_certificate_proves(proved: tuple[Path, Path]) -> None:
    """At the certified capacity, Belady's GPU-only hit rate is kernel-checked (its certificate verified);
    every other figure stays computed, and the three headrooms add up to the whole, each with the one meaning
    the report page's columns give it (tier: the ceiling less the optimum with bypass)."""
    trace_path, certs = proved
    trace = dataclasses.replace(read_trace(trace_path), block_tokens=16)
    rep = with_evidence(offload_report(trace, 2 * 16, control_k=None), trace_path, certs)
    assert rep.evidence["gpu_only_belady_hit_rate"] == "kernel-checked"
    assert rep.evidence_by["gpu_only_belady_hit_rate"] == "capacity-ids-c2.json"
    assert {k for k, v in rep.evidence.items() if v == "kernel-checked"} == {"gpu_only_belady_hit_rate",
                                                                             "gpu_only_bypass_hit_rate"}
    p = rep.primary
    assert p.policy_headroom_pp.value + p.bypass_headroom_pp.value + p.tier_headroom_pp.value == p.headroom_pp.value
    assert p.tier_headroom_pp.value == 100 * (p.ceiling.value - p.gpu_only_bypass_hit_rate.value)
    assert p.bypass_headroom_pp.value == 100 * (p.gpu_only_bypass_hit_rate.value - p.gpu_only_belady_hit_rate.value)
    assert p.gpu_only_belady_hit_rate.value == Fraction(figures_of(certs / "capacity-ids-c2.json")["max_hits"], p.refs)
    at_three = with_evidence(offload_report(trace, 3 * 16, control_k=None), trace_path, certs)
    assert set(at_three.evidence.values()) == {"computed"}  # no certificate at 3 blocks


def test_an_offload_engine_off_by_one_is_refused_against_the_certificate(proved: tuple[Path, Path],
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The report's Belady figure one hit high, the certificate verified with the real engine: the two
    disagree, and the report names both numbers instead of marking either."""
    trace_path, certs = proved
    trace = dataclasses.replace(read_trace(trace_path), block_tokens=16)
    real = optcurve.opt_stack_distances

    def one_more_hit(refs: np.ndarray) -> np.ndarray:  # the first reference Belady misses at 2 blocks, a hit
        d = real(refs)
        d[np.flatnonzero((d == 0) | (d > 2))[0]] = 1
        return d
    with monkeypatch.context() as m:
        m.setattr(optcurve, "opt_stack_distances", one_more_hit)
        rep = offload_report(trace, 2 * 16, control_k=None)
    with pytest.raises(Rejected, match="gpu_only_belady_hit_rate.*kernel-checked in capacity-ids-c2.json"):
        with_evidence(rep, trace_path, certs)


def test_the_report_marks_each_certified_capacity_on_its_trace(proved: tuple[Path, Path], tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    trace, certs = proved
    drawn: dict[str, list[tuple[int, int]]] = {}
    real = report.curve_png

    def spy(path: Path, sha: str, label: str, marks: Sequence[tuple[int, int]] = (), *reading: object,
            **admission: object) -> report.Curve:
        drawn[label] = list(marks)
        return real(path, sha, label, marks, *reading, **admission)

    monkeypatch.setattr(report, "curve_png", spy)
    report.write_report(certs, tmp_path / "r.html", inputs={"ids.txt": trace})
    h = {c: figures_of(certs / f"capacity-ids-c{c}.json")["max_hits"] for c in (2, 16)}
    ha = {c: figures_of(certs / f"capacity-ids-c{c}.json")["bypass_hits"] for c in (2, 16)}
    assert drawn == {"ids.txt": [(2, h[2]), (16, h[16])]}
    # each capacity's three headrooms, against an LRU simulated here
    page, refs = (tmp_path / "r.html").read_text(), read_trace(trace).refs.tolist()
    for c in (2, 16):
        cache: OrderedDict[int, None] = OrderedDict()
        lru = 0
        for x in refs:
            lru += x in cache
            cache[x] = None
            cache.move_to_end(x)
            if len(cache) > c:
                cache.popitem(last=False)
        n, ceiling = len(refs), len(refs) - len(set(refs))
        row = re.search(rf"<tr><td>{c:,}</td>.*?</tr>", page).group(0)  # the trace card's row at c blocks
        cells = re.findall(r"<summary>([^<]*)</summary><span>([^<]*)</span>", row)
        assert cells[0] == (pct(Fraction(lru, n)), f"{lru:,} hits of {n:,} block references; computed by "
                            "pycert&#x27;s trace engine")  # a count and its total, never a reduced fraction
        assert cells[1][0] == pct(Fraction(h[c], n)) and f"kernel-checked both ways in capacity-ids-c{c}" in cells[1][1]
        assert cells[2][0] == pct(Fraction(ha[c], n)) and f"kernel-checked both ways in capacity-ids-c{c}" in cells[2][1]
        assert cells[3][0] == f"{100 * (h[c] - lru) / n:.2f}"  # what a better eviction policy can still win
        assert cells[4][0] == f"{100 * (ha[c] - h[c]) / n:.2f}"  # what bypass adds
        assert cells[5][0] == f"{100 * (ceiling - ha[c]) / n:.2f}"  # what only another tier can win
        assert "In tokens" not in page and "prompt tokens, the unit" not in page  # an ids trace has no prompt lengths


def test_the_run_tables_figure_names_the_model_it_is_the_optimum_of() -> None:
    """The run table's figure names the model it is the optimum of: the ``optimum with bypass``, or the plain
    ``optimum`` of caches that store every miss, never the ``ceiling`` (the best at any size, docs/words.md)."""
    from types import SimpleNamespace

    from pycert.families.capacity.produce import CapacityProducer

    both = SimpleNamespace(capacity=1, refs=2904, cuts=754, free=0, max_hits=0,
                           admission=SimpleNamespace(max_hits=219, cuts=219))
    p = SimpleNamespace()
    CapacityProducer._expect(p, both)  # type: ignore[arg-type]
    assert p.headline == "1 block: optimum with bypass 219 of 2,904 refs (7.54%)"
    one = SimpleNamespace(capacity=4, refs=10, cuts=3, free=1, max_hits=5, admission=None)
    CapacityProducer._expect(p, one)  # type: ignore[arg-type]
    assert p.headline == "4 blocks: optimum 5 of 10 refs (50.00%)"
