"""``pycert dataset first-touch --check DIR --trace T``: every row and certificate of a dataset derived
again, and compared; the first disagreement named (a cell by row id, column, expected and found).

The directory is a stranger's: every file is read with a size cap, as a regular file inside it, and
nothing from it is run. In order, stopping at the first that says no (the engine last: it is minutes):

1. the table reads as the dataset's table (:func:`pycert.dataset.table.read_csv`: its columns, no row
   named twice, every cell of its column's kind);
2. the certificates are exactly those the log's plan makes, and each verifies offline
   (:func:`pycert.certify.verify.verify_certificates`: inputs, regenerated Lean modules, figures off
   their headlines, derived text, library); with ``--kernel``, the regenerated modules are also compiled
   and audited again (one build);
3. every cell equals the one its certificate makes (:func:`pycert.dataset.table.row_of`), then the card,
   the NOTICE and, where pyarrow is importable, the Parquet table equal what the rows make;
4. the engine, run again on the log's plan, counts every request as the log recorded (unless
   ``--no-engine``: the result then says that the measurements were not re-made).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from pycert.certify.verify import verify_certificates
from pycert.core.errors import InputError, Rejection
from pycert.core.gate import Source, entries, inside
from pycert.dataset.build import NOTICE_NAME, measure, rows_of_certificates, table_files
from pycert.dataset.table import CERTIFICATES, CSV_NAME, MAX_CSV_BYTES, PARQUET_NAME, first_difference, read_csv
from pycert.families.first_touch.dataset import LOG
from pycert.families.first_touch_ramp import workload_id as ramp_id
from pycert.families.first_touch_trace import workload_id as trace_id
from pycert.leak import first_touch as ftlog

Progress = Callable[[str], None]


class CheckResult(BaseModel):
    ok: bool
    dataset: str
    rows: int
    checked: list[str]
    notes: list[str] = []
    rejection: Rejection | None = None


def _first_line_difference(name: str, expected: bytes, found: bytes) -> Rejection | None:
    if expected == found:
        return None
    a, b = expected.decode("utf-8", "replace").splitlines(), found.decode("utf-8", "replace").splitlines()
    i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
    return Rejection.mismatch(f"{name}:{i + 1}", repr(a[i][:120]) if i < len(a) else "the end of the file",
                              repr(b[i][:120]) if i < len(b) else "the end of the file", reason="file")


def _table(data: bytes):  # -> pyarrow.Table: pyarrow is optional, imported only here
    import pyarrow.parquet as pq  # importable: parquet_bytes just used it

    # one thread, and not read_table: pyarrow's dataset reader left a thread that aborted the process at exit
    # in 5 of 100 runs here (apache/arrow#34314); ParquetFile.read without threads, 0 of 100
    return pq.ParquetFile(io.BytesIO(data)).read(use_threads=False)


def _parquet(path: Source, expected: bytes | None, notes: list[str]) -> Rejection | None:
    """The Parquet table against the one the rows make; None when they agree or when it was not checked (said
    in ``notes``)."""
    if not path.exists():
        notes.append(f"{PARQUET_NAME}: absent (it is written only where pyarrow is installed)")
        return None
    if expected is None:
        notes.append(f"{PARQUET_NAME} not checked: pyarrow is not importable here")
        return None
    try:
        found = _table(path.read("a Parquet table", MAX_CSV_BYTES))
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        return Rejection(subject=PARQUET_NAME, reason="not-parquet", detail=f"not a Parquet table ({exc})")
    if not found.equals(_table(expected)):
        return Rejection.mismatch(PARQUET_NAME, "the table the rows make", "another table", reason="file")
    return None


def planned_ids(h: ftlog.FtHeader) -> list[str]:
    return [ramp_id(k) for k in range(1, 4 * h.ramp_blocks + 1)] + [trace_id(k) for k in range(1, h.trace_rows + 1)]


def check_dataset(root: Path, trace: Path | None, *, engine: bool = True, kernel: bool = False,
                  backend: str | None = None, timeout: float = 1800.0,
                  progress: Progress = lambda _m: None) -> CheckResult:
    if not root.is_dir():
        raise InputError("no such dataset directory", where=str(root))
    res = CheckResult(ok=False, dataset=str(root), rows=0, checked=[])

    def no(rejection: Rejection) -> CheckResult:
        res.rejection = rejection
        return res

    found = read_csv(inside(root, CSV_NAME))
    if isinstance(found, Rejection):
        return no(found)
    res.rows = len(found)
    res.checked.append("table")
    certs = root / CERTIFICATES
    if certs.is_symlink() or not certs.is_dir():  # the certificates are read as files of this directory
        raise InputError("not a directory (a link is not followed): a dataset keeps its certificates here",
                         where=str(certs))
    log = inside(root, f"{CERTIFICATES}/{LOG}")
    header = ftlog.read(log).header
    if header.trace_rows and trace is None:
        raise InputError(f"its {header.trace_rows} Mooncake rows need the trace {header.trace}: give --trace PATH",
                         where="--trace")
    want = planned_ids(header)
    have = sorted(s.name.removesuffix(".json") for s in entries(certs, ".json"))
    if extra := sorted(set(have) - set(want)):
        return no(Rejection.mismatch(f"{CERTIFICATES}/{extra[0]}.json", "no such certificate (the log's plan makes "
                                     f"{len(want)})", "present", reason="extra-certificate"))
    if missing := [w for w in want if w not in have]:
        return no(Rejection.mismatch(f"{CERTIFICATES}/{missing[0]}.json", "present", "absent",
                                     reason="missing-certificate"))
    paths = [certs / f"{w}.json" for w in want]
    progress(f"verify: {len(paths)} certificates" + (", then the kernel" if kernel else ""))
    results = verify_certificates(paths, inputs={header.trace: trace} if header.trace and trace else None,
                                  kernel=kernel, backend=backend, timeout=timeout, progress=progress)
    for r in results:
        if r.failures:
            return no(r.failures[0].model_copy(update={"subject": f"{Path(r.certificate).name}: {r.failures[0].subject}"}))
    if bad := next((r for r in results if not r.ok), None):
        raise InputError(bad.first_problem() or bad.status, where=bad.certificate)
    if kernel:
        res.checked.append("certificates (offline and kernel)")
    else:
        res.checked.append("certificates (offline)")
        res.notes.append("kernel: not re-run (--kernel rebuilds every row's Lean module and audits it again)")
    expected = rows_of_certificates(paths)
    if (diff := first_difference(expected, found, CSV_NAME)) is not None:
        return no(diff)
    res.checked.append("cells")
    files = table_files(root, expected, header)
    for name in ("README.md", NOTICE_NAME):
        data = inside(root, name).read("a dataset file", MAX_CSV_BYTES)
        if (diff := _first_line_difference(name, files[root / name], data)) is not None:
            return no(diff)
    res.checked += ["card", "notice"]
    notes = len(res.notes)
    if (diff := _parquet(inside(root, PARQUET_NAME), files.get(root / PARQUET_NAME), res.notes)) is not None:
        return no(diff)
    if len(res.notes) == notes:
        res.checked.append("parquet")
    if engine:
        progress("engine: every workload again")
        again = measure(header, trace, "pycert dataset first-touch --check", progress)
        recorded = ftlog.read(log)
        if diffs := ftlog.replay_differences(recorded, again):
            return no(diffs[0])
        res.checked.append("engine re-run")
    else:
        res.notes.append("engine: not re-run (--no-engine): the rows were derived again from the recorded log")
    res.ok = True
    return res

