"""The audit of one certificate's own theorems, cut from the audit of a whole build.

A certificate carries the axioms its named theorems reach (``axioms_by_theorem``), not everything the
build holds: ``pycert prove`` writes :func:`certificate_audit` of its build's report, and ``pycert
verify --kernel`` computes it again from its own build and compares (:func:`audit_rejections`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pycert.audit.graph import ALLOWED_AXIOMS
from pycert.core.errors import Rejection
from pycert.core.schema import AuditInfo

if TYPE_CHECKING:  # an annotation only: reading a certificate's audit record needs no olean reader
    from pycert.audit.axioms import AuditReport


def certificate_audit(report: AuditReport, theorems: Sequence[str]) -> AuditInfo:
    """Each named theorem's axioms; ``fail`` when one is missing, reaches an axiom off the allow-list
    (``sorryAx`` included) or has a finding of its own."""
    by_theorem = {t: report.axioms_by_theorem[t] for t in theorems if t in report.axioms_by_theorem}
    missing = [t for t in theorems if t not in by_theorem]
    offending = sorted({f"{t}: {a}" for t, axioms in by_theorem.items() for a in axioms if a not in ALLOWED_AXIOMS})
    findings = sorted({f"{f.subject}: {f.reason}" for f in report.findings if f.subject in theorems})
    problems = [f"{t}: not in the audited build" for t in missing] + offending + findings
    axioms = sorted({a for axioms in by_theorem.values() for a in axioms})
    detail = ("; ".join(problems) if problems else
              f"{len(theorems)} theorems audited, axioms: {', '.join(axioms) or 'none'}")
    return AuditInfo(verdict="fail" if problems else "pass", axioms=axioms, axioms_by_theorem=by_theorem,
                     detail=detail)


def recorded_audit_rejections(audit: AuditInfo, theorems: Sequence[str]) -> list[Rejection]:
    """What the certificate's own audit record says against itself (no build needed): a verdict other
    than pass, an axiom off the allow-list, a theorem without its entry, a union that is not the union."""
    out = []
    if audit.verdict != "pass":
        out.append(Rejection.mismatch("audit.verdict", "pass", audit.verdict))
    if sorted(audit.axioms_by_theorem) != sorted(theorems):
        out.append(Rejection.mismatch("audit.axioms_by_theorem", f"one entry per theorem ({', '.join(theorems)})",
                                      ", ".join(sorted(audit.axioms_by_theorem)) or "none"))
    for t, axioms in sorted(audit.axioms_by_theorem.items()):
        if bad := [a for a in axioms if a not in ALLOWED_AXIOMS]:
            out.append(Rejection.mismatch(f"audit.axioms_by_theorem[{t}]", "only propext, Classical.choice, "
                                          "Quot.sound", ", ".join(bad)))
    union = sorted({a for axioms in audit.axioms_by_theorem.values() for a in axioms})
    if audit.axioms != union:
        out.append(Rejection.mismatch("audit.axioms", repr(union), repr(audit.axioms)))
    return out


def audit_rejections(recorded: AuditInfo, rebuilt: AuditInfo) -> list[Rejection]:
    """The verifier's own audit against the certificate's: its verdict, then each theorem's axioms."""
    out = []
    if rebuilt.verdict != "pass":
        out.append(Rejection.mismatch("audit (re-run)", "pass", rebuilt.detail))
    for t, axioms in sorted(rebuilt.axioms_by_theorem.items()):
        if recorded.axioms_by_theorem.get(t) != axioms:
            out.append(Rejection.mismatch(f"audit.axioms_by_theorem[{t}] (re-run)", repr(axioms),
                                          repr(recorded.axioms_by_theorem.get(t))))
    return out
