"""Certifying recorded audits: every ``inputs/audit-*.jsonl`` under the certificate directory."""

from __future__ import annotations

from fractions import Fraction

from pycert.core.errors import Rejection
from pycert.core.gate import Source
from pycert.families.leak_audit import CLAIM, LOG_GLOB, AuditParams, headline, log_figures, read
from pycert.families.observations import RecordedLogs
from pycert.leak.audit_plan import AuditLog


class AuditProducer(RecordedLogs):
    summary = ("Certify every audit of a live server recorded in the certificate directory (pycert leak audit writes "
               "them): cross-tenant prefix-cache reuse measured from outside, observed, with the verdict re-derived "
               "from the log.")
    claim = CLAIM
    glob = LOG_GLOB

    def read(self, source: Source) -> AuditLog:
        return read(source)

    def parameters(self, log: AuditLog) -> AuditParams:
        return AuditParams.of(log.header)

    def figures(self, log: AuditLog) -> tuple[dict[str, Fraction], list[Rejection]]:
        return log_figures(log)

    def headline(self, figures: dict[str, Fraction]) -> str:
        return headline(figures)


PRODUCER = AuditProducer()
