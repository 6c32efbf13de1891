"""Each named theorem's statement, pinned: its source signature, what Lean prints for it, and the
digest of its kernel type (:class:`pycert.core.schema.TheoremStatement`).

Lean prints every statement in the same build that compiles the library: a small probe file
``import Pycert`` with one ``#check @Name`` a line (:func:`probe_source`) joins the build's graph like
an instance file (cached like one too), and :func:`printed_statements` reads its messages back. The
type digests come from the audit's one read of the compiled files
(:attr:`pycert.audit.axioms.AuditReport.type_sha256`).
"""

from __future__ import annotations

from collections.abc import Sequence

from pycert.core.errors import InputError
from pycert.lean.build import BuildResult
from pycert.lean.diagnostics import CheckResult

STATEMENTS_MODULE = "PycertStatements"


def probe_source(names: Sequence[str]) -> str:
    return "import Pycert\n" + "".join(f"#check @{n}\n" for n in dict.fromkeys(names))


def printed_statements(built: BuildResult, names: Sequence[str]) -> dict[str, str]:
    """``name -> what #check @name printed``, whitespace normalised, from the probe of :func:`probe_source`
    that ``built`` compiled (names it did not print are left out)."""
    mine = built.by_module().get(STATEMENTS_MODULE)
    if mine is None:
        raise InputError("the build ran no statement probe")
    if not mine.ok:
        first = mine.failures[0].render() if mine.failures else (mine.detail or mine.status)
        raise InputError(f"Lean could not print the statements: {first}")
    by_line = {d.line: " ".join(d.message.split()) for d in mine.diagnostics if d.severity == "info"}
    return {n: by_line[i] for i, n in enumerate(dict.fromkeys(names), 2) if i in by_line}


def printed_headline(result: CheckResult, name: str) -> dict[str, str]:
    """What an instance's own ``#check @name`` printed (its last line), whitespace normalised."""
    for d in reversed(result.diagnostics):
        text = " ".join(d.message.split())
        if d.severity == "info" and text.startswith(f"{name} :"):
            return {name: text}
    return {}
