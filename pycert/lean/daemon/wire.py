"""What the warm checker's daemon and its clients share: where it lives, its key, whom it serves, and the
messages (one JSON object a line on a Unix stream socket; pydantic models both ways). See
:mod:`pycert.lean.daemon`."""

from __future__ import annotations

import hashlib
import os
import socket
import struct
import sys
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ValidationError

from pycert.core.errors import InputError
from pycert.core.memo import code_sha256
from pycert.core.resources import library_sha256, private_dir, scratch_root, worker_source
from pycert.lean.process import ProcessRun
from pycert.lean.toolchain import Installed

PROTOCOL = "pycert-checker/1"
IDLE_S = 600.0
"""Seconds without a job after which the daemon exits (``$PYCERT_DAEMON_IDLE``). A user exploring a trace
runs a command every minute or few; a warm worker holds 1.5-2.8 GiB and no CPU while it waits, and a cold
start costs about 10 s of CPU: ten minutes keeps it across such a session and gives the memory back soon
after one ends."""
MAX_LINE = 64 << 20
"""The longest message either side reads (Lean's messages on a module are far shorter)."""

def enabled() -> bool:
    """``$PYCERT_DAEMON``: ``on`` (the default; or ``1``, ``yes``, ``true``), or ``off`` (``0``, ``no``, ``false``):
    every Lean process fresh, as ``--no-daemon``. Asked by every command that proves, which refuses here a
    setting it cannot read, and an absurd idle time, whether or not it goes on to start a daemon."""
    value = os.environ.get("PYCERT_DAEMON", "").strip().lower() or "on"
    if value in ("off", "0", "no", "false"):
        return False
    if value not in ("on", "1", "yes", "true"):
        raise InputError(f"{value!r}: expected on or off", where="PYCERT_DAEMON")
    idle_seconds()
    return True


MAX_IDLE_S = 7 * 86400.0
"""The longest idle time a user may choose (a week): a forgotten daemon gives its memory back in the end."""


def idle_seconds(text: str | None = None) -> float:
    """``text`` (a ``--idle`` value), else ``$PYCERT_DAEMON_IDLE``, else :data:`IDLE_S`: seconds, 1 to a week."""
    where = "--idle" if text is not None else "PYCERT_DAEMON_IDLE"
    raw = text if text is not None else os.environ.get("PYCERT_DAEMON_IDLE", "").strip() or str(IDLE_S)
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 1.0 <= value <= MAX_IDLE_S:  # nan and inf fail too
        raise InputError(f"{raw!r}: expected the warm checker's idle time in seconds, from 1 to {MAX_IDLE_S:.0f} "
                         "(a week)", where=where)
    return value


def daemon_dir() -> Path:
    """``$PYCERT_DAEMON_DIR``, else ``<scratch>/daemon``: made 0700 and refused unless it is a directory of this
    user's that no one else may enter (the scratch directory above it is checked the same way)."""
    return private_dir(Path(os.environ.get("PYCERT_DAEMON_DIR") or scratch_root() / "daemon"),
                       "the warm checker's directory", "remove it")


def checker_key(installed: Installed) -> str:
    """What a daemon must have been started from to answer this pycert: its code, the worker's Lean program,
    the library's sources, the toolchain and the interpreters that run them."""
    h = hashlib.sha256()

    def part(data: str | bytes) -> None:
        data = data.encode() if isinstance(data, str) else data
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)

    for fixed in (PROTOCOL, code_sha256("pycert"), worker_source().read_bytes(), library_sha256(),
                  installed.stamp.model_dump_json(), sys.executable, sys.version):
        part(fixed)
    for path in (installed.node, installed.lean_js, installed.lib):
        st = path.stat()
        part(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}")
    return h.hexdigest()


def paths(key: str) -> tuple[Path, Path, Path]:
    d = daemon_dir()
    name = key[:32]
    return d / f"{name}.sock", d / f"{name}.lock", d / f"{name}.log"


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end of a Unix socket, as the kernel recorded it."""
    _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    return uid


# ---------------------------------------------------------------------------- the messages


class Hello(BaseModel):
    protocol: str
    key: str


class WorkerInfo(BaseModel):
    pid: int
    jobs: int
    rss_mib: int
    busy: bool


class Welcome(BaseModel):
    protocol: str
    key: str
    home: str = ""
    """The directory its pycert was imported from (a checkout, or site-packages): a daemon started there later,
    under another key, retires it."""
    pid: int
    started: float
    """When the daemon started (seconds since the epoch)."""
    idle_s: float
    idle_for_s: float
    jobs: int
    workers: list[WorkerInfo]
    starting: int
    """Workers being started."""


class Request(BaseModel):
    """``compile`` a module; ``status``; ``stop`` now (a job in flight ends not checked); ``retire`` (exit once no
    command holds a connection: a newer key from the same home serves from now on); ``idle``: exit after
    ``idle_s`` seconds without a job from now on."""

    op: Literal["compile", "status", "stop", "retire", "idle"]
    source: str = ""
    module: str = ""
    olean: str = ""
    search_path: str = ""
    timeout: float = 0.0
    idle_s: float = 0.0


class Started(BaseModel):
    started: Literal[True] = True


class Answer(BaseModel):
    """A job's end: Lean's run as a :class:`ProcessRun`, or ``lost`` (why it ended without Lean's verdict)."""

    run: ProcessRun | None = None
    lost: str = ""
    killed: bool = False
    """The worker was ended by a signal a person or the out-of-memory killer sends."""


def send(f, model: BaseModel) -> None:  # noqa: ANN001 - a socket's binary file
    f.write(model.model_dump_json().encode() + b"\n")
    f.flush()


def read(f, kind: type[BaseModel]) -> BaseModel:  # noqa: ANN001
    line = f.readline(MAX_LINE)
    if not line:
        raise ConnectionError("the other end closed the connection")
    if not line.endswith(b"\n"):
        raise ConnectionError("a message over the size limit")
    try:
        return kind.model_validate_json(line)
    except ValidationError as exc:
        raise ConnectionError(f"a malformed {kind.__name__} message: {exc.errors()[0]['msg']}") from None


