"""A Mooncake row of the first-touch dataset (``pycert dataset first-touch``): a conversation's second
request against a store pre-warmed with its first (the workload of :mod:`pycert.analysis.first_touch`),
the leading blocks served kernel-checked on the two requests' block lists (``Pycert.FirstTouch.TouchAt``),
and the request replayed on a real engine for a second tenant under the keyed salt. Every row of a trace
states its headline in one Lean module, ``lean/derived/FirstTouch<Trace>R<rows>.lean`` (block ids:
full-resolution data of the trace, which verify regenerates from it).

This module is the claim; :mod:`pycert.families.first_touch_trace.produce` makes the certificates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import Field

from pycert.analysis.first_touch import BLOCK_TOKENS, TraceRow, block_prompt, trace_rows
from pycert.core.errors import Rejected, Rejection
from pycert.core.gate import Source, named
from pycert.core.limits import MAX_TRACE_BYTES
from pycert.core.schema import Certificate, InputFile
from pycert.families.base import Claim, Instance, Reader, input_path
from pycert.families.traces import LEAN_DERIVED, LEAN_OUT, TraceReading, lean_ident, read_certified, slug
from pycert.families.first_touch.dataset import (
    CUT_EVIDENCE,
    TENANT_EVIDENCE,
    TENANT_LIMITS,
    RowParams,
    counts,
    module_text,
    prefill_figures,
    read_log,
    tenant_figures,
)
from pycert.leak.first_touch import MAX_WORKLOADS

SOURCE = "mooncake_fast25_trace"
PER_LINE = 16


class TraceParams(RowParams):
    rows: int = Field(ge=1, le=MAX_WORKLOADS, description="the workloads read off the trace")

    def planned(self) -> int:
        return self.rows


class TraceCertificate(Certificate):
    """A certificate of a Mooncake row of the first-touch dataset."""

    family: Literal["first-touch-trace"]
    parameters: TraceParams


def workload_id(row: int) -> str:
    return f"mooncake-{row:03d}"


def module_name(trace: PurePosixPath | Path, rows: int) -> str:
    return f"FirstTouch{lean_ident(slug(trace.stem))}R{rows}"


_READ: dict[tuple[str, int], list[TraceRow]] = {}
MOONCAKE = TraceReading(trace_format="mooncake")
"""How the family reads its trace: the rows are defined on Mooncake's 512-token blocks."""


def trace_sha256(path: Source | Path) -> str:
    return (path if isinstance(path, Source) else named(path)).sha256("a trace file", MAX_TRACE_BYTES)


def rows_of(path: Source | Path, rows: int) -> list[TraceRow]:
    """The trace's workloads, read (as Mooncake JSONL: the rows are defined on its 512-token blocks) once per
    content and row count in a process (verify asks once per row)."""
    key = (trace_sha256(path), rows)
    if key not in _READ:
        _READ.clear()
        _READ[key] = trace_rows(read_certified(path, MOONCAKE), rows)
    return _READ[key]


def _ids(values: Sequence[int]) -> str:
    lines = [", ".join(map(str, values[i:i + PER_LINE])) for i in range(0, len(values), PER_LINE)]
    return "[" + ",\n  ".join(lines) + "]"


def row_headline(r: TraceRow) -> str:
    return f"""/-- Blocks of the conversation's first request (request {r.first_request} of the trace). -/
public noncomputable def prev : List Nat :=
  {_ids(r.prev)}

/-- Blocks of its second request (request {r.request}), the row's. -/
public noncomputable def req : List Nat :=
  {_ids(r.req)}

/-- **Headline.** A store holding `prev` serves the leading {r.m} blocks of the {r.n}-token request `req`,
{r.served} tokens in whole blocks of {BLOCK_TOKENS} (`Pycert.FirstTouch.TouchAt`). -/
public theorem headline : Pycert.FirstTouch.TouchAt prev req {BLOCK_TOKENS} {r.n} {r.m} {r.served} :=
  ⟨by decide +kernel, by decide +kernel, by decide +kernel⟩
"""


def trace_module(rows: Sequence[TraceRow], module: str, sha256: str) -> bytes:
    """Every row's headline in one module: what prove writes and verify writes again from the trace."""
    body = [(f"Mooncake{k:03d}", row_headline(r)) for k, r in enumerate(rows, 1)]
    return module_text(module, f"the trace with sha256 {sha256}", ["Pycert.FirstTouchTrace"], body)


class FirstTouchTrace(Claim):
    name = "first-touch-trace"
    params = TraceParams
    certificate = TraceCertificate
    lean_module = "Pycert.FirstTouchTrace"
    theorem_names = ("Pycert.FirstTouch.lead_spec", "Pycert.FirstTouch.served_le")
    primary = ("trace", "log")
    headline_predicate = "Pycert.FirstTouch.TouchAt"
    headline_figures = ("block_tokens", "prompt_tokens", "held_blocks", "cached_tokens")
    limits = (
        "Which requests make the workload is pycert's reading of the trace, computed, not kernel-checked: a "
        "conversation is the requests whose first two blocks are the same, the row is its second request, and the "
        "rows are spread evenly over the conversations with a second request. The kernel checks the count on the two "
        "requests' block lists as pycert regenerates them from the trace.",
        "The store is pre-warmed with the conversation's first request; that a store holding every block the trace "
        "showed before the request holds the same leading blocks is computed (pycert refuses a trace where it does "
        "not), not kernel-checked.",
        "Blocks are the trace's 512-token hash ids: a block is served whole or not at all, a partial last block is "
        "computed, and the no-pooling arm is a cold instance that computes every token (a warm instance's own prefix "
        "cache would also hold blocks every request shares, such as the trace's common first block).",
        "The prefill figures are the trace's accounting, not an engine's measurement: an engine that recomputes a "
        "prompt's last token serves a block less where the whole prompt is held.",
        "The replay stands for each block by 512 seeded random tokens (equal ids, equal tokens): the trace has no text.",
        *TENANT_LIMITS,
    )
    evidence_of = {
        "block_tokens": ("kernel-checked", "Lean kernel: a literal of {headline}"),
        "prompt_tokens": ("kernel-checked", "Lean kernel: a literal of {headline} (req.length = ⌈n / 512⌉)"),
        "held_blocks": ("kernel-checked", "Lean kernel: a literal of {headline} (lead prev req = m)"),
        "cached_tokens": ("kernel-checked", "Lean kernel: a literal of {headline} (served = 512 · min m ⌊n / 512⌋)"),
        "apc_prefill_computed": ("computed", "prompt_tokens: a cold instance with no pooling computes every token"),
        "pooled_prefill_computed": ("computed", "exact arithmetic prompt_tokens - cached_tokens"),
        "request": ("computed", "pycert.analysis.first_touch.trace_rows: the row's request, numbered from 1"),
        "first_request": ("computed", "pycert.analysis.first_touch.trace_rows: its conversation's first request"),
        **CUT_EVIDENCE,
        **TENANT_EVIDENCE,
    }

    def instance(self, params: TraceParams, primary: Sequence[InputFile]) -> Instance:
        trace = next(i for i in primary if i.role == "trace")
        where = LEAN_DERIVED if trace.external else LEAN_OUT
        module = module_name(PurePosixPath(trace.path), params.rows)
        return Instance(path=(where / f"{module}.lean").as_posix(), derived_from="trace", section=f"Mooncake{params.row:03d}")

    def regenerate(self, params: TraceParams, inputs: Sequence[InputFile], read: Reader) -> bytes:
        path = input_path(inputs, "trace", read)
        module = self.instance(params, self.primary_inputs(inputs)).module
        return trace_module(rows_of(path, params.rows), module, trace_sha256(path))

    def figures(self, params: TraceParams, kernel: Mapping[str, int], inputs: Sequence[InputFile],
                read: Reader) -> dict[str, Fraction]:
        if kernel["block_tokens"] != BLOCK_TOKENS:
            raise Rejected(Rejection.mismatch("headline (block_tokens)", str(BLOCK_TOKENS), str(kernel["block_tokens"])))
        path = input_path(inputs, "trace", read)
        r = rows_of(path, params.rows)[params.row - 1]
        log = read_log(params, inputs, read)
        h = log.header
        if (h.trace_rows, h.trace_sha256) != (params.rows, (sha := trace_sha256(path))):
            raise Rejected(Rejection.mismatch("log header (trace_rows, trace_sha256)", f"{params.rows}, {sha}",
                                              f"{h.trace_rows}, {h.trace_sha256}"))
        prompt = block_prompt(params.seed, r.req, r.n, params.vocab)
        got = counts(log, workload_id(params.row), prompt, prompt, cut=False)
        n, served = kernel["prompt_tokens"], kernel["cached_tokens"]
        return {**prefill_figures(n, n, n - served), "block_tokens": Fraction(BLOCK_TOKENS),
                "held_blocks": Fraction(kernel["held_blocks"]), "request": Fraction(r.request),
                "first_request": Fraction(r.first_request), **tenant_figures(got)}

    def sentence(self, params: TraceParams, figures: Mapping[str, Fraction], inputs: Sequence[InputFile]) -> str:
        p, f = params, figures
        trace = next((PurePosixPath(i.path).name for i in inputs if i.role == "trace"), "(none)")
        n = int(f["prompt_tokens"])
        return (f"In trace {trace}, workload {workload_id(p.row)} of {p.rows}: request {f['request']}, the second of a "
                f"conversation whose first is request {f['first_request']}, has {n} tokens in {-(-n // BLOCK_TOKENS)} "
                f"blocks of {BLOCK_TOKENS}; a store holding the first request's blocks holds its leading "
                f"{f['held_blocks']}, so it serves {f['cached_tokens']} tokens in whole blocks (kernel-checked: "
                f"Pycert.FirstTouch.TouchAt) and {f['pooled_prefill_computed']} are computed, against {n} by a cold "
                f"instance with no pooling: a cut of {float(f['first_touch_cut']):.6f}; replayed on {p.engine} "
                f"({p.engine_version}) with a {p.model} on {p.device} (seed {p.seed}), a second tenant sending the "
                f"request under the keyed salt was served {f['cross_tenant_cached_tokens']} tokens from cache after the "
                f"first tenant's, and the first tenant's own repeat {f['own_cached_tokens']}.")


def engine_figures(r: TraceRow) -> dict[str, Fraction]:
    """The headline's figures by Python's arithmetic (:mod:`pycert.analysis.first_touch`), compared with
    the kernel's at prove."""
    return {"block_tokens": Fraction(BLOCK_TOKENS), "prompt_tokens": Fraction(r.n), "held_blocks": Fraction(r.m),
            "cached_tokens": Fraction(r.served)}


CLAIM = FirstTouchTrace()
