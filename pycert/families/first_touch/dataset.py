"""What the first-touch dataset's two row families share (``first-touch-ramp``, ``first-touch-trace``):
the engine a row was observed on, checked against the log's header; the observed figures of a
workload; and the one Lean module that states every row's headline, each in its own namespace, so
that a whole dataset is one Lean process per family rather than one per row."""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatch
from fractions import Fraction
from pathlib import Path

from pydantic import Field, model_validator

from pycert.core.errors import Rejected, Rejection
from pycert.core.gate import entries, inside
from pycert.core.schema import InputFile, Params
from pycert.families.base import Reader, Setting, input_path
from pycert.leak import first_touch as ftlog
from pycert.leak import log as leaklog
from pycert.lean.emit import INSTANCE_NAMESPACE

LOG = Path("inputs/first-touch-engine.jsonl")
"""Where the dataset's engine log lies in its certificate directory."""
LOG_GLOB = "first-touch-*.jsonl"

ENGINE_FIELDS = ("engine", "engine_version", "model", "device", "seed", "vocab")


class EngineParams(Params):
    """The engine, model, device and seed a row was observed on (the log's header says the same)."""

    engine: leaklog.Text
    engine_version: leaklog.Text
    model: leaklog.ModelName
    device: leaklog.Device
    seed: int = Field(ge=0, le=(1 << 63) - 1)
    vocab: int = Field(ge=17, le=1 << 24)


class RowParams(EngineParams):
    """A dataset row's parameters: the engine's, and which row of the family's plan this is."""

    row: int = Field(ge=1, le=ftlog.MAX_WORKLOADS, description="this row, from 1, in the family's order")

    def planned(self) -> int:
        """How many rows the plan has."""
        raise NotImplementedError

    @model_validator(mode="after")
    def _in_plan(self) -> RowParams:
        if self.row > self.planned():
            raise ValueError(f"row {self.row} is past the plan's {self.planned()} rows")
        return self


def engine_fields(header: ftlog.FtHeader) -> dict[str, object]:
    return {k: getattr(header, k) for k in ENGINE_FIELDS}


def recorded_logs(setting: Setting) -> list[tuple[Path, ftlog.FtLog]]:
    """Every first-touch log under ``--out``'s ``inputs/``, each read through the gate (no link, in ``--out``)."""
    inputs = setting.out_dir / "inputs"
    found = entries(inputs, ".jsonl") if inputs.is_dir() else []
    return [(s.path, ftlog.read(inside(setting.out_dir, f"inputs/{s.name}"))) for s in found if fnmatch(s.name, LOG_GLOB)]


def read_log(params: EngineParams, inputs: Sequence[InputFile], read: Reader) -> ftlog.FtLog:
    """The certificate's log, refused when its header names another engine, model, device or seed."""
    log = ftlog.read(input_path(inputs, "log", read))
    for name in ENGINE_FIELDS:
        if (said := getattr(log.header, name)) != (mine := getattr(params, name)):
            raise Rejected(Rejection.mismatch(f"parameters.{name}", f"{said} (the log's header)", str(mine)))
    return log


def counts(log: ftlog.FtLog, workload: str, probe: Sequence[int], prewarm: Sequence[int], cut: bool) -> ftlog.Counts:
    got = ftlog.workload_counts(log, workload, leaklog.prompt_digest(probe), leaklog.prompt_digest(prewarm), cut)
    if isinstance(got, Rejection):
        raise Rejected(got)
    return got


def tenant_figures(c: ftlog.Counts) -> dict[str, Fraction]:
    """The observed tenant figures: B's cached tokens under the keyed salt, A's own repeat (the control:
    the cache held the prompt), and zero_tenant_leak (1 when B was served none)."""
    return {"cross_tenant_cached_tokens": Fraction(c.cross), "own_cached_tokens": Fraction(c.own),
            "zero_tenant_leak": Fraction(int(c.cross == 0))}


def prefill_figures(n: int, apc: int, pooled: int) -> dict[str, Fraction]:
    """The dataset's prefill columns: tokens computed without and with pooling, and the cut
    ``1 - pooled / apc`` (refused when no pooling computed nothing: the cut has no meaning then)."""
    if apc <= 0:
        raise Rejected(Rejection.mismatch("figures.apc_prefill_computed", "at least one token computed", str(apc)))
    return {"prompt_tokens": Fraction(n), "apc_prefill_computed": Fraction(apc),
            "pooled_prefill_computed": Fraction(pooled), "cached_tokens": Fraction(n - pooled),
            "first_touch_cut": 1 - Fraction(pooled, apc)}


TENANT_EVIDENCE = {
    "cross_tenant_cached_tokens": ("observed", "the engine's own cached-token count for tenant B's request under its "
                                               "keyed salt, after tenant A's under A's (the per-request log)"),
    "own_cached_tokens": ("observed", "the engine's own cached-token count for tenant A's repeat under A's keyed salt "
                                      "(the control: the cache held the prompt)"),
    "zero_tenant_leak": ("computed", "1 when cross_tenant_cached_tokens is 0, else 0"),
}
CUT_EVIDENCE = {
    "first_touch_cut": ("computed", "exact arithmetic 1 - pooled_prefill_computed / apc_prefill_computed"),
}

TENANT_LIMITS = (
    "zero_tenant_leak is one request of one second tenant, after one prime: an observation on this engine, model, "
    "device and seed, not a bound on a leak rate (pycert leak run measures that over many prompts).",
    "The salt is a namespace separator, not encryption, and this engine takes it as prepended tokens (pycert.leak."
    "admission); signals other than shared cache blocks are not measured.",
)


def module_text(module: str, origin: str, imports: Sequence[str], rows: Sequence[tuple[str, str]]) -> bytes:
    """One Lean module stating several rows' headlines, each in namespace ``<module>.<row>`` (``rows``:
    the row's namespace suffix and its declarations), each followed by ``#check`` of its headline."""
    lines = [f"-- Generated by pycert.families.first_touch.dataset from {origin}.",
             *(f"import {i}" for i in imports), "", "set_option Elab.async false", ""]
    for row, body in rows:
        ns = f"{INSTANCE_NAMESPACE}.{module}.{row}"
        lines += [f"namespace {ns}", "", body.rstrip("\n"), "", f"end {ns}", "", f"#check @{ns}.headline", ""]
    return "\n".join(lines).encode()

