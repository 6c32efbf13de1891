"""What plain verify checks of a certificate's theorems, from Lean sources alone: each named theorem a
public declaration of the verifier's own library (or the regenerated instance's headline), each pinned
signature the one its source declares, and the headline's literals, the figures the kernel checked."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pycert.core.errors import Rejected, Rejection
from pycert.core.gate import named
from pycert.core.limits import MAX_JSON_BYTES
from pycert.core.resources import library_files
from pycert.core.schema import Certificate
from pycert.families import FAMILIES
from pycert.lean.sources import (
    Declaration,
    library_signatures,
    scan_declarations,
    statement_literals,
    theorem_signatures,
)


def library_declarations(files: Iterable[Path], failures: list[Rejection] | None = None) -> dict[str, Declaration]:
    """Declarations of every file; one that is not UTF-8 (so not Lean source) declares nothing and is
    a rejection in ``failures`` (raised as :class:`Rejected` when none is given)."""
    decls: dict[str, Declaration] = {}
    for path in files:
        try:
            source = named(path).read("a Lean source file", MAX_JSON_BYTES).decode("utf-8")
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


def theorem_rejections(cert: Certificate, library: Path, instance: bytes | None) -> list[Rejection]:
    """Every named theorem but the headline must be a public declaration of the verifier's own library,
    and the headline one of the regenerated instance, each with the statement its source declares."""
    failures: list[Rejection] = []
    files = [path for rel, path in library_files(library) if rel.startswith("Pycert/")]
    headline = FAMILIES[cert.family].headline(cert.parameters, cert.inputs)
    failures += check_theorems([t for t in cert.theorems if t != headline], library_declarations(files, failures))
    signatures = library_signatures(library)
    if instance is not None:
        signatures.update(theorem_signatures(instance.decode("utf-8")))
    return failures + check_signatures(cert, signatures)


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


def headline_literals(cert: Certificate, source: bytes) -> list[int] | Rejection:
    """The literals of the regenerated instance's headline, from its source (plain verify)."""
    claim = FAMILIES[cert.family]
    name = claim.headline(cert.parameters, cert.inputs)
    signature = theorem_signatures(source.decode("utf-8")).get(name)
    if signature is None:
        return Rejection.mismatch(name, "a theorem of the regenerated instance", "no such theorem")
    predicate = claim.predicate(cert.parameters)
    stated = statement_literals(signature, predicate)
    if stated is None:
        return Rejection.mismatch(f"{name} (source)", f"a statement of {predicate}", signature)
    return stated
