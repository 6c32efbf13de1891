"""Offline re-derivation of a certificate from the certificate alone plus the inputs it names.

``verify_certificate`` checks, in order: the manifest entry beside the certificate, the schema, every
input's sha256, every figure (recomputed by the family's entry in :data:`RECOMPUTE`), the decimals,
that every named theorem is declared in the Lean sources, the audit verdict, and with ``kernel=True``
re-runs the Lean check. Each disagreement is a :class:`Failure` whose ``expected`` is the reference
(the manifest, the file on disk, the recomputed value, the library) and ``found`` what the certificate
holds. A missing input makes the result ``missing-input`` (exit 2) rather than ``rejected`` (exit 1),
and so does a malformed one (``input-error``: a certificate that is not a JSON object, a directory
where a file should be); an input whose hash matches but which cannot be what it claims to be (a
Lean file that is not UTF-8) is a rejection.
"""

from __future__ import annotations

import hashlib
import importlib
import re
import tempfile
from collections.abc import Callable, Iterable
from fractions import Fraction
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from pycert import claims
from pycert.lean.emit import packed_trace as lean_trace
from pycert.certify.schema import (
    MANIFEST_NAME,
    Certificate,
    InputFile,
    Mismatch,
    decimal_of,
    parse_certificate,
    read_manifest,
)
from pycert.core.errors import InputError
from pycert.analysis.cachesim import trace_stats
from pycert.data.traces import Trace, file_sha256, read_trace

Recompute = Callable[[Certificate, Path], dict[str, Fraction]]
"""(certificate, repository root for resolving input paths) -> figure name -> exact value."""


class Failure(BaseModel):
    field: str
    expected: str
    found: str

    @classmethod
    def of(cls, err: Mismatch) -> Failure:
        return cls(field=err.field, expected=err.expected, found=err.found)

    def render(self) -> str:
        return f"{self.field}: expected {self.expected}, found {self.found}"


class VerifyResult(BaseModel):
    certificate: str
    id: str | None = None
    status: Literal["ok", "rejected", "missing-input", "input-error"]
    failures: list[Failure] = []
    missing: list[str] = []
    errors: list[str] = []
    """Inputs that are there but malformed (exit 2, like a missing one)."""
    checked: list[str] = []
    """The checks that ran (a reader can see that nothing was silently skipped)."""
    notes: list[str] = []

    @property
    def ok(self) -> bool:
        return self.status == "ok"


# ---------------------------------------------------------------------------- figure math


def first_touch_figures(c: int, n: int) -> dict[str, Fraction]:
    """The share of ``n`` tokens that fall in whole chunks of ``c``: cut = c*(n//c)/n."""
    return {"cut": Fraction(c * (n // c), n)}


def isolation_figures(tenants: int, n: int) -> dict[str, Fraction]:
    """Arbitrary shared-read rights over ``n`` blocks for ``T`` tenants: 2^(T*n) states, T*n bits;
    a single owner per block: T^n states, ceil(n*log2 T) bits (exactly n*log2 T when T is a power of 2).
    """
    single_owner_states = tenants**n
    return {
        "states_floor": Fraction(2 ** (tenants * n)),
        "bits_floor": Fraction(tenants * n),
        "single_owner_states": Fraction(single_owner_states),
        "single_owner_bits": Fraction((single_owner_states - 1).bit_length()),
    }


def ceiling_figures(trace: Trace) -> dict[str, Fraction]:
    """The trace engine's capacity-free figures: refs, distinct, ceiling = 1 - distinct/refs (only first
    references must miss). Recomputed by the same code that made them, so a changed engine shows up."""
    if trace.n_refs == 0:
        raise Mismatch("inputs[trace]", "a trace with at least one block reference", "an empty trace")
    stats = trace_stats(trace)
    return {"refs": Fraction(stats.refs), "distinct": Fraction(stats.distinct), "ceiling": stats.ceiling.fraction()}


# ---------------------------------------------------------------------------- recomputers


def int_parameter(cert: Certificate, name: str, minimum: int = 1) -> int:
    value = cert.parameters.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise Mismatch(f"parameters.{name}", f"an integer >= {minimum}", "absent" if value is None else repr(value))
    return value


def input_path(cert: Certificate, role: str, root: Path) -> Path:
    """The one input of ``role``, resolved against the repository root."""
    paths = [i.path for i in cert.inputs if i.role == role]
    if len(paths) != 1:
        raise Mismatch(f"inputs[role={role}]", f"exactly one {role} input", f"{len(paths)}")
    return root / paths[0]


def _recompute_first_touch(cert: Certificate, root: Path) -> dict[str, Fraction]:
    return first_touch_figures(int_parameter(cert, "c"), int_parameter(cert, "n"))


def _recompute_isolation(cert: Certificate, root: Path) -> dict[str, Fraction]:
    return isolation_figures(int_parameter(cert, "T"), int_parameter(cert, "n"))


def _recompute_ceiling(cert: Certificate, root: Path) -> dict[str, Fraction]:
    return ceiling_figures(read_trace(input_path(cert, "trace", root)))


Regenerate = Callable[[Certificate, InputFile, Path], bytes]
"""(certificate, the derived input, repository root) -> the bytes that input must have."""


def _regenerate_ceiling_lean(cert: Certificate, inp: InputFile, root: Path) -> bytes:
    trace = read_trace(input_path(cert, "trace", root))
    encoding = cert.parameters.get("lean_encoding")
    if encoding != lean_trace.ENCODING:
        raise Mismatch("parameters.lean_encoding", repr(lean_trace.ENCODING), repr(encoding))
    return lean_trace.emit_instance(trace.refs, trace.sha256, Path(inp.path).stem).encode()


REGENERATE: dict[tuple[str, str], Regenerate] = {("ceiling", "lean"): _regenerate_ceiling_lean}
"""(family, role) -> how a ``derived_from`` input of that role is rebuilt from the certificate's inputs."""


RECOMPUTE: dict[str, Recompute] = {
    "first-touch": _recompute_first_touch,
    "isolation": _recompute_isolation,
    "ceiling": _recompute_ceiling,
}
"""Family -> recomputer. Families defined elsewhere register here or are named in ``_PROVIDERS``."""

_PROVIDERS: dict[str, tuple[str, str]] = {"pooling": ("solvers.pipeline", "recompute")}
"""Family -> (module, function) imported on first use, so verify does not load solvers otherwise."""


def recomputer(family: str) -> Recompute | None:
    if family not in RECOMPUTE and family in _PROVIDERS:
        module, attr = _PROVIDERS[family]
        try:
            RECOMPUTE[family] = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError):
            return None
    return RECOMPUTE.get(family)


# ---------------------------------------------------------------------------- Lean declarations


class Declaration(BaseModel):
    name: str
    kind: str
    private: bool
    file: str
    line: int


_DECL = re.compile(
    r"^\s*(?:@\[[^\]]*\]\s*)*(?P<mods>(?:(?:private|protected|public|noncomputable|partial|unsafe|nonrec)\s+)*)"
    r"(?P<kind>theorem|lemma|def|abbrev|instance|structure|class|inductive|axiom|opaque)\b\s*(?P<name>[^\s:({\[]+)?"
)
_OPEN_IN = re.compile(r"^\s*open\b.*?\bin\b\s*")
_NAMESPACE = re.compile(r"^\s*namespace\s+(\S+)")
_SECTION = re.compile(r"^\s*(?:(?:public|private|noncomputable|@\[[^\]]*\])\s+)*section\b")
_END = re.compile(r"^\s*end(?:\s+(\S+))?\s*$")


def strip_comments(source: str) -> str:
    """Blank out (nested) block comments, line comments and string literals, keeping line numbers."""
    out: list[str] = []
    i, depth, n = 0, 0, len(source)
    while i < n:
        two = source[i:i + 2]
        if depth:
            if two == "/-":
                depth, i = depth + 1, i + 2
            elif two == "-/":
                depth, i = depth - 1, i + 2
            else:
                out.append("\n" if source[i] == "\n" else " ")
                i += 1
        elif two == "/-":
            depth, i = 1, i + 2
            out.append("  ")
        elif two == "--":
            j = source.find("\n", i)
            i = n if j < 0 else j
        elif source[i:i + 3] == "'\"'":  # the character literal '"' opens no string
            out.append(source[i:i + 3])
            i += 3
        elif source[i] == '"':
            j = i + 1
            while j < n and source[j] != '"':
                j += 2 if source[j] == "\\" else 1
            out.append('""' + "\n" * source.count("\n", i, j))
            i = j + 1
        else:
            out.append(source[i])
            i += 1
    return "".join(out)


def scan_declarations(source: str, file: str = "") -> list[Declaration]:
    """Top-level declarations with their namespace-qualified names (``namespace``/``section``/``end``)."""
    scopes: list[tuple[str, str]] = []  # ("ns", component) or ("section", "")
    found: list[Declaration] = []
    for lineno, raw in enumerate(strip_comments(source).splitlines(), 1):
        line = _OPEN_IN.sub("", raw, count=1)
        if m := _NAMESPACE.match(line):
            scopes += [("ns", part) for part in m.group(1).split(".")]
        elif _SECTION.match(line):
            scopes.append(("section", ""))
        elif m := _END.match(line):
            if scopes and scopes[-1][0] == "section":
                scopes.pop()
            else:
                del scopes[len(scopes) - len(m.group(1).split(".")) if m.group(1) else len(scopes) - 1:]
        elif (m := _DECL.match(line)) and m.group("name"):
            name = m.group("name").replace("«", "").replace("»", "").removesuffix(".")  # `foo.{u}`: universes
            if name.startswith("_root_."):
                full = name.removeprefix("_root_.")
            else:
                full = ".".join([c for kind, c in scopes if kind == "ns"] + [name])
            found.append(Declaration(name=full, kind=m.group("kind"), private="private" in m.group("mods").split(),
                                     file=file, line=lineno))
    return found


def library_declarations(files: Iterable[Path], failures: list[Failure] | None = None) -> dict[str, Declaration]:
    """Declarations of every file; one that is not UTF-8 (so not Lean source) declares nothing and is
    a failure in ``failures`` (raised as a :class:`Mismatch` when none is given)."""
    decls: dict[str, Declaration] = {}
    for path in files:
        try:
            source = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            failure = Failure(field=f"lean source {path}", expected="UTF-8 Lean source",
                              found=f"undecodable bytes at offset {exc.start}")
            if failures is None:
                raise Mismatch(failure.field, failure.expected, failure.found) from None
            failures.append(failure)
            continue
        for d in scan_declarations(source, str(path)):
            decls.setdefault(d.name, d)
    return decls


def check_theorems(names: list[str], decls: dict[str, Declaration]) -> list[Failure]:
    failures = []
    for i, name in enumerate(names):
        d = decls.get(name)
        if d is None:
            failures.append(Failure(field=f"theorems[{i}]", expected="a theorem declared under lean/", found=f"{name} (no such declaration)"))
        elif d.kind not in ("theorem", "lemma") or d.private:
            failures.append(Failure(field=f"theorems[{i}]", expected="a public theorem",
                                    found=f"{'private ' if d.private else ''}{d.kind} {name} ({d.file}:{d.line})"))
    return failures


# ---------------------------------------------------------------------------- the check


def compare_figures(cert: Certificate, recomputed: dict[str, Fraction]) -> list[Failure]:
    failures = []
    have = cert.figure_map()
    for name, value in recomputed.items():
        fig = have.get(name)
        if fig is None:
            failures.append(Failure(field=f"figures.{name}", expected=str(value), found="absent"))
        elif fig.value != value:
            failures.append(Failure(field=f"figures.{name}", expected=str(value), found=str(fig.value)))
    for name in have.keys() - recomputed.keys():
        failures.append(Failure(field=f"figures.{name}", expected="absent (nothing recomputes it)", found=have[name].render()))
    known_by = claims.FAMILIES[cert.family].known_by if cert.family in claims.FAMILIES else {}
    for fig in cert.figures:
        if fig.known_by != known_by.get(fig.name, ""):
            failures.append(Failure(field=f"figures.{fig.name}.known_by", expected=repr(known_by.get(fig.name, "")),
                                    found=repr(fig.known_by)))
        if fig.decimal != decimal_of(fig.value):
            failures.append(Failure(field=f"figures.{fig.name}.decimal", expected=decimal_of(fig.value), found=fig.decimal))
    return failures


def _check_manifest(path: Path, data: bytes, manifest: Path, result: VerifyResult) -> None:
    entries = read_manifest(manifest)
    result.checked.append("manifest")
    want = entries.get(path.name)
    got = hashlib.sha256(data).hexdigest()
    if want is None:
        result.failures.append(Failure(field=f"manifest[{path.name}]", expected=f"an entry in {manifest}", found="none"))
    elif want != got:
        result.failures.append(Failure(field=f"manifest[{path.name}].sha256", expected=want, found=got))


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
            continue
        if not p.is_file():
            if inp.derived_from is None:
                result.missing.append(str(p))
                clean = False
            continue
        actual = file_sha256(p)
        if actual != inp.sha256:
            result.failures.append(Failure(field=f"inputs[{i}].sha256 ({inp.path})", expected=actual, found=inp.sha256))
            clean = False
    return clean


def _check_derived_inputs(cert: Certificate, root: Path, result: VerifyResult) -> dict[str, bytes]:
    """Regenerate every derived input; returns path -> bytes for those whose hash matches."""
    good: dict[str, bytes] = {}
    if not any(inp.derived_from for inp in cert.inputs):
        return good
    result.checked.append("derived inputs")
    for i, inp in enumerate(cert.inputs):
        if not inp.derived_from:
            continue
        data, err = _check_derived(cert, i, inp, root)
        if err:
            result.failures.append(err)
        else:
            good[inp.path] = data
    return good


def regenerate(cert: Certificate, inp: InputFile, root: Path) -> bytes:
    """The bytes a derived input must have; raises :class:`Mismatch` when they cannot be made."""
    fn = REGENERATE.get((cert.family, inp.role))
    if fn is None or not any(o.role == inp.derived_from for o in cert.inputs):
        raise Mismatch(f"inputs[{inp.path}].derived_from", f"a {cert.family} {inp.role} file pycert can regenerate",
                       f"{inp.role} derived from {inp.derived_from}")
    return fn(cert, inp, root)


def _check_derived(cert: Certificate, i: int, inp: InputFile, root: Path) -> tuple[bytes, Failure | None]:
    try:
        data = regenerate(cert, inp, root)
    except Mismatch as err:
        return b"", Failure.of(err)
    except InputError as err:
        return b"", Failure(field=f"inputs[{i}] ({inp.path})", expected=f"regenerable from the {inp.derived_from}",
                            found=str(err))
    actual = hashlib.sha256(data).hexdigest()
    if actual != inp.sha256:
        return b"", Failure(field=f"inputs[{i}].sha256 ({inp.path}, regenerated from the {inp.derived_from})",
                            expected=actual, found=inp.sha256)
    return data, None


def _check_figures(cert: Certificate, root: Path, result: VerifyResult) -> None:
    fn = recomputer(cert.family)
    if fn is None:
        result.failures.append(Failure(field="family", expected="a family with a registered recomputer",
                                       found=f"{cert.family} (none registered)"))
        return
    result.checked.append("figures")
    try:
        recomputed = fn(cert, root)
    except Mismatch as err:
        result.failures.append(Failure.of(err))
        return
    except FileNotFoundError as err:
        result.missing.append(str(err))
        return
    except InputError as err:
        result.errors.append(str(err))
        return
    result.failures += compare_figures(cert, recomputed)


def _lean_sources(cert: Certificate, root: Path) -> list[Path]:
    library = sorted((root / "lean").rglob("*.lean")) if (root / "lean").is_dir() else []
    return library + [root / i.path for i in cert.inputs if i.role == "lean"]


def _check_kernel(cert: Certificate, root: Path, decls: dict[str, Declaration], regenerated: dict[str, bytes],
                  backend: str | None, timeout: float, result: VerifyResult) -> None:
    from pycert.lean import build as kernel

    library = root / "lean"
    in_library = any(Path(decls[t].file).is_relative_to(library) for t in cert.theorems if t in decls)
    with tempfile.TemporaryDirectory(prefix="pycert-verify-") as scratch:
        files = []
        for inp in cert.inputs:
            if inp.role != "lean":
                continue
            path = root / inp.path
            if not path.is_file():  # a derived file nobody kept: check what it regenerated to
                if inp.path not in regenerated:
                    continue  # it did not regenerate to its hash: already a failure, nothing to check
                path = Path(scratch) / Path(inp.path).name
                path.write_bytes(regenerated[inp.path])
            files.append(path)
        build = kernel.build(library=library if in_library else None, files=files, backend=backend,
                             timeout=timeout)
    result.checked.append("kernel")
    cached = sum(r.cached for r in build.results)
    if cached:
        result.notes.append(f"kernel: {cached} of {len(build.results)} module results came from the build cache")
    for r in build.results:
        if not r.ok:
            first = r.failures[0].render() if r.failures else (r.detail or r.status)
            result.failures.append(Failure(field=f"kernel[{r.module}]", expected="Lean accepts the file",
                                           found=f"{r.status}: {first}"))


def verify_certificate(path: Path, root: Path, manifest: Path | None = None, kernel: bool = False,
                       backend: str | None = None, timeout: float = 1800.0) -> VerifyResult:
    result = VerifyResult(certificate=str(path), status="ok")
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        result.errors.append("is a directory, not a certificate file")
        return _finish(result)
    except OSError as err:
        result.missing.append(f"{path} ({err.strerror})")
        return _finish(result)
    manifest = manifest or path.parent / MANIFEST_NAME
    try:
        _check_manifest(path, data, manifest, result)
    except InputError as err:
        (result.errors if manifest.exists() else result.missing).append(str(err))
    except Mismatch as err:
        result.failures.append(Failure.of(err))
    try:
        cert = parse_certificate(data, where=str(path))
    except InputError as err:
        if result.failures:  # the manifest vouches for other bytes: a tampered certificate, rejected
            result.failures.append(Failure(field="(json)", expected="a certificate (a JSON object)", found=err.message))
        else:  # nothing vouches for these bytes: the input is malformed
            result.errors.append(err.message)
        return _finish(result)
    except Mismatch as err:
        result.failures.append(Failure.of(err))
        return _finish(result)
    result.id = cert.id
    result.checked.append("schema")
    regenerated: dict[str, bytes] = {}
    if _check_inputs(cert, root, result):
        _check_figures(cert, root, result)
        regenerated = _check_derived_inputs(cert, root, result)
    decls = library_declarations((p for p in _lean_sources(cert, root) if p.is_file()), result.failures)
    result.checked.append("theorems")
    result.failures += check_theorems(cert.theorems, decls)
    result.checked.append("audit")
    if cert.audit.verdict == "fail":
        result.failures.append(Failure(field="audit.verdict", expected="pass", found="fail"))
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
