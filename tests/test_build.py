"""The build system on the real wasm kernel: accept, reject, sorry, imports, order, cache, timeout."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pycert.core.errors import InputError
from pycert.lean import build, process, scheduler
from pycert.lean.diagnostics import CheckResult, check_result, parse_diagnostics
from pycert.lean.sources import Unit, parse_imports
from tests.conftest import REPO, nonce

PRELUDE = "prelude\nimport Init.Prelude\n"


def test_parse_imports_reads_only_the_header() -> None:
    src = "module\n\nprelude\n-- c\n/- block\ncomment -/\npublic import A.B\nimport C\nmeta import D\n\ntheorem x : True := True.intro\nimport E\n"
    assert parse_imports(src) == ["A.B", "C", "D"]


def test_topo_order_and_cycle() -> None:
    assert scheduler.topo_order({"b": ["a"], "a": [], "c": ["b", "a"]}) == ["a", "b", "c"]
    with pytest.raises(InputError, match="import cycle"):
        scheduler.topo_order({"a": ["b"], "b": ["a"]})


def test_schedule_runs_imports_first_and_skips_what_a_failure_blocks() -> None:
    def unit(name: str, *imports: str) -> Unit:
        return Unit(module=name, path=Path(f"{name}.lean"), imports=list(imports))

    ran: list[str] = []

    def compile_unit(u: Unit) -> CheckResult:
        ran.append(u.module)
        ok = u.module != "B"
        return CheckResult(module=u.module, file=str(u.path), ok=ok, status="ok" if ok else "failed", exit_code=0,
                           seconds=0.0)

    units = [unit("C", "B", "Init.Prelude"), unit("B", "A"), unit("A"), unit("D", "A")]
    results = scheduler.schedule(units, 2, compile_unit, lambda _m: None)
    by = {r.module: r for r in results}
    assert [r.module for r in results].index("A") < [r.module for r in results].index("B")
    assert ran.index("A") < ran.index("B") and ran.index("A") < ran.index("D") and "C" not in ran
    assert by["C"].status == "skipped" and by["C"].detail == "not built: B failed"
    assert by["D"].ok and not by["B"].ok


def test_a_process_killed_on_ctrl_c_is_interrupted_not_crashed(tmp_path: Path, sigint_raises: None) -> None:
    """Ctrl-C kills the running Lean processes (``kill_running``): their verdict says so, and the
    progress line before ``pycert: interrupted`` does not read "crashed"."""
    said: list[str] = []

    def compile_unit(u: Unit) -> CheckResult:  # a stand-in for a Lean run: it outlives the Ctrl-C
        res = check_result(u.module, str(u.path), process._run_process(["sleep", "60"], tmp_path, {}, 120), "A.lean")
        said.append(f"{u.module}: {res.status}")
        return res

    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        scheduler.schedule([Unit(module="A", path=tmp_path / "A.lean", imports=[])], 1, compile_unit, said.append)
    while not said and time.monotonic() - t0 < 30:
        time.sleep(0.05)
    assert said == ["A: interrupted"] and time.monotonic() - t0 < 30


def test_ctrl_c_while_a_run_waits_for_a_slot_starts_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            sigint_raises: None) -> None:
    """Another pycert holds the only Lean slot: Ctrl-C ends the build at once, and the waiting run never
    starts (before, the build waited for the slot and then for the whole run)."""
    monkeypatch.setenv("PYCERT_LEAN_SLOTS", "1")
    started: list[str] = []

    def compile_unit(u: Unit) -> CheckResult:
        with process.machine_slot(tmp_path, poll_s=0.05):
            started.append(u.module)
            return check_result(u.module, str(u.path), process._run_process(["true"], tmp_path, {}, 60), "A.lean")

    with open(tmp_path / "slot-0.lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
        threading.Timer(4.0, fcntl.flock, (held, fcntl.LOCK_UN)).start()  # the other run ends, later
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            scheduler.schedule([Unit(module="A", path=tmp_path / "A.lean", imports=[])], 1, compile_unit, lambda _m: None)
        waited = time.monotonic() - t0
        time.sleep(3.5)
    assert waited < 3 and started == []


def test_parse_diagnostics_maps_staged_names() -> None:
    out = '[DEBUG:X] noise\n{"severity":"warning","pos":{"line":3,"column":8},"fileName":"S.lean","data":"declaration uses `sorry`"}\n'
    (d,) = parse_diagnostics(out, {"S.lean": "/u/S.lean"})
    assert (d.file, d.line, d.column, d.severity) == ("/u/S.lean", 3, 8, "warning")
    assert d.is_failure


@pytest.mark.slow
def test_true_false_and_sorry(wasm, lean_dir: Path) -> None:
    good = lean_dir / "Good.lean"
    good.write_text(nonce() + PRELUDE + "theorem ok : Eq (Nat.add 2 2) 4 := rfl\n")
    bad = lean_dir / "Bad.lean"
    bad.write_text(nonce() + PRELUDE + "\ntheorem no : Eq (Nat.add 2 2) 5 := rfl\n")
    sorry = lean_dir / "Sorry.lean"
    sorry.write_text(nonce() + PRELUDE + "theorem later : Eq (Nat.add 2 2) 4 := sorry\n")
    res = build.check_files([good, bad, sorry], backend="wasm", timeout=600).by_module()
    assert res["Good"].ok and res["Good"].status == "ok"
    assert not res["Bad"].ok and res["Bad"].status == "failed"
    errs = res["Bad"].failures
    assert errs and all((e.file, e.line, e.severity) == (str(bad), 5, "error") for e in errs), errs
    assert not res["Sorry"].ok and res["Sorry"].status == "failed"
    assert any("sorry" in d.message for d in res["Sorry"].failures)


@pytest.mark.slow
def test_import_order_and_cache(wasm, lean_dir: Path) -> None:
    lib = lean_dir / "lib"
    (lib / "Lib").mkdir(parents=True)
    tag = nonce()
    (lib / "Lib" / "B.lean").write_text(
        tag + "module\n\nprelude\npublic import Init.Prelude\npublic import Lib.A\n\n"
        "public theorem b : Eq Lib.two 2 := rfl\n"
    )
    (lib / "Lib" / "A.lean").write_text(
        tag + "module\n\nprelude\npublic import Init.Prelude\n\n@[expose] public def Lib.two : Nat := Nat.add 1 1\n"
    )
    first = build.build(library=lib, backend="wasm", timeout=600)
    assert first.ok, [d.render() for r in first.results for d in r.diagnostics]
    assert [r.module for r in first.results] == ["Lib.A", "Lib.B"]
    assert not any(r.cached for r in first.results)
    assert (Path(first.olean_dir) / "Lib" / "B.olean").exists()
    t0 = time.monotonic()
    again = build.build(library=lib, backend="wasm", timeout=600)
    assert again.ok and all(r.cached for r in again.results)
    assert time.monotonic() - t0 < 10
    # Changing A invalidates A and, through its key, B.
    (lib / "Lib" / "A.lean").write_text((lib / "Lib" / "A.lean").read_text() + "-- edited\n")
    third = build.build(library=lib, backend="wasm", timeout=600)
    assert third.ok and not any(r.cached for r in third.results)


@pytest.mark.slow
def test_a_fresh_build_cache_makes_lean_check_again(wasm, lean_dir: Path) -> None:
    f = lean_dir / "Fresh.lean"
    f.write_text(nonce() + PRELUDE + "theorem t : True := True.intro\n")
    assert build.check_files([f], backend="wasm").ok
    assert build.check_files([f], backend="wasm").results[0].cached
    before = os.environ.get("PYCERT_BUILD_CACHE")
    with scheduler.fresh_build_cache() as fresh:
        (again,) = build.check_files([f], backend="wasm").results
        assert again.ok and not again.cached and scheduler.build_cache_dir() == fresh
        assert scheduler.cache_note([again]) is None
    assert os.environ.get("PYCERT_BUILD_CACHE") == before and not fresh.exists()
    (cached,) = build.check_files([f], backend="wasm").results
    note = scheduler.cache_note([cached])
    assert note.startswith(f"1 of 1 Lean file answered from the build cache ({scheduler.build_cache_dir()})")


@pytest.mark.slow
def test_timeout_kills_the_process_group(wasm, lean_dir: Path) -> None:
    f = lean_dir / "Slow.lean"
    f.write_text(nonce() + PRELUDE + "theorem t : True := True.intro\n")
    res = build.check_files([f], backend="wasm", timeout=3)
    (r,) = res.results
    assert r.status == "resources" and r.cause == "timeout" and not r.ok, r
    assert "ran past its time limit of 3 s" in r.detail and "--backend native" in r.detail
    time.sleep(1)
    leftovers = subprocess.run(["pgrep", "-f", str(lean_dir)], capture_output=True, text=True).stdout.split()
    assert leftovers == []


@pytest.mark.slow
def test_out_of_heap_is_not_a_rejection(wasm, lean_dir: Path) -> None:
    """A real Lean process past the wasm heap's 2 GiB (an array of 700 million pointers) ends with exit 3
    and a message naming the cause, the file's size and the remedies; a refused file still exits 1."""
    f = lean_dir / "Oom.lean"
    f.write_text(nonce() + "#eval (Array.replicate 700000000 (0 : Nat)).size\n")
    proc = subprocess.run([sys.executable, "-m", "pycert", "check", str(f), "--backend", "wasm"],
                          capture_output=True, text=True, cwd=REPO, timeout=900)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "Oom.lean (0.0 MiB of Lean): ran out of memory after" in proc.stdout, proc.stdout
    assert "the wasm Lean's heap stops at 2 GiB: INTERNAL PANIC: out of memory" in proc.stdout
    assert "shards" in proc.stdout and "--backend native" in proc.stdout
    assert "resources" in proc.stdout and "failed" not in proc.stdout


def test_missing_toolchain_is_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "PYCERT_CACHE": str(tmp_path / "empty"), "PATH": "/usr/bin:/bin", "PYCERT_LEAN": "wasm"}
    for argv in (["toolchain"], ["check", str(tmp_path / "X.lean")], ["toolchain", "selfcheck"]):
        (tmp_path / "X.lean").write_text("theorem t : True := True.intro\n")
        proc = subprocess.run([sys.executable, "-m", "pycert", *argv], capture_output=True, text=True, env=env, cwd=REPO)
        assert proc.returncode == 2
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "pycert toolchain install" in lines[0], proc.stderr
