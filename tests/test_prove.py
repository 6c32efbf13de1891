"""``pycert prove`` as a list of stages, and the families behind it: each family is one module, and what
it proves now is what the committed certificates say (provenance and the audit's own summary aside)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pycert.certify.verify import verify_certificate
from pycert.data.traces import read_trace
from pycert.families import FAMILIES
from pycert.families.base import Family
from pycert.lean.emit import packed_trace, pooling_wall
from pycert.lean.sources import declared_theorems, library_modules, parse_imports
from pycert.prove import prove, stages
from solvers.instance import COMMITTED
from solvers.instance_io import load_instance
from tests.conftest import REPO


def test_every_family_is_one_module_with_its_lean_file_and_its_theorems() -> None:
    assert set(FAMILIES) == {"ceiling", "first-touch", "isolation", "pooling"}
    modules = library_modules(REPO / "lean")
    for family in FAMILIES.values():
        assert isinstance(family, Family)
        assert type(family).__module__ == f"pycert.families.{family.name.replace('-', '_')}"
        assert family.lean_module in modules, family.name
        declared = {n for path in modules.values() for n in declared_theorems(path.read_text(encoding="utf-8"))}
        assert set(family.theorems) <= declared, family.name
        assert family.certificate_model.model_fields["family"].annotation.__args__ == (family.name,)


def test_the_root_imports_every_library_file() -> None:
    """`lean/Pycert.lean` is what `import Pycert` and Lake's default target mean: it must not go stale."""
    root = REPO / "lean" / "Pycert.lean"
    modules = set(library_modules(REPO / "lean")) - {"Pycert"}
    assert set(parse_imports(root.read_text(encoding="utf-8"))) == modules


def test_emitted_instance_files_are_the_committed_ones() -> None:
    """Their sha256 is in the certificates: emitting them again must give the same bytes."""
    lean = REPO / "certificates" / "lean"
    assert pooling_wall.emit(load_instance(COMMITTED)).encode() == (lean / "PoolingWall.lean").read_bytes()
    trace = read_trace(REPO / "certificates" / "inputs" / "synthetic-seed0.jsonl")
    emitted = packed_trace.emit_instance(trace.refs, trace.sha256, "CeilingSyntheticSeed0").encode()
    assert emitted == (lean / "CeilingSyntheticSeed0.lean").read_bytes()


def test_the_stages_in_order() -> None:
    names = [name for name, _ in stages(list(FAMILIES.values()))]
    assert names == ["lean library", "instances: ceiling", "instances: first-touch", "instances: isolation",
                     "instances: pooling", "kernel check", "axiom audit", "statements", "certificates"]


def _comparable(text: str) -> dict:
    """A certificate without the one part that names this machine's toolchain build (Node's version)."""
    doc = json.loads(text)
    doc.pop("backend")
    return doc


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_prove_writes_what_the_committed_certificates_say(wasm, tmp_path: Path) -> None:
    out = tmp_path / "certificates"
    res = prove(["isolation", "first-touch"], [], backend="wasm", out_dir=out)
    assert res.ok, res.stages
    assert [(s.name, s.status) for s in res.stages] == [
        ("lean library", "ok"), ("instances: first-touch", "ok"), ("instances: isolation", "ok"),
        ("kernel check", "skipped"), ("axiom audit", "ok"), ("statements", "ok"), ("certificates", "ok")]
    written = sorted(Path(p).name for p in res.written)
    assert written == ["first-touch-c256-n4000.json", "isolation-t8-n1024.json"]
    for name in written:
        assert _comparable((out / name).read_text()) == _comparable((REPO / "certificates" / name).read_text())
        assert verify_certificate(out / name).ok
    first = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    assert prove(["isolation", "first-touch"], [], backend="wasm", out_dir=out).ok
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == first  # byte-identical, manifest too
    assert json.loads((out / "runs" / "last.json").read_text())["written"]
