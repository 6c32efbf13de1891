"""The embedded wasm backend: pycert is its own minimal Lake.

Every module is compiled by its own Lean process (``lean --json -o``) in import order through the
build system (:func:`pycert.lean.scheduler.schedule`), with the content cache answering for unchanged
modules. Sources are staged under a directory the wasm process can see (it mounts only ``/tmp`` and
``/home``) and its diagnostics mapped back to the user's paths. Lean refuses ``#print axioms`` here
(every file is a ``module``), so the audit's cross-check says it was not run.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path
from typing import ClassVar

from pycert.core.resources import cache_dir, scratch_root
from pycert.lean.backend import Backend, BuildOptions, PrintedAxioms, ToolchainInfo
from pycert.lean.scheduler import BuildCache, link_outputs, prune_old_trees, schedule
from pycert.lean.diagnostics import CheckResult, check_result
from pycert.lean.process import run_process
from pycert.lean.sources import Unit, module_path
from pycert.lean.toolchain import Installed, find_installed, node_version


class WasmBackend(Backend):
    kind: ClassVar = "wasm"

    def __init__(self, installed: Installed) -> None:
        self.node, self.lean_js, self.lib, self.stamp = installed.node, installed.lean_js, installed.lib, installed.stamp

    def info(self) -> ToolchainInfo:
        return ToolchainInfo(backend="wasm", lean_version=self.stamp.lean_version, lean_commit=self.stamp.lean_commit,
                             node_version=node_version(self.node), node=str(self.node), lean_js=str(self.lean_js),
                             lean_lib=str(self.lib), cache_dir=str(cache_dir()))

    def toolchain_library(self) -> Path:
        return self.lib

    def cache_identity(self) -> str:
        return f"wasm:{self.stamp.integrity}"

    def build(self, library: Path | None, units: list[Unit], options: BuildOptions) -> tuple[list[CheckResult], Path]:
        prune_old_trees(scratch_root())
        tree = Path(tempfile.mkdtemp(prefix="oleans-", dir=scratch_root()))
        atexit.register(shutil.rmtree, tree, ignore_errors=True)  # the run's audit is done by then
        cache = BuildCache(self.cache_identity(), units)

        def compile_unit(u: Unit) -> CheckResult:
            if (hit := cache.lookup(u, tree)) is not None:
                options.progress(f"{u.module}: {hit.status} (cached)")
                return hit
            options.progress(f"{u.module}: checking ...")
            res = self._compile(u, tree, cache, options.timeout)
            options.progress(f"{u.module}: {res.summary()}")
            return res

        return schedule(units, options.jobs, compile_unit, options.progress), tree

    def _compile(self, u: Unit, tree: Path, cache: BuildCache, timeout: float) -> CheckResult:
        rel = module_path(u.module)
        stage = Path(tempfile.mkdtemp(prefix="stage-", dir=scratch_root()))
        try:
            src = stage / "src" / rel.with_suffix(".lean")
            src.parent.mkdir(parents=True)
            shutil.copyfile(u.path, src)
            out = stage / "out" / rel.with_name(rel.name + ".olean")
            out.parent.mkdir(parents=True)
            staged_name = str(rel.with_suffix(".lean"))
            env = {**os.environ, "LEAN_PATH": f"{self.lib}:{tree}"}
            argv = [str(self.node), str(self.lean_js), "--json", "-R", ".", "-o", str(out), staged_name]
            res = check_result(u.module, str(u.path), run_process(argv, stage / "src", env, timeout), staged_name)
            cache.store(u, res, stage / "out")
            if res.ok:
                link_outputs(stage / "out", tree, u.module)
            return res
        finally:
            shutil.rmtree(stage, ignore_errors=True)

    def print_axioms(self, project: Path | None, modules: list[str], theorems: list[str],
                     timeout: float) -> PrintedAxioms:
        return PrintedAxioms(not_run="on wasm every file is a module and Lean refuses #print axioms; "
                                     "the .olean audit stands alone")


def find_wasm() -> WasmBackend | None:
    installed = find_installed()
    return None if installed is None else WasmBackend(installed)
