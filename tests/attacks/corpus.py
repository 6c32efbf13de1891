"""The attack corpus: hostile certificate directories as data, each with the verdict pycert must give.

Each case is a folder ``tests/attacks/<case>/`` (in the manner of leanprover/comparator's
``tests/projects/<case>/``): the files of the hostile directory under ``certs/``, and ``case.json``
(:class:`Case`) with what git cannot hold as a build recipe (a FIFO, a sparse 2 GB file, a link to
``/dev/zero`` or outside, a name with control characters, a certificate made from the committed ones
so that its library hash is current) and one or more runs, each a pycert command line with the
verdict it must give: the exit code, substrings the output must and must not hold, and the wall-time
and peak-RSS bounds of the child process. ``tests/test_attacks.py`` runs every case;
``benchmarks/bench_attacks.py`` tables their times and memory.

A run sees its hostile directory as ``{certs}`` and files outside it as ``{outside}``, both under a
fresh work directory ``{work}``; ``{shared}`` is the Mooncake traces' folder and ``{committed}`` the
committed certificates.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

from tests.conftest import vllm_python

REPO = Path(__file__).resolve().parent.parent.parent
CASES = REPO / "tests" / "attacks"
SHARED = REPO.parent / "shared" / "traces" / "mooncake-fast25"
COMMITTED = REPO / "certificates"


class _Op(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Copy(_Op):
    """Copy ``committed:REL`` (a committed certificate or input), ``case:REL`` or ``work:REL`` (a file an
    earlier step made) to ``to``."""

    op: Literal["copy"]
    source: str = Field(alias="from")
    to: str


class MakeCert(_Op):
    """A genuine certificate of ``family`` on the trace at ``trace`` (made like prove makes it, without Lean:
    ``tests.certs.make_cert``; a fleet's, ``make_fleet_cert`` with ``params`` hosts, capacity_blocks and routing),
    written as ``<id>.json`` into ``dir``."""

    op: Literal["make_cert"]
    family: str
    id: str
    params: dict[str, Any]
    trace: str
    dir: str = "certs"
    log: str | None = None
    """The engine family's replay log (its other primary input, named before the trace)."""


class Edit(_Op):
    """JSON edits of ``path``: ``set`` pointer -> value (a string's ``{work}``, ``{outside}`` ... filled in), then ``append`` ``count`` copies of ``item`` (its
    strings with ``{i}`` replaced by the copy's index) to the list at ``into``."""

    op: Literal["edit"]
    path: str
    set: dict[str, Any] = {}
    into: str | None = None
    item: Any = None
    count: int = 0


class Replace(_Op):
    """Every ``old`` in the text of ``path`` replaced by ``new`` (which must occur: a no-op is a stale case)."""

    op: Literal["replace"]
    path: str
    old: str
    new: str
    optional: bool = False


class Rehash(_Op):
    """The sha256 of every input of the certificate at ``path`` that lies in its directory, made current."""

    op: Literal["rehash"]
    path: str


class Manifest(_Op):
    """``MANIFEST.sha256`` of ``dir`` written again over every ``*.json`` in it."""

    op: Literal["manifest"]
    dir: str = "certs"


class Write(_Op):
    """``text`` written ``repeat`` times to ``path`` (``{i}`` in it replaced by the repetition's index when
    ``numbered``), gzip-compressed with ``gzip``, zstd-compressed with ``zstd``."""

    op: Literal["write"]
    path: str
    text: str
    repeat: int = 1
    numbered: bool = False
    gzip: bool = False
    zstd: bool = False


class Pad(_Op):
    """``size`` bytes of padding of ``kind`` appended to the compressed file at ``path``: empty zstd frames,
    zstd skippable frames (of 1 MiB each), empty gzip members, zero bytes after the last gzip member, or one
    empty gzip member whose header holds a comment of that many bytes."""

    op: Literal["pad"]
    path: str
    kind: Literal["zstd-empty-frames", "zstd-skippable", "gzip-empty-members", "gzip-zeros", "gzip-comment"]
    size: int


class Symlink(_Op):
    op: Literal["symlink"]
    path: str
    target: str


class Fifo(_Op):
    op: Literal["fifo"]
    path: str


class Mknod(_Op):
    """A character device (``1, 3``: what /dev/null is), as root only (the run ``needs`` root)."""

    op: Literal["mknod"]
    path: str
    major: int = 1
    minor: int = 3


class Socket(_Op):
    """A Unix socket's file, left by a server that has gone."""

    op: Literal["socket"]
    path: str


class Sparse(_Op):
    """A file of ``size`` zero bytes that takes no disk."""

    op: Literal["sparse"]
    path: str
    size: int


class Remove(_Op):
    """A file an earlier step needed, gone (an external trace not handed in)."""

    op: Literal["remove"]
    path: str


class Mkdir(_Op):
    op: Literal["mkdir"]
    path: str
    mode: int = 0o755


Op = Annotated[Union[Copy, MakeCert, Edit, Replace, Rehash, Manifest, Write, Pad, Symlink, Fifo, Mknod, Socket,  # noqa: UP007
                     Sparse, Remove, Mkdir], Field(discriminator="op")]


class Expect(BaseModel):
    model_config = ConfigDict(extra="forbid")

    exit: int
    contains: list[str] = []
    """Substrings of stdout and stderr together."""
    absent: list[str] = []
    """Substrings that must appear in neither (a secret echoed, "REPLAY AGREES", "Traceback")."""
    seconds: float = 10.0
    rss_mib: int = 1024


class Held(BaseModel):
    """What a file must and must not hold after the run (a page written, a file outside left alone)."""

    model_config = ConfigDict(extra="forbid")

    contains: list[str] = []
    absent: list[str] = []
    kind: Literal["file", "fifo", "char", "socket", "none"] | None = None
    """What the path must be after the run (``none``: nothing there), when not a regular file's text."""


class Answer(BaseModel):
    """What a canned server answers on one route: a JSON body, or a stream of Server-Sent Events (each a
    JSON object or a string such as ``[DONE]``)."""

    model_config = ConfigDict(extra="forbid")

    status: int = 200
    body: Any = None
    events: list[Any] | None = None


class Canned(BaseModel):
    """A server on 127.0.0.1 that a run talks to (its URL is ``{server}``): each route (``"POST
    /v1/completions"``) answered alike every time, any other 404 (an endpoint that lies, for one)."""

    model_config = ConfigDict(extra="forbid")

    routes: dict[str, Answer]


class Run(BaseModel):
    model_config = ConfigDict(extra="forbid")

    argv: list[str]
    env: dict[str, str] = {}
    expect: Expect
    files: dict[str, Held] = {}
    stdin: str | None = None
    """A file (under ``{work}``) fed to the run's standard input; else it reads nothing there."""
    server: Canned | None = None
    needs: Literal["traces", "leak", "vllm", "root"] | None = None
    """What the run needs beyond pycert itself: the Mooncake traces beside the checkout, the leak extra, an
    environment with vLLM (``tests.conftest.vllm_python``, passed to the run as ``PYCERT_VLLM_PYTHON``), root."""
    address_space_mib: int | None = None
    """The child's address-space limit (``RLIMIT_AS``): a machine with less memory than the check needs."""


class Case(BaseModel):
    model_config = ConfigDict(extra="forbid")

    about: str
    """The attack, in one line, and the issue class it belongs to."""
    build: list[Op] = []
    runs: list[Run]


class Outcome(BaseModel):
    case: str
    work: Path
    run: int
    argv: list[str]
    exit: int | None
    seconds: float
    rss_mib: float
    output: str
    killed: str | None = None
    """Why the runner stopped the child (past twice its time or memory bound), else None."""


def cases() -> list[str]:
    return sorted(p.parent.name for p in CASES.glob("*/case.json"))


def load(name: str) -> Case:
    return Case.model_validate_json((CASES / name / "case.json").read_bytes())


def places(work: Path) -> dict[str, str]:
    return {"work": str(work), "certs": str(work / "certs"), "outside": str(work / "outside"), "shared": str(SHARED),
            "committed": str(COMMITTED), "uid": str(os.getuid())}


def fill(text: str, where: dict[str, str]) -> str:
    for key, value in where.items():
        text = text.replace("{" + key + "}", value)
    return text


def _pointer(doc: Any, pointer: str) -> tuple[Any, str | int]:
    parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.lstrip("/").split("/")]
    for p in parts[:-1]:
        doc = doc[int(p)] if isinstance(doc, list) else doc[p]
    last = parts[-1]
    return doc, int(last) if isinstance(doc, list) else last


def _numbered(value: Any, i: int) -> Any:
    if isinstance(value, str):
        return value.replace("{i}", str(i))
    if isinstance(value, list):
        return [_numbered(v, i) for v in value]
    if isinstance(value, dict):
        return {k: _numbered(v, i) for k, v in value.items()}
    return value


def build(name: str, work: Path) -> Case:
    """The case's hostile directory under ``work`` (``certs/``, ``outside/``); the case itself."""
    case = load(name)
    where = places(work)
    (work / "outside").mkdir(parents=True)
    if (CASES / name / "certs").is_dir():
        shutil.copytree(CASES / name / "certs", work / "certs", symlinks=True)
    (work / "certs").mkdir(exist_ok=True)
    for op in case.build:
        _apply(op, work, name, where)
    return case


def _apply(op: Any, work: Path, name: str, where: dict[str, str]) -> None:  # noqa: C901 (one branch per op)
    def at(rel: str) -> Path:
        return work / fill(rel, where)

    if isinstance(op, Copy):
        kind, _, rel = op.source.partition(":")
        src = {"committed": COMMITTED, "case": CASES / name, "work": work}[kind] / rel
        at(op.to).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, at(op.to))
    elif isinstance(op, MakeCert):
        from pycert.core.files import file_sha256
        from pycert.core.schema import InputFile
        from tests.certs import make_cert, trace_input

        root = at(op.dir)
        root.mkdir(parents=True, exist_ok=True)
        log = [InputFile(role="log", path=at(op.log).relative_to(root).as_posix(), sha256=file_sha256(at(op.log)))
               ] if op.log else []
        if op.family == "fleet":  # its parameters are made from the trace: params names the fleet (hosts, C, routing)
            from tests.certs import make_fleet_cert

            cert, _ = make_fleet_cert(at(op.trace), root, op.params["hosts"], op.params["capacity_blocks"],
                                      op.params["routing"])
        else:
            cert = make_cert(op.id, op.family, op.params, [*log, trace_input(at(op.trace), root)], root=root,
                             external={at(op.trace).name: at(op.trace)})  # a trace outside the directory
        (root / cert.filename).write_text(cert.to_json())
    elif isinstance(op, Edit):
        path = at(op.path)
        doc = json.loads(path.read_text())
        for pointer, value in op.set.items():
            parent, key = _pointer(doc, pointer)
            parent[key] = fill(value, where) if isinstance(value, str) else value  # {outside} and the like
        if op.into is not None:
            parent, key = _pointer(doc, op.into)
            parent[key].extend(_numbered(op.item, i) for i in range(op.count))
        path.write_text(json.dumps(doc, indent=2) + "\n")
    elif isinstance(op, Replace):
        path = at(op.path)
        text = path.read_text()
        if op.old not in text and not op.optional:
            raise AssertionError(f"{name}: {op.old!r} is not in {op.path}: the case is stale")
        path.write_text(text.replace(op.old, op.new))
    elif isinstance(op, Rehash):
        from pycert.core.files import file_sha256

        path = at(op.path)
        doc = json.loads(path.read_text())
        for inp in doc["inputs"]:
            if not inp.get("external") and not inp.get("derived_from") and (path.parent / inp["path"]).is_file():
                inp["sha256"] = file_sha256(path.parent / inp["path"])
        path.write_text(json.dumps(doc, indent=2) + "\n")
    elif isinstance(op, Manifest):
        from pycert.certify.manifest import MANIFEST_NAME, render_manifest
        from pycert.core.files import file_sha256

        d = at(op.dir)
        entries = {p.name: file_sha256(p) for p in d.glob("*.json") if p.is_file() and not p.is_symlink()}
        (d / MANIFEST_NAME).write_text(render_manifest(entries))
    elif isinstance(op, Write):
        path = at(op.path)
        path.parent.mkdir(parents=True, exist_ok=True)
        body = "".join(op.text.replace("{i}", str(i)) for i in range(op.repeat)) if op.numbered else op.text * op.repeat
        data = gzip.compress(body.encode(), 9, mtime=0) if op.gzip else body.encode()
        if op.zstd:
            import zstandard

            data = zstandard.ZstdCompressor().compress(data)
        path.write_bytes(data)
    elif isinstance(op, Pad):
        with open(at(op.path), "ab") as f:
            f.write(padding(op.kind, op.size))
    elif isinstance(op, Symlink):
        at(op.path).parent.mkdir(parents=True, exist_ok=True)
        at(op.path).symlink_to(fill(op.target, where))
    elif isinstance(op, Fifo):
        os.mkfifo(at(op.path))
    elif isinstance(op, Mknod):
        if os.geteuid() == 0:  # elsewhere the run that needs it is skipped
            os.mknod(at(op.path), 0o666 | stat.S_IFCHR, os.makedev(op.major, op.minor))
    elif isinstance(op, Socket):
        import socket

        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(at(op.path)))
    elif isinstance(op, Sparse):
        with open(at(op.path), "wb") as f:
            f.truncate(op.size)
    elif isinstance(op, Remove):
        at(op.path).unlink()
    elif isinstance(op, Mkdir):
        at(op.path).mkdir(parents=True, exist_ok=True)
        os.chmod(at(op.path), op.mode)


def padding(kind: str, size: int) -> bytes:
    """About ``size`` bytes of compressed padding of ``kind`` (:class:`Pad`): data no decompressor turns into any."""
    import struct
    import zlib

    import zstandard

    if kind == "zstd-empty-frames":
        frame = zstandard.ZstdCompressor().compress(b"")
        return frame * (size // len(frame))
    if kind == "zstd-skippable":
        frame = struct.pack("<II", 0x184D2A50, 1 << 20) + bytes(1 << 20)
        return frame * max(1, size // len(frame))
    empty = gzip.compress(b"", 9, mtime=0)
    if kind == "gzip-empty-members":
        return empty * (size // len(empty))
    if kind == "gzip-zeros":
        return bytes(size)
    # one empty member, FCOMMENT set, its comment ``size`` bytes
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    body = deflate.compress(b"") + deflate.flush()
    return b"\x1f\x8b\x08\x10" + bytes(4) + b"\x02\xff" + b"c" * size + b"\x00" + body + struct.pack("<II", 0, 0)


def _peak_mib(pid: int) -> float:
    """The child's peak RSS so far (``VmHWM``, which exec resets: ``wait4``'s ``ru_maxrss`` would start
    from the parent's own RSS at the fork, here 150 MiB of numpy and pydantic)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _capped(mib: int | None) -> Any:
    """A ``preexec_fn`` that caps the child's address space at ``mib`` MiB (None: no cap)."""
    if mib is None:
        return None
    import resource

    return lambda: resource.setrlimit(resource.RLIMIT_AS, (mib << 20, mib << 20))


@contextmanager
def canned(spec: Canned | None) -> Iterator[str | None]:
    """The run's canned server on 127.0.0.1 (its URL), for as long as the run lasts; None without one."""
    if spec is None:
        yield None
        return

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _answer(self) -> None:
            if (n := int(self.headers.get("Content-Length") or 0)) > 0:
                self.rfile.read(min(n, 1 << 22))
            answer = spec.routes.get(f"{self.command} {self.path}")
            if answer is None:
                self.send_error(404)
                return
            stream = answer.events is not None
            body = ("".join(f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n" for e in answer.events or [])
                    if stream else json.dumps(answer.body)).encode()
            self.send_response(answer.status)
            self.send_header("Content-Type", "text/event-stream" if stream else "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer  # noqa: N815

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def execute(name: str, k: int, run: Run, work: Path, tree: Path = REPO) -> Outcome:
    """Run the ``pycert`` of ``tree`` (this checkout, or an older one a benchmark compares) with the run's
    arguments in ``work`` (beside its canned server, if it has one): its exit code, wall time, peak RSS
    (sampled every 20 ms) and output. A child past twice its bounds is killed (its group), so a case
    that reproduces an attack on an unfixed pycert ends too."""
    with canned(run.server) as url:
        return _execute(name, k, run, work, tree, {**places(work), **({"server": url} if url else {})})


def _execute(name: str, k: int, run: Run, work: Path, tree: Path, where: dict[str, str]) -> Outcome:
    argv = [fill(a, where) for a in run.argv]
    env = {**os.environ, "PYTHONPATH": str(tree), **{k: fill(v, where) for k, v in run.env.items()}}
    if run.needs == "vllm" and (python := vllm_python()) is not None:
        env["PYCERT_VLLM_PYTHON"] = python
    out_path = work / f".out-{k}"
    stdin = open(work / fill(run.stdin, where), "rb") if run.stdin else subprocess.DEVNULL  # noqa: SIM115
    with open(out_path, "wb") as out:
        t0 = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "pycert", *argv], cwd=work, env=env, stdout=out,
                                stderr=subprocess.STDOUT, stdin=stdin, start_new_session=True,
                                preexec_fn=_capped(run.address_space_mib))
        killed, peak = None, 0.0
        while True:
            pid, status = os.waitpid(proc.pid, os.WNOHANG)
            if pid:
                break
            peak = max(peak, _peak_mib(proc.pid))
            if time.monotonic() - t0 > 2 * run.expect.seconds + 5:
                killed = f"past {2 * run.expect.seconds + 5:g} s"
            elif peak > 2 * run.expect.rss_mib + 512:
                killed = f"past {peak:.0f} MiB"
            if killed:
                os.killpg(proc.pid, signal.SIGKILL)
                pid, status = os.waitpid(proc.pid, 0)
                break
            time.sleep(0.02)
        seconds = time.monotonic() - t0
    if run.stdin:
        stdin.close()  # type: ignore[union-attr]
    proc.returncode = os.waitstatus_to_exitcode(status)
    with open(out_path, "rb") as f:
        output = f.read(1 << 20).decode("utf-8", "backslashreplace")
    return Outcome(case=name, work=work, run=k, argv=argv, exit=None if killed else proc.returncode, seconds=seconds,
                   rss_mib=peak, output=output, killed=killed)


def failures(run: Run, got: Outcome) -> list[str]:
    """How ``got`` differs from the run's expected verdict and bounds (empty: it holds)."""
    e, out = run.expect, got.output
    bad = []
    if got.killed:
        bad.append(f"killed: {got.killed}")
    if got.exit != e.exit:
        bad.append(f"exit {got.exit}, expected {e.exit}")
    bad += [f"output lacks {s!r}" for s in e.contains if s not in out]
    bad += [f"output holds {s!r}" for s in [*e.absent, "Traceback"] if s in out]
    if controls := sorted({c for c in out if (ord(c) < 32 and c not in "\n\t") or 0x7f <= ord(c) < 0xa0}):
        bad.append(f"output holds control characters {controls!r}")
    for name, held in run.files.items():
        path = Path(fill(name, places(got.work)))
        if held.kind is not None and (found := _kind(path)) != held.kind:
            bad.append(f"{name} is a {found}, expected a {held.kind}")
        text = path.read_text(errors="replace") if path.is_file() else ""
        bad += [f"{name} lacks {s!r}" for s in held.contains if s not in text]
        bad += [f"{name} holds {s!r}" for s in held.absent if s in text]
    if got.seconds > e.seconds:
        bad.append(f"{got.seconds:.1f} s, bound {e.seconds:g} s")
    if got.rss_mib > e.rss_mib:
        bad.append(f"{got.rss_mib:.0f} MiB peak RSS, bound {e.rss_mib} MiB")
    return bad


def _kind(path: Path) -> str:
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return "none"
    return next((k for test, k in ((stat.S_ISREG, "file"), (stat.S_ISFIFO, "fifo"), (stat.S_ISCHR, "char"),
                                    (stat.S_ISSOCK, "socket")) if test(mode)), "other")


def available(run: Run) -> str | None:
    """Why ``run`` cannot run here (None: it can)."""
    if run.needs == "root" and os.geteuid() != 0:
        return "needs root (a device node)"
    if run.needs == "traces" and not SHARED.is_dir():
        return f"needs the Mooncake traces in {SHARED}"
    if run.needs == "leak":
        import importlib.util

        if importlib.util.find_spec("transformers") is None:
            return "needs the leak extra (torch, transformers)"
    if run.needs == "vllm" and vllm_python() is None:
        return "needs an environment with vLLM (make setup builds .venv-vllm)"
    return None
