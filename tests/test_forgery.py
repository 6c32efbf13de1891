"""The forgeries of issue 14, each on a copy of the committed certificates with the manifest line
re-forged: verify must reject every one (exit 1) naming the field, from any working directory."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pycert.certify.manifest import MANIFEST_NAME, render_manifest
from pycert.certify.verify import verify_certificate
from pycert.cli import main
from pycert.mutation.operators.forgery import set_theorems, sorry_in_audit
from tests.conftest import REPO as REPO_ROOT

CEILING = "ceiling-synthetic-seed0.json"


def copy_repo(dest: Path) -> Path:
    """The committed certificates and the one committed trace, as a stranger would receive them."""
    shutil.copytree(REPO_ROOT / "certificates", dest / "certificates",
                    ignore=shutil.ignore_patterns("derived", "runs"))
    return dest


def forge(root: Path, name: str, edit: Callable[[dict], None]) -> Path:
    path = root / "certificates" / name
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data, indent=2) + "\n")
    manifest = root / "certificates" / MANIFEST_NAME
    entries = dict(reversed(line.split("  ", 1)) for line in manifest.read_text().splitlines())
    entries[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    manifest.write_text(render_manifest(entries))
    return path


def issue_forgery(d: dict) -> None:
    d["claim"] = d["claim"].replace("0.746020", "0.990000")
    d["theorems"] = ["Pycert.Ceiling.mem_bound"]
    d["audit"]["axioms"] = ["sorryAx"]


def test_the_issue_forgery_is_rejected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = copy_repo(tmp_path / "copy")
    path = forge(root, CEILING, issue_forgery)
    monkeypatch.chdir(tmp_path)
    res = verify_certificate(path, root=root / "certificates")
    assert res.status == "rejected", res
    fields = {f.subject.split("[")[0].split(".")[0] for f in res.failures}
    assert {"claim", "theorems", "audit"} <= fields, res.failures


def _drop_limit(d: dict) -> None:
    d["does_not_prove"].pop()


def _ceiling(d: dict) -> dict:
    return next(f for f in d["figures"] if f["name"] == "ceiling")


def _known_by(d: dict) -> None:
    _ceiling(d)["known_by"] = "Lean kernel: everything"


def _upgrade(d: dict) -> None:
    _ceiling(d)["evidence"] = "kernel-checked"


def _pooling_upgrade(d: dict) -> None:
    next(f for f in d["figures"] if f["name"] == "per_instance_misses")["evidence"] = "solver-certified"


def _solver_downgraded(d: dict) -> None:
    d["solver"]["status"] = "FEASIBLE"


@pytest.mark.parametrize("name, edit, field", [
    (CEILING, lambda d: d.update(claim=d["claim"].replace("0.746020", "0.990000")), "claim"),
    (CEILING, set_theorems(["Pycert.Ceiling.hits_add_distinct_le"]), "theorems"),
    (CEILING, set_theorems(["Pycert.Ceiling.mem_bound"]), "theorems[0]"),
    (CEILING, _drop_limit, "does_not_prove"),
    (CEILING, sorry_in_audit, "audit.axioms_by_theorem[Pycert.Ceiling.hits_add_distinct_le]"),
    (CEILING, lambda d: d["audit"].update(axioms=["sorryAx"]), "audit.axioms"),
    (CEILING, _known_by, "figures.ceiling.known_by"),
    (CEILING, _upgrade, "figures.ceiling.evidence"),
    ("pooling-committed.json", _pooling_upgrade, "figures.per_instance_misses.evidence"),
    ("pooling-committed.json", _solver_downgraded, "figures.pooled_misses.evidence"),
    ("isolation-t8-n1024.json", lambda d: d.update(claim=d["claim"].replace("8192 bits", "9000 bits")), "claim"),
    ("isolation-t8-n1024.json", lambda d: d["statements"]["Pycert.Isolation.floor"].update(
        signature=d["statements"]["Pycert.Isolation.floor"]["signature"].replace("2 ^ (T * n) ≤ s", "0 ≤ s")),
     "statements[Pycert.Isolation.floor].signature"),
], ids=["claim", "theorem-list", "private-theorem", "limit-removed", "sorry", "axioms", "known-by", "upgraded",
        "pooling-upgraded", "solver-not-optimal", "isolation-claim",
        "weakened-signature"])
def test_each_forgery_is_rejected_by_field(tmp_path: Path, name: str, edit: Callable[[dict], None], field: str) -> None:
    root = copy_repo(tmp_path)
    res = verify_certificate(forge(root, name, edit))
    assert res.status == "rejected" and field in [f.subject for f in res.failures], res.failures


def test_genuine_certificate_verifies_from_another_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from pycert.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["verify", str(REPO_ROOT / "certificates" / CEILING)]) == 0
    assert "ok " in capsys.readouterr().out


def test_missing_input_does_not_hide_a_tamper(tmp_path: Path) -> None:
    """A tampered figure is reported, and the result is rejected (exit 1), even with the trace gone."""
    from pycert.cli import main

    root = copy_repo(tmp_path)
    path = forge(root, CEILING, lambda d: d["figures"][0].update(numerator=5340, decimal="5340"))
    (root / "certificates" / "inputs" / "synthetic-seed0.jsonl").unlink()
    res = verify_certificate(path)
    assert res.status == "rejected" and res.missing, res
    assert "claim" in [f.subject for f in res.failures]
    assert main(["verify", str(path)]) == 1


def test_prove_refuses_two_traces_with_one_file_name(tmp_path: Path) -> None:
    from pycert.core.errors import InputError
    from pycert.families import producer
    from pycert.families.ceiling.produce import CeilingOptions
    from pycert.prove import prove

    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "t.jsonl").write_text("1\n")
    with pytest.raises(InputError, match="a/t.jsonl would both make ceiling-t:") as err:
        prove([(producer("ceiling"), CeilingOptions(trace=[tmp_path / "a" / "t.jsonl", tmp_path / "b" / "t.jsonl"]))],
              out_dir=tmp_path / "certs")
    assert err.value.where == str(tmp_path / "b" / "t.jsonl")
    assert not (tmp_path / "certs").exists()


@pytest.mark.parametrize("edit", [
    lambda d: d.update(inputs=[]),
    lambda d: d["inputs"].pop(0),
    lambda d: d["inputs"].insert(0, dict(d["inputs"][0])),
], ids=["no-inputs", "no-trace", "two-traces"])
def test_an_input_list_without_one_trace_is_rejected_not_a_crash(tmp_path: Path, edit: Callable[[dict], None],
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A stranger's session: verify (and the report) crashed on a certificate naming no trace or two."""
    root = copy_repo(tmp_path / "copy")
    path = forge(root, CEILING, edit)
    assert main(["verify", "--json", str(path)]) == 1
    [res] = json.loads(capsys.readouterr().out)
    assert any(f["subject"] == "inputs[role=trace]" for f in res["failures"]), res


@pytest.mark.parametrize("shards", [0, 1 << 17, 10**30])
def test_an_absurd_shard_count_is_rejected_before_any_arithmetic(tmp_path: Path, shards: int) -> None:
    root = copy_repo(tmp_path / "copy")
    path = forge(root, CEILING, lambda d: d["parameters"].update(shards=shards))
    res = verify_certificate(path, root=root / "certificates")
    assert res.status == "rejected" and res.failures[0].subject == "parameters.shards", res.failures


def test_more_shards_than_a_trace_of_its_length_is_checked_in_are_refused(tmp_path: Path) -> None:
    """17 shards of the 5,339-reference default: each shard is a Lean process under verify --kernel, and
    ``most_parts`` allows 16 for a trace this short."""
    from pycert.lean.emit import shards as sh

    root = copy_repo(tmp_path / "copy")
    path = forge(root, CEILING, lambda d: d["parameters"].update(shards=17, lean_encoding=sh.ENCODING))
    res = verify_certificate(path, root=root / "certificates")
    assert res.status == "rejected", res
    assert any(f.subject == "parameters.shards" and "at most 16" in f.detail for f in res.failures), res.failures


@pytest.mark.parametrize("value", ["5339", 5339.0, True])
def test_a_figure_must_be_a_json_integer(tmp_path: Path, value: object) -> None:
    root = copy_repo(tmp_path / "copy")
    path = forge(root, CEILING, lambda d: next(f for f in d["figures"] if f["name"] == "refs").update(numerator=value))
    res = verify_certificate(path, root=root / "certificates")
    assert res.status == "rejected" and "must be a JSON integer" in res.failures[0].detail, res.failures


def test_a_manifest_that_vouches_for_bytes_that_are_no_certificate_means_tampering(tmp_path: Path) -> None:
    root = copy_repo(tmp_path / "copy")
    path = root / "certificates" / CEILING
    path.write_text('{"schema": "pycert-cert/1", "id": ')
    manifest = root / "certificates" / MANIFEST_NAME
    entries = dict(reversed(line.split("  ", 1)) for line in manifest.read_text().splitlines())
    manifest.write_text(render_manifest({**entries, CEILING: hashlib.sha256(path.read_bytes()).hexdigest()}))
    assert verify_certificate(path, root=root / "certificates").status == "rejected"


def test_a_certificate_under_another_id_is_rejected(tmp_path: Path) -> None:
    """A stranger's session: an id edited (or one certificate copied over another's file) verified ok, and
    the report then showed two certificates under one id."""
    root = copy_repo(tmp_path / "copy")
    path = forge(root, CEILING, lambda d: d.update(id="ceiling-other"))
    res = verify_certificate(path, root=root / "certificates")
    assert res.status == "rejected" and [f.subject for f in res.failures] == ["id"], res.failures
