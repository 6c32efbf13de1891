"""The CI gate on the real library: it builds on the kernel with no error and no `sorry`, and the
axiom audit of what the kernel compiled passes, covering every theorem a certificate names."""

from __future__ import annotations

import json

import pytest

from pycert.audit import axioms as au
from pycert.lean import build as kernel
from pycert.claims import FAMILIES
from pycert.cli import main


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_library_builds_clean_and_passes_the_audit(wasm) -> None:
    build = kernel.build(library=kernel.default_library(), backend="wasm")
    assert build.ok, [(r.module, r.status, [d.render() for d in r.failures]) for r in build.results if not r.ok]
    assert {r.module for r in build.results} >= {"Pycert.Basic", "Pycert.Ceiling", "Pycert.FirstTouch",
                                                  "Pycert.Isolation", "Pycert.Pooling", "Pycert.Packed", "Pycert.PackedTrace"}
    assert not [d.render() for r in build.results for d in r.diagnostics if d.severity in ("error", "warning")]
    report = au.audit_build(build, wasm)
    assert report.ok, report.summary()
    assert set(report.axioms_seen) <= au.ALLOWED_AXIOMS
    names = {n for src in au.module_sources(kernel.default_library()).values()
             for n in au.scan_declared_theorems(src.read_text())}
    for family in FAMILIES.values():
        assert set(family.theorems) <= names, family.name
        assert set(family.theorems) <= report.axioms_by_theorem.keys(), family.name  # what #print axioms probes
    assert report.cross_check.startswith("not run: on wasm")


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_audit_command_gates(wasm, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "--json", "--lean", "wasm"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "pass" and out["declarations_audited"] >= 150


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_lake_build_result_audits_every_library_module(wasm) -> None:
    """Natively one `lake build` result stands for the library: the audit expands it to the modules."""
    build = kernel.build(library=kernel.default_library(), backend="wasm")
    lake_like = build.model_copy(update={"results": [build.results[0].model_copy(
        update={"module": kernel.LAKE_BUILD, "file": str(kernel.default_library())})]})
    report = au.audit_build(lake_like, wasm, kernel.default_library())
    direct = au.audit_build(build, wasm, kernel.default_library())
    assert report.ok and {m.module for m in report.modules} == {m.module for m in direct.modules}
    assert report.axioms_by_theorem == direct.axioms_by_theorem
