"""The Lean backend interface: native Lake and the embedded wasm Lean give the build system and the audit
the same things (one verdict per module, a tree of compiled files, the toolchain's own library, the
cross-check). No elan install exists on these machines, so the native backend runs against stand-in
``lake`` and ``lean`` scripts that copy the wasm build's files and answer ``#print axioms`` from a table."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from pycert.audit import axioms as au
from pycert.core.errors import InputError, ToolchainMissing
from pycert.core.resources import library_dir
from pycert.lean import build
from pycert.lean.backend import parse_lean_version
from pycert.lean.diagnostics import check_result
from pycert.lean.native import NativeBackend, lake_verdicts
from pycert.lean.process import ProcessRun
from pycert.lean.resolve import resolve
from pycert.lean.sources import Unit, library_modules
from tests.conftest import REPO

FAKE = """#!{python}
import json, os, re, shutil, sys
from pathlib import Path

args = sys.argv[1:]
if Path(sys.argv[0]).name == "lean":
    if args == ["--version"]:
        print("Lean (version 4.28.0-fake, x86_64-unknown-linux-gnu, commit 0123abcd, Release)")
    elif args == ["--print-libdir"]:
        print(os.environ["FAKE_LIBDIR"])
    sys.exit(0)
if args[0] == "build":
    shutil.copytree(os.environ["FAKE_TREE"], ".lake/build/lib/lean", dirs_exist_ok=True)
    Path(os.environ["FAKE_LOG"]).write_text(json.dumps(args))
    sys.exit(0)
if args[:2] == ["env", "lean"]:
    answers = json.loads(Path(os.environ["FAKE_AXIOMS"]).read_text())
    for name in re.findall(r"^#print axioms (.+)$", Path(args[-1]).read_text(), re.M):
        name = name.replace("«", "").replace("»", "")
        if name in answers:
            axioms = answers[name]
            text = (f"'{{name}}' depends on axioms: [{{', '.join(axioms)}}]" if axioms
                    else f"'{{name}}' does not depend on any axioms")
            print(json.dumps({{"severity": "information", "pos": {{"line": 1, "column": 0}}, "data": text}}))
    sys.exit(0)
sys.exit(2)
"""


def install_fakes(bin_dir: Path) -> None:
    bin_dir.mkdir()
    for tool in ("lake", "lean"):
        (bin_dir / tool).write_text(FAKE.format(python=sys.executable))
        (bin_dir / tool).chmod(0o755)


def test_lean_version_is_parsed_one_way() -> None:
    line = "Lean (version 4.28.0-pre, wasm32-unknown-emscripten, commit 38f3c0c45b8df6da2652faff6dcaa15afb5a6981, Release)"
    assert parse_lean_version("[DEBUG] x\n" + line) == ("4.28.0-pre", "38f3c0c45b8df6da2652faff6dcaa15afb5a6981")
    assert parse_lean_version("Lean (version 4.24.0, Release)") == ("4.24.0", None)
    assert parse_lean_version("lean: command not found") is None


def test_resolve_prefers_native_on_path_and_honours_the_choice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_fakes(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    monkeypatch.delenv("PYCERT_LEAN", raising=False)
    assert isinstance(resolve(), NativeBackend) and resolve("native").kind == "native"
    assert resolve("native").info().lean_version == "4.28.0-fake"
    monkeypatch.setenv("PYCERT_LEAN", "wasm")
    assert resolve().kind == "wasm"
    with pytest.raises(InputError, match="unknown Lean backend"):
        resolve("jvm")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    with pytest.raises(ToolchainMissing, match="elan"):
        resolve("native")


def test_lake_output_gives_each_library_module_its_verdict(tmp_path: Path) -> None:
    units = [Unit(module=f"Lib.{m}", path=tmp_path / "lean" / "Lib" / f"{m}.lean", imports=[]) for m in "ABC"]
    failed = ProcessRun(exit_code=1, seconds=3.0, timed_out=False, stderr="", stdout=(
        "✔ [1/3] Built Lib.A\n"
        f"error: ./lean/Lib/B.lean:4:2: type mismatch\n"
        f"warning: {units[2].path}:7:0: declaration uses 'sorry'\n"))
    verdicts = {r.module: r for r in lake_verdicts(failed, units, tmp_path)}
    assert verdicts["Lib.B"].status == "failed" and "type mismatch" in verdicts["Lib.B"].detail
    assert verdicts["Lib.C"].status == "failed" and "sorry" in verdicts["Lib.C"].detail
    assert verdicts["Lib.A"].status == "skipped" and not verdicts["Lib.A"].ok
    clean = failed.model_copy(update={"exit_code": 0, "stdout": "✔ [3/3] Built Lib.C\n"})
    assert all(r.ok for r in lake_verdicts(clean, units, tmp_path))
    late = failed.model_copy(update={"exit_code": None, "timed_out": True})
    assert {(r.status, r.cause) for r in lake_verdicts(late, units, tmp_path)} == {("resources", "timeout")}


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_native_backend_builds_and_audits_like_wasm(wasm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One verdict per library module natively too (no stand-in module for `lake build`), the same
    audit, and Lean's `#print axioms` compared theorem by theorem: a disagreement fails the audit."""
    reference = build.build(library=library_dir(), backend=wasm)
    assert reference.ok
    direct = au.audit_build(reference, wasm)
    project = tmp_path / "project"
    shutil.copytree(REPO / "lean", project / "lean")
    install_fakes(tmp_path / "bin")
    answers = tmp_path / "axioms.json"
    answers.write_text(json.dumps(direct.axioms_by_theorem))
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    for key, value in (("FAKE_TREE", reference.olean_dir), ("FAKE_LIBDIR", str(wasm.lib)),
                       ("FAKE_LOG", str(tmp_path / "lake.json")), ("FAKE_AXIOMS", str(answers))):
        monkeypatch.setenv(key, value)
    native = resolve("native")
    res = build.build(library=project / "lean", backend=native)
    assert res.ok and res.backend == "native", [r.detail for r in res.results]
    assert sorted(r.module for r in res.results) == sorted(library_modules(project / "lean"))
    lake_args = json.loads((tmp_path / "lake.json").read_text())
    assert lake_args[0] == "build" and sorted(lake_args[1:]) == sorted(f"+{r.module}" for r in res.results)
    report = au.audit_build(res, native, project / "lean")
    assert report.ok and report.cross_check.startswith("agree"), report.summary()
    assert {m.module for m in report.modules} == {m.module for m in direct.modules}
    assert report.axioms_by_theorem == direct.axioms_by_theorem
    name = "Pycert.Ceiling.hits_add_distinct_le"
    answers.write_text(json.dumps({**direct.axioms_by_theorem, name: ["sorryAx"]}))
    report = au.audit_build(res, native, project / "lean")
    assert not report.ok and [(f.subject, f.reason, f.found) for f in report.findings] == [(name, "cross-check", "sorryAx")]


def test_a_run_that_dies_after_an_error_is_a_crash_not_the_files_verdict() -> None:
    """Node exits 1 on an uncaught JavaScript exception, as Lean does after an error: what Lean printed before
    the crash is not the whole file's verdict (a batch of mutants read every later declaration as accepted)."""
    error = ('{"severity":"error","pos":{"line":3,"column":0},"endPos":null,"fileName":"M.lean",'
             '"data":"type mismatch","caption":"","kind":"[anonymous]","isSilent":false,"keepFullRange":false}\n')
    failed = ProcessRun(exit_code=1, seconds=3.0, timed_out=False, stderr="", stdout=error)
    assert check_result("M", "M.lean", failed, "M.lean").status == "failed"
    died = failed.model_copy(update={"stderr": "RangeError: Maximum call stack size exceeded\n    at invoke_viiii "
                                               "(lean.js:1:724714)\n\nNode.js v24.19.0\n"})
    res = check_result("M", "M.lean", died, "M.lean")
    assert res.status == "crashed" and not res.ok and "Maximum call stack" in res.detail


def test_a_run_past_its_time_limit_says_a_longer_timeout_is_one_remedy() -> None:
    """The first remedy for a Lean file that ran out of time is more time: the message names --timeout."""
    run = ProcessRun(exit_code=None, seconds=2.0, timed_out=True, timeout=2.0, stderr="", stdout="")
    res = check_result("M", "M.lean", run, "M.lean")
    assert res.status == "resources" and res.cause == "timeout" and not res.ok
    assert "ran past its time limit of 2 s and was killed; give a longer `--timeout`, or make the work smaller" in res.detail
