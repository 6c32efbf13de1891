"""Emit the Lean file that instantiates the pooling wall theorems on a concrete instance.

Draft: the data and the kernel-computed counts; the instantiation of ``Pycert.Pooling`` follows
once that module lands.
"""

from __future__ import annotations

from solvers.instance import Instance

NAMESPACE = "Pycert.PoolingInstance"


def _list(xs: list[int]) -> str:
    return "[" + ", ".join(map(str, xs)) + "]"


def emit(inst: Instance) -> str:
    trace = inst.trace
    return "\n".join([
        "module",
        "prelude",
        "public import Pycert.Basic",
        f"namespace {NAMESPACE}",
        f"def trace : List Nat := {_list(trace)}",
        f"theorem distinct_trace : Pycert.distinct trace = {len(set(trace))} := by decide +kernel",
        f"end {NAMESPACE}",
        "",
    ])


def theorem_names() -> list[str]:
    return [f"{NAMESPACE}.distinct_trace"]
