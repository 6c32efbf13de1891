"""A curve of capacities in one instance (issue 39, item 1): the emitter states at each capacity what a
one-capacity file states, the running counts are the kernel's own (``Curve.runP``, tested by ``cutsOK``), and
end to end on the real kernel (slow) every capacity is its own certificate with its own headline resting
on one shared file, which verify regenerates byte for byte; a literal one off at one capacity of the file
is refused at that capacity's headline."""

from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from pycert import prove
from pycert.analysis import optcurve
from pycert.analysis.capacity import belady_pairs, cut_list
from pycert.certify.verify import verify_certificate, verify_certificates
from pycert.core.errors import PycertError
from pycert.core.limits import MAX_CURVE
from pycert.core.memo import kept, session
from pycert.data.traces import read_trace
from pycert.families import producer
from pycert.families.capacity import curve_module
from pycert.families.capacity.produce import CapacityOptions
from pycert.lean.resolve import resolve
from pycert.lean.build import build
from pycert.core.resources import library_dir
from pycert.lean.emit import capacity as emit
from pycert.lean.emit import curve
from pycert.lean.sources import statement_literals, theorem_signatures
from tests.test_capacity import forge, write_ids


def points(refs: np.ndarray, capacities: list[int]) -> list[curve.Point]:
    return [curve.Point(c, emit.Side(cut_list(refs, c), belady_pairs(refs, c)),
                        emit.Side(cut_list(refs, c, admission=True), belady_pairs(refs, c, admission=True)), False)
            for c in capacities]


def test_chunks_sort_once_each_and_cut_at_the_limit() -> None:
    assert curve.chunks([16, 2, 16, 1]) == [[1, 2, 16]]
    long = list(range(1, 2 * MAX_CURVE + 2))
    assert curve.chunks(long[::-1]) == [long[:MAX_CURVE], long[MAX_CURVE:2 * MAX_CURVE], long[2 * MAX_CURVE:]]


def test_the_emitter_refuses_a_curve_out_of_order_or_too_long() -> None:
    refs = np.array([1, 2, 1, 3, 2, 1], dtype=np.uint64)
    with pytest.raises(PycertError, match="increasing order"):
        curve.emit_curve(refs, "0" * 64, "T", points(refs, [2, 1]))
    with pytest.raises(PycertError, match="increasing order"):
        curve.emit_curve(refs, "0" * 64, "T", points(refs, list(range(1, MAX_CURVE + 2))))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_each_capacity_of_a_curve_states_what_its_own_file_states(seed: int) -> None:
    """Per capacity, the curve's plan and headline literals are those of the one-capacity layout of both
    models (today's ``emit_instance``), and its running counts are left to the kernel."""
    rng = random.Random(seed)
    refs = np.array([rng.randrange(25) for _ in range(300)], dtype=np.uint64)
    caps = [1, 2, 3, 7]
    text, plans = curve.emit_curve(refs, "0" * 64, "T", points(refs, caps))
    signatures = theorem_signatures(text)
    for c, plan, p in zip(caps, plans, points(refs, caps)):
        _, alone = emit.emit_instance(refs, "0" * 64, "U", c, p.plain.cuts, witness=p.plain.witness, admission=p.admission)
        assert plan == alone
        literals = statement_literals(signatures[f"Pycert.Instance.T.C{c}.headline"], "Pycert.Admission.Optima")
        assert literals == [len(refs), c, optcurve.opt_hit_curve(refs).hits(c), optcurve.admission_hit_curve(refs).hits(c)]
    assert text.count(":= Curve.runP") == 6 * len(caps) and "AS0" not in text  # A, AS, AE per model: no literal planes
    assert text.count("theorem sort_ok") == 1 and text.count("#check @") == len(caps)


def test_values_are_kept_within_a_session_only() -> None:
    calls: list[int] = []

    def compute() -> int:
        calls.append(1)
        return len(calls)
    assert kept("t", 1, compute) == 1 and kept("t", 1, compute) == 2  # no session: computed each time
    with session():
        assert kept("t", 1, compute) == 3 and kept("t", 1, compute) == 3 and kept("t", 2, compute) == 4
        with session():  # nested: the outer one's
            assert kept("t", 1, compute) == 3
    assert kept("t", 1, compute) == 5


def test_a_curve_module_is_named_by_its_capacities() -> None:
    trace = Path("my trace.jsonl")
    assert curve_module(trace, [128]) == "CapacityMyTraceC128"
    assert curve_module(trace, [1, 2]) != curve_module(trace, [1, 3])
    assert re.fullmatch(r"CapacityMyTraceCurve[0-9a-f]{10}", curve_module(trace, [1, 2]))


# ---------------------------------------------------------------------------- on the real kernel


@pytest.fixture(scope="module")
def curved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("curve")
    trace = write_ids(d / "ids.txt", 600, 60, seed=39)
    opts = CapacityOptions(trace=[trace], capacity_blocks=[16, 1, 4], required=True)
    res = prove.prove([(producer("capacity"), opts)], backend="wasm", out_dir=d / "certs")
    assert res.ok, [s for s in res.stages if s.status != "ok"]
    return trace, d / "certs"


@pytest.mark.slow
def test_every_capacity_is_its_own_certificate_on_one_file(curved: tuple[Path, Path]) -> None:
    trace, certs = curved
    refs = read_trace(trace).refs
    files = sorted((certs / "lean" / "derived").iterdir())
    assert [f.name for f in files] == [f"{curve_module(Path('ids.txt'), [1, 4, 16])}.lean"]
    results = verify_certificates(sorted(certs.glob("capacity-*.json")), kernel=True, backend="wasm")
    assert [r.status for r in results] == ["ok"] * 3, [r.failures for r in results]
    for c in (1, 4, 16):
        doc = json.loads((certs / f"capacity-ids-c{c}.json").read_text())
        assert doc["parameters"]["curve"] == [1, 4, 16] and doc["parameters"]["lean_encoding"] == "packed-sorted-curve/1"
        headline = doc["theorems"][-1]
        assert headline == f"Pycert.Instance.{files[0].stem}.C{c}.headline"
        figures = {f["name"]: f["numerator"] for f in doc["figures"] if f["denominator"] == 1}
        assert figures["max_hits"] == optcurve.opt_hit_curve(refs).hits(c)
        assert figures["bypass_hits"] == optcurve.admission_hit_curve(refs).hits(c)
        assert doc["statements"][headline]["statement"].endswith(f" 600 {c} {figures['max_hits']} {figures['bypass_hits']}")
        assert [i["path"] for i in doc["inputs"]] == ["ids.txt", f"lean/derived/{files[0].name}"]


@pytest.mark.slow
def test_one_capacity_proved_again_keeps_the_file_the_others_rest_on(curved: tuple[Path, Path], tmp_path: Path) -> None:
    trace, proved = curved
    certs = Path(shutil.copytree(proved, tmp_path / "certs"))
    shutil.copy(trace, tmp_path / trace.name)
    opts = CapacityOptions(trace=[tmp_path / trace.name], capacity_blocks=[4], required=True)
    assert prove.prove([(producer("capacity"), opts)], backend="wasm", out_dir=certs).ok
    names = sorted(f.name for f in (certs / "lean" / "derived").iterdir())
    assert names == sorted(["CapacityIdsC4.lean", f"{curve_module(Path('ids.txt'), [1, 4, 16])}.lean"])
    assert [verify_certificate(certs / f"capacity-ids-c{c}.json").status for c in (1, 4, 16)] == ["ok"] * 3


@pytest.mark.slow
def test_a_forged_curve_is_refused(curved: tuple[Path, Path], tmp_path: Path) -> None:
    """A certificate that names another list of capacities names another file (missing), and one whose
    capacity is not in its curve is refused outright."""
    trace, proved = curved
    certs = Path(shutil.copytree(proved, tmp_path / "certs"))
    shutil.copy(trace, tmp_path / trace.name)
    cert = certs / "capacity-ids-c4.json"
    forge(cert, lambda d: d["parameters"].update(curve=[1, 4]))
    res = verify_certificate(cert)
    assert res.status == "rejected" and any(f.reason == "missing-input" for f in res.failures), res.failures
    forge(cert, lambda d: d["parameters"].update(curve=[1, 16]))
    res = verify_certificate(cert)
    assert res.status == "rejected" and any("parameters.curve" in f.render() for f in res.failures), res.failures


@pytest.mark.slow
def test_a_literal_one_off_at_one_capacity_is_refused_there(tmp_path: Path) -> None:
    """The middle capacity's headline claims one hit more than its witness and its cut list give: Lean
    refuses that declaration, and the other capacities of the file still check."""
    rng = random.Random(7)
    refs = np.array([rng.randrange(12) for _ in range(200)], dtype=np.uint64)
    text, plans = curve.emit_curve(refs, "0" * 64, "CurveOneOff", points(refs, [1, 2, 4]))
    h = plans[1].witness_hits
    old = f"Pycert.Admission.Optima trace 200 2 {h} "
    assert text.count(old) == 1
    path = tmp_path / "CurveOneOff.lean"
    path.write_text(text.replace(old, f"Pycert.Admission.Optima trace 200 2 {h + 1} "))
    res = build(library=library_dir(), files=[path], backend=resolve("wasm"))
    [mine] = [r for r in res.results if r.module == "CurveOneOff"]
    errors = [d for d in mine.diagnostics if d.severity == "error"]
    lines = text.splitlines()
    start = lines.index("namespace C2") + 1
    end = lines.index("end C2") + 1
    assert errors and all(start <= d.line <= end for d in errors), [(d.line, d.message[:80]) for d in errors]
    assert all("headline" in lines[d.line - 1] or lines[d.line - 2].startswith("public theorem headline")
               for d in errors), [lines[d.line - 1] for d in errors]
