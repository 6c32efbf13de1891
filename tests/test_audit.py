"""The axiom audit: planted defects compiled by the real (wasm) kernel must each be rejected, by name."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from pycert.audit import axioms as au
from pycert.audit import graph
from pycert.audit.sarif import to_sarif
from pycert.cli import main
from pycert.core import resources
from pycert.core.errors import InputError, Rejected
from pycert.lean.build import BuildResult
from pycert.lean.diagnostics import CheckResult
from pycert.lean.sources import declared_theorems
from pycert.lean.wasm import WasmBackend

# ---------------------------------------------------------------------------- planted fixtures

DEFECTS = """module
prelude
public import Init.Prelude

axiom myAx : False
public theorem usesAx : Eq (1 : Nat) 2 := myAx.elim
public theorem usesSorry : Eq (2 : Nat) 3 := sorry
public def fastId (n : Nat) : Nat := n
@[implemented_by fastId, expose] public def slowId (n : Nat) : Nat := n
public theorem usesImpl : Eq (slowId 1) 1 := rfl
@[extern "pycert_ext", expose] public def extF (n : Nat) : Nat := n
public theorem usesExtern : Eq (extF 1) 1 := rfl
public partial def loop (n : Nat) : Nat := loop n
public theorem usesPartial : Eq (loop 0) (loop 0) := rfl
public theorem clean : Eq (HAdd.hAdd (2 : Nat) 2) 4 := rfl
public theorem usesChoice (h : Nonempty Nat) : Eq (Classical.choice h) (Classical.choice h) := rfl
@[expose] public def exposedDef (n : Nat) : Nat := Nat.succ n
public theorem viaDef : Eq (exposedDef 1) 2 := rfl
theorem privThm : Eq (1 : Nat) 1 := rfl
public theorem usesPriv : Eq (1 : Nat) 1 := privThm
"""

# `native_decide` needs Lean.ofReduceBool (Init.Core); this Lean proves the goal through an
# auxiliary `nd._proof_1_1` that applies that axiom, and the kernel accepts it.
NATIVE = """module
prelude
public import Init.Core

public theorem nd : (2 : Nat) + 2 = 4 := by native_decide
public theorem usesPropext (a b : Prop) (h : a ↔ b) : a = b := propext h
public theorem usesQuotSound : True := (fun _ => trivial) (@Quot.sound Nat (fun _ _ => True) 0 1 trivial)
"""

# The axiom is declared by a macro's expansion: no `axiom` keyword precedes `hidden` in the source.
MACRO = """prelude
import Init.Notation

set_option hygiene false in
macro "trust_me" : command => `(axiom hidden : False)

trust_me

theorem usesHidden : Eq (3 : Nat) 4 := hidden.elim
theorem alsoClean : Eq (3 : Nat) 3 := rfl
"""

# `ghost` is declared in the source but never compiled (`#exit` stops elaboration).
CLEAN = """module
prelude
public import Init.Prelude

@[expose] public def double (n : Nat) : Nat := HAdd.hAdd n n
public theorem double_two : Eq (double 2) 4 := rfl
theorem helper : Eq (1 : Nat) 1 := rfl
public theorem uses_helper : Eq (1 : Nat) 1 := helper
public theorem uses_choice (h : Nonempty Nat) : Eq (Classical.choice h) (Classical.choice h) := rfl
"""
GHOST = CLEAN + "#exit\npublic theorem ghost : Eq (1 : Nat) 1 := rfl\n"

SOURCES = {"Defects": DEFECTS, "Native": NATIVE, "Macro": MACRO, "Clean": CLEAN, "Ghosty": GHOST}


def _compile_all(t: WasmBackend, d: Path) -> dict[str, subprocess.CompletedProcess[str]]:
    """The raw `lean -o` of each fixture, two at a time (the kernel runner would refuse the `sorry`)."""
    env = {**os.environ, "LEAN_PATH": str(t.lib)}
    procs: dict[str, subprocess.Popen[str]] = {}
    done: dict[str, subprocess.CompletedProcess[str]] = {}
    # The slowest (Init.Core) first, so the others overlap it.
    order = ["Native", "Defects", "Macro", "Clean", "Ghosty"]
    while order or procs:
        while order and len(procs) < 2:
            m = order.pop(0)
            procs[m] = subprocess.Popen(
                [str(t.node), str(t.lean_js), "--json", "-o", f"{m}.olean", f"{m}.lean"], cwd=d,
                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            )
        m = next(iter(procs))
        out, _ = procs[m].communicate(timeout=900)
        done[m] = subprocess.CompletedProcess(procs[m].args, procs[m].returncode, out, "")
        del procs[m]
    return done


def _diagnostics(stdout: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith('{"caption"')]


@pytest.fixture(scope="module")
def built(wasm: WasmBackend) -> Iterator[Path]:
    d = resources.scratch_root() / f"audit-test-{uuid.uuid4().hex[:10]}"
    d.mkdir()
    for m, text in SOURCES.items():
        (d / f"{m}.lean").write_text(text)
    runs = _compile_all(wasm, d)
    for m, run in runs.items():
        diags = _diagnostics(run.stdout)
        errors = [x["data"] for x in diags if x["severity"] == "error"]
        assert not errors and run.returncode in (0, 1), (m, errors)
        warnings = [x["data"] for x in diags if x["severity"] == "warning"]
        expected = {"Defects": ["declaration uses `sorry`"], "Ghosty": ["using 'exit' to interrupt Lean"]}
        assert warnings == expected.get(m, []), (m, warnings)
        assert (d / f"{m}.olean.private").is_file()
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _build_result(d: Path, modules: list[str]) -> BuildResult:
    """What the runner reports for these compiled files (each one really compiled above)."""
    results = [CheckResult(module=m, file=str(d / f"{m}.lean"), ok=True, status="ok", exit_code=0, seconds=0.0)
               for m in modules]
    return BuildResult(ok=True, backend="wasm", results=results, olean_dir=str(d), seconds=0.0)


def _triples(report: au.AuditReport) -> set[tuple[str, str, str]]:
    return {(f.subject, f.constant, f.reason) for f in report.findings}


@pytest.mark.slow
def test_each_planted_defect_is_rejected_by_name(built: Path, wasm: WasmBackend) -> None:
    report = au.audit_build(_build_result(built, ["Defects", "Native", "Macro", "Ghosty"]), wasm, None)
    assert not report.ok and report.verdict == "fail"
    found = _triples(report)
    expected = {
        ("myAx", "myAx", "project-axiom"),  # an axiom, even unused
        ("usesAx", "myAx", "project-axiom"),
        ("usesSorry", "sorryAx", "sorry"),
        ("nd", "Lean.ofReduceBool", "native-code"),
        ("usesImpl", "slowId", "implemented_by"),
        ("usesExtern", "extF", "extern"),
        ("usesPartial", "loop", "partial"),
        ("usesHidden", "hidden", "project-axiom"),  # the axiom a macro declared
        ("hidden", "hidden", "project-axiom"),
        ("ghost", "ghost", "missing"),  # declared in the source, absent from the compiled files
    }
    assert expected <= found, expected - found
    clean = {"clean", "usesChoice", "viaDef", "usesPriv", "usesPropext", "usesQuotSound", "alsoClean",
             "double_two", "uses_helper", "uses_choice"}
    assert not {f.subject for f in report.findings} & clean
    # Every other finding is the compiler's helper behind `nd`, flagged with the same constant.
    assert {(f.subject, f.constant) for f in report.findings if (f.subject, f.constant, f.reason) not in expected} \
        == {("nd._proof_1_1", "Lean.ofReduceBool")}
    assert {"propext", "Quot.sound", "Classical.choice", "Lean.ofReduceBool", "sorryAx", "myAx", "hidden"} \
        <= set(report.axioms_seen)
    by_decl = {f.subject: f for f in report.findings}
    assert (by_decl["usesAx"].module, by_decl["usesAx"].line, by_decl["usesAx"].column) == ("Defects", 6, 0)
    assert by_decl["nd"].chain == ["nd", "nd._proof_1_1", "Lean.ofReduceBool"]
    assert by_decl["nd._proof_1_1"].auxiliary and not by_decl["nd"].auxiliary
    line = report.summary()
    assert line.startswith(f"fail: {len(report.findings)} findings: myAx -> myAx (project-axiom); usesAx -> myAx")
    assert "\n" not in line


@pytest.mark.slow
def test_clean_modules_pass(built: Path, wasm: WasmBackend) -> None:
    report = au.audit_build(_build_result(built, ["Clean"]), wasm, None)
    assert report.ok, report.findings
    assert report.declarations_audited == 4  # double_two, helper, uses_helper, uses_choice
    assert report.axioms_seen == ["Classical.choice"]
    assert report.word_size == 4 and report.lean_version == wasm.stamp.lean_version
    assert report.summary().startswith("pass: 4 theorems in 1 module,")
    report = au.audit_modules(["Native"], [built, wasm.lib], declared_theorems=["usesPropext", "usesQuotSound"])
    assert {f.subject for f in report.findings} == {"nd", "nd._proof_1_1"}
    assert {"propext", "Quot.sound"} <= set(report.axioms_seen)


@pytest.mark.slow
def test_without_the_private_part_the_audit_fails_closed(built: Path, wasm: WasmBackend, tmp_path: Path) -> None:
    for suffix in (".olean", ".olean.server"):
        shutil.copy(built / f"Clean{suffix}", tmp_path / f"Clean{suffix}")
    report = au.audit_modules(["Clean"], [tmp_path, wasm.lib], declared_theorems=["double_two", "uses_choice"])
    assert not report.ok
    assert _triples(report) >= {("double_two", "double_two", "not-a-theorem"), ("uses_choice", "uses_choice", "not-a-theorem")}


@pytest.mark.slow
def test_cli_table_json_and_sarif(built: Path, wasm: WasmBackend, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    common = ["--olean-dir", str(built), "--toolchain-lib", str(wasm.lib)]
    assert main(["audit", *common, "--module", "Clean", str(built / "Clean.lean")]) == 0
    out = capsys.readouterr().out
    assert "PASS: 4 theorems audited" in out and "Classical.choice" in out
    sarif = tmp_path / "audit.sarif"
    rc = main(["audit", *common, "--module", "Defects", "--json", "--sarif", str(sarif), str(built / "Defects.lean")])
    assert rc == 1
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"] == "fail" and data["declarations_audited"] == 10
    log = json.loads(sarif.read_text())
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    run = log["runs"][0]
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    sorry = next(r for r in run["results"] if r["properties"]["declaration"] == "usesSorry")
    assert sorry["ruleId"] == "pycert/sorry" and rules[sorry["ruleIndex"]] == "pycert/sorry"
    assert "usesSorry" in sorry["message"]["text"] and "sorryAx" in sorry["message"]["text"]
    phys = sorry["locations"][0]["physicalLocation"]
    assert phys["artifactLocation"]["uri"].endswith("Defects.lean")
    assert phys["region"] == {"startLine": 7, "startColumn": 1}


# ---------------------------------------------------------------------------- fast: no kernel


def test_allow_list_is_pinned() -> None:
    graph.check_allow_list()
    assert graph.allow_list_digest(graph.ALLOWED_AXIOMS) == graph.ALLOWED_AXIOMS_SHA256
    for widened in ({*au.ALLOWED_AXIOMS, "Lean.ofReduceBool"}, {*au.ALLOWED_AXIOMS, "sorryAx"},
                    au.ALLOWED_AXIOMS - {"propext"}):
        with pytest.raises(Rejected, match="allow-list was changed"):
            graph.check_allow_list(widened)
    with pytest.raises(Rejected):
        au.audit_modules(["Init.Prelude"], [Path("/nonexistent")], allowed_axioms={*au.ALLOWED_AXIOMS, "myAx"})


def test_toolchain_axioms_outside_the_allow_list_are_offences(wasm: WasmBackend) -> None:
    env = graph.Environment([wasm.lib])
    env.load_closure(["Init.Core"])
    assert env.node("propext").offense is None and env.node("Quot.sound").offense is None
    assert env.node("Lean.ofReduceBool").offense == "native-code"
    assert env.node("Lean.trustCompiler").offense == "native-code"
    assert env.node("sorryAx").offense == "sorry"
    assert env.node("Nat.add").offense is None  # the toolchain's own @[extern] is how Nat.add runs, not a finding


def test_missing_module_and_bad_input(wasm: WasmBackend) -> None:
    with pytest.raises(InputError, match="no .olean for module Pycert.Nope"):
        au.audit_modules(["Pycert.Nope"], [wasm.lib])
    with pytest.raises(InputError, match="no modules"):
        au.audit_modules([], [wasm.lib])
    failed = BuildResult(ok=False, backend="wasm", olean_dir="/tmp", seconds=0.0, results=[
        CheckResult(module="A", file="A.lean", ok=False, status="failed", exit_code=1, seconds=0.0)])
    with pytest.raises(InputError, match="did not accept A"):
        au.audit_build(failed, wasm, None)


def test_scan_declared_theorems() -> None:
    src = """namespace Pycert
/- theorem commented : True := trivial -/
theorem a : True := trivial -- theorem b
@[simp] private theorem b : True := trivial
section S
protected theorem c : True := trivial
end S
namespace Inner
public theorem d (n : Nat) : n = n := rfl
end Inner
theorem _root_.top : True := trivial
end Pycert
theorem e : True := trivial
"""
    assert declared_theorems(src) == ["Pycert.a", "Pycert.b", "Pycert.c", "Pycert.Inner.d", "top", "e"]


def test_display_and_auxiliary_names() -> None:
    assert graph.display_name("_private.Pycert.Basic.0.Pycert.foo") == "Pycert.foo"
    assert graph.display_name("Nat.add") == "Nat.add"
    assert graph.is_auxiliary("_private.M.0.nd._proof_1_1") and not graph.is_auxiliary("_private.M.0.nd")


def test_strongly_connected_orders_dependencies_first() -> None:
    succ = {"a": ("b",), "b": ("c", "a"), "c": ("d",), "d": ()}
    comps = graph.strongly_connected(["a", "b", "c", "d"], succ)
    assert [sorted(c) for c in comps] == [["d"], ["c"], ["a", "b"]]


def test_sarif_without_source_positions() -> None:
    f = au.Finding(subject="X.t", module="X", constant="sorryAx", reason="sorry", detail=au.WHY["sorry"],
                   chain=["X.t", "X.h", "sorryAx"])
    report = au.AuditReport(verdict="fail", findings=[f], declarations_audited=1, axioms_seen=["sorryAx"], seconds=0.1,
                            allowed_axioms=sorted(au.ALLOWED_AXIOMS), modules=[], modules_loaded=1, constants_walked=3,
                            trusted_toolchain_bodies=0, lean_version="4.28.0-pre", githash="0" * 40, word_size=4)
    log = json.loads(to_sarif(report, {}).dump())
    res = log["runs"][0]["results"][0]
    assert res["locations"][0] == {"logicalLocations": [{"name": "t", "fullyQualifiedName": "X.t", "kind": "function"}]}
    assert res["message"]["text"].endswith("(via X.t -> X.h -> sorryAx)")
    assert report.summary() == "fail: 1 finding: X.t -> sorryAx (sorry); 1 theorem in 0 modules, axioms seen: sorryAx; 0.10 s"


# ---------------------------------------------------------------------------- the library read ahead

PRELOAD_FILE = "import Pycert.Ceiling\npublic theorem preloadProbe (n : Nat) : n + 0 = n := rfl\n"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_library_read_ahead_gives_the_report_a_fresh_read_gives(wasm: WasmBackend, lean_dir: Path) -> None:
    """prove reads the library for the audit while Lean checks the instances (``library_preload``); the audit
    then adopts that read, relabelled with the build's own paths, only where the build finds the very same
    files: the report is the one a fresh read gives, field by field."""
    from pycert.lean import build

    src = lean_dir / "PreloadProbe.lean"
    src.write_text(PRELOAD_FILE)  # the same text every run: after the first, the build cache answers
    res = build.build(library=resources.library_dir(), files=[src], backend=wasm)
    assert res.ok, [r.summary() for r in res.results if not r.ok]
    env = au.library_preload(wasm, resources.library_dir())
    assert env is not None and "Pycert.Ceiling" in env.modules and env.nodes
    read_ahead = au.audit_build(res, wasm, resources.library_dir(), digests=["preloadProbe"], preloaded=env)
    assert env.search_path[0] == Path(res.olean_dir)  # adopted
    fresh = au.audit_build(res, wasm, resources.library_dir(), digests=["preloadProbe"])
    assert read_ahead.model_dump(exclude={"seconds"}) == fresh.model_dump(exclude={"seconds"})
    assert fresh.ok and fresh.type_sha256["preloadProbe"]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_read_ahead_of_other_files_is_set_aside(wasm: WasmBackend, lean_dir: Path) -> None:
    """The same bytes in another file (a copy, not a link of the build's) are not the build's files: the audit
    reads those itself."""
    env = au.library_preload(wasm, resources.library_dir())
    assert env is not None
    copy = lean_dir / "copy"
    shutil.copytree(env.search_path[0], copy)
    assert not env.rehome([copy, wasm.toolchain_library()])
    assert env.rehome([env.search_path[0], wasm.toolchain_library()])
