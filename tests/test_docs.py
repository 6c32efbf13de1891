"""The README and the documentation site: the site builds with no broken link, its command reference
covers every command, and what the README shows a newcomer is what pycert prints."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pycert.cli import build_parser
from tests.conftest import REPO, SHARED_TRACES

README = (REPO / "README.md").read_text(encoding="utf-8")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)


def _hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", REPO / "docs" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_site_builds_strict_and_its_reference_has_every_command(tmp_path: Path) -> None:
    """``mkdocs build --strict``: a link to a missing page or anchor, or a page left out of the nav, fails."""
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    reference = (site / "cli" / "index.html").read_text(encoding="utf-8")
    progs = [p.prog for p in _hooks().commands(build_parser())]
    assert len(progs) > 25 and {"pycert trace mrc", "pycert prove ceiling", "pycert verify"} <= set(progs)
    for prog in progs:
        assert f"<code>{prog}</code>" in reference, prog
    assert "--capacity-tokens" in reference and "--sarif" in reference


def test_the_readme_is_short_and_starts_with_a_command_block() -> None:
    lines = README.splitlines()
    assert len(lines) <= 250
    first = "\n".join(lines[:40])
    blocks = [body for lang, body in FENCE.findall(first) if lang == "sh"]
    assert blocks and any("pip install" in b for b in blocks) and any("pycert verify" in b for b in blocks)
    for jargon in ("OPT = 32", "first-touch cut", "the wall"):
        assert jargon not in first


def test_the_readmes_links_lead_somewhere() -> None:
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README):
        if not re.match(r"[a-z]+://", target):
            assert (REPO / target).exists(), target


def _console_blocks() -> list[tuple[str, list[str]]]:
    """Each ``console`` block of the README: its command (after ``$``) and the output lines it shows."""
    out = []
    for lang, body in FENCE.findall(README):
        if lang == "console":
            first, *shown = body.rstrip("\n").split("\n")
            assert first.startswith("$ pycert "), first
            out.append((first[2:], shown))
    return out


@pytest.mark.skipif(not (SHARED_TRACES / "conversation_trace.jsonl").exists(), reason="the Mooncake traces are not here")
def test_the_readmes_sample_output_is_what_pycert_prints(tmp_path: Path) -> None:
    """Every command of a ``console`` block runs (on the Mooncake conversation trace and the committed
    certificates), exits 0, and prints each line the README shows, in that order (the README abridges:
    it may leave lines out, never change one)."""
    (tmp_path / "conversation_trace.jsonl").symlink_to(SHARED_TRACES / "conversation_trace.jsonl")
    shutil.copytree(REPO / "certificates", tmp_path / "certificates",
                    ignore=shutil.ignore_patterns("derived", "runs"))
    pycert = Path(sys.executable).with_name("pycert")
    blocks = _console_blocks()
    assert len(blocks) >= 4
    for command, shown in blocks:
        done = subprocess.run([str(pycert), *command.split()[1:]], cwd=tmp_path, capture_output=True, text=True,
                              timeout=600, env={**os.environ, "COLUMNS": "200"})
        assert done.returncode == 0, f"{command}: {done.stderr[-2000:]}"
        printed = [line.rstrip() for line in done.stdout.splitlines()]
        at = 0
        for line in shown:
            assert line.rstrip() in printed[at:], f"{command}: the README shows {line!r}, pycert printed:\n{done.stdout}"
            at = printed.index(line.rstrip(), at) + 1
