"""Offline re-derivation of a certificate from the certificate alone plus the inputs it names.

``verify_certificate`` trusts nothing the certificate says about itself. It checks the manifest entry
and the schema (which bounds every parameter before any arithmetic), locates every input inside the
certificate's directory (symlinks resolved; an external one where the user handed it in, else by its
file name beside that directory), hashes it,
recomputes every figure (:meth:`Family.recompute`) and every derived input (:meth:`Family.regenerate`),
derives the claim, the theorem list, the ``does_not_prove`` lines and each figure's evidence state and
``known_by`` again
(:meth:`Family.derive`) and compares them, requires the verifier's own Lean library (the checkout's,
or the installed package's; never one beside the certificate) to have the content hash the certificate
was proved with and every theorem to be a public declaration of it, and checks the audit record
against itself. With ``kernel=True`` it
rebuilds the library and the certificate's instance files and re-runs the axiom audit on the named
theorems; without it the result says that neither was re-run. Every disagreement is a
:class:`~pycert.core.errors.Rejection` (``expected`` the reference, ``found`` the certificate's);
the result is ``rejected`` (exit 1) whenever anything was rejected, even when an input is missing,
and ``missing-input``/``input-error`` (exit 2) only when nothing was rejected.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from fractions import Fraction
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from pycert.audit.per_theorem import recorded_audit_rejections
from pycert.certify.documents import not_a_certificate, parse_certificate
from pycert.certify.inputs import Locator
from pycert.certify.manifest import MANIFEST_NAME, lists, manifest_rejection, read_manifest
from pycert.core.errors import InputError, Rejected, Rejection
from pycert.core.files import certificate_root, file_sha256
from pycert.core.resources import library_dir, library_sha256
from pycert.core.schema import Certificate, InputFile, decimal_of, declared_inputs
from pycert.families import FAMILIES
from pycert.lean.sources import Declaration, library_signatures, scan_declarations

NOT_RERUN = "kernel and axiom audit: not re-run (run verify --kernel to rebuild and re-audit the named theorems)"


def own_library() -> Path:
    """The Lean library this verifier trusts: its own (the checkout's, or the installed package's),
    never a certificate's neighbours."""
    return library_dir()


class VerifyResult(BaseModel):
    certificate: str
    id: str | None = None
    status: Literal["ok", "rejected", "missing-input", "input-error"]
    failures: list[Rejection] = []
    missing: list[str] = []
    errors: list[str] = []
    """Inputs that are there but malformed (exit 2, like a missing one)."""
    checked: list[str] = []
    """The checks that ran (a reader can see that nothing was silently skipped)."""
    notes: list[str] = []

    @property
    def ok(self) -> bool:
        return self.status == "ok"


# ---------------------------------------------------------------------------- Lean declarations


def library_declarations(files: Iterable[Path], failures: list[Rejection] | None = None) -> dict[str, Declaration]:
    """Declarations of every file; one that is not UTF-8 (so not Lean source) declares nothing and is
    a rejection in ``failures`` (raised as :class:`Rejected` when none is given)."""
    decls: dict[str, Declaration] = {}
    for path in files:
        try:
            source = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            failure = Rejection.mismatch(f"lean source {path}", "UTF-8 Lean source",
                                         f"undecodable bytes at offset {exc.start}")
            if failures is None:
                raise Rejected(failure) from None
            failures.append(failure)
            continue
        for d in scan_declarations(source, str(path)):
            decls.setdefault(d.name, d)
    return decls


def check_theorems(names: list[str], decls: dict[str, Declaration]) -> list[Rejection]:
    failures = []
    for i, name in enumerate(names):
        d = decls.get(name)
        if d is None:
            failures.append(Rejection.mismatch(f"theorems[{i}]", "a theorem of the library (lean/Pycert)",
                                               f"{name} (no such declaration)"))
        elif d.kind not in ("theorem", "lemma") or d.private:
            failures.append(Rejection.mismatch(f"theorems[{i}]", "a public theorem",
                                               f"{'private ' if d.private else ''}{d.kind} {name} ({d.file}:{d.line})"))
    return failures


# ---------------------------------------------------------------------------- the checks


def compare_figures(cert: Certificate, recomputed: dict[str, Fraction]) -> list[Rejection]:
    failures = []
    have = cert.figure_map()
    for name, value in recomputed.items():
        fig = have.get(name)
        if fig is None:
            failures.append(Rejection.mismatch(f"figures.{name}", str(value), "absent"))
        elif fig.value != value:
            failures.append(Rejection.mismatch(f"figures.{name}", str(value), str(fig.value)))
    for name in have.keys() - recomputed.keys():
        failures.append(Rejection.mismatch(f"figures.{name}", "absent (nothing recomputes it)", have[name].render()))
    for fig in cert.figures:
        if fig.decimal != decimal_of(fig.value):
            failures.append(Rejection.mismatch(f"figures.{fig.name}.decimal", decimal_of(fig.value), fig.decimal))
    return failures


def _check_manifest(path: Path, data: bytes, manifest: Path, result: VerifyResult) -> None:
    entries = read_manifest(manifest)
    result.checked.append("manifest")
    if rejection := manifest_rejection(entries, path.name, data, manifest):
        result.failures.append(rejection)


def _check_inputs(cert: Certificate, where: Locator, result: VerifyResult) -> bool:
    """Locate and hash every input; True when all are present and match. Nothing outside the root is
    opened. A derived input need not be on disk: ``_check_derived_inputs`` regenerates it."""
    result.checked.append("inputs")
    clean = True
    for i, inp in enumerate(cert.inputs):
        try:
            p = where.locate(inp)
        except InputError as err:  # an external input not found is missing; an escaping path is malformed
            (result.missing if inp.external else result.errors).append(f"inputs[{i}]: {err.message}")
            clean = False
            continue
        if p.is_dir():
            result.errors.append(f"inputs[{i}] ({inp.path}): is a directory, not a file")
            clean = False
        elif not p.is_file():
            if inp.derived_from is None:
                result.missing.append(str(p))
                clean = False
        elif (actual := file_sha256(p)) != inp.sha256:
            result.failures.append(Rejection.mismatch(f"inputs[{i}].sha256 ({inp.path})", actual, inp.sha256))
            clean = False
        elif inp.role == "lean" and (bad := _not_utf8(p)) is not None:
            result.failures.append(Rejection.mismatch(f"lean source {inp.path}", "UTF-8 Lean source",
                                                      f"undecodable bytes at offset {bad}"))
    return clean


def _not_utf8(path: Path) -> int | None:
    """Where a file that hashes as recorded stops being text, so cannot be the Lean it claims to be."""
    try:
        path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start
    return None


def regenerate(cert: Certificate, inp: InputFile, where: Locator) -> bytes:
    """The bytes a derived input must have; raises :class:`Rejected` when they cannot be made."""
    if not any(o.role == inp.derived_from for o in cert.inputs):
        raise Rejected(Rejection.mismatch(f"inputs[{inp.path}].derived_from", f"a {cert.family} {inp.role} file "
                                          "pycert can regenerate", f"{inp.role} derived from {inp.derived_from}"))
    return FAMILIES[cert.family].regenerate(cert.parameters, cert.inputs, inp, where)


def _check_derived(cert: Certificate, i: int, inp: InputFile, where: Locator) -> tuple[bytes, Rejection | None]:
    try:
        data = regenerate(cert, inp, where)
    except Rejected as err:
        return b"", err.rejection
    except InputError as err:
        return b"", Rejection.mismatch(f"inputs[{i}] ({inp.path})", f"regenerable from the {inp.derived_from}", str(err))
    actual = hashlib.sha256(data).hexdigest()
    if actual != inp.sha256:
        return b"", Rejection.mismatch(f"inputs[{i}].sha256 ({inp.path}, regenerated from the {inp.derived_from})",
                                       actual, inp.sha256)
    return data, None


def _check_derived_inputs(cert: Certificate, where: Locator, result: VerifyResult) -> dict[str, bytes]:
    """Regenerate every derived input; returns path -> bytes for those whose hash matches."""
    good: dict[str, bytes] = {}
    if not any(inp.derived_from for inp in cert.inputs):
        return good
    result.checked.append("derived inputs")
    for i, inp in enumerate(cert.inputs):
        if inp.derived_from:
            data, err = _check_derived(cert, i, inp, where)
            if err:
                result.failures.append(err)
            else:
                good[inp.path] = data
    return good


def _check_figures(cert: Certificate, where: Locator, result: VerifyResult) -> dict[str, Fraction] | None:
    result.checked.append("figures")
    try:
        recomputed = FAMILIES[cert.family].figures(cert.parameters, cert.inputs, where)
    except Rejected as err:
        result.failures.append(err.rejection)
        return None
    except FileNotFoundError as err:
        result.missing.append(str(err))
        return None
    except InputError as err:
        result.errors.append(str(err))
        return None
    result.failures += compare_figures(cert, recomputed)
    return recomputed


def check_derived_text(cert: Certificate, figures: dict[str, Fraction]) -> list[Rejection]:
    """The claim, the theorem list, the limits and each figure's evidence against what the family
    derives from the parameters and ``figures`` (the recomputed ones when the inputs allowed)."""
    try:
        d = FAMILIES[cert.family].derive(cert.parameters, figures, cert.inputs, cert.solver)
    except KeyError as exc:
        return [Rejection.mismatch("claim", "derivable from the figures", f"no figure {exc}")]
    out = []
    if cert.claim != d.claim:
        out.append(Rejection.mismatch("claim", repr(d.claim), repr(cert.claim)))
    if tuple(cert.theorems) != d.theorems:
        out.append(Rejection.mismatch("theorems", ", ".join(d.theorems), ", ".join(cert.theorems)))
    if tuple(cert.does_not_prove) != d.does_not_prove:
        lost = [line for line in d.does_not_prove if line not in cert.does_not_prove]
        out.append(Rejection.mismatch("does_not_prove", f"the family's {len(d.does_not_prove)} lines",
                                      f"{len(cert.does_not_prove)} lines" + (f", without {lost[0]!r}" if lost else "")))
    for fig in cert.figures:
        if fig.evidence != d.evidence.get(fig.name, "computed"):
            out.append(Rejection.mismatch(f"figures.{fig.name}.evidence", d.evidence.get(fig.name, "computed"),
                                          fig.evidence))
        if fig.known_by != d.known_by.get(fig.name, ""):
            out.append(Rejection.mismatch(f"figures.{fig.name}.known_by", repr(d.known_by.get(fig.name, "")),
                                          repr(fig.known_by)))
    return out


def _check_library(cert: Certificate, library: Path, result: VerifyResult) -> None:
    result.checked.append("library")
    actual = library_sha256(library)
    if actual != cert.provenance.library_sha256:
        result.failures.append(Rejection.mismatch(
            f"provenance.library_sha256 (verify runs with the library at {library})", actual,
            cert.provenance.library_sha256, reason="library-mismatch"))


def _check_theorems(cert: Certificate, library: Path, result: VerifyResult) -> None:
    """Every named theorem must be a public declaration of the verifier's own library, with the
    statement its source declares there."""
    result.checked.append("theorems")
    files = sorted((library / "Pycert").rglob("*.lean")) if (library / "Pycert").is_dir() else []
    result.failures += check_theorems(cert.theorems, library_declarations(files, result.failures))
    result.failures += check_signatures(cert, library_signatures(library))


def check_signatures(cert: Certificate, signatures: dict[str, str]) -> list[Rejection]:
    out = []
    if list(cert.statements) != cert.theorems:
        out.append(Rejection.mismatch("statements", f"one per theorem ({', '.join(cert.theorems)})",
                                      ", ".join(cert.statements) or "none"))
    for name, pinned in cert.statements.items():
        if name in signatures and pinned.signature != signatures[name]:
            out.append(Rejection.mismatch(f"statements[{name}].signature", repr(signatures[name]),
                                          repr(pinned.signature)))
    return out


def _check_audit_record(cert: Certificate, result: VerifyResult) -> None:
    result.checked.append("audit record")
    result.failures += recorded_audit_rejections(cert.audit, cert.theorems)


def _read_checked(path: Path, manifest: Path, result: VerifyResult) -> Certificate | None:
    """The certificate, once its bytes are checked against the manifest and parsed; None when that failed."""
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        result.errors.append("is a directory, not a certificate file")
        return None
    except OSError as err:
        result.missing.append(f"{path} ({err.strerror})")
        return None
    if (why := not_a_certificate(data)) and not lists(manifest, path.name):
        result.errors.append(why)  # no certificate, and no manifest vouches for one here: nothing to reject
        return None
    try:
        _check_manifest(path, data, manifest, result)
    except InputError as err:
        (result.errors if manifest.exists() else result.missing).append(str(err))
    except Rejected as err:
        result.failures.append(err.rejection)
    try:
        cert = parse_certificate(data, where=str(path))
    except InputError as err:
        if result.failures:  # the manifest vouches for other bytes: a tampered certificate, rejected
            result.failures.append(Rejection.mismatch("(json)", "a certificate (a JSON object)", err.message))
        else:  # nothing vouches for these bytes: the input is malformed
            result.errors.append(err.message)
        return None
    except Rejected as err:
        result.failures.append(err.rejection)
        return None
    result.id = cert.id
    result.checked.append("schema")
    return cert


def verify_certificate(path: Path, root: Path | None = None, manifest: Path | None = None, kernel: bool = False,
                       backend: str | None = None, timeout: float = 1800.0, inputs: dict[str, Path] | None = None,
                       library: Path | None = None, progress: Callable[[str], None] = lambda _m: None) -> VerifyResult:
    result = VerifyResult(certificate=str(path), status="ok")
    cert = _read_checked(path, manifest or path.parent / MANIFEST_NAME, result)
    if cert is None:
        return _finish(result)
    where = Locator(root=root or certificate_root(path.parent), external=dict(inputs or {}))
    library = library or own_library()
    regenerated: dict[str, bytes] = {}
    recomputed = None
    if _check_inputs(cert, where, result):
        recomputed = _check_figures(cert, where, result)
        regenerated = _check_derived_inputs(cert, where, result)
    result.checked.append("derived text")
    result.failures += check_derived_text(cert, recomputed or {f.name: f.value for f in cert.figures})
    _check_library(cert, library, result)
    _check_theorems(cert, library, result)
    _check_audit_record(cert, result)
    if not kernel:
        result.notes.append(NOT_RERUN)
    elif result.missing or result.errors:
        result.notes.append("kernel and axiom audit: not re-run (an input is missing or malformed)")
    else:
        from pycert.certify.rebuild import (
            rebuild,  # the build and the audit: only under --kernel (start-up)
        )

        result.checked += ["kernel", "audit", "statements"]
        result.failures += rebuild(cert, where, library, regenerated, backend, timeout, progress, result.notes)
    return _finish(result)


def refuse_unused_inputs(given: dict[str, Path], certs: Iterable[Path]) -> None:
    """An ``--input NAME=PATH`` that no certificate names as an external input is a mistake (a typo, or a
    file the certificate keeps under its directory): say so instead of ignoring it. Certificates that
    cannot be read are left to the checks that report them."""
    declared = [declared_inputs(path) for path in certs]
    if not given or not declared or None in declared:
        return
    named = {i["path"] for inputs in declared for i in inputs if i.get("external")}
    if unused := sorted(given.keys() - named):
        raise InputError(f"{unused[0]}=...: no certificate given names an external input {unused[0]} "
                         f"(they name: {', '.join(sorted(named)) or 'none'})", where="--input")


def _finish(result: VerifyResult) -> VerifyResult:
    if result.failures:
        result.status = "rejected"
    elif result.errors:
        result.status = "input-error"
    else:
        result.status = "missing-input" if result.missing else "ok"
    return result
