"""The native backend: the user's elan install, ``lake`` and ``lean`` from PATH.

Lake builds the library modules (``lake build +Module ...``, its own cache and order); each
standalone file runs under ``lake env lean --json -o`` in import order through the build system.
Every library module gets its own verdict, read off Lake's output by the module's path. The audit is
cross-checked with Lean's own ``#print axioms`` (:meth:`NativeBackend.print_axioms`).

Lake writes its build tree (``.lake/``) into the project it builds: in a checkout that is the checkout,
as for any Lake project; for an installed pycert it is a copy of the library and the Lake files under
the cache directory (:func:`lake_project`), never site-packages.

This backend cannot be exercised where no elan install exists (the project's CI machines have none).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import ClassVar

from pycert.core.errors import InputError
from pycert.core.files import publish_dir
from pycert.core.resources import cache_dir, checkout_root, data_root, library_sha256
from pycert.lean import print_axioms
from pycert.lean.backend import (
    Backend,
    BuildOptions,
    PrintedAxioms,
    ToolchainInfo,
    parse_lean_version,
)
from pycert.lean.scheduler import schedule
from pycert.lean.diagnostics import SORRY_MARKERS, CheckResult, check_result
from pycert.lean.process import ProcessRun, run_process
from pycert.lean.sources import Unit, module_path


def lake_verdicts(run: ProcessRun, units: list[Unit], project: Path) -> list[CheckResult]:
    """One verdict per library module from one ``lake build``: a module fails when a line of Lake's
    output names its file with an error or a ``sorry``; when Lake failed, the others are skipped."""
    lines = (run.stdout + "\n" + run.stderr).splitlines()
    out = []
    for u in units:
        names = {str(u.path), os.path.relpath(u.path, project)}
        mine = [ln for ln in lines if any(n in ln for n in names)]
        bad = [ln for ln in mine if "error" in ln or any(m in ln for m in SORRY_MARKERS)]
        common = dict(module=u.module, file=str(u.path), exit_code=run.exit_code, seconds=run.seconds)
        if run.timed_out:
            out.append(CheckResult(ok=False, status="resources", cause="timeout", detail="lake build timed out",
                                   **common))
        elif bad:
            out.append(CheckResult(ok=False, status="failed", detail=bad[0].strip(), **common))
        elif run.exit_code != 0:
            out.append(CheckResult(ok=False, status="skipped", detail=f"lake build failed: {run.crash_detail()}",
                                   **common))
        else:
            out.append(CheckResult(ok=True, status="ok", detail="compiled by one `lake build` of the library",
                                   **common))
    return out


def lake_project(library: Path) -> Path:
    """The Lake project to build ``library`` in: its parent, unless that is an installed pycert's package
    data, which is copied (with ``lakefile.lean`` and ``lean-toolchain``) under the cache directory once
    per library content."""
    project = library.parent
    if checkout_root() is not None or project.resolve() != data_root().resolve():
        return project
    key = hashlib.sha256(b"".join([library_sha256(library).encode(), (project / "lakefile.lean").read_bytes(),
                                   (project / "lean-toolchain").read_bytes()])).hexdigest()[:16]
    mirror = cache_dir() / "lake" / key
    if not (mirror / "lakefile.lean").exists():
        def fill(tree: Path) -> None:  # copies, not links: an edit in place must not reach a keyed copy
            shutil.copytree(library, tree / "lean")
            for name in ("lean-toolchain", "lakefile.lean"):  # the lakefile last: it marks the copy complete
                shutil.copyfile(project / name, tree / name)
        publish_dir(mirror, fill)
    return mirror


class NativeBackend(Backend):
    kind: ClassVar = "native"

    def __init__(self, lean: Path, lake: Path) -> None:
        self.lean, self.lake = lean, lake

    def info(self) -> ToolchainInfo:
        out = subprocess.run([str(self.lean), "--version"], capture_output=True, text=True).stdout
        version, commit = parse_lean_version(out) or (out.strip(), None)
        return ToolchainInfo(backend="native", lean_version=version, lean_commit=commit, lean=str(self.lean),
                             lake=str(self.lake))

    def toolchain_library(self) -> Path:
        try:
            out = subprocess.run([str(self.lean), "--print-libdir"], capture_output=True, text=True, timeout=120,
                                 check=True)
        except (OSError, subprocess.SubprocessError) as exc:
            raise InputError(f"`lean --print-libdir` failed: {exc}") from None
        return Path(out.stdout.strip())

    def build(self, library: Path | None, units: list[Unit], options: BuildOptions) -> tuple[list[CheckResult], Path]:
        project = lake_project(library) if library else Path.cwd()
        tree = project / ".lake" / "build" / "lib" / "lean"
        # as Lake names them: under the project it builds in, which may be a copy of ``library``
        in_library = [u.model_copy(update={"path": project / "lean" / u.path.relative_to(library)})
                      for u in units if library and u.path.is_relative_to(library)]
        results: list[CheckResult] = []
        if in_library:
            options.progress("lake build ...")
            run = run_process([str(self.lake), "build", *(f"+{u.module}" for u in in_library)], cwd=project,
                              env=dict(os.environ), timeout=options.timeout)
            results = lake_verdicts(run, in_library, project)
        built = {r.module: r for r in results}

        def compile_unit(u: Unit) -> CheckResult:
            if u.module in built:
                return built[u.module]
            out = tree / module_path(u.module).with_suffix(".olean")
            out.parent.mkdir(parents=True, exist_ok=True)
            run = run_process([str(self.lake), "env", "lean", "--json", "-o", str(out), str(u.path)], cwd=project,
                              env=dict(os.environ), timeout=options.timeout)
            res = check_result(u.module, str(u.path), run, str(u.path))
            options.progress(f"{u.module}: {res.status} ({run.seconds:.1f} s)")
            return res

        return schedule(units, options.jobs, compile_unit, options.progress), tree

    def print_axioms(self, project: Path | None, modules: list[str], theorems: list[str],
                     timeout: float) -> PrintedAxioms:
        """``lake env lean`` on the probe file, in the Lake project that built ``modules``."""
        if project is None:
            return PrintedAxioms(not_run="no Lake project to run #print axioms in (pass the library directory)")
        with tempfile.TemporaryDirectory(prefix="pycert-print-axioms-") as d:
            probe = Path(d) / print_axioms.PROBE_NAME
            probe.write_text(print_axioms.probe_source(modules, theorems), encoding="utf-8")
            run = run_process([str(self.lake), "env", "lean", "--json", str(probe)],
                              cwd=lake_project(project / "lean"), env=dict(os.environ), timeout=timeout)
        return PrintedAxioms(answers=print_axioms.parse(run.stdout))


def find_native() -> NativeBackend | None:
    lean, lake = shutil.which("lean"), shutil.which("lake")
    return NativeBackend(Path(lean), Path(lake)) if lean and lake else None
