"""The pipeline runs one way: the import contract of pyproject.toml (import-linter over every import,
those inside functions included), and no import inside a function without its reason beside it."""

from __future__ import annotations

import ast
from pathlib import Path

from importlinter.cli import lint_imports

from tests.conftest import REPO


def test_the_layers_hold(monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.chdir(REPO)
    assert lint_imports(config_filename=str(REPO / "pyproject.toml")) == 0


def _late_imports(path: Path) -> list[str]:
    """Imports inside a function or a method with no comment on their line or the line above, outside
    ``if TYPE_CHECKING`` and outside a ``try`` (an optional dependency)."""
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    out = []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        guarded = {id(n) for t in ast.walk(fn) if isinstance(t, ast.Try) for n in ast.walk(t)}
        for node in ast.walk(fn):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in guarded:
                first = node.lineno  # a run of imports shares one reason: find where the run starts
                while lines[first - 2].strip().startswith(("from ", "import ")) or not lines[first - 2].strip():
                    first -= 1
                run = lines[first - 2: node.end_lineno]
                if not any("#" in line for line in run):
                    out.append(f"{path.relative_to(REPO)}:{node.lineno}")
    return out


def test_an_import_inside_a_function_says_why() -> None:
    late = [hit for path in sorted((REPO / "pycert").rglob("*.py")) for hit in _late_imports(path)]
    assert late == [], "import at the top, or say the measured start-up reason in a comment: " + ", ".join(late)


def test_no_module_is_over_450_lines() -> None:
    """A module past 450 lines holds more than one concern: split it (DEVELOPERS.md, conventions)."""
    long = {str(p.relative_to(REPO)): n for p in sorted((REPO / "pycert").rglob("*.py"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 450}
    assert long == {}
