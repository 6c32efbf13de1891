"""Installed, not cloned: build the sdist and the wheel, install the wheel with its prove extra into a fresh
virtual environment outside the checkout, and from an empty directory prove a user's trace and one from
another directory, verify them (plain, as prove printed it, with the outside trace moved away: not checked,
exit 5, and with the kernel from another directory), audit, report and plant certificate defects. The Lean
build cache in the user's cache directory is shared with the rest of the suite, so the library is
not rebuilt; the user's trace is new every run, so its instance is kernel-checked for real."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml  # PyYAML: MkDocs' dependency, in the test extra

from pycert import __version__
from pycert.core.resources import library_sha256
from tests.conftest import REPO, SHARED_TRACES


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


def _build_and_install(tmp_path: Path, timings: dict[str, float]) -> tuple[Path, dict[str, str], Path]:
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
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-compile", f"{wheel}[prove]"], tmp_path,
         env, timings, "pip install wheel[prove]")
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    return venv, env, wheel


@dataclass(frozen=True)
class Installed:
    venv: Path
    env: dict[str, str]
    wheel: Path
    timings: dict[str, float]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The wheel built and installed once, for every test here."""
    timings: dict[str, float] = {}
    venv, env, wheel = _build_and_install(tmp_path_factory.mktemp("install"), timings)
    return Installed(venv, env, wheel, timings)


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_the_installed_wheel_proves_a_users_trace_from_an_empty_directory(tmp_path: Path, installed: Installed,
                                                                          wasm) -> None:
    venv, env, timings = installed.venv, installed.env, installed.timings
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
    assert steps["verify"] == "pycert verify certs/*.json"  # far.jsonl is found where prove read it
    assert steps["report"] == "pycert report --certs certs"
    cert = json.loads((work / "certs" / "ceiling-small.json").read_text())
    # what the directory keeps is named from the directory; a trace outside it by its file name and where it was
    assert [(i["path"], i["external"], i.get("origin")) for i in cert["inputs"]] == [
        ("small.jsonl", True, str(work / "small.jsonl")), ("lean/derived/CeilingSmall.lean", False, None)]
    assert cert["provenance"] == {"pycert_version": __version__, "library_sha256": library_sha256(REPO / "lean")}
    assert json.loads((work / "certs" / "runs" / "last.json").read_text())["git_revision"] is None
    far = json.loads((work / "certs" / "ceiling-far.json").read_text())
    assert [(i["path"], i["external"]) for i in far["inputs"]] == [("far.jsonl", True),
                                                                   ("lean/derived/CeilingFar.lean", False)]

    certs = sorted(str(p.relative_to(work)) for p in (work / "certs").glob("*.json"))
    out = json.loads(_run(["pycert", "verify", "--json", *certs], work, env, timings, "verify (as a newcomer types "
                          "it)").stdout)
    assert [r["status"] for r in out] == ["ok", "ok"] and all("library" in r["checked"] for r in out)
    out = json.loads(_run(["sh", "-c", steps["verify"] + " --json"], work, env, timings,
                          "verify (as prove printed it)").stdout)
    assert [r["status"] for r in out] == ["ok", "ok"]
    (tmp_path / "elsewhere" / "far.jsonl").rename(tmp_path / "elsewhere" / "moved.jsonl")
    moved = json.loads(_run(["pycert", "verify", "--json", *certs], work, env, timings, "verify (a trace moved)",
                            expect=5).stdout)
    assert moved["exit"] == 5 and "trace not here" in moved["error"] and "--input far.jsonl=PATH" in moved["error"]
    assert [r["status"] for r in moved["results"]] == ["not-here", "ok"], moved  # only what was asked for
    (tmp_path / "elsewhere" / "moved.jsonl").rename(tmp_path / "elsewhere" / "far.jsonl")
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
    original = edited.read_text()
    edited.write_text(original + "\n-- edited after install\n")
    edited_hash = library_sha256(site / "pycert" / "_data" / "lean")
    try:
        done = _run(["pycert", "verify", "--json", "certs/ceiling-small.json"], work, env, timings,
                    "verify (edited library)", expect=1)
    finally:
        edited.write_text(original)  # the other tests here use the same installation
    failure = json.loads(done.stdout)[0]["failures"][0]
    assert failure["reason"] == "library-mismatch"
    assert (failure["expected"], failure["found"]) == (edited_hash, cert["provenance"]["library_sha256"])
    print("install check, seconds per step:", json.dumps(timings))


# ---------------------------------------------------------------------------- the GitHub Action

ACTION = REPO / "action.yml"
INPUT_EXPR = re.compile(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}")


@dataclass(frozen=True)
class StepRun:
    name: str
    rc: int | None
    """None: the step did not run (an earlier one failed and its condition does not say to run anyway)."""
    stdout: str
    stderr: str


def run_action(inputs: dict[str, str], cwd: Path, env: dict[str, str]) -> list[StepRun]:
    """Every ``run:`` step of ``action.yml`` as a GitHub runner runs a composite action: the inputs (their
    defaults, then ``inputs``) put into each step's ``env``, ``bash -e -o pipefail``, ``GITHUB_ACTION_PATH``
    the action's checkout, ``GITHUB_OUTPUT`` a file; a step without ``if`` runs only while every earlier step
    succeeded. The ``uses:`` steps (the cache, the SARIF upload) cannot run here: each is checked for what it is
    handed."""
    action = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    values = {k: str(v.get("default", "")) for k, v in action["inputs"].items()} | inputs
    assert set(inputs) <= set(values), f"not an input of the action: {set(inputs) - set(values)}"
    assert action["runs"]["using"] == "composite"
    runs: list[StepRun] = []
    outputs = cwd / "github-output"
    outputs.write_text("")
    for step in action["runs"]["steps"]:
        condition = step.get("if", "")
        if step.get("uses", "").startswith("actions/cache@"):  # keyed by the step before, on what is installed
            assert step["with"]["key"] == "${{ steps.key.outputs.key }}" and "~/.cache/pip" in step["with"]["path"]
            assert re.fullmatch(r"key=pycert-\w+-3\.\d+-[0-9a-f]{16}\n", outputs.read_text()), outputs.read_text()
            continue
        if "uses" in step:
            assert step["uses"].startswith("github/codeql-action/upload-sarif@")
            assert step["with"]["sarif_file"] == "${{ inputs.sarif }}" and "!cancelled()" in condition
            continue
        assert step["shell"] == "bash" and "${{" not in step["run"], "an input pasted into a script"
        assert condition in ("", "${{ !cancelled() }}"), f"a condition this test does not know: {condition}"
        if condition == "" and any(r.rc not in (0, None) for r in runs):
            runs.append(StepRun(step["name"], None, "", ""))
            continue
        step_env = {k: INPUT_EXPR.sub(lambda m: values[m.group(1)], str(v)) for k, v in step.get("env", {}).items()}
        done = subprocess.run(["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", step["run"]], cwd=cwd,
                              env={**env, **step_env, "GITHUB_ACTION_PATH": str(REPO), "GITHUB_OUTPUT": str(outputs),
                                   "RUNNER_OS": "Linux"}, capture_output=True,
                              text=True, timeout=1800)
        runs.append(StepRun(step["name"], done.returncode, done.stdout, done.stderr))
    return runs


def _committed_certificates(into: Path) -> dict[str, str]:
    """A copy of the committed certificates; those whose external trace is not on this machine are left out
    (the others verify without it). The ``inputs`` lines that hand the present traces in."""
    shutil.copytree(REPO / "certificates", into, ignore=shutil.ignore_patterns("derived", "runs"))
    present = []
    for cert in into.glob("*.json"):
        external = [i["path"] for i in json.loads(cert.read_text())["inputs"] if i.get("external")]
        if any(not (SHARED_TRACES / name).is_file() for name in external):
            cert.unlink()
        present += external
    return {"inputs": "\n".join(f"{n}={SHARED_TRACES / n}" for n in sorted(set(present)))}


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_the_action_passes_good_certificates_and_fails_a_tampered_one(tmp_path: Path, installed: Installed,
                                                                      wasm) -> None:
    names = [s["name"] for s in yaml.safe_load(ACTION.read_text())["runs"]["steps"] if "run" in s]
    good = _committed_certificates(tmp_path / "certs")
    inputs = {"certificates": "certs", "install": f"{installed.wheel}[prove]", **good}
    runs = run_action(inputs, tmp_path, installed.env)
    assert [(r.name, r.rc) for r in runs] == [(n, 0) for n in names], [(r.name, r.rc, r.stderr[-800:]) for r in runs]
    sarif = json.loads((tmp_path / "pycert-audit.sarif").read_text())
    assert sarif["version"] == "2.1.0" and sarif["runs"][0]["results"] == []

    # one figure edited in a copy: verify rejects it (exit 1); the audit still runs and writes its log; the job fails
    shutil.copytree(tmp_path / "certs", tmp_path / "tampered")
    victim = tmp_path / "tampered" / "isolation-t8-n1024.json"
    victim.write_text(victim.read_text().replace('"numerator": 8192', '"numerator": 8193', 1))
    (tmp_path / "pycert-audit.sarif").unlink()
    runs = run_action({**inputs, "certificates": "tampered", "install": f"{installed.wheel}[prove]"}, tmp_path, installed.env)
    assert [r.rc for r in runs] == [0, 0, 1, 0], [(r.name, r.rc, r.stderr[-800:]) for r in runs]
    assert re.search(r"^REJECTED\s+tampered/isolation-t8-n1024.json", runs[2].stdout, re.M), runs[2].stdout
    assert (tmp_path / "pycert-audit.sarif").is_file()

    # --kernel on request; a kernel input that is neither true nor false, or an empty directory, is a usage error
    (tmp_path / "one").mkdir()
    shutil.copy(REPO / "certificates" / "isolation-t8-n1024.json", tmp_path / "one")
    shutil.copy(REPO / "certificates" / "MANIFEST.sha256", tmp_path / "one")
    runs = run_action({"certificates": "one", "kernel": "true", "install": f"{installed.wheel}[prove]"}, tmp_path,
                      installed.env)
    assert [r.rc for r in runs] == [0, 0, 0, 0], [(r.name, r.rc, r.stderr[-800:]) for r in runs]
    for bad, why in (({"certificates": "one", "kernel": "yes"}, 'input kernel: "yes" is neither true nor false'),
                     ({"certificates": "nowhere"}, "input certificates: nowhere holds no certificate")):
        runs = run_action({**bad, "install": f"{installed.wheel}[prove]"}, tmp_path, installed.env)
        assert runs[2].rc == 2 and why in runs[2].stderr and runs[2].stderr.count("\n") == 1
