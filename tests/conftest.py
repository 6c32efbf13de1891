"""Shared fixtures. Tests that run the real kernel are marked slow; CI runs them all."""

from __future__ import annotations

import os
import signal
import uuid
from pathlib import Path

import pytest

from pycert.core import resources
from pycert.lean.wasm import WasmBackend, find_wasm

REPO = Path(__file__).resolve().parent.parent
SHARED_TRACES = REPO.parent / "shared" / "traces" / "mooncake-fast25"

# The suite's Lean runs are fresh processes, as on a machine where no warm checker runs: a test that
# proves would otherwise leave a daemon (and a 1.5 GiB Lean) behind it for ten minutes. The warm
# checker's own tests turn it on (tests/test_daemon.py); PYCERT_DAEMON=on runs the whole suite through it.
os.environ.setdefault("PYCERT_DAEMON", "off")


@pytest.fixture(scope="session")
def wasm() -> WasmBackend:
    found = find_wasm()
    if found is None:
        pytest.fail("the wasm toolchain is not installed: run `pycert toolchain install` (the README's test command does)")
    return found


@pytest.fixture
def sigint_raises() -> None:
    """SIGINT raises KeyboardInterrupt in this process, and acts by default in a child started
    meanwhile (exec resets a handled signal to its default; only an ignored one stays ignored): what
    a Ctrl-C test relies on. A suite started in the background or under ``nohup`` inherits SIGINT
    ignored, and Python then leaves it ignored."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


@pytest.fixture
def lean_dir() -> Path:
    """A scratch directory the wasm process can see."""
    d = resources.scratch_root() / f"test-{uuid.uuid4().hex[:10]}"
    d.mkdir()
    yield d
    import shutil

    shutil.rmtree(d, ignore_errors=True)


def nonce() -> str:
    """A comment that makes a Lean source unique, so the build cache cannot answer for it."""
    return f"-- nonce {uuid.uuid4().hex}\n"


def vllm_python() -> str | None:
    """The Python of an environment that has vLLM: ``PYCERT_VLLM_PYTHON`` where set (``make test`` sets it, so
    a broken one fails the tests that need it), else ``make setup``'s ``.venv-vllm``; None when neither is."""
    import os

    if named := os.environ.get("PYCERT_VLLM_PYTHON"):
        return named
    made = REPO / ".venv-vllm" / "bin" / "python"
    return str(made) if made.is_file() else None
