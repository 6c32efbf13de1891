"""The report page's in-page verifier, in headless Chromium."""

from __future__ import annotations

from typing import Any

from pycert.mutation.operators.base import Operator, Planned


class ReportVerifier(Operator):
    """Hand the report page's in-page verifier (real headless Chromium) a tampered certificate: its
    verdict must turn red ("mismatch"). A pristine copy must stay green, or the run is an error."""

    name = "report-verifier"

    def plan(self, ctx: Any) -> list[Planned]:
        self.add("report-flipped-byte", "report-verifier", "drop a certificate with one byte flipped",
                 "page verdict mismatch", "pycert/certify/report.py", run=lambda c: c.page_expect("isolation-t8-n1024.json", "flip"))
        self.add("report-forged-figure", "report-verifier", "drop a certificate with a figure edited",
                 "page verdict mismatch", "pycert/certify/report.py", run=lambda c: c.page_expect("pooling-committed.json", "figure"))
        self.add("report-forged-statement", "report-verifier", "drop a certificate whose first theorem's pinned "
                 "statement was weakened", "page verdict mismatch naming the statement", "pycert/certify/report.py",
                 run=lambda c: c.page_expect("isolation-t8-n1024.json", "statement"))
        return self.plans
