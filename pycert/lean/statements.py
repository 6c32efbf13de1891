"""Each named theorem's statement, pinned: its source signature, what Lean prints for it, and the
digest of its kernel type (:class:`pycert.certify.schema.TheoremStatement`).

Lean prints every statement in one run: a small file ``import Pycert`` with one ``#check @Name`` a
line, checked against the library like an instance file (cached like one too).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from pycert.audit.statement import type_digests
from pycert.certify.schema import TheoremStatement
from pycert.core.errors import InputError
from pycert.lean.diagnostics import CheckResult
from pycert.lean.sources import theorem_signatures

CHECK_MODULE = "PycertStatements"


def library_signatures(library: Path) -> dict[str, str]:
    """Every theorem's source signature in the library under ``library`` (``lean/``)."""
    out: dict[str, str] = {}
    for path in sorted((library / "Pycert").rglob("*.lean")):
        for name, sig in theorem_signatures(path.read_text(encoding="utf-8")).items():
            out.setdefault(name, sig)
    return out


def check_source(names: Sequence[str]) -> str:
    return "import Pycert\n" + "".join(f"#check @{n}\n" for n in names)


def printed_statements(library: Path, names: Sequence[str], backend: object, timeout: float = 1800.0) -> dict[str, str]:
    """``name -> what #check @name prints``, whitespace normalised, from one Lean run."""
    return print_statements(library, names, backend, timeout)[0]


def print_statements(library: Path, names: Sequence[str], backend: object,
                     timeout: float = 1800.0) -> tuple[dict[str, str], list[CheckResult]]:
    """:func:`printed_statements`, and the build's verdicts (the cache may have answered them)."""
    from pycert.lean import build

    names = list(dict.fromkeys(names))
    with tempfile.TemporaryDirectory(prefix="pycert-statements-") as scratch:
        path = Path(scratch) / f"{CHECK_MODULE}.lean"
        path.write_text(check_source(names), encoding="utf-8")
        res = build.build(library=library, files=[path], backend=backend, timeout=timeout)
    [mine] = [r for r in res.results if r.module == CHECK_MODULE]
    if not mine.ok:
        first = mine.failures[0].render() if mine.failures else (mine.detail or mine.status)
        raise InputError(f"Lean could not print the statements: {first}")
    by_line = {d.line: " ".join(d.message.split()) for d in mine.diagnostics if d.severity == "info"}
    return {n: by_line[i] for i, n in enumerate(names, 2) if i in by_line}, res.results


def pin(library: Path, olean_dir: Path, modules: Sequence[str], names: Sequence[str], backend: object,
        timeout: float = 1800.0) -> dict[str, TheoremStatement]:
    """The pinned statement of each of ``names`` found in the built library (others are left out)."""
    sigs = library_signatures(library)
    digests = type_digests(olean_dir, modules, names)
    printed = printed_statements(library, names, backend, timeout)
    return {n: TheoremStatement(signature=sigs[n], statement=printed[n], type_sha256=digests[n])
            for n in names if n in sigs and n in digests and n in printed}
