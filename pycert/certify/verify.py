"""Offline re-derivation of a certificate from the certificate alone plus the inputs it names.

``verify_certificate`` checks, in order: the manifest entry beside the certificate, the schema, every
input's sha256, every figure (recomputed by the certificate's family, :meth:`Family.recompute`), the
decimals, every input derived from the others (regenerated, :meth:`Family.regenerate`), that the Lean
library verify runs with is the one the certificate was proved with (its content hash), that every
named theorem is declared in that library, the audit verdict, and with ``kernel=True`` re-runs the
Lean check. The library is the one under ``root`` when the root has one (a checkout), else the
installed pycert's (:func:`pycert.core.resources.library_dir`). Each disagreement is a
:class:`~pycert.core.errors.Rejection` whose ``expected`` is the reference (the manifest, the file on
disk, the recomputed value, the library) and ``found`` what the certificate holds. A missing input
makes the result ``missing-input`` (exit 2) rather than ``rejected`` (exit 1), and so does a malformed
one (``input-error``: a certificate that is not a JSON object, a directory where a file should be); an
input whose hash matches but which cannot be what it claims to be (a Lean file that is not UTF-8) is a
rejection.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterable
from fractions import Fraction
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from pycert.certify.documents import parse_certificate
from pycert.certify.manifest import MANIFEST_NAME, manifest_rejection, read_manifest
from pycert.certify.schema import Certificate, InputFile, decimal_of
from pycert.core.errors import InputError, Rejected, Rejection
from pycert.core.files import file_sha256
from pycert.core.resources import library_dir, library_sha256
from pycert.families import FAMILIES
from pycert.lean.sources import Declaration, scan_declarations


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
            failures.append(Rejection.mismatch(f"theorems[{i}]", "a theorem declared under lean/",
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
    known_by = FAMILIES[cert.family].known_by
    for fig in cert.figures:
        if fig.known_by != known_by.get(fig.name, ""):
            failures.append(Rejection.mismatch(f"figures.{fig.name}.known_by", repr(known_by.get(fig.name, "")),
                                               repr(fig.known_by)))
        if fig.decimal != decimal_of(fig.value):
            failures.append(Rejection.mismatch(f"figures.{fig.name}.decimal", decimal_of(fig.value), fig.decimal))
    return failures


def _check_manifest(path: Path, data: bytes, manifest: Path, result: VerifyResult) -> None:
    entries = read_manifest(manifest)
    result.checked.append("manifest")
    if rejection := manifest_rejection(entries, path.name, data, manifest):
        result.failures.append(rejection)


def _check_inputs(cert: Certificate, root: Path, result: VerifyResult) -> bool:
    """Hash every input; True when all are present and match. A derived input need not be on disk:
    ``_check_derived_inputs`` regenerates it from the inputs it derives from and compares hashes."""
    result.checked.append("inputs")
    clean = True
    for i, inp in enumerate(cert.inputs):
        p = root / inp.path
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
    return clean


def regenerate(cert: Certificate, inp: InputFile, root: Path) -> bytes:
    """The bytes a derived input must have; raises :class:`Rejected` when they cannot be made."""
    if not any(o.role == inp.derived_from for o in cert.inputs):
        raise Rejected(Rejection.mismatch(f"inputs[{inp.path}].derived_from", f"a {cert.family} {inp.role} file "
                                          "pycert can regenerate", f"{inp.role} derived from {inp.derived_from}"))
    return FAMILIES[cert.family].regenerate(cert, inp, root)


def _check_derived(cert: Certificate, i: int, inp: InputFile, root: Path) -> tuple[bytes, Rejection | None]:
    try:
        data = regenerate(cert, inp, root)
    except Rejected as err:
        return b"", err.rejection
    except InputError as err:
        return b"", Rejection.mismatch(f"inputs[{i}] ({inp.path})", f"regenerable from the {inp.derived_from}", str(err))
    actual = hashlib.sha256(data).hexdigest()
    if actual != inp.sha256:
        return b"", Rejection.mismatch(f"inputs[{i}].sha256 ({inp.path}, regenerated from the {inp.derived_from})",
                                       actual, inp.sha256)
    return data, None


def _check_derived_inputs(cert: Certificate, root: Path, result: VerifyResult) -> dict[str, bytes]:
    """Regenerate every derived input; returns path -> bytes for those whose hash matches."""
    good: dict[str, bytes] = {}
    if not any(inp.derived_from for inp in cert.inputs):
        return good
    result.checked.append("derived inputs")
    for i, inp in enumerate(cert.inputs):
        if inp.derived_from:
            data, err = _check_derived(cert, i, inp, root)
            if err:
                result.failures.append(err)
            else:
                good[inp.path] = data
    return good


def _check_figures(cert: Certificate, root: Path, result: VerifyResult) -> None:
    result.checked.append("figures")
    try:
        recomputed = FAMILIES[cert.family].recompute(cert, root)
    except Rejected as err:
        result.failures.append(err.rejection)
        return
    except FileNotFoundError as err:
        result.missing.append(str(err))
        return
    except InputError as err:
        result.errors.append(str(err))
        return
    result.failures += compare_figures(cert, recomputed)


def library_for(root: Path) -> Path:
    """The Lean library a certificate under ``root`` is checked against: the root's own ``lean/`` (a
    checkout), else the installed pycert's."""
    return root / "lean" if (root / "lean").is_dir() else library_dir()


def _check_library(cert: Certificate, library: Path, result: VerifyResult) -> None:
    result.checked.append("library")
    actual = library_sha256(library)
    if actual != cert.provenance.library_sha256:
        result.failures.append(Rejection.mismatch(
            f"provenance.library_sha256 (verify runs with the library at {library})", actual,
            cert.provenance.library_sha256, reason="library-mismatch"))


def _lean_sources(cert: Certificate, root: Path) -> list[Path]:
    return sorted(library_for(root).rglob("*.lean")) + [root / i.path for i in cert.inputs if i.role == "lean"]


def _kernel_files(cert: Certificate, root: Path, regenerated: dict[str, bytes], scratch: Path) -> list[Path]:
    """The certificate's Lean files: on disk, or as regenerated when nobody kept a derived one."""
    files = []
    for inp in cert.inputs:
        if inp.role != "lean":
            continue
        path = root / inp.path
        if not path.is_file():
            if inp.path not in regenerated:
                continue  # it did not regenerate to its hash: already a failure, nothing to check
            path = scratch / Path(inp.path).name
            path.write_bytes(regenerated[inp.path])
        files.append(path)
    return files


def _check_kernel(cert: Certificate, root: Path, decls: dict[str, Declaration], regenerated: dict[str, bytes],
                  backend: str | None, timeout: float, result: VerifyResult) -> None:
    from pycert.lean import build

    library = library_for(root)
    in_library = any(Path(decls[t].file).is_relative_to(library) for t in cert.theorems if t in decls)
    with tempfile.TemporaryDirectory(prefix="pycert-verify-") as scratch:
        files = _kernel_files(cert, root, regenerated, Path(scratch))
        res = build.build(library=library if in_library else None, files=files, backend=backend, timeout=timeout)
    result.checked.append("kernel")
    cached = sum(r.cached for r in res.results)
    if cached:
        result.notes.append(f"kernel: {cached} of {len(res.results)} module results came from the build cache")
    for r in res.results:
        if not r.ok:
            first = r.failures[0].render() if r.failures else (r.detail or r.status)
            result.failures.append(Rejection.mismatch(f"kernel[{r.module}]", "Lean accepts the file", f"{r.status}: {first}"))


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


def verify_certificate(path: Path, root: Path, manifest: Path | None = None, kernel: bool = False,
                       backend: str | None = None, timeout: float = 1800.0) -> VerifyResult:
    result = VerifyResult(certificate=str(path), status="ok")
    cert = _read_checked(path, manifest or path.parent / MANIFEST_NAME, result)
    if cert is None:
        return _finish(result)
    regenerated: dict[str, bytes] = {}
    if _check_inputs(cert, root, result):
        _check_figures(cert, root, result)
        regenerated = _check_derived_inputs(cert, root, result)
    _check_library(cert, library_for(root), result)
    decls = library_declarations((p for p in _lean_sources(cert, root) if p.is_file()), result.failures)
    result.checked.append("theorems")
    result.failures += check_theorems(cert.theorems, decls)
    result.checked.append("audit")
    if cert.audit.verdict == "fail":
        result.failures.append(Rejection.mismatch("audit.verdict", "pass", "fail"))
    elif cert.audit.verdict == "skipped":
        result.notes.append("audit: skipped when the certificate was made")
    if kernel and not result.missing and not result.errors:
        _check_kernel(cert, root, decls, regenerated, backend, timeout, result)
    return _finish(result)


def _finish(result: VerifyResult) -> VerifyResult:
    if result.errors:
        result.status = "input-error"
    else:
        result.status = "missing-input" if result.missing else ("rejected" if result.failures else "ok")
    return result
