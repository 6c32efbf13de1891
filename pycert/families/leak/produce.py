"""Certifying recorded observations: every log of the family's pattern under the certificate directory's
``inputs/`` (``leak-*.jsonl``; :class:`pycert.families.observations.RecordedLogs` does the work)."""

from __future__ import annotations

from fractions import Fraction

from pycert.core.errors import Rejection
from pycert.core.gate import Source
from pycert.families.leak import CLAIM, LOG_GLOB, LeakParams, headline, log_figures
from pycert.families.observations import RecordedLogs
from pycert.leak import log as leaklog


class LeakProducer(RecordedLogs):
    summary = ("Certify every leak run recorded in the certificate directory (pycert leak run writes "
               "inputs/leak-*.jsonl): one tenant reusing another's cached prompt on a real engine, and a per-tenant "
               "salt closing it, per arm, observed, with the exact Clopper-Pearson bound on the residual rate.")
    claim = CLAIM
    glob = LOG_GLOB

    def read(self, source: Source) -> leaklog.Log:
        return leaklog.read(source)

    def parameters(self, log: leaklog.Log) -> LeakParams:
        return LeakParams.of(log.header)

    def figures(self, log: leaklog.Log) -> tuple[dict[str, Fraction], list[Rejection]]:
        return log_figures(log)

    def headline(self, figures: dict[str, Fraction]) -> str:
        return headline(figures)


PRODUCER = LeakProducer()
