"""The mutation campaign: each checker rejects its planted defects for the expected reason, and a
deliberately broken checker makes the campaign fail."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from pycert.audit import axioms as au
from pycert.audit import graph
from pycert.certify import browser, verify
from pycert.cli import main
from pycert.lean.diagnostics import CheckResult, Diagnostic
from pycert.mutation import operators as ops
from pycert.mutation.lean_batch import (
    Located,
    Snippet,
    compose,
    decl_ranges,
    kernel_verdict,
)
from pycert.mutation.report import CampaignReport, Mutant, Outcome, to_stryker

REPO = Path(__file__).resolve().parent.parent
NO_KERNEL = ["certificate", "forgery", "solver", "trace-engine", "report-verifier"]


def tree_digest() -> str:
    """A digest of everything a campaign copies: it must never change the real tree."""
    h = hashlib.sha256()
    for rel in ("lean", "certificates"):
        for p in sorted((REPO / rel).rglob("*")):
            if p.is_file():
                h.update(str(p.relative_to(REPO)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def run_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    rc = main(["mutate", "--json", *argv])
    return rc, json.loads(capsys.readouterr().out)


# ---------------------------------------------------------------------------- pure parts


def test_decl_ranges_stop_at_the_next_command() -> None:
    src = "/-- doc -/\ntheorem a : True :=\n  trivial\n\n/-- b's doc -/\npublic theorem b : True := trivial\nend X\n"
    assert decl_ranges(src) == {"a": (2, 4), "b": (6, 6)}


def test_compose_maps_each_snippet_to_its_lines() -> None:
    snippets = [Snippet("m1", "namespace A\ntheorem t : True := trivial\nend A", "t", "x"),
                Snippet("m2", "namespace B\ntheorem t : False := trivial\nend B", "t", "x")]
    text, loc = compose("import Init\n", snippets, "Batch")
    lines = text.splitlines()
    assert lines[loc["m1"].start - 1].startswith("theorem t : True")
    assert lines[loc["m2"].start - 1].startswith("theorem t : False")


def _result(diags: list[Diagnostic], status: str = "failed", cause: str | None = None) -> CheckResult:
    return CheckResult(module="Batch", file="Batch.lean", ok=False, status=status, exit_code=1, seconds=1.0,
                       diagnostics=diags, cause=cause)


def test_kernel_verdict_needs_the_expected_reason_in_the_declaration() -> None:
    where = Located("Batch", 10, 12, r"sorry", "t")
    sorry = Diagnostic(file="Batch.lean", line=11, column=0, severity="warning", message="declaration uses `sorry`")
    other = Diagnostic(file="Batch.lean", line=11, column=0, severity="error", message="unknown identifier 'x'")
    outside = Diagnostic(file="Batch.lean", line=30, column=0, severity="warning", message="declaration uses `sorry`")
    assert kernel_verdict(_result([sorry]), where)[0] == "killed"
    status, detail = kernel_verdict(_result([other]), where)
    assert status == "survived" and "not for the expected reason" in detail
    assert kernel_verdict(_result([outside]), where)[0] == "survived"
    assert kernel_verdict(_result([], status="resources", cause="timeout"), where)[0] == "timeout"
    assert kernel_verdict(_result([], status="resources", cause="heap"), where)[0] == "error"
    assert kernel_verdict(_result([], status="crashed"), where)[0] == "error"
    assert kernel_verdict(None, where)[0] == "error"


def test_score_excludes_equivalent_mutants_and_stryker_shape() -> None:
    def o(mid: str, status: str, eq: str | None = None) -> Outcome:
        m = Mutant(id=mid, operator="op", checker="verify", description="d", expected="e",
                   target="certificates/MANIFEST.sha256", equivalent=eq)
        return Outcome(mutant=m, status=status, detail="why", seconds=0.0)
    rep = CampaignReport(outcomes=[o("a", "killed"), o("b", "survived"), o("c", "equivalent", "same")],
                         wall_s=1.0, backend="wasm", kernel_runs=0)
    assert rep.score == 50.0 and [x.mutant.id for x in rep.failing] == ["b"]
    doc = to_stryker(rep, REPO)
    assert doc["schemaVersion"] == "2"
    mutants = doc["files"]["certificates/MANIFEST.sha256"]["mutants"]
    assert [m["status"] for m in mutants] == ["Killed", "Survived", "Ignored"]
    assert all({"id", "mutatorName", "location", "status"} <= set(m) for m in mutants)
    assert doc["files"]["certificates/MANIFEST.sha256"]["source"]


def test_every_operator_class_has_a_docstring() -> None:
    assert len(ops.OPERATORS) >= 8
    assert all(op.__doc__ and len(op.__doc__) > 40 for op in ops.OPERATORS)


# ---------------------------------------------------------------------------- campaigns without the kernel


def test_checkers_without_the_kernel_kill_every_mutant(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    before = tree_digest()
    argv = ["--expect-reject", "--report", str(tmp_path / "r.json")]
    for c in NO_KERNEL:
        argv += ["--only", c]
    rc, out = run_json(argv, capsys)
    assert rc == 0, [o for o in out["outcomes"] if o["status"] != "killed"]
    s = out["summary"]
    assert s["score"] == 100.0 and s["survived"] == s["error"] == 0 and s["kernel_runs"] == 0
    assert {"verify", "solver-checks", "trace-engine", "report-verifier"} <= set(s["checkers"])
    eq = [o for o in out["outcomes"] if o["status"] == "equivalent"]
    assert eq and all(o["mutant"]["equivalent"] for o in eq)
    assert json.loads((tmp_path / "r.json").read_text())["schemaVersion"] == "2"
    assert tree_digest() == before


def test_a_verifier_that_ignores_figures_lets_mutants_survive(capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify, "compare_figures", lambda cert, recomputed: [])
    rc, out = run_json(["--expect-reject", "--only", "certificate", "--only", "trace-engine"], capsys)
    survived = {o["mutant"]["id"] for o in out["outcomes"] if o["status"] == "survived"}
    assert rc == 1
    assert "cert-edit-figure" in survived  # an edited trace is caught by the instance regenerated from it anyway


def test_without_chromium_the_report_verifier_is_not_run_and_says_how_to_get_it(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A checker that could not run is no rejection (exit 1) and no kill: one line says so and how to
    get the browser; under --expect-reject the campaign cannot vouch for it (exit 2)."""
    monkeypatch.setattr(browser, "CHROMIUM", None)
    why = ("the report-verifier checker was not run (3 mutants, no verdict): chromium is not installed "
           "(Debian: apt-get install chromium; or put a chromium on PATH)")
    assert main(["mutate", "--expect-reject", "--only", "report-verifier"]) == 2
    out, err = capsys.readouterr()
    assert err == f"pycert: {why}\n" and "report-flipped-byte" not in out  # no row per mutant
    assert out.splitlines()[-1].startswith("INCOMPLETE: 3 mutants over 1 operator class, 0 killed, 0 not killed")
    assert main(["mutate", "--only", "report-verifier"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == why
    rc, doc = run_json(["--expect-reject", "--only", "report-verifier"], capsys)
    assert (rc, doc["error"], doc["exit"], doc["summary"]["not-run"], doc["summary"]["error"]) == (2, why, 2, 3, 0)


def test_unknown_class_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["mutate", "--only", "nonsense"])
    assert exc.value.code == 2


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_leak_defects_are_caught_on_the_real_engine(capsys: pytest.CaptureFixture[str]) -> None:
    """The salt dropped and the keyed salt made unkeyed, each run on transformers on the CPU, and a count
    altered in the committed log: each caught by the check that must catch it."""
    before = tree_digest()
    rc, out = run_json(["--expect-reject", "--only", "leak"], capsys)
    assert rc == 0, [o for o in out["outcomes"] if o["status"] != "killed"]
    killed = {o["mutant"]["id"]: o["detail"] for o in out["outcomes"] if o["status"] == "killed"}
    assert set(killed) == {"leak-salt-dropped", "leak-unkeyed-salt", "leak-log-count"}
    assert killed["leak-salt-dropped"].startswith("arm keyed-cross: ")
    assert killed["leak-unkeyed-salt"].startswith("log.salt_id: ")
    assert tree_digest() == before


# ---------------------------------------------------------------------------- the full campaign, real kernel


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_full_campaign_kills_every_mutant(wasm, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    before = tree_digest()
    rc, out = run_json(["--expect-reject", "--report", str(tmp_path / "r.json")], capsys)
    bad = [(o["mutant"]["id"], o["status"], o["detail"]) for o in out["outcomes"] if o["status"] not in ("killed", "equivalent")]
    assert rc == 0, bad
    s = out["summary"]
    assert s["mutants"] >= 40 and s["operators"] >= 8 and s["score"] == 100.0
    assert set(s["checkers"]) == {"lean-kernel", "audit", "solver-checks", "verify", "verify-kernel", "trace-engine",
                                  "report-verifier", "leak-run", "emitter", "prove"}
    # Each theorem family's file really is checked: a copy with a hypothesis weakened (or the
    # statement strengthened) is rejected by the kernel inside the mutated declaration.
    files = {o["mutant"]["target"] for o in out["outcomes"]
             if o["status"] == "killed" and o["mutant"]["checker"] == "lean-kernel"}
    assert {f"lean/Pycert/{f}.lean" for f in ("Isolation", "FirstTouch", "Ceiling", "Pooling")} <= files
    assert tree_digest() == before


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_an_audit_that_allows_any_axiom_lets_mutants_survive(wasm, capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    for module in (au, graph):  # where the graph classifies an axiom, and where a project axiom is listed
        monkeypatch.setattr(module, "axiom_offense", lambda name, toolchain: None)
    rc, out = run_json(["--expect-reject", "--only", "audit-self-test"], capsys)
    survived = {o["mutant"]["id"] for o in out["outcomes"] if o["status"] == "survived"}
    assert rc == 1
    assert {"audit-through-private", "audit-through-def"} <= survived
