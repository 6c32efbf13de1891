"""What a campaign found: one outcome per mutant, the score, the table and the Stryker-shaped JSON."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from pycert.core.console import plural, table

Status = Literal["killed", "survived", "timeout", "error", "equivalent", "not-run"]
STATUSES: tuple[Status, ...] = ("killed", "survived", "timeout", "error", "equivalent", "not-run")
"""``not-run``: the mutant's checker could not run here (a tool it needs is missing): no verdict either
way, left out of the score and listed once per checker."""
CHECKERS = ("lean-kernel", "audit", "solver-checks", "verify", "trace-engine", "report-verifier")

# https://github.com/stryker-mutator/mutation-testing-elements/ (mutation-testing-report-schema)
_STRYKER_STATUS = {"killed": "Killed", "survived": "Survived", "timeout": "Timeout", "error": "RuntimeError",
                   "equivalent": "Ignored", "not-run": "Ignored"}


class Mutant(BaseModel):
    id: str
    operator: str
    """The operator class (see :mod:`pycert.mutation.operators`)."""
    checker: str
    description: str
    expected: str
    """The diagnostic the checker must give: the reason it is expected to reject for."""
    target: str
    """The file (relative to the repository) the defect is planted in, as a scratch copy."""
    line: int = 1
    equivalent: str | None = None
    """Why this mutant cannot be told apart from the original: excluded from the score."""


class Outcome(BaseModel):
    mutant: Mutant
    status: Status
    detail: str
    seconds: float


class CampaignReport(BaseModel):
    outcomes: list[Outcome]
    wall_s: float
    backend: str
    kernel_runs: int

    def count(self, status: Status) -> int:
        return sum(o.status == status for o in self.outcomes)

    @property
    def score(self) -> float:
        scored = [o for o in self.outcomes if o.status not in ("equivalent", "not-run")]
        return 100.0 * sum(o.status == "killed" for o in scored) / len(scored) if scored else 0.0

    @property
    def failing(self) -> list[Outcome]:
        """Mutants that survived, timed out or crashed their checker."""
        return [o for o in self.outcomes if o.status in ("survived", "timeout", "error")]

    def not_run(self) -> dict[str, tuple[int, str]]:
        """Checker -> (mutants, why) for each checker that could not run here."""
        out: dict[str, tuple[int, str]] = {}
        for o in self.outcomes:
            if o.status == "not-run":
                out[o.mutant.checker] = (out.get(o.mutant.checker, (0, ""))[0] + 1, o.detail)
        return out

    def not_run_line(self) -> str | None:
        """One line naming every checker that did not run, with its mutants and why (None when all ran)."""
        parts = [f"the {checker} checker was not run ({plural(n, 'mutant')}, no verdict): {why}"
                 for checker, (n, why) in self.not_run().items()]
        return "; ".join(parts) or None

    def summary(self) -> dict[str, Any]:
        return {"mutants": len(self.outcomes), **{s: self.count(s) for s in STATUSES},
                "score": round(self.score, 2), "operators": len({o.mutant.operator for o in self.outcomes}),
                "checkers": sorted({o.mutant.checker for o in self.outcomes}), "wall_s": round(self.wall_s, 1),
                "kernel_runs": self.kernel_runs, "backend": self.backend}


def _rows(outcomes: list[Outcome], key: str) -> list[tuple[Any, ...]]:
    groups: dict[str, Counter[str]] = {}
    for o in outcomes:
        groups.setdefault(getattr(o.mutant, key), Counter())[o.status] += 1
    rows = []
    for name, c in groups.items():
        scored = sum(c.values()) - c["equivalent"] - c["not-run"]
        rows.append((name, *(c[s] for s in STATUSES), f"{100.0 * c['killed'] / scored:.1f}%" if scored else "-"))
    return rows


def render(report: CampaignReport, not_run: bool = True) -> str:
    """The tables and the verdict; ``not_run``: end with the line naming the checkers that did not run
    (the command line leaves it to its error line when that exits on it)."""
    headers = (*STATUSES, "score")
    out = [table(("operator class", *headers), _rows(report.outcomes, "operator")), "",
           table(("checker", *headers), _rows(report.outcomes, "checker"))]
    if report.failing:
        out += ["", table(("mutant", "status", "checker", "why"),
                          [(o.mutant.id, o.status, o.mutant.checker, o.detail[:160]) for o in report.failing])]
    eq = [o for o in report.outcomes if o.status == "equivalent"]
    if eq:
        out += ["", table(("equivalent mutant", "reason"), [(o.mutant.id, o.mutant.equivalent) for o in eq])]
    s = report.summary()
    verdict = "FAIL" if report.failing else "INCOMPLETE" if s["not-run"] else "PASS"
    out += ["", f"{verdict}: {plural(s['mutants'], 'mutant')} over {plural(s['operators'], 'operator class', 'operator classes')}"
                f", {s['killed']} killed, {len(report.failing)} not killed, {s['equivalent']} equivalent"
                + (f", {s['not-run']} not run" if s["not-run"] else "")
                + f"; score {s['score']:.1f}%; {s['kernel_runs']} kernel runs on {s['backend']}; {s['wall_s']:.0f} s"]
    if not_run and (line := report.not_run_line()):
        out.append(line)
    return "\n".join(out)


def to_stryker(report: CampaignReport, root: Path) -> dict[str, Any]:
    """The report in the shape of mutation-testing-report-schema (schemaVersion 2)."""
    files: dict[str, Any] = {}
    for o in report.outcomes:
        m = o.mutant
        entry = files.get(m.target)
        if entry is None:
            path = root / m.target
            try:
                source = path.read_text(encoding="utf-8") if path.is_file() and path.stat().st_size < 2_000_000 else ""
            except (OSError, UnicodeDecodeError):
                source = ""
            lang = {".lean": "lean", ".json": "json", ".py": "python", ".jsonl": "json"}.get(path.suffix, "text")
            entry = files[m.target] = {"language": lang, "source": source, "mutants": []}
        line = max(1, m.line)
        mutant = {"id": m.id, "mutatorName": m.operator, "replacement": m.description,
                  "description": f"{m.checker}: expected {m.expected}",
                  "location": {"start": {"line": line, "column": 1}, "end": {"line": line, "column": 2}},
                  "status": _STRYKER_STATUS[o.status], "statusReason": m.equivalent or o.detail}
        entry["mutants"].append(mutant)
    return {"$schema": "https://git.io/mutation-testing-schema", "schemaVersion": "2",
            "thresholds": {"high": 100, "low": 100}, "projectRoot": str(root), "files": files,
            "framework": {"name": "pycert mutate"}}
