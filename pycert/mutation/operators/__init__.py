"""The defect classes, one module each; :data:`OPERATORS` lists them in the order the campaign plans them.

A planned mutant carries either a Python check (``run``, for verify, the solvers' checks, the trace
engine, the audit's pin and the report page) or a piece of Lean for one of the batches of
:mod:`pycert.mutation.lean_batch`. Every check returns ``(status, detail)``: ``killed`` only when the
checker rejected *for the expected reason*. A new mutant is a ``self.add(...)`` in the right
operator with the diagnostic it must produce.
"""

from __future__ import annotations

from pycert.mutation.operators.audit_self_test import AuditSelfTest
from pycert.mutation.operators.base import (
    AUDIT_HEADER,
    CEILING_CERT,
    CERT_DIR,
    TRACE_INPUT,
    WINDOW,
    Operator,
    Planned,
    Verdict,
    expect_failure,
)
from pycert.mutation.operators.capacity import Capacity
from pycert.mutation.operators.certificate import CertificateTamper
from pycert.mutation.operators.curve import Curve
from pycert.mutation.operators.fleet import Fleet
from pycert.mutation.operators.forgery import Forgery
from pycert.mutation.operators.instance_data import InstanceData
from pycert.mutation.operators.isolation_cost import IsolationCost
from pycert.mutation.operators.kernel_forgery import KernelForgery
from pycert.mutation.operators.kernel_link import KernelLink
from pycert.mutation.operators.leak import LeakRun
from pycert.mutation.operators.lean_statement import LeanStatement
from pycert.mutation.operators.proof import Proof
from pycert.mutation.operators.report_verifier import ReportVerifier
from pycert.mutation.operators.shards import ShardDefects
from pycert.mutation.operators.solver import Solver
from pycert.mutation.operators.trace_engine import TraceEngine

OPERATORS: tuple[type[Operator], ...] = (LeanStatement, Proof, InstanceData, ShardDefects, Solver, CertificateTamper,
                                         Forgery, KernelForgery, KernelLink, Capacity, Curve, IsolationCost, Fleet,
                                         AuditSelfTest, TraceEngine, ReportVerifier, LeakRun)

__all__ = ["AUDIT_HEADER", "CEILING_CERT", "CERT_DIR", "OPERATORS", "TRACE_INPUT", "WINDOW", "Operator", "Planned",
           "Verdict", "expect_failure"]
