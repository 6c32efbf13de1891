"""Offline re-derivation of a certificate from the certificate alone plus the inputs it names.

``verify_certificate`` trusts nothing the certificate says about itself, and reads its directory only
through the gate (:mod:`pycert.core.gate`: plain files, no link, sizes and counts bounded before any work).
It checks the manifest entry and the schema (which bounds every parameter and the input count before any
arithmetic), locates every input inside the certificate's directory (an external one where the user
handed it in, else beside that directory, where it was proved from or in a checkout's shared trace folder:
:class:`~pycert.certify.inputs.Locator`), hashes it,
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
``not-checked`` (exit 3) when a check did not run to its end (out of memory or time, or pycert itself
failed: never a rejection), ``missing-input``/``input-error`` (exit 2) only when nothing else was said, and
``not-here`` (exit 5) when the only thing that stopped it is a trace from outside its directory that is not on
this machine.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from pycert.audit.per_theorem import recorded_audit_rejections
from pycert.certify.documents import not_a_certificate, parse_certificate
from pycert.certify.inputs import Locator
from pycert.certify.manifest import MANIFEST_NAME, lists, manifest_rejection, read_manifest
from pycert.certify.theorems import headline_literals, theorem_rejections
from pycert.core.errors import InputError, NotHere, Rejected, Rejection, ResourcesExhausted
from pycert.core.files import certificate_root, time_box
from pycert.core.gate import Source, beside, inside, named
from pycert.core.limits import MAX_JSON_BYTES
from pycert.core.memo import session
from pycert.core.resources import library_dir, library_sha256
from pycert.core.schema import Certificate, decimal_of, declared_inputs
from pycert.families import FAMILIES
from pycert.families.base import SHOWN

NOT_RERUN = "kernel and axiom audit: not re-run (run verify --kernel to rebuild and re-audit the named theorems)"


def own_library() -> Path:
    """The Lean library this verifier trusts: its own (the checkout's, or the installed package's),
    never a certificate's neighbours."""
    return library_dir()


class VerifyResult(BaseModel):
    certificate: str
    id: str | None = None
    status: Literal["ok", "rejected", "not-checked", "missing-input", "input-error", "not-here"]
    failures: list[Rejection] = []
    unchecked: list[str] = []
    """Checks that did not run to a verdict: out of memory or time, or pycert failed (exit 3, not a rejection)."""
    missing: list[str] = []
    not_here: list[str] = []
    """External inputs (traces from outside the directory) on this machine nowhere verify looks (exit 5)."""
    errors: list[str] = []
    """Inputs that are there but malformed (exit 2, like a missing one)."""
    checked: list[str] = []
    """The checks that ran (a reader can see that nothing was silently skipped)."""
    notes: list[str] = []

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def first_problem(self) -> str | None:
        """One line: the first rejection (and how many more), else the first input that stopped the check;
        None when nothing did."""
        if self.failures:
            more = len(self.failures) - 1
            return self.failures[0].render() + (f" (and {more} more: pycert verify names them all)" if more else "")
        return (self.unchecked or self.errors or [f"missing input: {m}" for m in self.missing] or self.not_here
                or [None])[0]


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


def _check_manifest(path: Path, data: bytes, manifest: Source, result: VerifyResult) -> None:
    entries = read_manifest(manifest)
    result.checked.append("manifest")
    if rejection := manifest_rejection(entries, path.name, data, manifest):
        result.failures.append(rejection)


def _check_required(cert: Certificate, result: VerifyResult) -> bool:
    """The inputs the certificate names against those its family derives from its parameters and primary
    inputs: a missing, extra or relabelled input is a rejection. Nothing a certificate says decides what
    verify checks."""
    result.checked.append("required inputs")
    wrong = FAMILIES[cert.family].required(cert.parameters, cert.inputs)
    result.failures += wrong
    return not wrong


def _check_primary(cert: Certificate, where: Locator, result: VerifyResult) -> bool:
    """Locate and hash every primary input (a trace, an instance file): a regular file, inside the root
    unless external, its sha256 as recorded. True when all are there and match."""
    result.checked.append("inputs")
    clean = True
    claim = FAMILIES[cert.family]
    for i, inp in enumerate(claim.primary_inputs(cert.inputs)):
        try:  # the size is checked before a byte is read: a 2 GB log is refused, not hashed
            actual = where.locate(inp).sha256(f"a {inp.role} file", claim.input_limit(inp.role))
        except NotHere as err:  # a trace from outside the directory, not on this machine: not checked here
            result.not_here.append(f"inputs[{i}] ({inp.path}): {err.message}")
            clean = False
            continue
        except InputError as err:  # a file of the directory not found is missing; an escaping path is malformed
            missing = err.message == "no such file"
            at = f" ({err.where})" if err.where and err.where != inp.path else ""
            (result.missing if missing else result.errors).append(f"inputs[{i}] ({inp.path}): {err.message}{at}")
            clean = False
            continue
        if actual != inp.sha256:
            # expected: the file given; found: what the certificate records (read the other way round by a
            # stranger who had just run sha256sum, so the detail says which is which)
            r = Rejection.mismatch(f"inputs[{i}].sha256 ({inp.path})", actual, inp.sha256)
            result.failures.append(r.model_copy(update={"detail": f"the file has sha256 {actual}, the certificate "
                                                        f"records {inp.sha256}: another file, or another certificate"}))
            clean = False
    return clean


def _regenerate(cert: Certificate, where: Locator, timeout: float, result: VerifyResult) -> dict[str, bytes] | None:
    """Every derived Lean file (the instance and the shards it imports), written again from the primary
    inputs by the one function prove wrote them with, each sha256 compared with the certificate's; a copy
    kept beside the certificate must equal it too. The files by path, or None when one differs."""
    result.checked.append("instance regenerated")
    claim = FAMILIES[cert.family]
    inst = claim.instance(cert.parameters, claim.primary_inputs(cert.inputs))
    files = None
    try:
        with time_box(timeout, f"regenerating {inst.path}"), not_checked(result, f"regenerating {inst.path}"):
            files = claim.derived_files(cert.parameters, cert.inputs, where)
    except Rejected as err:
        result.failures.append(err.rejection)
        return None
    except InputError as err:  # names the input at fault (a trace's file:line), not the file derived from it
        result.errors.append(str(err))
        return None
    if files is None:
        return None
    recorded = {i.path: i for i in cert.inputs if i.derived_from is not None and i.role == "lean"}
    extra, absent, other, copies, unread = [], [], [], [], []
    for path in sorted(recorded.keys() - files.keys()):
        extra.append(Rejection.mismatch(f"inputs[{path}]", f"no such derived file (pycert derives {len(files)} from the "
                                        f"{inst.derived_from})", "one", reason="extra-input"))
    for path, data in files.items():
        if path not in recorded:
            absent.append(Rejection.mismatch("inputs", f"lean {path} derived from the {inst.derived_from}", "absent",
                                             reason="missing-input"))
        elif (actual := hashlib.sha256(data).hexdigest()) != recorded[path].sha256:
            other.append(Rejection.mismatch(f"inputs[{path}].sha256 (regenerated from the {inst.derived_from})", actual,
                                            recorded[path].sha256))
        else:
            try:  # a name no file system holds (a trace's long name in a piece's) is this certificate's error alone
                kept = inside(where.root.resolve(), path)
                if not kept.exists():
                    continue
                same = kept.read("a Lean file", len(data)) == data
            except InputError as err:
                if "above the limit" not in err.message:  # a link, a FIFO: not a copy that could be compared
                    unread.append(str(err))
                    continue
                same = False  # longer than what pycert regenerates: other bytes
            if not same:
                copies.append(Rejection.mismatch(f"{path} (the copy beside the certificate)",
                                                 "the bytes pycert regenerates", "other bytes"))
    # a certificate names up to MAX_INPUTS derived files: what verify says of them is linear in nothing but SHOWN
    for found, what in ((extra, "derived files that pycert does not derive"), (absent, "derived files not named"),
                        (other, "derived files with other bytes"), (copies, "copies beside the certificate with other bytes")):
        result.failures += found[:SHOWN] + ([Rejection(subject="inputs", reason=found[0].reason, detail=(
            f"and {len(found) - SHOWN:,} more {what} ({len(found):,} in all)"))] if len(found) > SHOWN else [])
    more = f"and {len(unread) - SHOWN:,} more copies beside the certificate that could not be read ({len(unread):,} in all)"
    result.errors += unread[:SHOWN] + ([more] if len(unread) > SHOWN else [])
    clean = not (extra or absent or other)
    return files if clean else None


def recompute(cert: Certificate, literals: list[int], where: Locator, timeout: float,
              result: VerifyResult) -> dict[str, Fraction] | None:
    """Every figure from the headline's literals and the inputs (the claim's one function)."""
    claim = FAMILIES[cert.family]
    try:
        kernel = claim.kernel_figures(literals, claim.headline(cert.parameters, cert.inputs), cert.parameters)
        with time_box(timeout, "recomputing the figures"), not_checked(result, "recomputing the figures"):
            return claim.figures(cert.parameters, kernel, cert.inputs, where)
    except Rejected as err:
        result.failures.append(err.rejection)
    except InputError as err:
        result.errors.append(err.message)
    return None


@contextlib.contextmanager
def not_checked(result: VerifyResult, doing: str) -> Iterator[None]:
    """A check that stopped for want of memory or time, or because pycert itself failed, as what it is: not
    checked (exit 3), never a rejection and never a traceback. The block's value is then None."""
    try:
        yield
    except ResourcesExhausted as err:
        result.unchecked.append(f"not checked: {err.message}")
    except MemoryError:
        result.unchecked.append(f"not checked: out of memory while {doing}")
    except RecursionError:
        result.unchecked.append(f"not checked: nested too deep while {doing}")
    except (Rejected, InputError):
        raise
    except Exception as exc:  # a crash is pycert's failure, not the certificate's: said in one line, not rejected
        result.unchecked.append(f"not checked: pycert failed while {doing} ({type(exc).__name__}: "
                                f"{' '.join(str(exc).split())[:200]}; a bug in pycert)")


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


def _check_theorems(cert: Certificate, library: Path, instance: bytes | None, result: VerifyResult) -> None:
    result.checked.append("theorems")
    result.failures += theorem_rejections(cert, library, instance)


def _check_audit_record(cert: Certificate, result: VerifyResult) -> None:
    result.checked.append("audit record")
    result.failures += recorded_audit_rejections(cert.audit, cert.theorems)


def _read_checked(path: Path, manifest: Source, result: VerifyResult) -> Certificate | None:
    """The certificate, once its bytes are checked against the manifest and parsed; None when that failed."""
    try:
        source = beside(named(path))
        if not source.exists():
            result.missing.append(f"{path} (no such file)")
            return None
        data = source.read("a certificate file", MAX_JSON_BYTES)
    except InputError as err:
        result.errors.append(err.message)
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
        if result.failures or lists(manifest, path.name):  # the manifest names a certificate here: it was tampered with
            result.failures.append(Rejection.mismatch("(json)", "a certificate (a JSON object)", err.message))
        else:  # nothing vouches for these bytes: the input is malformed
            result.errors.append(err.message)
        return None
    except Rejected as err:
        result.failures.append(err.rejection)
        return None
    result.id = cert.id
    result.checked.append("schema")
    if path.name != cert.filename:  # the manifest and the page name a certificate by its id: one id, one file
        result.failures.append(Rejection.mismatch("id", path.name.removesuffix(".json"), cert.id))
    return cert


def _offline(path: Path, root: Path | None, manifest: Path | None, timeout: float, inputs: dict[str, Path] | None,
             library: Path) -> tuple[VerifyResult, Certificate | None, dict[str, bytes] | None]:
    """Every check that needs no Lean; the certificate and its regenerated Lean files, for ``--kernel``."""
    result = VerifyResult(certificate=str(path), status="ok")
    cert = _read_checked(path, named(manifest) if manifest else beside(named(path.parent / MANIFEST_NAME)), result)
    if cert is None:
        return result, None, None
    where = Locator(root=root or certificate_root(path.parent), external=dict(inputs or {}))
    instance = recomputed = derived = None
    claim = FAMILIES[cert.family]
    required_ok = _check_required(cert, result)
    primary_ok = required_ok and _check_primary(cert, where, result)
    one_each = not claim.primary_count_errors(cert.inputs)  # what the text, theorems and headline derive from
    if primary_ok and claim.instance(cert.parameters, claim.primary_inputs(cert.inputs)) is None:
        result.checked.append("figures")  # no Lean instance: every figure from the inputs
        recomputed = recompute(cert, [], where, timeout, result)
        if recomputed is not None:
            result.failures += compare_figures(cert, recomputed)
    elif primary_ok:
        derived = _regenerate(cert, where, timeout, result)
        instance = derived[claim.instance(cert.parameters, claim.primary_inputs(cert.inputs)).path] if derived else None
    if instance is not None:
        literals = headline_literals(cert, instance)
        if isinstance(literals, Rejection):
            result.failures.append(literals)
        else:
            result.checked.append("figures")
            recomputed = recompute(cert, literals, where, timeout, result)
            if recomputed is not None:
                result.failures += compare_figures(cert, recomputed)
    if one_each:
        result.checked.append("derived text")
        result.failures += check_derived_text(cert, recomputed or {f.name: f.value for f in cert.figures})
    _check_library(cert, library, result)
    if one_each:
        _check_theorems(cert, library, instance, result)
    _check_audit_record(cert, result)
    return result, cert, derived


def verify_certificates(paths: list[Path], root: Path | None = None, manifest: Path | None = None,
                        kernel: bool = False, backend: str | None = None, timeout: float = 1800.0,
                        inputs: dict[str, Path] | None = None, library: Path | None = None,
                        progress: Callable[[str], None] = lambda _m: None) -> list[VerifyResult]:
    """Every certificate offline; with ``kernel``, then one Lean build for all of them (the library,
    every regenerated instance, one statement probe) and one audit."""
    library = library or own_library()
    with session():  # the certificates of a curve regenerate one instance file: once
        done = [_offline(p, root, manifest, timeout, inputs, library) for p in paths]
    ready = []
    for result, cert, instance in done:
        if cert is None:
            continue
        lean_less = FAMILIES[cert.family].headline_predicate is None
        if not kernel:
            result.notes.append(NOT_RERUN)
        elif result.missing or result.errors or result.not_here or (instance is None and not lean_less):
            if cert is not None:
                result.notes.append("kernel and axiom audit: not re-run (an input is missing or malformed, or "
                                    "the instance did not regenerate)")
        else:
            ready.append((result, cert, instance))
    if ready:
        from pycert.certify.rebuild import rebuild_all  # the build and the audit: only under --kernel (start-up)

        for (result, cert, _), (failures, note) in zip(ready, rebuild_all([(c, i) for _, c, i in ready], library,
                                                                          backend, timeout, progress)):
            # a family with no Lean instance (an observation) has its library theorems rebuilt and audited, and
            # no headline whose figures the kernel could state
            lean_less = FAMILIES[cert.family].headline_predicate is None
            result.checked += ["kernel (the library)" if lean_less else "kernel", "audit", "statements",
                               *(() if lean_less else ("figures off the kernel",))]
            result.failures += failures
            result.notes.append(note)
    return [_finish(result) for result, _, _ in done]


def verify_certificate(path: Path, root: Path | None = None, manifest: Path | None = None, kernel: bool = False,
                       backend: str | None = None, timeout: float = 1800.0, inputs: dict[str, Path] | None = None,
                       library: Path | None = None, progress: Callable[[str], None] = lambda _m: None) -> VerifyResult:
    """:func:`verify_certificates` of one certificate."""
    return verify_certificates([path], root, manifest, kernel, backend, timeout, inputs, library, progress)[0]


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
    elif result.unchecked:
        result.status = "not-checked"
    elif result.errors:
        result.status = "input-error"
    else:
        result.status = "missing-input" if result.missing else "not-here" if result.not_here else "ok"
    return result
