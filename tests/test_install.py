"""Installed, not cloned: build the sdist and the wheel, install the wheel into a fresh virtual
environment outside the checkout, and from an empty directory prove a user's trace and one from
another directory, verify them (plain, the outside trace handed in with --input, and with the kernel
from another directory), audit, report and plant certificate defects. The Lean
build cache in the user's cache directory is shared with the rest of the suite, so the library is
not rebuilt; the user's trace is new every run, so its instance is kernel-checked for real."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from pycert import __version__
from pycert.core.resources import library_sha256
from tests.conftest import REPO


def _run(argv: list[str], cwd: Path, env: dict[str, str], timings: dict[str, float], step: str,
         expect: int = 0, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    t0 = time.monotonic()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    timings[step] = round(time.monotonic() - t0, 1)
    assert done.returncode == expect, f"{step}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _users_trace(path: Path) -> None:
    """Mooncake JSONL with 64-bit ids in no order, fresh each run (so the kernel, not the cache, answers)."""
    rng = random.Random()
    ids = [rng.getrandbits(64) for _ in range(200)]
    lines = [json.dumps({"timestamp": 10 * t, "input_length": 512 * k, "output_length": 16,
                         "hash_ids": [rng.choice(ids) for _ in range(k)]})
             for t, k in enumerate(rng.randint(1, 8) for _ in range(120))]
    path.write_text("\n".join(lines) + "\n")


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def _build_and_install(tmp_path: Path, timings: dict[str, float]) -> tuple[Path, dict[str, str]]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    dist = tmp_path / "dist"
    built = _run([sys.executable, "-m", "build", "--outdir", str(dist), str(REPO)], tmp_path, env, timings,
                 "build sdist+wheel")
    assert "deprecated" not in (built.stdout + built.stderr).lower(), "the build prints a deprecation banner"
    # the distribution is pycert-kv (PyPI's pycert is another project); the import and the command stay pycert
    wheel = next(dist.glob("pycert_kv-*.whl"))
    assert next(dist.glob("pycert_kv-*.tar.gz"))
    names = set(zipfile.ZipFile(wheel).namelist())
    metadata = zipfile.ZipFile(wheel).read(f"pycert_kv-{__version__}.dist-info/METADATA").decode()
    assert "Name: pycert-kv" in metadata.splitlines()
    assert "License-Expression: Apache-2.0" in metadata.splitlines()  # SPDX (PEP 639), not a TOML table
    for shipped in ("pycert/_data/lean/Pycert.lean", "pycert/_data/lakefile.lean", "pycert/_data/lean-toolchain",
                    "pycert/_data/certificates/inputs/committed.json",
                    "pycert/_data/certificates/schema/pycert-cert-1.schema.json"):
        assert shipped in names, shipped
    assert not any("/derived/" in n or n.startswith("tests/") for n in names)
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], tmp_path, env, timings, "venv")
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-compile", str(wheel)], tmp_path, env,
         timings, "pip install wheel")
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    return venv, env


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_the_installed_wheel_proves_a_users_trace_from_an_empty_directory(tmp_path: Path, wasm) -> None:
    timings: dict[str, float] = {}
    venv, env = _build_and_install(tmp_path, timings)
    site = next((venv / "lib").glob("python3*/site-packages"))
    before = _files(site)
    work = tmp_path / "work"
    work.mkdir()
    _users_trace(work / "small.jsonl")
    (tmp_path / "elsewhere").mkdir()
    _users_trace(tmp_path / "elsewhere" / "far.jsonl")

    where = _run(["python", "-c", "from pycert.core.resources import data_root, checkout_root;"
                  "print(data_root()); print(checkout_root())"], work, env, timings, "where")
    assert where.stdout.split() == [str(site / "pycert" / "_data"), "None"]
    _run(["pycert", "toolchain", "install"], work, env, timings, "toolchain install")
    proved = _run(["pycert", "prove", "ceiling", "--trace", "small.jsonl", "--trace", "../elsewhere/far.jsonl",
                   "--out", "certs", "--json"], work, env, timings, "prove ceiling (two traces)")
    steps = json.loads(proved.stdout)["next"]  # what prove tells a newcomer to run next, run as printed below
    assert steps["verify"] == "pycert verify certs/*.json --input far.jsonl=../elsewhere/far.jsonl"
    assert steps["report"] == "pycert report --certs certs --input far.jsonl=../elsewhere/far.jsonl"
    cert = json.loads((work / "certs" / "ceiling-small.json").read_text())
    # what the directory keeps is named from the directory; a trace outside it by its file name
    assert [(i["path"], i["external"]) for i in cert["inputs"]] == [("small.jsonl", True),
                                                                    ("lean/derived/CeilingSmall.lean", False)]
    assert cert["provenance"] == {"pycert_version": __version__, "library_sha256": library_sha256(REPO / "lean")}
    assert json.loads((work / "certs" / "runs" / "last.json").read_text())["git_revision"] is None
    far = json.loads((work / "certs" / "ceiling-far.json").read_text())
    assert [(i["path"], i["external"]) for i in far["inputs"]] == [("far.jsonl", True),
                                                                   ("lean/derived/CeilingFar.lean", False)]

    certs = sorted(str(p.relative_to(work)) for p in (work / "certs").glob("*.json"))
    # an external trace is found by name beside the directory (small.jsonl), else it must be handed in
    missing = json.loads(_run(["pycert", "verify", "--json", *certs], work, env, timings, "verify (no --input)",
                              expect=2).stdout)
    assert missing["exit"] == 2 and "--input far.jsonl=PATH" in missing["error"]
    assert [r["status"] for r in missing["results"]] == ["missing-input", "ok"], missing  # only what was asked for
    out = json.loads(_run(["sh", "-c", steps["verify"] + " --json"], work, env, timings,
                          "verify (as prove printed it)").stdout)
    assert [r["status"] for r in out] == ["ok", "ok"] and all("library" in r["checked"] for r in out)
    out = json.loads(_run(["pycert", "verify", "--kernel", "--json", str(work / "certs" / "ceiling-small.json")],
                          Path("/"), env, timings, "verify --kernel (from /)").stdout)
    assert out[0]["status"] == "ok" and "kernel" in out[0]["checked"]
    _run(["pycert", "audit", "--json"], work, env, timings, "audit")
    _run(["sh", "-c", steps["report"] + " --json"], work, env, timings, "report (as prove printed it)")
    _run(["pycert", "mutate", "--expect-reject", "--only", "certificate", "--json"], work, env, timings,
         "mutate --only certificate")
    # the directory travels: copied elsewhere with the one trace it names beside it, it verifies there
    sent = tmp_path / "inbox"
    shutil.copytree(work / "certs", sent / "received")
    shutil.copy(work / "small.jsonl", sent / "small.jsonl")
    _run(["pycert", "verify", "received/ceiling-small.json"], sent, env, timings, "verify (sent elsewhere)")

    assert _files(work) == {"small.jsonl", "report.html", "certs/MANIFEST.sha256", "certs/ceiling-small.json",
                            "certs/ceiling-far.json", "certs/lean/derived/CeilingSmall.lean",
                            "certs/lean/derived/CeilingFar.lean", "certs/runs/last.json"}
    # nothing but Python's own bytecode (pip was told not to precompile) lands in site-packages
    assert {f for f in _files(site) - before if not f.endswith(".pyc")} == set()

    # verify checks the library it runs with: an edited installed library is a rejection naming both hashes
    edited = site / "pycert" / "_data" / "lean" / "Pycert" / "Ceiling.lean"
    edited.write_text(edited.read_text() + "\n-- edited after install\n")
    done = _run(["pycert", "verify", "--json", "certs/ceiling-small.json"], work, env, timings, "verify (edited library)",
                expect=1)
    failure = json.loads(done.stdout)[0]["failures"][0]
    assert failure["reason"] == "library-mismatch"
    assert (failure["expected"], failure["found"]) == (library_sha256(site / "pycert" / "_data" / "lean"),
                                                       cert["provenance"]["library_sha256"])
    print("install check, seconds per step:", json.dumps(timings))
