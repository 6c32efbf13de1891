"""The Lean runner: check files and build the library on either backend.

On wasm this is a minimal Lake. Modules under ``lean/`` are compiled to .olean files in import order,
independent modules in parallel up to the core count, each in its own process group with a timeout.
Every compiled module is cached under a key that hashes its source, the keys of the project modules it
imports and the toolchain, so an unchanged module is never rebuilt. Sources are staged under a
directory the wasm process can see. Diagnostics come from ``lean --json`` and are mapped back to the
user's paths; the "declaration uses sorry" warning counts as a failure.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from pycert.lean import wasm as tc
from pycert.core.errors import InputError
from pycert.core.files import REPO_ROOT

DEFAULT_TIMEOUT = 1800.0
OLEAN_SUFFIXES = (".olean", ".olean.private", ".olean.server", ".ilean", ".ir")
SORRY_MARKERS = ("declaration uses `sorry`", "declaration uses 'sorry'")
_IMPORT_RE = re.compile(r"^\s*(?:public\s+)?(?:meta\s+)?import\s+(?:all\s+)?([\w.«»]+)")

Severity = Literal["error", "warning", "info"]


class Diagnostic(BaseModel):
    file: str
    line: int
    column: int
    severity: Severity
    message: str

    @property
    def is_failure(self) -> bool:
        return self.severity == "error" or any(m in self.message for m in SORRY_MARKERS)

    def render(self) -> str:
        first = self.message.strip().splitlines()[0] if self.message.strip() else ""
        return f"{self.file}:{self.line}:{self.column}: {self.severity}: {first}"


class CheckResult(BaseModel):
    """One Lean process (or one cache hit): a library module or a standalone file."""

    module: str
    file: str
    ok: bool
    status: Literal["ok", "failed", "timeout", "crashed", "skipped"]
    exit_code: int | None
    seconds: float
    cached: bool = False
    diagnostics: list[Diagnostic] = []
    detail: str = ""

    @property
    def failures(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.is_failure]


class BuildResult(BaseModel):
    ok: bool
    backend: tc.Backend
    results: list[CheckResult]
    olean_dir: str
    """A directory holding ``<Module/Path>.olean`` for every module built (for imports and the audit)."""
    seconds: float

    def by_module(self) -> dict[str, CheckResult]:
        return {r.module: r for r in self.results}


# ---------------------------------------------------------------------------- pure helpers


def parse_imports(source: str) -> list[str]:
    """Module names a Lean file imports (its header: imports come before anything else)."""
    names: list[str] = []
    in_block_comment = False
    for raw in source.splitlines():
        line = raw.strip()
        if in_block_comment:
            in_block_comment = "-/" not in line
            continue
        if not line or line.startswith("--") or line in ("module", "prelude"):
            continue
        if line.startswith("/-"):
            in_block_comment = "-/" not in line
            continue
        if m := _IMPORT_RE.match(line):
            names.append(m.group(1))
            continue
        break
    return names


def parse_diagnostics(stdout: str, file_map: dict[str, str]) -> list[Diagnostic]:
    """Diagnostics from ``lean --json`` output; ``file_map`` maps staged names to user paths."""
    diags = []
    for line in stdout.splitlines():
        if not line.startswith("{"):
            continue
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(msg, dict) or "severity" not in msg or "pos" not in msg:
            continue
        severity = {"information": "info"}.get(msg["severity"], msg["severity"])
        if severity not in ("error", "warning", "info"):
            severity = "error"
        name = msg.get("fileName", "")
        diags.append(
            Diagnostic(
                file=file_map.get(name, name),
                line=int(msg["pos"].get("line", 0)),
                column=int(msg["pos"].get("column", 0)),
                severity=severity,
                message=str(msg.get("data", "")),
            )
        )
    return diags


def module_name(root: Path, path: Path) -> str:
    return ".".join(path.relative_to(root).with_suffix("").parts)


def module_relpath(module: str) -> Path:
    return Path(*module.split("."))


def discover(root: Path) -> dict[str, Path]:
    """All library modules below ``root`` (``lean/``), by module name."""
    if not root.is_dir():
        raise InputError("no Lean library directory", where=str(root))
    return {module_name(root, p): p for p in sorted(root.rglob("*.lean"))}


def topo_order(deps: dict[str, list[str]]) -> list[str]:
    """Modules ordered so each comes after the project modules it imports; a cycle is an input error."""
    order: list[str] = []
    state: dict[str, int] = {}

    def visit(m: str, trail: tuple[str, ...]) -> None:
        if state.get(m) == 2:
            return
        if state.get(m) == 1:
            raise InputError("import cycle: " + " -> ".join((*trail, m)))
        state[m] = 1
        for d in deps[m]:
            visit(d, (*trail, m))
        state[m] = 2
        order.append(m)

    for m in sorted(deps):
        visit(m, ())
    return order


def cache_key(toolchain_id: str, module: str, source: bytes, dep_keys: Iterable[str]) -> str:
    h = hashlib.sha256()
    for part in (toolchain_id.encode(), module.encode(), source, *(k.encode() for k in dep_keys)):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()


# ---------------------------------------------------------------------------- processes


class _Run(BaseModel):
    exit_code: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool


@contextlib.contextmanager
def machine_slot(poll_s: float = 0.5) -> Iterator[None]:
    """Hold one of ``cpu_count`` machine-wide slots (flock'd files) while a Lean process runs.

    A wasm Lean takes a core and 3-4 GB; several pycert processes at once (tests, a prove run)
    would otherwise oversubscribe a 2-core machine into swapping or the OOM killer.
    """
    slots = max(1, int(os.environ.get("PYCERT_LEAN_SLOTS", os.cpu_count() or 1)))
    root = tc.scratch_root()
    while True:
        for i in range(slots):
            fh = open(root / f"slot-{i}.lock", "a")
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                fh.close()
                continue
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)
                fh.close()
            return
        time.sleep(poll_s)


def run_process(argv: Sequence[str], cwd: Path, env: dict[str, str], timeout: float) -> _Run:
    """Run ``argv`` in its own process group; on timeout the whole group is killed.

    The timeout counts from the start of the process, not from the wait for a machine slot.
    """
    with machine_slot():
        return _run_process(argv, cwd, env, timeout)


def _run_process(argv: Sequence[str], cwd: Path, env: dict[str, str], timeout: float) -> _Run:
    t0 = time.monotonic()
    proc = subprocess.Popen(
        list(argv), cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, errors="replace",
    )
    try:
        out, err = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        timed_out = True
    except BaseException:  # Ctrl-C: do not leave a 3 GB Lean behind
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    return _Run(
        exit_code=None if timed_out else proc.returncode, stdout=out, stderr=err,
        seconds=time.monotonic() - t0, timed_out=timed_out,
    )


def _crash_detail(run: _Run) -> str:
    lines = [ln for ln in (run.stderr + "\n" + run.stdout).splitlines() if ln.strip() and not ln.startswith("[DEBUG")]
    for ln in lines:
        if "PANIC" in ln or "out of memory" in ln or "RangeError" in ln or "Error:" in ln:
            return ln.strip()
    return lines[-1].strip() if lines else f"exit {run.exit_code}"


def _result(module: str, user_file: str, run: _Run, staged_name: str) -> CheckResult:
    diags = parse_diagnostics(run.stdout, {staged_name: user_file})
    if run.timed_out:
        return CheckResult(
            module=module, file=user_file, ok=False, status="timeout", exit_code=None,
            seconds=run.seconds, diagnostics=diags, detail=f"timed out after {run.seconds:.0f} s; process group killed",
        )
    failed = any(d.is_failure for d in diags)
    if run.exit_code not in (0, 1) or (run.exit_code == 1 and not failed):
        return CheckResult(
            module=module, file=user_file, ok=False, status="crashed", exit_code=run.exit_code,
            seconds=run.seconds, diagnostics=diags, detail=_crash_detail(run),
        )
    ok = run.exit_code == 0 and not failed
    return CheckResult(
        module=module, file=user_file, ok=ok, status="ok" if ok else "failed", exit_code=run.exit_code,
        seconds=run.seconds, diagnostics=diags,
    )


# ---------------------------------------------------------------------------- the wasm mini-Lake


class Unit(BaseModel):
    """Something to compile: a library module or a standalone file (its module name is its stem)."""

    module: str
    path: Path
    imports: list[str]


def _toolchain_id(t: tc.Toolchain) -> str:
    if isinstance(t, tc.WasmToolchain):
        return f"wasm:{t.stamp.integrity}"
    return f"native:{t.lean}"


def _link_outputs(src_dir: Path, dst_dir: Path, rel: Path) -> None:
    for suffix in OLEAN_SUFFIXES:
        src = src_dir / rel.with_name(rel.name + suffix)
        if src.exists():
            dst = dst_dir / rel.with_name(rel.name + suffix)
            dst.parent.mkdir(parents=True, exist_ok=True)
            if dst.exists():
                dst.unlink()
            tc._link_or_copy(str(src), str(dst))


def build_cache_dir() -> Path:
    """Compiled modules by content key: ``$PYCERT_BUILD_CACHE``, else ``<cache>/build``."""
    return Path(os.environ.get("PYCERT_BUILD_CACHE") or tc.cache_dir() / "build")


def _prune_old_trees(root: Path, max_age_s: float = 86400.0) -> None:
    """Olean trees are per build (a later audit reads them); drop the ones nobody can still want."""
    now = time.time()
    for d in root.glob("oleans-*"):
        try:
            if now - d.stat().st_mtime > max_age_s:
                shutil.rmtree(d, ignore_errors=True)
        except OSError:
            pass


class WasmBuilder:
    """Compiles units in dependency order into one olean tree, with a content-hash cache."""

    def __init__(self, toolchain: tc.WasmToolchain, jobs: int | None = None, timeout: float = DEFAULT_TIMEOUT,
                 progress: Callable[[str], None] | None = None) -> None:
        self.t = toolchain
        self.jobs = max(1, jobs or os.cpu_count() or 1)
        self.timeout = timeout
        self.progress = progress or (lambda _m: None)
        self.cache = build_cache_dir()
        _prune_old_trees(tc.scratch_root())
        self.tree = Path(tempfile.mkdtemp(prefix="oleans-", dir=tc.scratch_root()))

    def build(self, units: list[Unit]) -> list[CheckResult]:
        by_name = {u.module: u for u in units}
        deps = {u.module: [i for i in u.imports if i in by_name] for u in units}
        order = topo_order(deps)
        keys: dict[str, str] = {}
        results: dict[str, CheckResult] = {}
        pending = list(order)
        running: dict[Future[CheckResult], str] = {}
        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            while pending or running:
                for m in list(pending):
                    if any(d not in results for d in deps[m]):
                        continue
                    pending.remove(m)
                    bad = [d for d in deps[m] if not results[d].ok]
                    if bad:
                        results[m] = CheckResult(
                            module=m, file=str(by_name[m].path), ok=False, status="skipped", exit_code=None,
                            seconds=0.0, detail=f"not built: {', '.join(bad)} failed",
                        )
                        self.progress(f"{m}: skipped ({', '.join(bad)} failed)")
                        continue
                    u = by_name[m]
                    keys[m] = cache_key(_toolchain_id(self.t), m, u.path.read_bytes(), [keys[d] for d in deps[m]])
                    running[pool.submit(self._unit, u, keys[m])] = m
                if not running:
                    continue
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in done:
                    m = running.pop(fut)
                    results[m] = fut.result()
        return [results[m] for m in order]

    def _unit(self, u: Unit, key: str) -> CheckResult:
        rel = module_relpath(u.module)
        entry = self.cache / key
        meta = entry / "result.json"
        if meta.exists():
            res = CheckResult.model_validate_json(meta.read_text())
            _link_outputs(entry, self.tree, rel)
            res = res.model_copy(update={"cached": True, "file": str(u.path)})
            self.progress(f"{u.module}: {res.status} (cached)")
            return res
        self.progress(f"{u.module}: checking ...")
        stage = Path(tempfile.mkdtemp(prefix="stage-", dir=tc.scratch_root()))
        try:
            src = stage / "src" / rel.with_suffix(".lean")
            src.parent.mkdir(parents=True)
            shutil.copyfile(u.path, src)
            out = stage / "out" / rel.with_name(rel.name + ".olean")
            out.parent.mkdir(parents=True)
            staged_name = str(rel.with_suffix(".lean"))
            env = {**os.environ, "LEAN_PATH": f"{self.t.lib}:{self.tree}"}
            argv = [str(self.t.node), str(self.t.lean_js), "--json", "-R", ".", "-o", str(out), staged_name]
            run = run_process(argv, cwd=stage / "src", env=env, timeout=self.timeout)
            res = _result(u.module, str(u.path), run, staged_name)
            if res.status in ("ok", "failed"):  # deterministic outcomes only; never cache a timeout or crash
                self.cache.mkdir(parents=True, exist_ok=True)
                tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=self.cache))
                _link_outputs(stage / "out", tmp, rel)
                (tmp / "result.json").write_text(res.model_dump_json())
                try:
                    tmp.rename(entry)
                except OSError:
                    shutil.rmtree(tmp, ignore_errors=True)
            if res.ok:
                _link_outputs(stage / "out", self.tree, rel)
            self.progress(f"{u.module}: {res.status} ({res.seconds:.1f} s)")
            return res
        finally:
            shutil.rmtree(stage, ignore_errors=True)


# ---------------------------------------------------------------------------- public API


def _units_for_library(root: Path) -> list[Unit]:
    return [Unit(module=m, path=p, imports=parse_imports(p.read_text())) for m, p in discover(root).items()]


def _units_for_files(paths: Sequence[Path]) -> list[Unit]:
    units = []
    seen: dict[str, Path] = {}
    for p in paths:
        if not p.is_file():
            raise InputError("no such Lean file", where=str(p))
        name = p.stem
        if name in seen:
            raise InputError(f"two files would both be module {name!r} ({seen[name]})", where=str(p))
        seen[name] = p
        units.append(Unit(module=name, path=p, imports=parse_imports(p.read_text())))
    return units


def build(
    library: Path | None = None,
    files: Sequence[Path] = (),
    backend: str | None = None,
    jobs: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    progress: Callable[[str], None] | None = None,
) -> BuildResult:
    """Build the library under ``library`` (if given) and check ``files`` against it, in one DAG."""
    t = tc.resolve(backend)
    t0 = time.monotonic()
    units = (_units_for_library(library) if library else []) + _units_for_files(files)
    if isinstance(t, tc.NativeToolchain):
        results, tree = _native_build(t, library, units, timeout, progress)
    else:
        builder = WasmBuilder(t, jobs=jobs, timeout=timeout, progress=progress)
        results, tree = builder.build(units), builder.tree
    return BuildResult(
        ok=all(r.ok for r in results), backend="native" if isinstance(t, tc.NativeToolchain) else "wasm",
        results=results, olean_dir=str(tree), seconds=time.monotonic() - t0,
    )


def default_library() -> Path:
    """The repository's ``lean/`` directory (pycert runs from a checkout or an editable install)."""
    return REPO_ROOT / "lean"


def check_files(
    paths: Sequence[Path], backend: str | None = None, timeout: float = DEFAULT_TIMEOUT,
    library: Path | None = None, progress: Callable[[str], None] | None = None, jobs: int | None = None,
) -> BuildResult:
    """Check standalone Lean files; when they import ``Pycert.*`` the library is built first (cached)."""
    if library is None and any(
        i.startswith("Pycert.") for p in paths if p.is_file() for i in parse_imports(p.read_text())
    ):
        library = default_library()
    return build(library=library, files=paths, backend=backend, timeout=timeout, progress=progress, jobs=jobs)


LAKE_BUILD = "(lake build)"
"""The one result a native ``lake build`` of the whole library reports (its ``file`` is ``lean/``)."""


def _native_build(
    t: tc.NativeToolchain, library: Path | None, units: list[Unit], timeout: float,
    progress: Callable[[str], None] | None,
) -> tuple[list[CheckResult], Path]:
    """Natively, Lake builds the library; standalone files run under ``lake env lean``."""
    say = progress or (lambda _m: None)
    results: list[CheckResult] = []
    project = library.parent if library else Path.cwd()
    tree = project / ".lake" / "build" / "lib" / "lean"
    lib_units = {u.module for u in units if library and u.path.is_relative_to(library)}
    if lib_units:
        say("lake build ...")
        run = run_process([str(t.lake), "build"], cwd=project, env=dict(os.environ), timeout=timeout)
        status = "timeout" if run.timed_out else ("ok" if run.exit_code == 0 else "failed")
        sorry = any(m in run.stdout for m in SORRY_MARKERS)
        ok = status == "ok" and not sorry
        results.append(CheckResult(
            module=LAKE_BUILD, file=str(library), ok=ok, status="ok" if ok else ("timeout" if run.timed_out else "failed"),
            exit_code=run.exit_code, seconds=run.seconds, detail=_crash_detail(run) if not ok else "",
        ))
    for u in units:
        if u.module in lib_units:
            continue
        out = tree / module_relpath(u.module).with_suffix(".olean")
        out.parent.mkdir(parents=True, exist_ok=True)
        run = run_process([str(t.lake), "env", "lean", "--json", "-o", str(out), str(u.path)], cwd=project,
                          env=dict(os.environ), timeout=timeout)
        results.append(_result(u.module, str(u.path), run, str(u.path)))
        say(f"{u.module}: {results[-1].status} ({run.seconds:.1f} s)")
    return results, tree
