"""Offline verification: good certificates pass, each kind of tampering is rejected for its reason."""

from __future__ import annotations

import hashlib
import json
import shutil
from fractions import Fraction
from pathlib import Path

import pytest

from pycert.certify.assemble import assemble
from pycert.certify.manifest import MANIFEST_NAME, render_manifest, write_certificates
from pycert.certify.provenance import certificate_provenance
from pycert.certify.verify import own_library, verify_certificate
from pycert.cli import main
from pycert.core.files import file_sha256 as sha256_file
from pycert.core.resources import library_sha256
from pycert.core.schema import (
    AuditInfo,
    BackendInfo,
    Certificate,
    Figure,
    InputFile,
    TheoremStatement,
)
from pycert.data.traces import read_trace, trace_from_bytes
from pycert.families import FAMILIES
from pycert.families.base import Prepared
from pycert.families.ceiling import ceiling_figures
from pycert.families.first_touch import first_touch_figures
from pycert.families.isolation import isolation_figures
from pycert.lean.emit import packed_trace as lean_trace
from pycert.lean.sources import library_signatures, scan_declarations
from tests.conftest import SHARED_TRACES as TRACES
from tests.conftest import nonce

SIGNATURES = library_signatures(own_library())


def fixture_statements(theorems: tuple[str, ...] | list[str]) -> dict[str, TheoremStatement]:
    """The library's real signatures (what plain verify checks); a printed statement and type digest
    that only ``--kernel`` can find wrong."""
    return {t: TheoremStatement(signature=SIGNATURES[t], statement=f"{t} : (fixture)", type_sha256="0" * 64)
            for t in theorems}


def make_cert(cert_id: str, family: str, figures: dict[str, Fraction], parameters: dict | None = None,
              inputs: list[InputFile] | None = None, library: str | None = None) -> Certificate:
    """A certificate as ``pycert prove`` writes one (:func:`pycert.certify.assemble.assemble`), with a
    fixture audit record and fixture statements."""
    claim = FAMILIES[family]
    p = Prepared(claim=claim, id=cert_id, parameters=claim.params.model_validate(parameters or {}),
                 figures=figures, headline="", inputs=inputs or [])
    theorems = p.derived().theorems
    return assemble(
        p, BackendInfo(kind="wasm", lean_version="4.28.0-pre", lean_commit="38f3c0c45b8df6da2652faff6dcaa15afb5a6981",
                       node_version="v24.0.0"),
        AuditInfo(verdict="pass", axioms=["propext"], axioms_by_theorem={t: ["propext"] for t in theorems}),
        fixture_statements(theorems),
        certificate_provenance().model_copy(update={"library_sha256": library} if library else {}))


def build_repo(root: Path) -> Path:
    """A miniature certificate folder: two certificates and their manifest (the library is pycert's own)."""
    certs = [
        make_cert("isolation-demo", "isolation", isolation_figures(3, 4), {"T": 3, "n": 4}),
        make_cert("first-touch-demo", "first-touch", first_touch_figures(16, 100), {"c": 16, "n": 100}),
    ]
    write_certificates(certs, root / "certificates")
    return root / "certificates"


def tampered_copy(src: Path, dest: Path, name: str, edit, forge_manifest: bool) -> Path:
    """Copy the certificate directory, edit one certificate's JSON, optionally re-forge the manifest."""
    shutil.copytree(src, dest)
    path = dest / name
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data, indent=2) + "\n")
    if forge_manifest:
        entries = {p.name: sha256_file(p) for p in dest.glob("*.json")}
        (dest / MANIFEST_NAME).write_text(render_manifest(entries))
    return path


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    build_repo(tmp_path)
    return tmp_path


def fields(result) -> list[str]:
    return [f.subject for f in result.failures]


# ---------------------------------------------------------------------------- the math


def test_figure_math_by_hand() -> None:
    assert first_touch_figures(16, 100) == {"cut": Fraction(96, 100)}
    assert first_touch_figures(7, 7) == {"cut": Fraction(1)}
    assert first_touch_figures(10, 9) == {"cut": Fraction(0)}
    assert isolation_figures(3, 4) == {"states_floor": 4096, "bits_floor": 12, "single_owner_states": 81,
                                       "single_owner_bits": 7}  # log2 81 = 6.34
    assert isolation_figures(4, 5)["single_owner_bits"] == 10  # power of two: exactly n*log2 T
    assert isolation_figures(1, 9)["single_owner_bits"] == 0
    tiny = trace_from_bytes(b"5\n6\n5\n7\n5\n", "tiny")
    assert ceiling_figures(tiny) == {"refs": 5, "distinct": 3, "ceiling": Fraction(2, 5)}


def test_scanner_qualifies_names_by_namespace() -> None:
    src = """module
public import Init.Prelude
namespace A.B
public theorem t1 : True := trivial
section S
@[simp] theorem t2 : True := trivial
end S
namespace C
/- theorem in_comment : True := trivial /- nested -/ still comment -/
theorem t3 : "theorem in_string" = "theorem in_string" := rfl
end C
theorem _root_.top : True := trivial
end A.B
theorem after : True := trivial
open Nat in theorem opened : True := trivial
"""
    names = [d.name for d in scan_declarations(src)]
    assert names == ["A.B.t1", "A.B.t2", "A.B.C.t3", "top", "after", "opened"]


# ---------------------------------------------------------------------------- good certificates


def test_good_certificates_verify(repo: Path, capsys) -> None:
    certs = sorted((repo / "certificates").glob("*.json"))
    assert len(certs) == 2
    for c in certs:
        r = verify_certificate(c, root=repo)
        assert r.status == "ok", r.failures
        assert r.checked == ["manifest", "schema", "inputs", "figures", "derived text", "library", "theorems",
                             "audit record"]
        assert any("not re-run" in n for n in r.notes)
    assert main(["verify", *map(str, certs)]) == 0
    out = capsys.readouterr().out
    assert out.count("ok ") == 2 and "kernel and axiom audit: not re-run" in out
    assert "checked: " in out and ", audit)" not in out and "kernel," not in out


# ---------------------------------------------------------------------------- tampering


def test_every_flipped_byte_is_rejected(repo: Path) -> None:
    good = repo / "certificates" / "first-touch-demo.json"
    original = good.read_bytes()
    manifest_hash = hashlib.sha256(original).hexdigest()
    try:
        for i in range(0, len(original), 7):  # a spread of positions: keys, values, hashes, whitespace
            flipped = bytearray(original)
            flipped[i] ^= 0x01
            good.write_bytes(bytes(flipped))
            r = verify_certificate(good, root=repo)
            assert r.status == "rejected", i
            assert r.failures[0].subject == "manifest[first-touch-demo.json].sha256"
            assert r.failures[0].expected == manifest_hash
            assert r.failures[0].found == hashlib.sha256(flipped).hexdigest()
    finally:
        good.write_bytes(original)


@pytest.mark.parametrize("forge", [False, True], ids=["manifest-kept", "manifest-forged"])
def test_edited_figure_is_rejected(repo: Path, tmp_path: Path, forge: bool) -> None:
    def edit(d: dict) -> None:
        d["figures"][0].update(numerator=1, denominator=2, decimal="0.5")

    path = tampered_copy(repo / "certificates", tmp_path / "copy", "first-touch-demo.json", edit, forge)
    r = verify_certificate(path, root=repo)
    assert r.status == "rejected"
    assert "figures.cut" in fields(r)
    fig = next(f for f in r.failures if f.subject == "figures.cut")
    assert (fig.expected, fig.found) == ("24/25", "1/2")
    assert ("manifest[first-touch-demo.json].sha256" in fields(r)) is not forge


def test_edited_decimal_alone_is_rejected(repo: Path, tmp_path: Path) -> None:
    path = tampered_copy(repo / "certificates", tmp_path / "copy", "first-touch-demo.json",
                         lambda d: d["figures"][0].update(decimal="0.97"), forge_manifest=True)
    r = verify_certificate(path, root=repo)
    assert [(f.subject, f.expected, f.found) for f in r.failures] == [("figures.cut.decimal", "0.96", "0.97")]


def test_edited_parameter_is_rejected(repo: Path, tmp_path: Path) -> None:
    path = tampered_copy(repo / "certificates", tmp_path / "copy", "isolation-demo.json",
                         lambda d: d["parameters"].update(T=2), forge_manifest=True)
    r = verify_certificate(path, root=repo)
    assert set(fields(r)) == {"figures.states_floor", "figures.bits_floor", "figures.single_owner_states",
                              "figures.single_owner_bits", "claim"}
    assert next(f for f in r.failures if f.subject == "figures.bits_floor").expected == "8"


def test_renamed_theorem_is_rejected(repo: Path, tmp_path: Path) -> None:
    def rename(d: dict) -> None:
        d["theorems"][0] = "Pycert.Isolation.flor"
        d["audit"]["axioms_by_theorem"] = {t: ["propext"] for t in d["theorems"]}

    path = tampered_copy(repo / "certificates", tmp_path / "copy", "isolation-demo.json", rename, forge_manifest=True)
    r = verify_certificate(path, root=repo)
    assert fields(r) == ["theorems", "theorems[0]", "statements"]
    assert r.failures[1].found == "Pycert.Isolation.flor (no such declaration)"


def test_library_hash_is_the_documented_one(tmp_path: Path) -> None:
    """sha256 over the sorted lines `<sha256 of the file>  <path>`, as `sha256sum` prints them."""
    lib = tmp_path / "lean"
    (lib / "Pycert").mkdir(parents=True)
    (lib / "Pycert" / "B.lean").write_text("theorem b : True := trivial\n")
    (lib / "A.lean").write_text("prelude\n")
    lines = "".join(f"{hashlib.sha256((lib / p).read_bytes()).hexdigest()}  {p}\n" for p in ["A.lean", "Pycert/B.lean"])
    assert library_sha256(lib) == hashlib.sha256(lines.encode()).hexdigest()
    (lib / "Pycert" / "B.lean").write_text("theorem b : True := trivial\n-- a comment is an edit\n")
    assert library_sha256(lib) != hashlib.sha256(lines.encode()).hexdigest()


def test_a_certificate_made_with_another_library_is_rejected(repo: Path) -> None:
    """verify runs with one library and the certificate names another: a rejection naming both hashes."""
    other = "ab" * 32
    write_certificates([make_cert("isolation-demo", "isolation", isolation_figures(3, 4), {"T": 3, "n": 4},
                                  library=other)], repo / "certificates")
    r = verify_certificate(repo / "certificates" / "isolation-demo.json", root=repo)
    assert r.status == "rejected" and len(r.failures) == 1, r.failures
    f = r.failures[0]
    assert f.subject.startswith("provenance.library_sha256") and f.reason == "library-mismatch"
    assert (f.expected, f.found) == (library_sha256(own_library()), other)
    assert main(["verify", "--root", str(repo), str(repo / "certificates" / "isolation-demo.json")]) == 1


@pytest.mark.parametrize("name, found", [("Pycert.Ceiling.ceiling", "def"), ("Pycert.Ceiling.mem_bound", "private theorem"),
                                         ("floor", "no such declaration")])
def test_theorem_must_be_a_public_theorem_by_full_name(repo: Path, tmp_path: Path, name: str, found: str) -> None:
    """A module file's declarations are private unless made public: ``mem_bound`` is one."""
    def edit(d: dict) -> None:
        d["theorems"][0] = name
        d["audit"]["axioms_by_theorem"] = {t: ["propext"] for t in d["theorems"]}

    path = tampered_copy(repo / "certificates", tmp_path / "copy", "isolation-demo.json", edit, forge_manifest=True)
    r = verify_certificate(path, root=repo)
    assert fields(r) == ["theorems", "theorems[0]", "statements"] and found in r.failures[1].found


def test_theorem_from_a_shipped_file_is_rejected(repo: Path, tmp_path: Path) -> None:
    """A Lean file beside the certificate declares nothing the verifier trusts."""
    (repo / "Shipped.lean").write_text("theorem Pycert.Isolation.floor_strong : True := trivial\n")
    def edit(d: dict) -> None:
        d["inputs"].append({"role": "lean", "path": "Shipped.lean", "sha256": sha256_file(repo / "Shipped.lean")})
        d["theorems"].append("Pycert.Isolation.floor_strong")
        d["audit"]["axioms_by_theorem"] = {t: ["propext"] for t in d["theorems"]}

    path = tampered_copy(repo / "certificates", tmp_path / "copy", "isolation-demo.json", edit, forge_manifest=True)
    r = verify_certificate(path, root=repo)
    assert fields(r) == ["theorems", "theorems[5]", "statements"] and "no such declaration" in r.failures[1].found


def test_swapped_input_hash_is_rejected(repo: Path, tmp_path: Path) -> None:
    """Any input's sha256 must match its file; the swap is caught before figures are recomputed."""
    (repo / "instance.json").write_text('{"tenants": 3}\n')
    cert = make_cert("iso-input", "isolation", isolation_figures(3, 4), {"T": 3, "n": 4},
                     inputs=[InputFile(role="instance", path="instance.json", sha256=sha256_file(repo / "instance.json"))])
    write_certificates([cert], repo / "certificates")
    assert verify_certificate(repo / "certificates" / "iso-input.json", root=repo).ok
    other = hashlib.sha256(b"something else").hexdigest()
    path = tampered_copy(repo / "certificates", tmp_path / "copy", "iso-input.json",
                         lambda d: d["inputs"][0].update(sha256=other), forge_manifest=True)
    r = verify_certificate(path, root=repo)
    assert [(f.subject, f.expected, f.found) for f in r.failures] == [
        ("inputs[0].sha256 (instance.json)", sha256_file(repo / "instance.json"), other)]
    assert "figures" not in r.checked


def test_schema_violations_name_the_field(repo: Path, tmp_path: Path) -> None:
    cases = [
        (lambda d: d.update(schema="pycert-cert/2"), "schema"),
        (lambda d: d.pop("does_not_prove"), "does_not_prove"),
        (lambda d: d["inputs"].append({"role": "trace", "path": "x", "sha256": "zz"}), "inputs[0].sha256"),
        (lambda d: d["figures"][0].update(numerator=2, denominator=4), "figures[0]"),
        (lambda d: d.update(surprise=1), "surprise"),
    ]
    for i, (edit, field) in enumerate(cases):
        path = tampered_copy(repo / "certificates", tmp_path / f"c{i}", "first-touch-demo.json", edit, True)
        r = verify_certificate(path, root=repo)
        assert r.status == "rejected" and fields(r) == [field], (field, r.failures)


def test_not_json_is_rejected(repo: Path) -> None:
    path = repo / "certificates" / "first-touch-demo.json"
    path.write_text("{ not json")
    r = verify_certificate(path, root=repo)
    assert fields(r) == ["manifest[first-touch-demo.json].sha256", "(json)"]


@pytest.mark.parametrize("text, why", [
    ('{"hello": "world"}', 'not a certificate: a JSON object without "schema": "pycert-cert/1" (its keys: "hello")'),
    ('{"schema": "pycert-cert/2"}', 'not a certificate: a JSON object without "schema": "pycert-cert/1" '
                                    '(its schema: "pycert-cert/2")'),
    ("{ not json", "not a certificate: invalid JSON (key must be a string at line 1 column 3)"),
])
@pytest.mark.parametrize("beside", ["no manifest", "a manifest without it"])
def test_a_file_that_is_no_certificate_is_bad_input_not_a_rejection(repo: Path, tmp_path: Path, capsys,
                                                                    text: str, why: str, beside: str) -> None:
    """README: malformed input exits 2. Nothing vouches for these bytes as a certificate (no manifest
    entry), so there is nothing to reject; the reason comes first, and alone."""
    where = tmp_path / "elsewhere" if beside == "no manifest" else repo / "certificates"
    where.mkdir(exist_ok=True)
    path = where / "other.json"
    path.write_text(text + "\n")
    r = verify_certificate(path, root=repo)
    assert (r.status, r.failures, r.errors, r.missing) == ("input-error", [], [why], [])
    assert main(["verify", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out.splitlines() == [f"BAD INPUT {path}", f"  {path}: {why}"] and err == f"pycert: {path}: {why}\n"


def test_certificate_missing_from_manifest_is_rejected(repo: Path) -> None:
    stray = repo / "certificates" / "stray.json"
    shutil.copy(repo / "certificates" / "first-touch-demo.json", stray)
    r = verify_certificate(stray, root=repo)
    assert fields(r) == ["manifest[stray.json]"]


def test_failed_audit_is_rejected(repo: Path, tmp_path: Path) -> None:
    path = tampered_copy(repo / "certificates", tmp_path / "a", "isolation-demo.json",
                         lambda d: d["audit"].update(verdict="fail"), True)
    assert fields(verify_certificate(path, root=repo)) == ["audit.verdict"]


def test_relabelled_family_is_rejected(repo: Path, tmp_path: Path) -> None:
    """The family names the shape of the parameters: another family's label does not fit them, and a
    family pycert does not know is refused by name."""
    path = tampered_copy(repo / "certificates", tmp_path / "b", "isolation-demo.json",
                         lambda d: d.update(family="first-touch"), True)
    assert fields(verify_certificate(path, root=repo)) == ["parameters.c"]
    path = tampered_copy(repo / "certificates", tmp_path / "c", "isolation-demo.json",
                         lambda d: d.update(family="latency"), True)
    r = verify_certificate(path, root=repo)
    assert [(f.subject, f.found) for f in r.failures] == [("family", '"latency"')]


def test_pooling_label_needs_the_instance(repo: Path, tmp_path: Path) -> None:
    path = tampered_copy(repo / "certificates", tmp_path / "b", "isolation-demo.json",
                         lambda d: d.update(family="pooling", parameters={"hosts": 3, "pool_capacity": 4}), True)
    assert "inputs[role=instance]" in fields(verify_certificate(path, root=repo))


def test_extra_figure_is_rejected(repo: Path, tmp_path: Path) -> None:
    extra = Figure.of(Fraction(1, 3), name="bonus").model_dump()
    path = tampered_copy(repo / "certificates", tmp_path / "copy", "first-touch-demo.json",
                         lambda d: d["figures"].append(extra), True)
    r = verify_certificate(path, root=repo)
    assert fields(r) == ["figures.bonus"] and r.failures[0].found == "1/3 (0.33333333333333333333)"


def test_bad_parameter_is_rejected(repo: Path, tmp_path: Path) -> None:
    path = tampered_copy(repo / "certificates", tmp_path / "copy", "first-touch-demo.json",
                         lambda d: d["parameters"].update(c=0), True)
    r = verify_certificate(path, root=repo)
    assert [(f.subject, f.found) for f in r.failures] == [("parameters.c", "0")]


# ---------------------------------------------------------------------------- the command line


def test_cli_prints_field_expected_found_and_exits_1(repo: Path, tmp_path: Path, capsys) -> None:
    path = tampered_copy(repo / "certificates", tmp_path / "copy", "first-touch-demo.json",
                         lambda d: d["figures"][0].update(numerator=1, denominator=2, decimal="0.5"), False)
    assert main(["verify", "--root", str(repo), str(path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("REJECTED")
    assert f"  {path}: figures.cut: expected 24/25, found 1/2" in out
    assert any(line.startswith(f"  {path}: manifest[first-touch-demo.json].sha256: expected ") for line in out)


def test_cli_json_output(repo: Path, capsys) -> None:
    assert main(["verify", "--json", "--root", str(repo), str(repo / "certificates" / "isolation-demo.json")]) == 0
    [result] = json.loads(capsys.readouterr().out)
    assert result["status"] == "ok" and result["id"] == "isolation-demo"


def test_missing_input_exits_2(repo: Path, capsys) -> None:
    (repo / "instance.json").write_text("{}\n")
    cert = make_cert("iso-input", "isolation", isolation_figures(3, 4), {"T": 3, "n": 4},
                     inputs=[InputFile(role="instance", path="instance.json", sha256=sha256_file(repo / "instance.json"))])
    write_certificates([cert], repo / "certificates")
    (repo / "instance.json").unlink()
    assert main(["verify", "--root", str(repo), str(repo / "certificates" / "iso-input.json")]) == 2
    assert "missing input" in capsys.readouterr().out


def test_missing_certificate_or_manifest_exits_2(repo: Path, tmp_path: Path, capsys) -> None:
    assert main(["verify", "--root", str(repo), str(repo / "certificates" / "nope.json")]) == 2
    lone = tmp_path / "lone"
    lone.mkdir()
    shutil.copy(repo / "certificates" / "isolation-demo.json", lone)
    assert main(["verify", "--root", str(repo), str(lone / "isolation-demo.json")]) == 2
    assert "no manifest" in capsys.readouterr().out
    # ... and an explicit --manifest is honoured
    assert main(["verify", "--root", str(repo), "--manifest", str(repo / "certificates" / MANIFEST_NAME),
                 str(lone / "isolation-demo.json")]) == 0


# ---------------------------------------------------------------------------- ceiling: real traces


def test_ceiling_from_a_tiny_ids_file(repo: Path) -> None:
    ids = repo / "tiny.ids"
    ids.write_text("1\n2\n1\n3\n1\n2\n")
    cert = make_cert("ceiling-tiny", "ceiling", ceiling_figures(read_trace(ids)), {"lean_encoding": lean_trace.ENCODING},
                     inputs=[InputFile(role="trace", path="tiny.ids", sha256=sha256_file(ids))])
    assert cert.figure_map()["ceiling"].value == Fraction(1, 2)
    write_certificates([cert], repo / "certificates")
    assert verify_certificate(repo / "certificates" / "ceiling-tiny.json", root=repo).ok
    ids.write_text("1\n2\n1\n3\n1\n4\n")
    r = verify_certificate(repo / "certificates" / "ceiling-tiny.json", root=repo)
    assert fields(r) == ["inputs[0].sha256 (tiny.ids)"]


# ---------------------------------------------------------------------------- derived inputs

DERIVED = "certificates/lean/derived/CeilingTiny.lean"


def derived_repo(repo: Path, keep: bool = False) -> Path:
    """A ceiling certificate whose Lean instance is derived from its trace and (unless ``keep``) not kept."""
    ids = repo / "tiny.ids"
    ids.write_text("0\n1\n0\n2\n0\n1\n")
    trace = read_trace(ids)
    source = lean_trace.emit_instance(trace.refs, trace.sha256, "CeilingTiny").encode()
    if keep:
        (repo / DERIVED).parent.mkdir(parents=True)
        (repo / DERIVED).write_bytes(source)
    cert = make_cert("ceiling-tiny", "ceiling", ceiling_figures(trace), {"lean_encoding": lean_trace.ENCODING},
                     inputs=[InputFile(role="trace", path="tiny.ids", sha256=sha256_file(ids)),
                             InputFile(role="lean", path=DERIVED, sha256=hashlib.sha256(source).hexdigest(),
                                       derived_from="trace")])
    write_certificates([cert], repo / "certificates")
    return repo / "certificates" / "ceiling-tiny.json"


def test_derived_input_need_not_be_kept(repo: Path) -> None:
    r = verify_certificate(derived_repo(repo), root=repo)
    assert r.ok and "derived inputs" in r.checked, r.failures
    assert not (repo / DERIVED).exists()


def test_derived_input_on_disk_is_hashed_too(repo: Path) -> None:
    path = derived_repo(repo, keep=True)
    assert verify_certificate(path, root=repo).ok
    (repo / DERIVED).write_text((repo / DERIVED).read_text().replace("6 references", "7 references"))
    assert fields(verify_certificate(path, root=repo)) == [f"inputs[1].sha256 ({DERIVED})"]


def test_derived_input_that_the_trace_does_not_regenerate_is_rejected(repo: Path, tmp_path: Path) -> None:
    """A recorded hash that regeneration does not reproduce is rejected; so is an encoding verify does not
    know (it would regenerate another file)."""
    good = derived_repo(repo)
    path = tampered_copy(repo / "certificates", tmp_path / "copy", good.name,
                         lambda d: d["inputs"][1].update(sha256="0" * 64), forge_manifest=True)
    r = verify_certificate(path, root=repo)
    assert fields(r) == [f"inputs[1].sha256 ({DERIVED}, regenerated from the trace)"], r.failures
    path = tampered_copy(repo / "certificates", tmp_path / "copy2", good.name,
                         lambda d: d["parameters"].update(lean_encoding="windowed-16384"), forge_manifest=True)
    assert fields(verify_certificate(path, root=repo)) == ["parameters.lean_encoding"]


def test_derived_input_of_a_family_that_cannot_regenerate_it_is_rejected(repo: Path, tmp_path: Path) -> None:
    good = repo / "certificates" / "isolation-demo.json"
    path = tampered_copy(repo / "certificates", tmp_path / "copy", good.name, lambda d: d["inputs"].append(
        {"role": "lean", "path": "Gone.lean", "sha256": "0" * 64, "derived_from": "trace"}), forge_manifest=True)
    r = verify_certificate(path, root=repo)
    assert fields(r) == ["inputs[Gone.lean].derived_from"], r.failures


def test_edited_trace_fails_on_the_trace_not_on_the_derived_file(repo: Path) -> None:
    path = derived_repo(repo)
    (repo / "tiny.ids").write_text("0\n1\n0\n2\n0\n0\n")
    assert fields(verify_certificate(path, root=repo)) == ["inputs[0].sha256 (tiny.ids)"]


@pytest.mark.skipif(not TRACES.is_dir(), reason="../shared/traces is not present")
def test_swapped_mooncake_trace_hash_is_rejected(tmp_path: Path) -> None:
    """A trace from outside the root is named by its file name alone and handed in with --input."""
    root = tmp_path / "repo"
    root.mkdir()
    build_repo(root)
    conv, synth = TRACES / "conversation_trace.jsonl", TRACES / "synthetic_trace.jsonl"
    cert = make_cert("ceiling-conversation", "ceiling", ceiling_figures(read_trace(conv)),
                     {"lean_encoding": lean_trace.ENCODING},
                     inputs=[InputFile(role="trace", path="conversation_trace.jsonl", external=True,
                                       sha256=sha256_file(conv))])
    write_certificates([cert], root / "certificates")
    good = root / "certificates" / "ceiling-conversation.json"
    given = {"conversation_trace.jsonl": conv}
    assert verify_certificate(good, inputs=given).ok
    missing = verify_certificate(good)
    assert missing.status == "missing-input" and "--input conversation_trace.jsonl=PATH" in missing.missing[0]
    path = tampered_copy(root / "certificates", tmp_path / "copy", good.name,
                         lambda d: d["inputs"][0].update(sha256=sha256_file(synth)), forge_manifest=True)
    r = verify_certificate(path, root=root, inputs=given)
    assert [(f.subject, f.expected, f.found) for f in r.failures] == [
        ("inputs[0].sha256 (conversation_trace.jsonl)", sha256_file(conv), sha256_file(synth))]


# ---------------------------------------------------------------------------- --kernel


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_kernel_reruns_lean(repo: Path, wasm) -> None:
    """--kernel re-runs Lean on the verifier's library and the certificate's files (a nonce keeps the
    build cache out of the emitted file), then re-audits the named theorems."""
    emitted = repo / "certificates" / "Emitted.lean"
    emitted.write_text(nonce() + "prelude\nimport Init.Prelude\n\ntheorem emitted_false : (2 : Nat) + 2 = 5 := rfl\n")
    cert = make_cert("iso-kernel", "isolation", isolation_figures(3, 4), {"T": 3, "n": 4},
                     inputs=[InputFile(role="lean", path="Emitted.lean", sha256=sha256_file(emitted))])
    write_certificates([cert], repo / "certificates")
    bad = verify_certificate(repo / "certificates" / "iso-kernel.json", kernel=True, backend="wasm")
    assert fields(bad) == ["kernel[Emitted]"], bad.failures
    good = verify_certificate(repo / "certificates" / "isolation-demo.json", kernel=True, backend="wasm")
    # the fixture records propext and a zero digest for every theorem; the rebuild knows better
    assert {"kernel", "audit", "statements"} <= set(good.checked)
    subjects = {f.subject.split("[")[0] + "." + f.subject.rsplit(".", 1)[-1] for f in good.failures}
    assert subjects == {"audit.axioms_by_theorem.floor]", "statements.type_sha256", "statements.statement"} or all(
        f.subject.startswith(("audit.axioms_by_theorem[Pycert.Isolation.", "statements[Pycert.Isolation."))
        for f in good.failures), good.failures
    assert any(f.subject.endswith(".type_sha256") for f in good.failures)
    # a private and a ghost theorem: rejected offline, and Lean is never asked about them (no exit 2)
    def ghost(d: dict) -> None:
        d["theorems"] += ["Pycert.Ceiling.mem_bound", "Pycert.Isolation.ghost"]

    forged = tampered_copy(repo / "certificates", repo / "forged", "isolation-demo.json", ghost, forge_manifest=True)
    bad = verify_certificate(forged, root=repo, kernel=True, backend="wasm")
    assert bad.status == "rejected" and "theorems[5]" in fields(bad) and "theorems[6]" in fields(bad), bad.failures


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_kernel_shows_progress_and_says_when_the_build_cache_answered(repo: Path, wasm, capsys) -> None:
    """Off a terminal --kernel used to print nothing for minutes, and to answer from the build cache
    without saying so. (The fixture's placeholder statements make it exit 1: beside the point here.)"""
    cert = str(repo / "certificates" / "isolation-demo.json")
    main(["verify", "--kernel", "--backend", "wasm", cert])  # the library and the statements, cached from now on
    capsys.readouterr()
    assert main(["verify", "--kernel", "--backend", "wasm", cert]) == 1
    out, err = capsys.readouterr()
    assert "isolation-demo: rebuilding the library and 0 instance file(s)" in err and "Pycert.Isolation: ok (cached)" in err
    assert "  note: kernel: 13 of 13 Lean files answered from the build cache (" in out
    assert "verify --kernel --fresh runs Lean on every one" in out


def test_fresh_runs_verify_with_an_empty_build_cache_and_needs_kernel(repo: Path, monkeypatch, capsys) -> None:
    """The wiring of --fresh (what the build cache does under it: test_build's fresh cache test). The
    spy records the build cache verify would use and verifies offline, to keep Lean out of this test."""
    from pycert.cli import verify as cli_verify
    from pycert.lean.build import build_cache_dir

    seen: list[Path] = []

    def offline(path: Path, **kw) -> object:
        seen.append(build_cache_dir())
        return verify_certificate(path, **{**kw, "kernel": False})

    monkeypatch.setattr(cli_verify, "verify_certificate", offline)
    cert = str(repo / "certificates" / "isolation-demo.json")
    with pytest.raises(SystemExit) as usage:
        main(["verify", "--fresh", cert])
    assert usage.value.code == 2
    assert "--fresh only means something with --kernel" in capsys.readouterr().err and seen == []
    assert main(["verify", "--kernel", cert]) == 0
    assert main(["verify", "--kernel", "--fresh", cert]) == 0
    assert seen[0] == build_cache_dir() and seen[1] != seen[0] and not seen[1].exists()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_kernel_reports_a_derived_file_that_does_not_regenerate(repo: Path, tmp_path: Path, wasm) -> None:
    """--kernel with an absent derived file whose claimed encoding cannot be regenerated: the failure is
    named once and the rest is still checked (the file is not handed to Lean)."""
    good = derived_repo(repo)
    path = tampered_copy(repo / "certificates", tmp_path / "copy", good.name,
                         lambda d: d["parameters"].update(lean_encoding="windowed-16384"), forge_manifest=True)
    r = verify_certificate(path, root=repo, kernel=True, backend="wasm")
    # the fixture's audit record and statements are placeholders the rebuild rejects; the file is not built
    assert fields(r)[0] == "parameters.lean_encoding" and "kernel" in r.checked, r.failures
    assert not any(f.startswith("kernel[") for f in fields(r)) and r.status == "rejected"
    assert set(fields(r)[1:]) <= {f"audit.axioms_by_theorem[{t}] (re-run)" for t in FAMILIES["ceiling"].theorem_names} | {
        f"statements[{t}].{k}" for t in FAMILIES["ceiling"].theorem_names for k in ("type_sha256", "statement")}


# ---------------------------------------------------------------------------- the committed certificates

REPO = Path(__file__).resolve().parent.parent
COMMITTED = sorted((REPO / "certificates").glob("*.json"))


def test_committed_certificates_cover_every_family() -> None:
    families = {json.loads(p.read_text())["family"] for p in COMMITTED}
    assert families == {"isolation", "first-touch", "ceiling", "pooling"}, families


def needs_shared(path: Path) -> bool:
    return any(i.get("external") for i in json.loads(path.read_text())["inputs"])


SHARED_INPUTS = {p.name: p for p in TRACES.glob("*.jsonl")} if TRACES.is_dir() else {}


def test_both_mooncake_traces_are_certified() -> None:
    traces = {Path(i["path"]).name for p in COMMITTED for i in json.loads(p.read_text())["inputs"]
              if i["role"] == "trace" and i.get("external")}
    assert traces == {"conversation_trace.jsonl", "synthetic_trace.jsonl"}


def test_no_trace_derived_lean_file_is_committed() -> None:
    """Full-resolution data derived from the shared traces stays out of the repository."""
    import subprocess

    tracked = subprocess.run(["git", "ls-files", "certificates"], cwd=REPO, capture_output=True, text=True).stdout
    for p in COMMITTED:
        for i in json.loads(p.read_text())["inputs"]:
            if i.get("derived_from") and needs_shared(p):
                assert i["path"] not in tracked.splitlines(), i["path"]


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.stem)
def test_committed_certificate_reverifies_offline(path: Path) -> None:
    """Every certificate on main re-derives from the inputs it names, against the committed manifest."""
    if needs_shared(path) and not TRACES.is_dir():
        pytest.skip("../shared/traces is not present")
    result = verify_certificate(path, inputs=SHARED_INPUTS)
    assert result.ok, result.failures
    assert {"manifest", "inputs", "figures", "theorems", "derived text"} <= set(result.checked)


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.skipif(not TRACES.is_dir(), reason="../shared/traces is not present")
def test_kernel_checks_a_regenerated_mooncake_instance(tmp_path: Path, wasm) -> None:
    """On a fresh clone the Mooncake instance files are absent: --kernel regenerates and checks them."""
    cert = REPO / "certificates" / "ceiling-conversation-trace.json"
    root = tmp_path / "repo"
    shutil.copytree(REPO / "certificates", root / "certificates", ignore=shutil.ignore_patterns("derived", "runs"))
    result = verify_certificate(root / "certificates" / cert.name, inputs=SHARED_INPUTS, kernel=True, backend="wasm")
    assert result.ok and {"derived inputs", "kernel"} <= set(result.checked), result.failures


def test_an_input_no_certificate_names_is_an_error_not_ignored(repo: Path, capsys) -> None:
    certs = [str(p) for p in sorted((repo / "certificates").glob("*.json"))]
    assert main(["verify", *certs, "--input", "typo.jsonl=/dev/null"]) == 2
    assert "typo.jsonl=...: no certificate given names an external input typo.jsonl" in capsys.readouterr().err
    assert main(["report", "--certs", str(repo / "certificates"), "--out", str(repo / "r.html"), "--no-curves",
                 "--input", "typo.jsonl=/dev/null"]) == 2
    assert not (repo / "r.html").exists()


def test_report_finds_an_external_trace_beside_the_directory_or_says_so(repo: Path) -> None:
    from pycert.certify.report import write_report
    from pycert.core.errors import InputError

    trace = repo / "outside" / "x.ids"
    trace.parent.mkdir()
    trace.write_bytes(b"5\n6\n5\n7\n5\n")
    inp = InputFile(role="trace", path="x.ids", sha256=sha256_file(trace), external=True)
    cert = make_cert("ceiling-x", "ceiling", ceiling_figures(read_trace(trace)),
                     {"lean_encoding": lean_trace.ENCODING}, inputs=[inp])
    write_certificates([cert], repo / "certificates")
    with pytest.raises(InputError, match="--input x.ids=PATH"):
        write_report(repo / "certificates", repo / "r.html")
    assert not (repo / "r.html").exists()
    write_report(repo / "certificates", repo / "r.html", inputs={"x.ids": trace})
    trace.rename(repo / "x.ids")  # beside the certificate directory
    write_report(repo / "certificates", repo / "r2.html")
    assert "x.ids" in (repo / "r2.html").read_text()
