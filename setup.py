"""The one build hook: copy what proving needs from the repository's top level into the wheel.

The repository keeps the design card's layout (``lean/``, ``lakefile.lean``, ``lean-toolchain``,
``certificates/`` beside ``pycert/``); a wheel carries them as package data
under ``pycert/_data`` in the same layout, where :mod:`pycert.core.resources` finds them. An
editable install copies nothing: it reads the checkout.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def _shipped() -> tuple[tuple[str, ...], tuple[str, ...]]:
    # pycert/core/resources.py holds the one list; read it without importing pycert, whose
    # dependencies the isolated build environment does not have
    tree = ast.parse((HERE / "pycert" / "core" / "resources.py").read_text(encoding="utf-8"))
    values = {t.id: ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
              for t in node.targets if isinstance(t, ast.Name) and t.id in ("SHIPPED", "NOT_SHIPPED")}
    return values["SHIPPED"], values["NOT_SHIPPED"]


class BuildWithData(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        shipped, skipped = _shipped()
        target = Path(self.build_lib) / "pycert" / "_data"
        shutil.rmtree(target, ignore_errors=True)
        for rel in shipped:
            src = HERE / rel
            if src.is_dir():
                shutil.copytree(src, target / rel, ignore=lambda d, names: [
                    n for n in names if (Path(d) / n).relative_to(HERE).as_posix() in skipped
                    or n in ("__pycache__", ".lake") or n.startswith(".")])
            else:
                (target / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, target / rel)


setup(cmdclass={"build_py": BuildWithData})
