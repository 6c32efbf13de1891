"""What a Lean run said: ``lean --json`` messages, diagnostics mapped back to the user's files, and
the verdict on one module (:class:`CheckResult`).

``lean --json`` prints one JSON object a line among other output (the wasm build echoes the source
and ``[DEBUG`` lines). The "declaration uses sorry" warning counts as a failure.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
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


class CheckResult(BaseModel):
    """One Lean process (or one cache hit): a library module or a standalone file."""

    module: str
    file: str
    ok: bool
    status: Literal["ok", "failed", "timeout", "crashed", "interrupted", "skipped"]
    exit_code: int | None
    seconds: float
    cached: bool = False
    diagnostics: list[Diagnostic] = []
    detail: str = ""

    @property
    def failures(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.is_failure]


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


def check_result(module: str, user_file: str, run: ProcessRun, staged_name: str) -> CheckResult:
    """The verdict on one module from its Lean run: ok, failed (an error or ``sorry``), timeout, crashed,
    or interrupted (pycert killed it on Ctrl-C or SIGTERM: no verdict)."""
    diags = parse_diagnostics(run.stdout, {staged_name: user_file})
    common = dict(module=module, file=user_file, seconds=run.seconds, diagnostics=diags)
    if run.interrupted:
        return CheckResult(ok=False, status="interrupted", exit_code=run.exit_code,
                           detail="killed by pycert on Ctrl-C or SIGTERM", **common)
    if run.timed_out:
        return CheckResult(ok=False, status="timeout", exit_code=None,
                           detail=f"timed out after {run.seconds:.0f} s; process group killed", **common)
    failed = any(d.is_failure for d in diags)
    if run.exit_code not in (0, 1) or (run.exit_code == 1 and not failed):
        return CheckResult(ok=False, status="crashed", exit_code=run.exit_code, detail=run.crash_detail(), **common)
    ok = run.exit_code == 0 and not failed
    return CheckResult(ok=ok, status="ok" if ok else "failed", exit_code=run.exit_code, **common)
