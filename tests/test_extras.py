"""The slim install and its extras: a command that needs a missing extra says which in one line (exit 2, no
traceback) before its work; the compiled kernels run as Python without numba, with the same results; the
commands pycert prints start as it runs here; each family's ``prove --help`` says what it proves."""

from __future__ import annotations

import builtins
import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pycert.cli import build_parser, main
from pycert.core import console, extras
from pycert.families import FAMILIES, producer
from tests.conftest import REPO

TRACES = Path(__file__).resolve().parent / "traces"


def hide(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    """Make ``modules`` look uninstalled: find_spec finds none, and importing one fails as pip's absence would."""
    real_find, real_import = importlib.util.find_spec, builtins.__import__

    def find_spec(name: str, *a: object, **k: object):  # noqa: ANN202
        return None if name.partition(".")[0] in modules else real_find(name, *a, **k)

    def imp(name: str, *a: object, **k: object):  # noqa: ANN202
        if name.partition(".")[0] in modules:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real_import(name, *a, **k)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.setattr(builtins, "__import__", imp)


@pytest.mark.parametrize("argv, extra", [
    (["trace", "plot", str(TRACES / "requests-sample.jsonl"), "-o", "x.png"], "plot"),
    (["prove", "ceiling", "--trace", str(TRACES / "requests-sample.jsonl")], "prove"),
    (["pooling", "solve"], "prove"),
    (["report", "--certs", str(REPO / "certificates"), "--out", "r.html"], "plot"),
])
def test_a_command_missing_its_extra_says_which_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str], argv: list[str],
                                                            extra: str) -> None:
    monkeypatch.chdir(tmp_path)
    hide(monkeypatch, *(m for m in extras.EXTRAS[extra] if m not in ("numba", "matplotlib") or extra == "plot"))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"the {extra} extra" in err and "pip install -e" in err and f"[{extra}]" in err
    assert err.count("\n") == 1 and "Traceback" not in err and not list(tmp_path.iterdir())


def test_an_extras_module_imported_past_the_check_is_one_line_too(monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    def stats(args: object) -> int:
        import ortools  # noqa: F401  (the import under test: an extra's module, deep in a command)
        return 0

    monkeypatch.setattr("pycert.cli.trace.cmd_stats", stats)  # registered when main builds its parser
    hide(monkeypatch, "ortools")
    assert main(["trace", "stats"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pycert: pycert trace stats: needs the prove extra (ortools is not installed): pip install")
    assert err.count("\n") == 1


def test_the_install_hint_runs_today(monkeypatch: pytest.MonkeyPatch) -> None:
    assert extras.install_hint("plot") == f"pip install -e '{REPO}[plot]'"  # a checkout: editable, with the extra
    monkeypatch.setattr(extras, "checkout_root", lambda: None)
    hint = extras.install_hint("plot")  # installed: from where pip recorded it came (PEP 610), else the index
    assert hint.startswith("pip install 'pycert-kv[plot]")


def test_the_kernels_give_the_same_figures_as_python() -> None:
    """numba absent (the slim install) runs the same functions as Python: the same exact curve."""
    code = ("import sys; sys.modules['numba'] = None\n"
            "from pycert.core import jit; assert not jit.COMPILED\n"
            "from pycert.data.traces import read_trace\nfrom pycert.analysis.optcurve import opt_hit_curve\n"
            f"t = read_trace({str(REPO / 'certificates' / 'inputs' / 'synthetic-seed0.jsonl')!r})\n"
            "print(opt_hit_curve(t.refs).hits_at.tolist())")
    python = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    from pycert.analysis.optcurve import opt_hit_curve
    from pycert.data.traces import read_trace

    compiled = opt_hit_curve(read_trace(REPO / "certificates" / "inputs" / "synthetic-seed0.jsonl").refs)
    assert python.strip() == str(np.asarray(compiled.hits_at).tolist())


def test_printed_commands_start_as_pycert_runs_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for argv0, on_path, expected in ((tmp_path / ".venv/bin/pycert", None, ".venv/bin/pycert"),  # after make prove
                                     (Path("/usr/local/bin/pycert"), "/usr/local/bin/pycert", "pycert"),  # on PATH
                                     (Path("/opt/venv/bin/pycert"), "/usr/bin/pycert", "/opt/venv/bin/pycert"),
                                     (Path("/opt/pytest"), None, "pycert")):  # inside another program
        monkeypatch.setattr(sys, "argv", [str(argv0)])
        monkeypatch.setattr(console.shutil, "which", lambda name, found=on_path: found)
        assert console.invocation() == expected, argv0


def test_each_family_help_says_what_it_proves() -> None:
    summaries = {name: producer(name).summary for name in FAMILIES}
    assert all(len(s) > 60 for s in summaries.values()) and len(set(summaries.values())) == len(summaries)
    prove = build_parser(["prove"])._subparsers._group_actions[0].choices["prove"]
    choices = prove._subparsers._group_actions[0].choices
    for name, summary in summaries.items():
        text = " ".join(choices[name].format_help().split()).replace("- ", "-")  # argparse breaks at a hyphen
        assert " ".join(summary.split()).replace("- ", "-") in text, name
    salt = " ".join(choices["isolation-cost"].format_help().split())
    assert "hit ceiling of this trace" not in salt and "per-tenant salt costs" in salt
    assert "Prove every family" in " ".join(choices["all"].format_help().split())
