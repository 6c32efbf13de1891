"""What a Lean run said: ``lean --json`` messages, diagnostics mapped back to the user's files, and
the verdict on one module (:class:`CheckResult`).

``lean --json`` prints one JSON object a line among other output (the wasm build echoes the source
and ``[DEBUG`` lines). The "declaration uses sorry" warning counts as a failure.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from pycert.lean.process import ProcessRun

SORRY_MARKERS = ("declaration uses `sorry`", "declaration uses 'sorry'")

Severity = Literal["error", "warning", "info"]


class Diagnostic(BaseModel):
    file: str
    line: int
    column: int
    severity: Severity
    message: str

    @property
    def is_failure(self) -> bool:
        return self.severity == "error" or any(m in self.message for m in SORRY_MARKERS)

    def render(self) -> str:
        first = self.message.strip().splitlines()[0] if self.message.strip() else ""
        return f"{self.file}:{self.line}:{self.column}: {self.severity}: {first}"


Status = Literal["ok", "failed", "resources", "crashed", "interrupted", "skipped"]
"""``failed``: Lean refused the file (an error, ``sorry``); ``resources``: the check did not run to its
end (``cause``), which says nothing about the file; ``crashed``: Lean died for another reason."""
DID_NOT_RUN = ("resources", "crashed", "interrupted")
"""The statuses that say nothing about the file: its check did not run to its end, and a claim whose check
ended so is left unchecked, never called rejected. ``skipped`` is not among them: a module not run because
one it imports did not build takes that module's verdict."""
Cause = Literal["heap", "killed", "timeout"]

REMEDY = ("make the work smaller (a trace: more, smaller shards, `--shard-refs`) or run `--backend native`, whose "
          "heap is the machine's")


class CheckResult(BaseModel):
    """One Lean process (or one cache hit): a library module or a standalone file."""

    module: str
    file: str
    ok: bool
    status: Status
    exit_code: int | None
    seconds: float
    cached: bool = False
    diagnostics: list[Diagnostic] = []
    detail: str = ""
    cause: Cause | None = None
    """Why a check with status ``resources`` did not run to its end."""
    cpu_s: float = 0.0
    peak_rss_mib: int = 0
    """The Lean process's CPU seconds and peak resident memory (0 when not measured, or cached)."""
    compiled_as: str | None = None
    """The module this file was checked in, when it was one of a batch (:mod:`pycert.lean.batch`): its
    declarations are in that module's ``.olean``, and the times are the batch's."""

    @property
    def failures(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.is_failure]

    def summary(self) -> str:
        """``ok (41.2 s, 38.0 s CPU, 2,840 MiB peak)``: a progress line's verdict."""
        if self.cached:
            return f"{self.status} (cached)"
        usage = f", {self.cpu_s:.1f} s CPU, {self.peak_rss_mib:,} MiB peak" if self.peak_rss_mib else ""
        return f"{self.status} ({self.seconds:.1f} s{usage})"


def lean_messages(output: str) -> Iterator[dict[str, Any]]:
    """The JSON objects among ``lean --json`` output, one per line; other lines are passed over."""
    for line in output.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(msg, dict):
            yield msg


def parse_diagnostics(stdout: str, file_map: dict[str, str]) -> list[Diagnostic]:
    """Diagnostics from ``lean --json`` output; ``file_map`` maps staged names to user paths."""
    diags = []
    for msg in lean_messages(stdout):
        if "severity" not in msg or "pos" not in msg:
            continue
        severity = {"information": "info"}.get(msg["severity"], msg["severity"])
        if severity not in ("error", "warning", "info"):
            severity = "error"
        name = msg.get("fileName", "")
        diags.append(Diagnostic(file=file_map.get(name, name), line=int(msg["pos"].get("line", 0)),
                                column=int(msg["pos"].get("column", 0)), severity=severity,
                                message=str(msg.get("data", ""))))
    return diags


def _size(path: str) -> str:
    try:
        return f"{Path(path).stat().st_size / 2**20:,.1f} MiB of Lean"
    except OSError:
        return "size unknown"


def check_result(module: str, user_file: str, run: ProcessRun, staged_name: str) -> CheckResult:
    """The verdict on one module from its Lean run: ok, failed (an error or ``sorry``), resources (out
    of memory, killed, timed out: the check did not run to its end), crashed, or interrupted (pycert killed it on Ctrl-C or SIGTERM: no verdict)."""
    diags = parse_diagnostics(run.stdout, {staged_name: user_file})
    common = dict(module=module, file=user_file, seconds=run.seconds, diagnostics=diags, exit_code=run.exit_code,
                  cpu_s=run.cpu_s, peak_rss_mib=run.peak_rss_mib)
    if run.interrupted:
        return CheckResult(ok=False, status="interrupted", detail="killed by pycert on Ctrl-C or SIGTERM", **common)
    failed = any(d.is_failure for d in diags)
    finished = (run.exit_code == 0 or (run.exit_code == 1 and failed)) and not run.died()
    where = f"{Path(user_file).name} ({_size(user_file)})"
    if run.timed_out:
        return CheckResult(ok=False, status="resources", cause="timeout", detail=(
            f"{where}: ran past its time limit of {run.timeout:.0f} s and was killed; give a longer `--timeout`, or "
            f"{REMEDY}"), **common)
    if not finished and (line := run.heap_exhausted()):
        return CheckResult(ok=False, status="resources", cause="heap", detail=(
            f"{where}: ran out of memory after {run.seconds:.0f} s (the wasm Lean's heap stops at 2 GiB: {line}); "
            f"{REMEDY}"), **common)
    if run.exit_code is not None and run.exit_code < 0:
        name = signal.Signals(-run.exit_code).name if -run.exit_code in signal.valid_signals() else str(-run.exit_code)
        return CheckResult(ok=False, status="resources", cause="killed", detail=(
            f"{where}: killed by {name} after {run.seconds:.0f} s (the out-of-memory killer, or a person); {REMEDY}"),
            **common)
    if not finished:
        return CheckResult(ok=False, status="crashed", detail=run.crash_detail(), **common)
    ok = run.exit_code == 0 and not failed
    return CheckResult(ok=ok, status="ok" if ok else "failed", **common)
