"""The CI gate on the real library: it builds on the kernel with no error and no `sorry`, and the
axiom audit of what the kernel compiled passes, covering every theorem a certificate names."""

from __future__ import annotations

import json

import pytest

from pycert.audit import axioms as au
from pycert.audit.graph import ALLOWED_AXIOMS
from pycert.cli import main
from pycert.core.resources import library_dir
from pycert.families import FAMILIES
from pycert.lean import build
from pycert.lean.sources import declared_theorems, library_modules


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_library_builds_clean_and_passes_the_audit(wasm) -> None:
    res = build.build(library=library_dir(), backend="wasm")
    assert res.ok, [(r.module, r.status, [d.render() for d in r.failures]) for r in res.results if not r.ok]
    assert {r.module for r in res.results} == set(library_modules(library_dir()))
    assert {f.lean_module for f in FAMILIES.values()} <= {r.module for r in res.results}
    assert not [d.render() for r in res.results for d in r.diagnostics if d.severity in ("error", "warning")]
    report = au.audit_build(res, wasm)
    assert report.ok, report.summary()
    assert set(report.axioms_seen) <= ALLOWED_AXIOMS
    assert {m.module for m in report.modules} == {r.module for r in res.results}
    names = {n for src in library_modules(library_dir()).values()
             for n in declared_theorems(src.read_text())}
    for family in FAMILIES.values():
        assert set(family.theorem_names) <= names, family.name
        assert set(family.theorem_names) <= report.axioms_by_theorem.keys(), family.name  # what #print axioms probes
    assert report.cross_check.startswith("not run: on wasm")


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_audit_command_gates(wasm, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "--json", "--backend", "wasm"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "pass" and out["declarations_audited"] >= 150
