"""pycert's Lean worker (pycert.lean.worker): one Lean process compiling module after module must give
each module the verdict, the messages and the kernel types a Lean process of its own gives it; a worker
that dies is no verdict on the module it was compiling."""

from __future__ import annotations

import os
import signal
import uuid
from pathlib import Path

import pytest

from pycert.audit.axioms import audit_build
from pycert.core.errors import InputError
from pycert.core.resources import library_dir
from pycert.lean import build, wasm, worker
from pycert.lean.wasm import WORKER_MAX_SOURCE

FILES = {
    "Good": "import Pycert.Ceiling\npublic theorem good (n : Nat) : n + 0 = n := rfl\n#check @good\n",
    "False": "import Pycert.Ceiling\ntheorem bad : 1 = 2 := rfl\n",
    "Sorry": "import Pycert.Ceiling\ntheorem gap : 2 = 2 := sorry\n",
}


def test_worker_mode_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYCERT_LEAN_WORKER", raising=False)
    assert wasm.worker_mode() == "auto"
    monkeypatch.setenv("PYCERT_LEAN_WORKER", "off")
    assert wasm.worker_mode() == "off"
    monkeypatch.setenv("PYCERT_LEAN_WORKER", "always")
    with pytest.raises(InputError, match="PYCERT_LEAN_WORKER"):
        wasm.worker_mode()


def _files(d: Path) -> list[Path]:
    tag = uuid.uuid4().hex[:8]  # new sources: the build cache cannot answer
    out = []
    for name, text in FILES.items():
        out.append(d / f"W{name}{tag}.lean")
        out[-1].write_text(f"-- {tag}\n{text}")
    return out


def _verdicts(res: build.BuildResult) -> dict[str, tuple[str, list[tuple[int, str]]]]:
    return {r.module[1:-8]: (r.status, sorted((d.line, d.severity) for d in r.diagnostics))
            for r in res.results if r.module.startswith("W")}


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_worker_gives_each_module_what_a_process_of_its_own_gives(wasm, lean_dir: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYCERT_LEAN_WORKER", "on")
    files = _files(lean_dir)
    by_worker = build.build(library=library_dir(), files=files, backend=wasm, jobs=1)
    monkeypatch.setenv("PYCERT_LEAN_WORKER", "off")
    alone = build.build(library=library_dir(), files=_files(lean_dir), backend=wasm, jobs=1)
    assert _verdicts(by_worker) == _verdicts(alone)
    assert {k: v[0] for k, v in _verdicts(by_worker).items()} == {"Good": "ok", "False": "failed", "Sorry": "failed"}
    good = [r for r in by_worker.results if r.module.startswith("WGood")]
    kept = by_worker.model_copy(update={"results": [r for r in by_worker.results if r.ok]})
    name = "good"
    report = audit_build(kept, wasm, library_dir(), digests=[name])
    kept_alone = alone.model_copy(update={"results": [r for r in alone.results if r.ok]})
    assert report.type_sha256[name] == audit_build(kept_alone, wasm, library_dir(), digests=[name]).type_sha256[name]
    assert good[0].diagnostics[0].message.startswith("good : ∀ (n : Nat), n + 0 = n")


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_worker_that_dies_is_no_verdict(wasm, lean_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker is killed as it starts a module (as the out-of-memory killer would): the module is
    compiled again by a Lean process of its own, whose verdict stands."""
    monkeypatch.setenv("PYCERT_LEAN_WORKER", "on")
    real = worker.LeanWorker.compile
    killed = []

    def dies(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        os.killpg(self.proc.pid, signal.SIGKILL)
        killed.append(args[1])
        return real(self, *args, **kwargs)

    monkeypatch.setattr(worker.LeanWorker, "compile", dies)
    files = _files(lean_dir)[:2]  # Good, and False: a refusal must still be its own process's
    res = build.build(library=library_dir(), files=files, backend=wasm, jobs=1)
    verdicts = {r.module: r for r in res.results}
    assert sorted(killed) == sorted(f.stem for f in files), killed  # each module met a dead worker
    assert verdicts[files[0].stem].status == "ok", verdicts[files[0].stem]
    assert verdicts[files[1].stem].status == "failed" and verdicts[files[1].stem].diagnostics, verdicts[files[1].stem]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_module_too_big_for_a_worker_does_not_wait_for_the_workers_slots(wasm, lean_dir: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Each build thread's idle worker holds a machine slot; a module too big for a worker gets a process of its
    own, which needs a slot too. With as many threads as slots, the threads once waited for ever (a re-prove of
    the isolation-cost certificates hung with both workers idle). Here every Good module is "too big"."""
    monkeypatch.setenv("PYCERT_LEAN_WORKER", "on")
    slots = os.cpu_count() or 1
    files = [f for _ in range(slots + 1) for f in _files(lean_dir)]
    big = {f for f in files if f.stem.startswith("WGood")}
    real = Path.stat

    def size(self: Path, *args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        st = real(self, *args, **kwargs)
        return os.stat_result((*st[:6], WORKER_MAX_SOURCE + 1, *st[7:10])) if self in big else st

    monkeypatch.setattr(Path, "stat", size)
    res = build.build(library=library_dir(), files=files, backend=wasm, jobs=slots)
    statuses = {r.module: r.status for r in res.results if r.module.startswith("W")}
    assert all(statuses[f.stem] == "ok" for f in big), statuses


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_worker_whose_owner_was_killed_ends_by_itself(wasm) -> None:
    """A worker runs in a session of its own (Ctrl-C in its owner must not reach it mid-module), so a SIGKILL to
    its owner (the warm checker's daemon, a prove) used to leave it waiting for jobs for ever, with its
    gigabytes (one was found 2 hours later). It says it is alive every 5 s; the closed pipe ends it."""
    import subprocess
    import sys
    import time

    owner = subprocess.Popen([sys.executable, "-c", (
        "import time\nfrom pycert.lean.wasm import find_wasm\nfrom pycert.lean.worker import LeanWorker\n"
        "b = find_wasm()\nw = LeanWorker(b.node, b.lean_js, str(b.lib), slot=False)\n"
        "print(w.proc.pid, flush=True)\nw._lines.get(timeout=300)\nprint('alive', flush=True)\ntime.sleep(3600)\n")],
        stdout=subprocess.PIPE, text=True)
    pid = int(owner.stdout.readline())
    assert owner.stdout.readline().strip() == "alive"  # the worker started and said so
    os.kill(owner.pid, signal.SIGKILL)
    owner.wait()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.5)
    os.killpg(pid, signal.SIGKILL)
    pytest.fail("the worker outlived its owner by a minute")
