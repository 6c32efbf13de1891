"""The native #print axioms cross-check: its probe file, its parser and the comparison, and the fact
that makes it native-only (the wasm Lean refuses the command)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pycert.audit.axioms import AuditReport, compare, cross_check
from pycert.lean import build
from pycert.lean import print_axioms as pa
from pycert.lean.backend import PrintedAxioms
from tests.conftest import nonce

PLAIN = """\
probe.lean:3:0: info: 'Pycert.Ceiling.hits_add_distinct_le' depends on axioms: [propext, Classical.choice, Quot.sound]
probe.lean:4:0: info: 'Pycert.Basic.mem_cons' does not depend on any axioms
probe.lean:5:0: info: 'Scope.fromBytes'_append' depends on axioms: [propext]
probe.lean:6:0: error: unknown constant 'Pycert.gone'
"""


def test_parse_plain_output() -> None:
    assert pa.parse(PLAIN) == {
        "Pycert.Ceiling.hits_add_distinct_le": ["Classical.choice", "Quot.sound", "propext"],
        "Pycert.Basic.mem_cons": [],
        "Scope.fromBytes'_append": ["propext"],
    }


def test_parse_json_output_and_guillemets() -> None:
    lines = [
        {"severity": "information", "pos": {"line": 3, "column": 0},
         "data": "'Pycert.«weird name»' depends on axioms: [sorryAx]"},
        {"severity": "information", "pos": {"line": 4, "column": 0}, "data": "'Pycert.ok' does not depend on any axioms"},
    ]
    text = "\n".join(json.dumps(x) for x in lines) + "\nnot json {\n"
    assert pa.parse(text) == {"Pycert.weird name": ["sorryAx"], "Pycert.ok": []}


def test_probe_is_a_plain_file_naming_every_theorem() -> None:
    src = pa.probe_source(["Pycert.Basic", "Pycert.Ceiling"], ["Pycert.a", "Pycert.weird name", "Pycert.b'"])
    lines = src.splitlines()
    assert not any(line.startswith("module") for line in lines)
    assert "import Pycert.Basic" in lines and "import Pycert.Ceiling" in lines
    assert lines[-3:] == ["#print axioms Pycert.a", "#print axioms Pycert.«weird name»", "#print axioms Pycert.b'"]


def test_compare_names_every_difference() -> None:
    ours = {"a": ["propext"], "b": [], "c": ["Quot.sound"]}
    lean = {"a": ["propext"], "b": ["sorryAx"], "d": []}
    diffs = {d.subject: d for d in compare(ours, lean)}
    assert set(diffs) == {"b", "c", "d"}
    assert diffs["b"].render() == "b: pycert [], #print axioms [sorryAx]"
    assert (diffs["b"].expected, diffs["b"].found) == ("", "sorryAx")
    assert diffs["c"].found is None and diffs["d"].expected is None
    assert compare(ours, dict(ours)) == []


def report(axioms: dict[str, list[str]]) -> AuditReport:
    return AuditReport(verdict="pass", findings=[], declarations_audited=len(axioms), axioms_seen=[], seconds=0.0,
                       allowed_axioms=[], modules=[], modules_loaded=0, constants_walked=0,
                       trusted_toolchain_bodies=0, lean_version="", githash="", word_size=8,
                       axioms_by_theorem=axioms)


def test_a_disagreement_fails_the_audit() -> None:
    """What `lake env lean` prints is stood in for here (no native Lean on these machines): the
    comparison and the verdict are what is under test."""
    printed = PrintedAxioms(answers=pa.parse(PLAIN))
    r = report({"Pycert.Ceiling.hits_add_distinct_le": ["Classical.choice", "Quot.sound", "propext"],
                "Pycert.Basic.mem_cons": ["propext"], "Scope.fromBytes'_append": ["propext"]})
    cross_check(r, printed)
    assert not r.ok and [f.subject for f in r.findings] == ["Pycert.Basic.mem_cons"]
    assert r.findings[0].reason == "cross-check" and r.cross_check == "disagree on 1 of 3 theorems"
    r = report({"Pycert.Ceiling.hits_add_distinct_le": ["Classical.choice", "Quot.sound", "propext"],
                "Pycert.Basic.mem_cons": [], "Scope.fromBytes'_append": ["propext"]})
    cross_check(r, printed)
    assert r.ok and r.cross_check.startswith("agree: ")
    cross_check(r, PrintedAxioms(not_run="no Lean here"))
    assert r.cross_check == "not run: no Lean here"


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_wasm_lean_refuses_print_axioms(wasm, lean_dir: Path) -> None:
    """Why the cross-check is native-only; if a later wasm build accepts it, this fails and says so."""
    probe = lean_dir / "Probe.lean"
    probe.write_text(nonce() + "prelude\nimport Init.Prelude\ntheorem t : True := True.intro\n#print axioms t\n")
    res = build.check_files([probe], backend="wasm", timeout=600).by_module()["Probe"]
    assert not res.ok
    assert any("cannot use `#print axioms` in a `module`" in d.message for d in res.failures), \
        [d.render() for d in res.diagnostics]
