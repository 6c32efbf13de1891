"""The one way a certificate is made: :func:`assemble` turns a prepared claim, the kernel's and the
audit's answers and the pinned statements into a validated certificate. ``pycert prove`` calls it,
and so do the tests that need a genuine certificate."""

from __future__ import annotations

from pycert.certify.documents import certificate
from pycert.core.schema import (
    AuditInfo,
    BackendInfo,
    Certificate,
    Figure,
    Provenance,
    TheoremStatement,
)
from pycert.families.base import Prepared


def assemble(p: Prepared, backend: BackendInfo, audit: AuditInfo, statements: dict[str, TheoremStatement],
             provenance: Provenance) -> Certificate:
    """Everything the certificate says about itself is derived (:meth:`Claim.derive`), so verify can
    derive it again and compare; ``audit`` is the audit of its own theorems
    (:func:`pycert.audit.per_theorem.certificate_audit`)."""
    d = p.derived()
    return certificate(
        id=p.id, family=p.claim.name, claim=d.claim, theorems=list(d.theorems),
        statements={t: statements[t] for t in d.theorems}, parameters=p.parameters,
        inputs=p.inputs, figures=[Figure.of(v, name=k, known_by=d.known_by[k], evidence=d.evidence[k])
                                  for k, v in p.figures.items()],
        backend=backend, solver=p.solver, audit=audit, provenance=provenance, does_not_prove=list(d.does_not_prove),
    )
