"""The first-touch dataset's table: its columns, each row as a typed model, written as CSV (and Parquet
where pyarrow is importable), read back from a stranger's directory with a one-line reason for anything
that is not the table, and compared cell by cell.

Every cell is a function of one certificate (:func:`row_of`): the table says nothing its certificates
do not. Numbers are written exactly as integers, or as the 20-significant-digit decimal of an exact
fraction (the certificates' own rendering), so two cuts that are equal fractions are equal strings and
``first_touch_cut == engine_closed_form_cut`` is a test of the fractions.
"""

from __future__ import annotations

import csv
import importlib.util
import io
from collections.abc import Sequence
from fractions import Fraction
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pycert.core.console import csv_lines
from pycert.core.errors import Rejection
from pycert.core.gate import Source
from pycert.core.schema import Certificate, decimal_of
from pycert.families.first_touch_ramp import SOURCE as RAMP
from pycert.families.first_touch_trace import SOURCE as TRACE

CSV_NAME = "first_touch.csv"
PARQUET_NAME = "first_touch.parquet"
CERTIFICATES = "certificates"
COLUMNS = ("workload_id", "source", "prompt_tokens", "apc_prefill_computed", "pooled_prefill_computed",
           "cached_tokens", "first_touch_cut", "closed_form_cut", "engine_closed_form_cut", "zero_tenant_leak",
           "certificate")
MAX_CSV_BYTES = 4 << 20
MAX_ROWS = 2000

SOURCES = {"first-touch-ramp": RAMP, "first-touch-trace": TRACE}


class Row(BaseModel):
    """One row of the table, every cell as the CSV writes it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    workload_id: str = Field(pattern=r"^(synthetic|mooncake)-[0-9]{3}$")
    source: Literal["synthetic_ramp", "mooncake_fast25_trace"]
    prompt_tokens: str
    apc_prefill_computed: str
    pooled_prefill_computed: str
    cached_tokens: str
    first_touch_cut: str
    closed_form_cut: str
    engine_closed_form_cut: str
    zero_tenant_leak: Literal["true", "false"]
    certificate: str

    def cells(self) -> list[str]:
        return [getattr(self, c) for c in COLUMNS]


def _int(v: Fraction) -> str:
    return str(v.numerator) if v.denominator == 1 else decimal_of(v)


def row_of(cert: Certificate) -> Row:
    """The row a certificate of a dataset family makes."""
    f = {fig.name: Fraction(fig.numerator, fig.denominator) for fig in cert.figures}
    closed = decimal_of(f["closed_form_cut"]) if "closed_form_cut" in f else ""
    engine = decimal_of(f["engine_closed_form_cut"]) if "engine_closed_form_cut" in f else ""
    return Row(workload_id=cert.id, source=SOURCES[cert.family], prompt_tokens=_int(f["prompt_tokens"]),
               apc_prefill_computed=_int(f["apc_prefill_computed"]),
               pooled_prefill_computed=_int(f["pooled_prefill_computed"]), cached_tokens=_int(f["cached_tokens"]),
               first_touch_cut=decimal_of(f["first_touch_cut"]), closed_form_cut=closed, engine_closed_form_cut=engine,
               zero_tenant_leak="true" if f["zero_tenant_leak"] == 1 else "false",
               certificate=f"{CERTIFICATES}/{cert.filename}")


def render_csv(rows: Sequence[Row]) -> bytes:
    return csv_lines(COLUMNS, (r.cells() for r in rows)).encode()


def parquet_writable() -> bool:
    """Whether :func:`parquet_bytes` can write here (pyarrow importable)."""
    return importlib.util.find_spec("pyarrow") is not None


def parquet_bytes(rows: Sequence[Row]) -> bytes | None:
    """The table as Parquet, typed (integers, floats, a boolean; the closed form null on trace rows), or
    None when pyarrow is not importable (it is not a dependency)."""
    try:
        # optional: the dataset writes Parquet only where pyarrow is already installed
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return None
    ints = ("prompt_tokens", "apc_prefill_computed", "pooled_prefill_computed", "cached_tokens")
    cols = {c: [getattr(r, c) for r in rows] for c in COLUMNS}
    table = pa.table({**{c: cols[c] for c in ("workload_id", "source")},
                      **{c: pa.array([int(v) for v in cols[c]], pa.int64()) for c in ints},
                      "first_touch_cut": pa.array([float(v) for v in cols["first_touch_cut"]], pa.float64()),
                      **{c: pa.array([float(v) if v else None for v in cols[c]], pa.float64())
                         for c in ("closed_form_cut", "engine_closed_form_cut")},
                      "zero_tenant_leak": pa.array([v == "true" for v in cols["zero_tenant_leak"]], pa.bool_()),
                      "certificate": cols["certificate"]})
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def read_csv(path: Source) -> list[Row] | Rejection:
    """The table as found, or the first reason it is not the dataset's table: a missing or extra column,
    a short or long line, a cell that is not of its column's kind, a row named twice. (A missing or
    unreadable file is an :class:`InputError`: nothing was checked.)"""
    data = path.read("a dataset table", MAX_CSV_BYTES)
    try:
        lines = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
    except (UnicodeDecodeError, csv.Error) as exc:
        return Rejection(subject=path.name, reason="not-csv", detail=f"not a UTF-8 CSV table ({exc})")
    if not lines:
        return Rejection(subject=path.name, reason="not-csv", detail="empty: the table starts with its header line")
    head = lines[0]
    if missing := [c for c in COLUMNS if c not in head]:
        return Rejection.mismatch(f"{path.name}:1", f"the column {missing[0]}", "absent", reason="missing-column")
    if tuple(head) != COLUMNS:
        return Rejection.mismatch(f"{path.name}:1", "the columns " + ",".join(COLUMNS), ",".join(head),
                                  reason="columns")
    if len(lines) - 1 > MAX_ROWS:
        return Rejection.mismatch(path.name, f"at most {MAX_ROWS} rows", str(len(lines) - 1), reason="rows")
    rows: list[Row] = []
    first_at: dict[str, int] = {}
    for i, cells in enumerate(lines[1:], 2):
        if len(cells) != len(COLUMNS):
            return Rejection.mismatch(f"{path.name}:{i}", f"{len(COLUMNS)} cells", str(len(cells)), reason="cells")
        row = dict(zip(COLUMNS, cells, strict=True))
        try:
            rows.append(Row.model_validate(row))
        except ValidationError as exc:
            err = exc.errors()[0]
            return Rejection(subject=f"{path.name}:{i} ({row['workload_id'][:20]!r}, {err['loc'][0]})", reason="cell",
                             detail=f"not a cell of the column: {err['msg']}")
        if (seen := first_at.setdefault(row["workload_id"], i)) != i:
            return Rejection(subject=f"{path.name}:{i}", reason="duplicate-row",
                             detail=f"row {row['workload_id']} named twice (lines {seen} and {i})")
    return rows


def first_difference(expected: Sequence[Row], found: Sequence[Row], where: str) -> Rejection | None:
    """The first cell where ``found`` differs from ``expected``: row id, column, expected, found; else a
    row missing or extra."""
    by_id = {r.workload_id: r for r in found}
    for e in expected:
        f = by_id.get(e.workload_id)
        if f is None:
            return Rejection.mismatch(f"{where}: row {e.workload_id}", "present", "absent", reason="missing-row")
        for col in COLUMNS:
            if (a := getattr(e, col)) != (b := getattr(f, col)):
                return Rejection.mismatch(f"{where}: row {e.workload_id}, column {col}", repr(a), repr(b), reason="cell")
    known = {e.workload_id for e in expected}
    if extra := [r.workload_id for r in found if r.workload_id not in known]:
        return Rejection.mismatch(f"{where}: row {extra[0]}", "no such row (the dataset's rows are "
                                  f"{len(expected)})", "present", reason="extra-row")
    if [r.workload_id for r in found] != [e.workload_id for e in expected]:
        return Rejection.mismatch(f"{where}: the rows' order", ", ".join(e.workload_id for e in expected[:3]) + ", ...",
                                  ", ".join(r.workload_id for r in found[:3]) + ", ...", reason="order")
    return None
