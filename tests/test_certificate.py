"""The pycert-cert/1 schema, figures, provenance, atomic writes and the manifest."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from datetime import timedelta
from fractions import Fraction
from pathlib import Path

import pytest

from pycert.certify import provenance
from pycert.certify.documents import (
    SCHEMA_PATH,
    load_certificate,
    parse_certificate,
    schema_text,
)
from pycert.certify.manifest import (
    MANIFEST_NAME,
    parse_manifest,
    read_manifest,
    write_certificates,
)
from pycert.core import files
from pycert.core.errors import InputError, Rejected
from pycert.core.files import atomic_write, file_sha256
from pycert.core.schema import Certificate, Figure
from pycert.families import FAMILIES
from tests.certs import make_cert


def certs(n: int, tag: str = "a") -> list[Certificate]:
    return [make_cert(f"ft-{tag}{i}", "first-touch", {"c": 1, "n": i + 1}) for i in range(n)]


# ---------------------------------------------------------------------------- schema


def test_committed_schema_equals_the_export() -> None:
    assert SCHEMA_PATH.read_text() == schema_text(), "re-export with: python -m pycert.certify.documents"


def test_schema_names_its_id_and_one_shape_per_family() -> None:
    schema = json.loads(schema_text())
    assert schema["$id"] == "pycert-cert/1"
    assert schema["discriminator"]["propertyName"] == "family"
    assert set(schema["discriminator"]["mapping"]) == set(FAMILIES) == {"isolation", "ceiling", "capacity", "pooling", "first-touch",
                                                                           "first-touch-ramp", "first-touch-trace",
                                                                           "leak", "leak-audit", "engine",
                                                                           "isolation-cost", "fleet"}
    for name, ref in schema["discriminator"]["mapping"].items():
        shape = schema["$defs"][ref.rsplit("/", 1)[-1]]
        assert set(shape["required"]) >= {"id", "family", "claim", "theorems", "parameters", "figures", "backend",
                                          "audit", "does_not_prove"}
        assert shape["additionalProperties"] is False
        assert shape["properties"]["family"]["const"] == name
        params = schema["$defs"][shape["properties"]["parameters"]["$ref"].rsplit("/", 1)[-1]]
        assert params["additionalProperties"] is False and params["required"]


def test_parameters_are_typed_by_family() -> None:
    [c] = certs(1)
    data = json.loads(c.to_json())
    for params, subject in (({"c": 1}, "parameters.n"), ({"c": 1, "n": "1"}, "parameters.n"),
                            ({"c": 0, "n": 1}, "parameters.c"), ({"c": 1, "n": 1, "T": 8}, "parameters.T"),
                            ({"c": True, "n": 1}, "parameters.c")):
        with pytest.raises(Rejected) as err:
            parse_certificate(json.dumps({**data, "parameters": params}))
        assert err.value.rejection.subject == subject, (params, err.value.rejection)
    with pytest.raises(Rejected) as err:  # the isolation shape does not fit a first-touch certificate
        parse_certificate(json.dumps({**data, "family": "isolation"}))
    assert err.value.rejection.subject == "parameters.T"
    with pytest.raises(Rejected) as err:
        parse_certificate(json.dumps({**data, "family": "latency"}))
    assert err.value.rejection.subject == "family" and err.value.rejection.found == '"latency"'


def test_certificate_round_trips_through_json() -> None:
    [c] = certs(1)
    text = c.to_json()
    assert json.loads(text)["schema"] == "pycert-cert/1"
    assert parse_certificate(text) == c
    assert parse_certificate(text).to_json() == text  # byte-stable: the manifest hash is reproducible


# ---------------------------------------------------------------------------- figures


def test_figure_of_a_fraction() -> None:
    f = Figure.of(Fraction(10571, 28850), name="ceiling")
    assert (f.numerator, f.denominator, f.decimal) == (10571, 28850, "0.36641247833622183709")
    assert f.value == Fraction(10571, 28850)
    assert Figure.of(12031, name="n").render() == "12031"
    assert Figure.of(Fraction(2, 4), name="x").render() == "1/2 (0.5)"
    assert Figure.of(2**4096, name="big").decimal == "1.0443888814131525067E+1233"
    assert list(json.loads(Figure.of(1, name="n").model_dump_json())) == [
        "name", "numerator", "denominator", "decimal", "unit", "known_by", "evidence"]  # the published field order


def test_figure_rejects_unreduced_and_oversized() -> None:
    with pytest.raises(ValueError, match="figure x is not in lowest terms"):
        Figure(name="x", numerator=2, denominator=4, decimal="0.5")
    with pytest.raises(ValueError, match="exceeds"):
        Figure.of(2**20000, name="huge")
    with pytest.raises(ValueError):
        Figure(name="x", numerator=1, denominator=0, decimal="inf")


def test_run_record_is_utc_and_outside_the_certificates(tmp_path: Path) -> None:
    p = provenance.collect(run_id="r1")
    assert p.generated_utc.utcoffset() == timedelta(0) and p.run_id == "r1"
    assert re.fullmatch(r"(ci|local)/[a-z0-9_]+-[a-z0-9_]+", p.host_kind)
    path = provenance.write_run_record(p, tmp_path)
    assert path == tmp_path / "runs" / "last.json" and json.loads(path.read_text())["run_id"] == "r1"


def test_certificates_hold_nothing_that_changes_from_run_to_run() -> None:
    """No time, run id, host or revision: the same inputs and code give the same bytes."""
    [c] = certs(1)
    text = c.to_json()
    for word in ("utc", "run_id", "host", "git_revision", "git_dirty"):
        assert word not in text, word


def test_provenance_outside_git(tmp_path: Path) -> None:
    assert provenance.git_revision(tmp_path) is None
    assert provenance.git_dirty(tmp_path) is True  # unknown state is never reported clean


def test_provenance_reads_git(tmp_path: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("add", "code.py")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    rev = provenance.git_revision(tmp_path)
    assert rev and re.fullmatch(r"[0-9a-f]{40}", rev)
    (tmp_path / "certificates").mkdir()
    (tmp_path / "certificates" / "new.json").write_text("{}")
    assert provenance.git_dirty(tmp_path) is False  # writing certificates does not dirty the code
    (tmp_path / "code.py").write_text("x = 2\n")
    assert provenance.git_dirty(tmp_path) is True


# ---------------------------------------------------------------------------- loading


def test_load_reports_the_field(tmp_path: Path) -> None:
    [c] = certs(1)
    data = json.loads(c.to_json())
    data["backend"]["kind"] = "not-a-kind"
    path = tmp_path / "c.json"
    path.write_text(json.dumps(data))
    with pytest.raises(Rejected) as err:
        load_certificate(path)
    assert err.value.rejection.subject == "backend.kind" and err.value.rejection.found == '"not-a-kind"'
    assert err.value.exit_code == 1
    with pytest.raises(InputError):
        load_certificate(tmp_path / "absent.json")


# ---------------------------------------------------------------------------- writes and manifest


def test_write_then_sha256sum_agrees(tmp_path: Path) -> None:
    write_certificates(certs(3), tmp_path)
    out = subprocess.run(["sha256sum", "--check", "--strict", MANIFEST_NAME], cwd=tmp_path,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [MANIFEST_NAME, "ft-a0.json", "ft-a1.json", "ft-a2.json"]
    assert load_certificate(tmp_path / "ft-a1.json") == certs(3)[1]


def test_later_batches_keep_earlier_entries_and_foreign_files(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine\n")
    write_certificates(certs(2, "a"), tmp_path)
    before = read_manifest(tmp_path / MANIFEST_NAME)
    write_certificates(certs(1, "b"), tmp_path)
    after = read_manifest(tmp_path / MANIFEST_NAME)
    assert after == {**before, "ft-b0.json": file_sha256(tmp_path / "ft-b0.json")}
    assert (tmp_path / "notes.txt").read_text() == "mine\n"


def test_hand_edited_file_stays_detectable_after_another_write(tmp_path: Path) -> None:
    write_certificates(certs(2), tmp_path)
    recorded = read_manifest(tmp_path / MANIFEST_NAME)["ft-a0.json"]
    with (tmp_path / "ft-a0.json").open("a") as f:
        f.write(" ")
    write_certificates(certs(1, "b"), tmp_path)
    assert read_manifest(tmp_path / MANIFEST_NAME)["ft-a0.json"] == recorded != file_sha256(tmp_path / "ft-a0.json")


def test_duplicate_ids_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="duplicate"):
        write_certificates(certs(1) + certs(1), tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_crash_while_staging_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_certificates(certs(2), tmp_path)
    snapshot = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    real_stage, calls = files._stage, []

    def failing_stage(directory: Path, name: str, data: bytes) -> Path:
        calls.append(name)
        if len(calls) == 3:  # two certificates staged, then the disk "fills up"
            raise OSError(28, "No space left on device")
        return real_stage(directory, name, data)

    monkeypatch.setattr(files, "_stage", failing_stage)
    newer = [make_cert(f"ft-a{i}", "first-touch", {"c": 2, "n": 7}) for i in range(3)]
    with pytest.raises(OSError):
        write_certificates(newer, tmp_path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == snapshot  # no temporaries left either


def test_ctrl_c_during_commit_is_held_until_the_manifest_is_in_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                      sigint_raises: None) -> None:
    real_replace, done = os.replace, []

    def replace_then_interrupt(src, dst) -> None:
        if not done:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C right after the first rename began
        real_replace(src, dst)
        done.append(Path(dst).name)

    monkeypatch.setattr(files.os, "replace", replace_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        write_certificates(certs(3), tmp_path)
    assert done == ["ft-a0.json", "ft-a1.json", "ft-a2.json", MANIFEST_NAME]
    manifest = read_manifest(tmp_path / MANIFEST_NAME)
    assert manifest == {p.name: file_sha256(p) for p in tmp_path.glob("*.json")}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_manifest_parser_refuses_malformed_lines() -> None:
    good = "a" * 64
    assert parse_manifest(f"{good}  x.json\n{good} *y.json\n") == {"x.json": good, "y.json": good}
    for bad in (f"{good[:-1]}  x.json", f"{good}  x.json\n{good}  x.json", "nonsense"):
        with pytest.raises(Rejected):
            parse_manifest(bad)


def test_unwritable_path_is_an_input_error_naming_it(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(InputError, match=r"a-file/out\.json: cannot write"):
        atomic_write(blocker / "out.json", b"{}")
    assert blocker.read_text() == "x" and not list(tmp_path.glob(".*.tmp"))
