"""Offline verification: good certificates pass, each kind of tampering is rejected for its reason."""

from __future__ import annotations

import hashlib
import json
import shutil
from fractions import Fraction
from pathlib import Path

import pytest

from pycert.certify.manifest import MANIFEST_NAME, render_manifest, write_certificates
from pycert.certify.verify import own_library, verify_certificate
from pycert.cli import main
from pycert.core.files import file_sha256 as sha256_file
from pycert.core.resources import library_sha256
from pycert.core.schema import Figure, InputFile
from pycert.data.traces import read_trace
from pycert.families import FAMILIES
from pycert.families.ceiling import ceiling_figures
from pycert.families.first_touch import first_touch_figures
from pycert.families.isolation import isolation_figures
from pycert.lean.emit import packed_trace as lean_trace
from pycert.lean.sources import library_modules, scan_declarations
from tests.certs import make_cert, trace_input
from tests.conftest import SHARED_TRACES as TRACES


def build_repo(root: Path) -> Path:
    """A miniature certificate folder: two certificates and their manifest (the library is pycert's own)."""
    certs = [
        make_cert("isolation-demo", "isolation", {"T": 3, "n": 4}),
        make_cert("first-touch-demo", "first-touch", {"c": 16, "n": 100}),
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
    """The figures each family reads off its headline's literals."""
    assert first_touch_figures(100, 96) == {"served": 96, "cut": Fraction(96, 100)}
    assert isolation_figures(3, 4, 12, 4) == {"states_floor": 4096, "bits_floor": 12, "single_owner_states": 81,
                                              "single_owner_bits": 4}
    assert ceiling_figures(5, 3, 2) == {"refs": 5, "distinct": 3, "max_hits": 2, "ceiling": Fraction(2, 5)}
    # the headlines' literals, as the families write them: n * floor(log2 T) bits with one owner
    assert make_cert("i", "isolation", {"T": 3, "n": 4}).figure_map()["single_owner_bits"].value == 4
    assert make_cert("i", "isolation", {"T": 4, "n": 5}).figure_map()["single_owner_bits"].value == 10
    assert make_cert("f", "first-touch", {"c": 10, "n": 9}).figure_map()["cut"].value == 0


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
        assert r.checked == ["manifest", "schema", "required inputs", "inputs", "instance regenerated", "figures",
                             "derived text", "library", "theorems", "audit record"]
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
        d["figures"][1].update(numerator=1, denominator=2, decimal="0.5")

    path = tampered_copy(repo / "certificates", tmp_path / "copy", "first-touch-demo.json", edit, forge)
    r = verify_certificate(path, root=repo)
    assert r.status == "rejected"
    assert "figures.cut" in fields(r)
    fig = next(f for f in r.failures if f.subject == "figures.cut")
    assert (fig.expected, fig.found) == ("24/25", "1/2")
    assert ("manifest[first-touch-demo.json].sha256" in fields(r)) is not forge


def test_edited_decimal_alone_is_rejected(repo: Path, tmp_path: Path) -> None:
    path = tampered_copy(repo / "certificates", tmp_path / "copy", "first-touch-demo.json",
                         lambda d: d["figures"][1].update(decimal="0.97"), forge_manifest=True)
    r = verify_certificate(path, root=repo)
    assert [(f.subject, f.expected, f.found) for f in r.failures] == [("figures.cut.decimal", "0.96", "0.97")]


def test_edited_parameter_is_rejected(repo: Path, tmp_path: Path) -> None:
    path = tampered_copy(repo / "certificates", tmp_path / "copy", "isolation-demo.json",
                         lambda d: d["parameters"].update(T=2), forge_manifest=True)
    r = verify_certificate(path, root=repo)
    # the instance the family derives from T = 2 is another file: the certificate names the wrong one
    assert {"inputs", "inputs[lean/IsolationT3N4.lean]", "claim"} <= set(fields(r)), r.failures
    assert "figures" not in r.checked


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
    write_certificates([make_cert("isolation-demo", "isolation", {"T": 3, "n": 4}, library=other)],
                       repo / "certificates")
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
    assert "inputs[Shipped.lean]" in fields(r) and "theorems" in fields(r), r.failures
    assert any("no such declaration" in (f.found or "") for f in r.failures)


def test_swapped_input_hash_is_rejected(repo: Path, tmp_path: Path) -> None:
    """A primary input's sha256 must match its file; the swap is caught before anything is regenerated."""
    ids = repo / "tiny.ids"
    ids.write_text("1\n2\n1\n")
    write_certificates([make_cert("ceiling-tiny", "ceiling", {"lean_encoding": lean_trace.ENCODING},
                                  [trace_input(ids, repo)], root=repo)], repo / "certificates")
    assert verify_certificate(repo / "certificates" / "ceiling-tiny.json", root=repo).ok
    other = hashlib.sha256(b"something else").hexdigest()
    path = tampered_copy(repo / "certificates", tmp_path / "copy", "ceiling-tiny.json",
                         lambda d: d["inputs"][0].update(sha256=other), forge_manifest=True)
    r = verify_certificate(path, root=repo)
    assert [(f.subject, f.expected, f.found) for f in r.failures] == [
        ("inputs[0].sha256 (tiny.ids)", sha256_file(ids), other)]
    assert "figures" not in r.checked and "instance regenerated" not in r.checked


def test_schema_violations_name_the_field(repo: Path, tmp_path: Path) -> None:
    cases = [
        (lambda d: d.update(schema="pycert-cert/2"), "schema"),
        (lambda d: d.pop("does_not_prove"), "does_not_prove"),
        (lambda d: d["inputs"].append({"role": "trace", "path": "x", "sha256": "zz"}), "inputs[1].sha256"),
        (lambda d: d["figures"][1].update(numerator=2, denominator=4), "figures[1]"),
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
    assert fields(r) == ["manifest[stray.json]", "id"]  # and its id names another file


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
                         lambda d: d.update(family="pooling", parameters={"hosts": 3, "pool_capacity": 4, "load_limit": 8}),
                         True)
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
                         lambda d: d["figures"][1].update(numerator=1, denominator=2, decimal="0.5"), False)
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
    ids = repo / "tiny.ids"
    ids.write_text("1\n2\n1\n")
    write_certificates([make_cert("ceiling-tiny", "ceiling", {"lean_encoding": lean_trace.ENCODING},
                                  [trace_input(ids, repo)], root=repo)], repo / "certificates")
    ids.unlink()
    assert main(["verify", "--root", str(repo), str(repo / "certificates" / "ceiling-tiny.json")]) == 2
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
    cert = make_cert("ceiling-tiny", "ceiling", {"lean_encoding": lean_trace.ENCODING}, [trace_input(ids, repo)],
                     root=repo)
    assert cert.figure_map()["ceiling"].value == Fraction(1, 2)
    write_certificates([cert], repo / "certificates")
    assert verify_certificate(repo / "certificates" / "ceiling-tiny.json", root=repo).ok
    ids.write_text("1\n2\n1\n3\n1\n4\n")
    r = verify_certificate(repo / "certificates" / "ceiling-tiny.json", root=repo)
    assert fields(r) == ["inputs[0].sha256 (tiny.ids)"]


# ---------------------------------------------------------------------------- the derived instance

DERIVED = "lean/CeilingTiny.lean"


def derived_repo(repo: Path, keep: bool = False) -> Path:
    """A ceiling certificate whose Lean instance is derived from its trace and (unless ``keep``) not kept.
    The trace lies inside the certificate directory (``inputs/tiny.ids``), so the instance is ``lean/``."""
    ids = repo / "certificates" / "inputs" / "tiny.ids"
    ids.parent.mkdir(parents=True, exist_ok=True)
    ids.write_text("0\n1\n0\n2\n0\n1\n")
    cert = make_cert("ceiling-tiny", "ceiling", {"lean_encoding": lean_trace.ENCODING},
                     [trace_input(ids, repo / "certificates")], root=repo / "certificates")
    if keep:
        trace = read_trace(ids)
        (repo / "certificates" / DERIVED).parent.mkdir(parents=True, exist_ok=True)
        (repo / "certificates" / DERIVED).write_bytes(lean_trace.emit_instance(trace.refs, trace.sha256, "CeilingTiny").encode())
    write_certificates([cert], repo / "certificates")
    return repo / "certificates" / "ceiling-tiny.json"


def test_derived_input_need_not_be_kept(repo: Path) -> None:
    r = verify_certificate(derived_repo(repo))
    assert r.ok and "instance regenerated" in r.checked, r.failures
    assert not (repo / "certificates" / DERIVED).exists()


def test_derived_input_on_disk_must_be_what_pycert_regenerates(repo: Path) -> None:
    path = derived_repo(repo, keep=True)
    assert verify_certificate(path).ok
    kept = repo / "certificates" / DERIVED
    kept.write_text(kept.read_text().replace("6 references", "7 references"))
    assert fields(verify_certificate(path)) == [f"{DERIVED} (the copy beside the certificate)"]


def test_derived_input_that_the_trace_does_not_regenerate_is_rejected(repo: Path, tmp_path: Path) -> None:
    """A recorded hash that regeneration does not reproduce is rejected; so is an encoding verify does not
    know (it would regenerate another file)."""
    good = derived_repo(repo)
    path = tampered_copy(repo / "certificates", tmp_path / "copy", good.name,
                         lambda d: d["inputs"][1].update(sha256="0" * 64), forge_manifest=True)
    r = verify_certificate(path)
    assert fields(r) == [f"inputs[{DERIVED}].sha256 (regenerated from the trace)"], r.failures
    path = tampered_copy(repo / "certificates", tmp_path / "copy2", good.name,
                         lambda d: d["parameters"].update(lean_encoding="windowed-16384"), forge_manifest=True)
    assert fields(verify_certificate(path)) == ["parameters.lean_encoding"]


def test_an_input_the_family_does_not_name_is_rejected(repo: Path, tmp_path: Path) -> None:
    good = repo / "certificates" / "isolation-demo.json"
    path = tampered_copy(repo / "certificates", tmp_path / "copy", good.name, lambda d: d["inputs"].append(
        {"role": "lean", "path": "Gone.lean", "sha256": "0" * 64, "derived_from": "trace"}), forge_manifest=True)
    r = verify_certificate(path, root=repo)
    assert fields(r)[0] == "inputs[Gone.lean]" and r.failures[0].reason == "extra-input", r.failures


def test_edited_trace_fails_on_the_trace_not_on_the_derived_file(repo: Path) -> None:
    path = derived_repo(repo)
    (repo / "certificates" / "inputs" / "tiny.ids").write_text("0\n1\n0\n2\n0\n0\n")
    assert fields(verify_certificate(path)) == ["inputs[0].sha256 (inputs/tiny.ids)"]


@pytest.mark.skipif(not TRACES.is_dir(), reason="../shared/traces is not present")
def test_swapped_mooncake_trace_hash_is_rejected(tmp_path: Path) -> None:
    """A trace from outside the root is named by its file name alone and handed in with --input."""
    root = tmp_path / "repo"
    root.mkdir()
    build_repo(root)
    conv, synth = TRACES / "conversation_trace.jsonl", TRACES / "synthetic_trace.jsonl"
    cert = make_cert("ceiling-conversation", "ceiling", {"lean_encoding": lean_trace.ENCODING},
                     [InputFile(role="trace", path="conversation_trace.jsonl", external=True, sha256=sha256_file(conv))],
                     external={"conversation_trace.jsonl": conv})
    write_certificates([cert], root / "certificates")
    good = root / "certificates" / "ceiling-conversation.json"
    given = {"conversation_trace.jsonl": conv}
    assert verify_certificate(good, inputs=given).ok
    assert verify_certificate(good).ok  # found in the checkout's shared trace folder, by its name and sha256
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("pycert.certify.inputs.shared_traces_dir", lambda: None)
        missing = verify_certificate(good)
    assert missing.status == "not-here" and "--input conversation_trace.jsonl=PATH" in missing.not_here[0]
    path = tampered_copy(root / "certificates", tmp_path / "copy", good.name,
                         lambda d: d["inputs"][0].update(sha256=sha256_file(synth)), forge_manifest=True)
    r = verify_certificate(path, root=root, inputs=given)
    assert [(f.subject, f.expected, f.found) for f in r.failures] == [
        ("inputs[0].sha256 (conversation_trace.jsonl)", sha256_file(conv), sha256_file(synth))]


# ---------------------------------------------------------------------------- --kernel


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_kernel_reruns_lean(repo: Path, wasm) -> None:
    """--kernel re-runs Lean on the verifier's library and the regenerated instance, then re-audits every
    declaration built and reads the figures off the rebuilt headline."""
    good = verify_certificate(repo / "certificates" / "isolation-demo.json", kernel=True, backend="wasm")
    # the fixture records propext and a zero digest for every theorem; the rebuild knows better
    assert {"kernel", "audit", "statements", "figures off the kernel"} <= set(good.checked)
    assert good.failures and all(f.subject.startswith(("audit.axioms_by_theorem[", "statements["))
                                 for f in good.failures), good.failures
    assert any(f.subject.endswith(".type_sha256") for f in good.failures)
    # a private and a ghost theorem: rejected offline, and Lean is never asked about them (no exit 2)
    def ghost(d: dict) -> None:
        d["theorems"] += ["Pycert.Ceiling.mem_bound", "Pycert.Isolation.ghost"]

    forged = tampered_copy(repo / "certificates", repo / "forged", "isolation-demo.json", ghost, forge_manifest=True)
    bad = verify_certificate(forged, root=repo, kernel=True, backend="wasm")
    assert bad.status == "rejected" and "theorems" in fields(bad), bad.failures


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
    assert "rebuilding the library and lean/IsolationT3N4.lean" in err and "Pycert.Isolation: ok (cached)" in err
    files = len(library_modules(own_library())) + 2  # the library, the instance and the statement probe
    assert f"  note: kernel: {files} of {files} Lean files answered from the build cache (" in out
    assert "verify --kernel --fresh runs Lean on every one" in out


def test_fresh_runs_verify_with_an_empty_build_cache_and_needs_kernel(repo: Path, monkeypatch, capsys) -> None:
    """The wiring of --fresh (what the build cache does under it: test_build's fresh cache test). The
    spy records the build cache verify would use and verifies offline, to keep Lean out of this test."""
    from pycert.cli import verify as cli_verify
    from pycert.lean.scheduler import build_cache_dir

    seen: list[Path] = []

    def offline(paths: list[Path], **kw) -> object:
        seen.append(build_cache_dir())
        return [verify_certificate(path, **{**kw, "kernel": False}) for path in paths]

    monkeypatch.setattr(cli_verify, "verify_certificates", offline)
    cert = str(repo / "certificates" / "isolation-demo.json")
    with pytest.raises(SystemExit) as usage:
        main(["verify", "--fresh", cert])
    assert usage.value.code == 2
    assert "--fresh only means something with --kernel" in capsys.readouterr().err and seen == []
    assert main(["verify", "--kernel", cert]) == 0
    assert main(["verify", "--kernel", "--fresh", cert]) == 0
    assert seen[0] == build_cache_dir() and seen[1] != seen[0] and not seen[1].exists()


# ---------------------------------------------------------------------------- the committed certificates

REPO = Path(__file__).resolve().parent.parent
COMMITTED = sorted((REPO / "certificates").glob("*.json"))


def test_committed_certificates_cover_every_family() -> None:
    # the dataset's two families are committed with the dataset (datasets/first-touch/certificates)
    dataset = (COMMITTED[0].parent.parent / "datasets" / "first-touch" / "certificates").glob("*.json")
    families = {json.loads(p.read_text())["family"] for p in [*COMMITTED, *dataset]}
    assert families == set(FAMILIES) == {"isolation", "first-touch", "ceiling", "capacity", "pooling", "leak",
                                         "leak-audit", "engine", "isolation-cost", "first-touch-ramp",
                                         "first-touch-trace", "fleet"}, families


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
    assert {"manifest", "required inputs", "inputs", "figures", "theorems", "derived text"} <= set(result.checked)
    assert ("instance regenerated" in result.checked) is (FAMILIES[json.loads(path.read_text())["family"]]
                                                           .headline_predicate is not None)


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.skipif(not TRACES.is_dir(), reason="../shared/traces is not present")
def test_kernel_checks_a_regenerated_mooncake_instance(tmp_path: Path, wasm) -> None:
    """On a fresh clone the Mooncake instance files are absent: --kernel regenerates and checks them."""
    cert = REPO / "certificates" / "ceiling-conversation-trace.json"
    root = tmp_path / "repo"
    shutil.copytree(REPO / "certificates", root / "certificates", ignore=shutil.ignore_patterns("derived", "runs"))
    result = verify_certificate(root / "certificates" / cert.name, inputs=SHARED_INPUTS, kernel=True, backend="wasm")
    assert result.ok and {"instance regenerated", "kernel", "figures off the kernel"} <= set(result.checked), result.failures


def test_an_input_no_certificate_names_is_an_error_not_ignored(repo: Path, capsys) -> None:
    certs = [str(p) for p in sorted((repo / "certificates").glob("*.json"))]
    assert main(["verify", *certs, "--input", "typo.jsonl=/dev/null"]) == 2
    assert "typo.jsonl=...: no certificate given names an external input typo.jsonl" in capsys.readouterr().err
    assert main(["report", "--certs", str(repo / "certificates"), "--out", str(repo / "r.html"), "--no-curves",
                 "--input", "typo.jsonl=/dev/null"]) == 2
    assert not (repo / "r.html").exists()


def test_report_finds_an_external_trace_beside_the_directory_or_says_so(repo: Path) -> None:
    from pycert.certify.report import write_report

    trace = repo / "outside" / "x.ids"
    trace.parent.mkdir()
    trace.write_bytes(b"5\n6\n5\n7\n5\n")
    inp = InputFile(role="trace", path="x.ids", sha256=sha256_file(trace), external=True)
    cert = make_cert("ceiling-x", "ceiling", {"lean_encoding": lean_trace.ENCODING}, [inp], external={"x.ids": trace})
    write_certificates([cert], repo / "certificates")
    _, _, unchecked = write_report(repo / "certificates", repo / "r.html")  # the trace is not here: no curve
    assert "trace not here" in unchecked["ceiling-x"] and "--input x.ids=PATH" in unchecked["ceiling-x"]
    assert "<strong>NOT CHECKED</strong>" in (repo / "r.html").read_text()
    write_report(repo / "certificates", repo / "r.html", inputs={"x.ids": trace})
    trace.rename(repo / "x.ids")  # beside the certificate directory
    write_report(repo / "certificates", repo / "r2.html")
    assert "x.ids" in (repo / "r2.html").read_text()
