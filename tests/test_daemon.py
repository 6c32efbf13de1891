"""The warm checker (pycert.lean.daemon): private to its user, answering only the pycert that started it,
giving each module the verdict a fresh Lean process gives it, and never a verdict it could not have
reached (a worker killed mid-proof leaves the claim not checked, exit 3)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from pycert.core import resources
from pycert.core.errors import InputError
from pycert.core.resources import library_dir
from pycert.lean import build, daemon
from pycert.lean.daemon import server as daemon_server
from pycert.lean.daemon import wire
from pycert.lean.toolchain import find_installed
from tests.conftest import REPO

NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3"
"""A Python another user can run (this one lives under /root)."""


@pytest.fixture
def private_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A daemon directory of this test's own, under /tmp (so that the test can open it to another user)."""
    d = Path(tempfile.mkdtemp(prefix="pycert-daemon-test-", dir="/tmp"))
    monkeypatch.setenv("PYCERT_DAEMON_DIR", str(d))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def server(private_dir: Path) -> Iterator[daemon_server.Server]:
    """The daemon's server, in a thread of this process, with no worker started (nothing here runs Lean)."""
    installed = find_installed()
    if installed is None:
        pytest.fail("the wasm toolchain is not installed")
    s = daemon_server.Server(daemon.checker_key(installed), installed, idle_s=60.0, prewarm=False)
    assert s.claim()
    t = threading.Thread(target=s.serve, daemon=True)
    t.start()
    deadline = time.monotonic() + 10
    while (conn := daemon.connect(s.sock_path, s.key)) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert conn is not None, "the server did not come up"
    conn.close()
    yield s
    s.stop.set()
    t.join(10)


def test_the_directory_and_the_socket_are_private(server: daemon_server.Server, private_dir: Path) -> None:
    assert stat.S_IMODE(os.stat(private_dir).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(server.sock_path).st_mode) == 0o600
    assert stat.S_ISSOCK(os.stat(server.sock_path).st_mode)


def test_a_directory_others_may_enter_is_refused(private_dir: Path) -> None:
    os.chmod(private_dir, 0o755)
    with pytest.raises(InputError, match="not private"):
        daemon.daemon_dir()


@pytest.mark.skipif(os.getuid() != 0 or not Path(SYSTEM_PYTHON).exists(), reason="needs root to become another user")
def test_another_user_is_refused(server: daemon_server.Server, private_dir: Path, capfd: pytest.CaptureFixture) -> None:
    """A process of another uid cannot reach the socket (the directory is 0700); and when the directory and
    the socket are opened to everyone behind the daemon's back, the daemon still refuses the connection
    (SO_PEERCRED) before it reads a byte: no welcome, no key, no job."""
    client = (
        "import json, socket, sys\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "try:\n"
        "    s.connect(sys.argv[1])\n"
        "except OSError as e:\n"
        "    print('connect:', type(e).__name__); sys.exit(0)\n"
        "s.settimeout(20)\n"
        "got = b''\n"
        "try:\n"
        "    s.sendall((json.dumps({'protocol': sys.argv[2], 'key': sys.argv[3]}) + '\\n').encode())\n"
        "    s.sendall((json.dumps({'op': 'status'}) + '\\n').encode())\n"
        "    while chunk := s.recv(65536):\n"
        "        got += chunk\n"
        "except OSError:\n"
        "    pass\n"
        "print('answer:', repr(got))\n"
    )

    def as_nobody() -> str:
        def drop() -> None:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)

        done = subprocess.run([SYSTEM_PYTHON, "-c", client, str(server.sock_path), wire.PROTOCOL, server.key],
                              preexec_fn=drop, capture_output=True, text=True, timeout=60, cwd="/")
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert as_nobody() == "connect: PermissionError"
    os.chmod(private_dir, 0o777)
    os.chmod(server.sock_path, 0o777)
    assert as_nobody() == "answer: b''"
    assert f"refused a connection from uid {NOBODY}" in capfd.readouterr().err
    # and its owner is still served
    conn = daemon.connect(server.sock_path, server.key)
    assert conn is not None and conn.welcome.key == server.key
    conn.close()


def test_another_key_is_never_served(server: daemon_server.Server) -> None:
    """A pycert whose code, library or toolchain differs has another key: the daemon tells it its own key and
    serves nothing, even a request sent regardless."""
    assert daemon.connect(server.sock_path, "0" * 64) is None
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(20)
        s.connect(str(server.sock_path))
        # both lines in one write: the daemon closes the door after the first, and a second write could meet it shut
        s.sendall(b"".join(json.dumps(m).encode() + b"\n" for m in (
            {"protocol": wire.PROTOCOL, "key": "0" * 64},
            {"op": "compile", "source": "/etc/passwd", "module": "X", "olean": "/tmp/x.olean", "timeout": 5})))
        got = b""
        with contextlib.suppress(ConnectionResetError):  # closed with our second line unread
            while chunk := s.recv(65536):
                got += chunk
    lines = got.splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["key"] == server.key  # the welcome, then the door closes
    assert server.jobs == 0


def test_junk_does_not_stop_it(server: daemon_server.Server) -> None:
    for junk in (b"\xff\xfe not json\n", b"{}\n", b'{"protocol": 1}\n', b"x" * (wire.MAX_LINE + 10) + b"\n", b""):
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(20)
            s.connect(str(server.sock_path))
            with contextlib.suppress(OSError):  # the daemon may close the door mid-send: what these cases expect
                s.sendall(junk)
                s.shutdown(socket.SHUT_WR)
                while s.recv(65536):
                    pass
    conn = daemon.connect(server.sock_path, server.key)
    assert conn is not None and conn.request(wire.Request(op="status")).pid == os.getpid()
    conn.close()


def test_the_key_covers_code_worker_library_and_toolchain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    installed = find_installed()
    assert installed is not None
    base = daemon.checker_key(installed)
    assert daemon.checker_key(installed) == base
    lib = tmp_path / "lean"
    shutil.copytree(library_dir(), lib)
    with monkeypatch.context() as m:
        m.setattr(wire, "library_sha256", lambda: resources.library_sha256(lib))
        assert daemon.checker_key(installed) == base
        (lib / "Pycert" / "Lists.lean").write_text((lib / "Pycert" / "Lists.lean").read_text() + "\n-- upgraded\n")
        assert daemon.checker_key(installed) != base
    with monkeypatch.context() as m:
        m.setattr(wire, "code_sha256", lambda *_p: "another pycert")
        assert daemon.checker_key(installed) != base
    worker = tmp_path / "PycertWorker.lean"
    worker.write_text(resources.worker_source().read_text() + "\n-- upgraded\n")
    with monkeypatch.context() as m:
        m.setattr(wire, "worker_source", lambda: worker)
        assert daemon.checker_key(installed) != base
    other = installed.stamp.model_copy(update={"integrity": "sha512-another"})
    assert daemon.checker_key(installed.model_copy(update={"stamp": other})) != base


def _checkout_copy(root: Path, upgrade: str) -> Path:
    """This checkout's pycert and library under ``root``, with one line of ``upgrade`` (``code``, ``library`` or
    ``nothing``) changed."""
    shutil.copytree(REPO / "pycert", root / "pycert", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "lean", root / "lean", ignore=shutil.ignore_patterns(".lake", "build"))
    for name in ("lakefile.lean", "lean-toolchain", "pyproject.toml"):
        (root / name).symlink_to(REPO / name)
    changed = {"code": root / "pycert" / "prove.py", "library": root / "lean" / "Pycert" / "Lists.lean"}.get(upgrade)
    if changed is not None:
        changed.write_text(changed.read_text() + "\n-- upgraded\n" if changed.suffix == ".lean" else
                           changed.read_text() + "\n# upgraded\n")
    return root


def _probe(copy: Path) -> tuple[str, bool]:
    """The copy's key, and whether it finds a daemon that answers it, asked by a process of its own."""
    probe = ("from pycert.lean import daemon\nfrom pycert.lean.toolchain import find_installed\n"
             "i = find_installed()\nprint(daemon.checker_key(i), daemon.session(i) is not None)\n")
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-c", probe], env=env, cwd=copy, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    key, found = done.stdout.split()
    return key, found == "True"


@pytest.mark.parametrize("upgrade", ["code", "library"])
def test_an_upgraded_pycert_is_never_answered_by_the_old_daemon(server: daemon_server.Server, tmp_path: Path,
                                                                  upgrade: str) -> None:
    """A copy of this checkout with one line of its code, or of its Lean library, changed, run as its own
    process: it does not find the running daemon (its key names another socket, and the old daemon would not
    serve it anyway). The same copy unchanged finds it: the probe sees a daemon when one answers."""
    assert _probe(_checkout_copy(tmp_path / "same", "nothing")) == (server.key, True)
    key, found = _probe(_checkout_copy(tmp_path / "upgraded", upgrade))
    assert key != server.key and not found
    conn = daemon.connect(server.sock_path, server.key)  # this pycert still is served
    assert conn is not None
    conn.close()


def _serve(key: str, idle_s: float = 60.0, home: str | None = None) -> tuple[daemon_server.Server, threading.Thread]:
    s = daemon_server.Server(key, find_installed(), idle_s=idle_s, prewarm=False)
    if home is not None:
        s.home = home
    assert s.claim()
    t = threading.Thread(target=s.serve, daemon=True)
    t.start()
    deadline = time.monotonic() + 10
    while daemon.connect(s.sock_path, key) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return s, t


def test_it_exits_after_the_idle_time_its_user_chose(private_dir: Path) -> None:
    """Idle for its idle time (no job, no connection): it exits and removes its socket; ``idle`` sets a new
    time from now (``pycert daemon start --idle``), and a status request does not keep it alive."""
    s, t = _serve("1" * 64, idle_s=600.0)
    conn = daemon.connect(s.sock_path, s.key)
    assert conn is not None and conn.request(wire.Request(op="idle", idle_s=0.5)).idle_s == 600.0  # out of bounds
    assert conn.request(wire.Request(op="idle", idle_s=2.0)).idle_s == 2.0
    conn.close()
    t0 = time.monotonic()
    while t.is_alive() and time.monotonic() - t0 < 20:
        daemon.status(None)
        time.sleep(0.2)
    assert not t.is_alive() and time.monotonic() - t0 >= 1.5
    assert not s.sock_path.exists()


@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf", "1e9", "ten", ""])
def test_an_absurd_idle_time_is_refused(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if value:
        with pytest.raises(InputError, match="idle time in seconds"):
            wire.idle_seconds(value)
    monkeypatch.setenv("PYCERT_DAEMON_IDLE", value)
    if value:
        with pytest.raises(InputError, match="PYCERT_DAEMON_IDLE"):
            daemon.ensure(find_installed())
    else:
        assert wire.idle_seconds() == wire.IDLE_S


def test_the_setting_is_read_or_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """$PYCERT_DAEMON on or off, and anything else refused (with an absurd idle time) by every command that
    proves, before the kernel stage decides whether a daemon is needed."""
    for value, on in (("", True), ("on", True), ("1", True), ("OFF", False), ("no", False)):
        monkeypatch.setenv("PYCERT_DAEMON", value)
        assert wire.enabled() is on
    monkeypatch.setenv("PYCERT_DAEMON", "maybe")
    with pytest.raises(InputError, match="expected on or off"):
        wire.enabled()
    monkeypatch.setenv("PYCERT_DAEMON", "on")
    monkeypatch.setenv("PYCERT_DAEMON_IDLE", "-1")
    with pytest.raises(InputError, match="idle time"):
        wire.enabled()
    monkeypatch.setenv("PYCERT_DAEMON", "off")
    assert wire.enabled() is False  # off: the idle time is not read


def test_a_newer_key_from_the_same_home_retires_the_old_daemon(private_dir: Path) -> None:
    """An upgrade of pycert, its library or the toolchain in one place: the new daemon asks the old one, of the
    same home, to retire; it exits once no command holds a connection (the one held here keeps it), while a
    daemon of another home (another checkout, another install) is left alone."""
    old, t_old = _serve("a" * 64)
    elsewhere, t_elsewhere = _serve("b" * 64, home="/somewhere/else")
    holding = daemon.connect(old.sock_path, old.key)
    assert holding is not None
    new, t_new = _serve("c" * 64)
    deadline = time.monotonic() + 20
    while not old.retiring and time.monotonic() < deadline:
        time.sleep(0.1)
    assert old.retiring
    time.sleep(2.5)
    assert t_old.is_alive()  # a command of the old code still holds its connection
    holding.close()
    t_old.join(20)
    assert not t_old.is_alive()
    assert t_elsewhere.is_alive() and not elsewhere.retiring and t_new.is_alive()
    for s, t in ((elsewhere, t_elsewhere), (new, t_new)):
        s.stop.set()
        t.join(10)


def _parsers(p: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield " ".join(path), p
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


def test_every_command_that_runs_lean_takes_no_daemon() -> None:
    from pycert.cli import build_parser

    def has(p: argparse.ArgumentParser, flag: str) -> bool:
        return any(flag in a.option_strings for a in p._actions)

    lean = {name: p for name, p in _parsers(build_parser()) if has(p, "--backend")}
    assert {"prove all", "prove capacity", "check", "build", "verify", "mutate", "leak run", "engine replay",
            "dataset first-touch", "pooling solve"} <= set(lean), sorted(lean)
    assert [name for name, p in lean.items() if not has(p, "--no-daemon")] == []


@pytest.mark.parametrize("flag", [[], ["--no-daemon"]])
def test_no_daemon_reaches_the_build_and_ends_with_the_command(flag: list[str], tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """``prove --no-daemon`` builds without the warm checker (and its Ray tasks see it in the environment);
    the setting ends with the command (main runs in-process here)."""
    from pycert import prove
    from pycert.cli import main

    monkeypatch.setenv("PYCERT_DAEMON", "on")
    asked: list[tuple[bool, str | None]] = []

    def build_stub(*_a, daemon: bool = False, **_kw) -> None:  # noqa: ANN002, ANN003 - stops the run at its kernel
        asked.append((daemon, os.environ.get("PYCERT_DAEMON")))
        raise InputError("stopped here by the test")

    monkeypatch.setattr(prove.build, "build", build_stub)
    assert main(["prove", "ceiling", "--out", str(tmp_path / "out"), "--json", *flag]) == 2
    assert asked == ([(False, "off")] if flag else [(True, "on")])
    assert os.environ["PYCERT_DAEMON"] == "on"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_verify_never_asks_the_warm_checker(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stranger's certificate is rebuilt by fresh processes: verify's build never turns the daemon on."""
    from pycert.certify import rebuild

    asked = []
    real = build.build
    monkeypatch.setattr(rebuild.build, "build", lambda *a, **kw: asked.append(kw.get("daemon", False)) or real(*a, **kw))
    monkeypatch.setenv("PYCERT_DAEMON", "on")
    monkeypatch.setattr(daemon, "session", lambda *_a: pytest.fail("verify asked the warm checker"))
    from pycert.certify.verify import verify_certificate

    r = verify_certificate(REPO / "certificates" / "isolation-t8-n1024.json", kernel=True, backend="wasm")
    assert asked and not any(asked), asked
    assert "kernel" in r.checked


# ---------------------------------------------------------------------------- a real daemon, real Lean


FILES = {
    "Good": "import Pycert.Ceiling\npublic theorem good (n : Nat) : n + 0 = n := rfl\n#check @good\n",
    "False": "import Pycert.Ceiling\ntheorem bad : 1 = 2 := rfl\n",
    "Sorry": "import Pycert.Ceiling\ntheorem gap : 2 = 2 := sorry\n",
}


@pytest.fixture
def running(private_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[daemon.DaemonStatus]:
    """This pycert's daemon, started as a command starts it, with one warm worker; stopped after."""
    monkeypatch.setenv("PYCERT_DAEMON", "on")
    monkeypatch.setenv("PYCERT_DAEMON_IDLE", "300")
    installed = find_installed()
    assert installed is not None
    st = daemon.start(installed, wait_s=600)
    yield st
    daemon.stop(installed, every=True)


def _verdicts(res: build.BuildResult) -> dict[str, tuple[str, list[tuple[int, str]]]]:
    return {r.module[1:-8]: (r.status, sorted((d.line, d.severity) for d in r.diagnostics))
            for r in res.results if r.module.startswith("D")}


def _files(d: Path) -> list[Path]:
    tag = uuid.uuid4().hex[:8]
    out = []
    for name, text in FILES.items():
        out.append(d / f"D{name}{tag}.lean")
        out[-1].write_text(f"-- {tag}\n{text}")
    return out


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_warm_checker_gives_each_module_what_a_fresh_process_gives(running: daemon.DaemonStatus, wasm,
                                                                      lean_dir: Path, capsys) -> None:
    said: list[str] = []
    warm = build.build(library=library_dir(), files=_files(lean_dir), backend=wasm, jobs=2, daemon=True,
                       progress=said.append)
    assert f"warm checker: pid {running.pid}" in said, said
    fresh = build.build(library=library_dir(), files=_files(lean_dir), backend=wasm, jobs=2)
    assert _verdicts(warm) == _verdicts(fresh)
    assert {k: v[0] for k, v in _verdicts(warm).items()} == {"Good": "ok", "False": "failed", "Sorry": "failed"}
    after = next(s for s in daemon.status(find_installed()) if s.current)
    assert after.pid == running.pid and after.jobs >= 3


def _trace(path: Path, n: int, seed: int) -> Path:
    import random

    rng = random.Random(seed)
    ids = [rng.getrandbits(64) for _ in range(n // 4)]
    path.write_text("".join(f"{ids[rng.randrange(len(ids))]}\n" for _ in range(n)))
    return path


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("victim", ["worker", "daemon"])
def test_a_checker_killed_mid_proof_leaves_the_claim_not_checked(running: daemon.DaemonStatus, tmp_path: Path,
                                                                  victim: str) -> None:
    """SIGKILL (as the out-of-memory killer sends it) to the daemon's busy worker, or to the daemon itself, while
    it checks a prove's instance: exit 3, "not checked", nothing written and nothing rejected; after a killed
    worker the daemon goes on with a new one, after a killed daemon the next command starts a fresh one."""
    trace = _trace(tmp_path / "killed.txt", 12_000, seed=uuid.uuid4().int % 1000)
    installed = find_installed()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "pycert", "prove", "capacity", "--trace", str(trace),
                             "--capacity-blocks", "16,64", "--out", str(tmp_path / "out")],
                            env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    killed, workers = None, []
    deadline = time.monotonic() + 600
    while killed is None and proc.poll() is None and time.monotonic() < deadline:
        for st in daemon.status(installed):
            busy = [w for w in st.workers if w.busy]
            if st.current and busy:
                killed, workers = busy[0].pid if victim == "worker" else st.pid, [w.pid for w in st.workers]
                os.kill(killed, signal.SIGKILL)
        time.sleep(0.1)
    out, _ = proc.communicate(timeout=600)
    assert killed is not None, out
    assert proc.returncode == 3, out
    assert "not checked" in out and "NOT CHECKED" in out, out
    assert "REJECTED" not in out and "rejected" not in out.split("NOT CHECKED")[-1], out
    assert not list((tmp_path / "out").glob("capacity-*.json"))
    if victim == "worker":
        again = next(s for s in daemon.status(installed) if s.current)
        assert again.pid == running.pid and killed not in [w.pid for w in again.workers]
    else:
        assert not [s for s in daemon.status(installed) if s.current]
        deadline = time.monotonic() + 30  # its workers end when their pipe has no reader (within 5 s)
        while any(map(_alive_pid, workers)) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not any(map(_alive_pid, workers)), workers


def _alive_pid(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
