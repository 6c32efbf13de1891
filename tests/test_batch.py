"""Instance files checked together as one Lean module (pycert.lean.batch): which files are grouped, how
Lean's messages go back to each file's own lines, and, on the real kernel, that every headline reads the
same off the batch's .olean as off the file's own, that the audit reads every declaration of the batch,
and that a batch Lean refuses leaves each file its own verdict."""

from __future__ import annotations

import random
import uuid
from pathlib import Path

import pytest

from pycert.audit.axioms import audit_build
from pycert.core.resources import library_dir
from pycert.families.ceiling import instance_text
from pycert.lean import batch, build
from pycert.lean.diagnostics import CheckResult, Diagnostic
from pycert.lean.sources import file_units, library_modules

LIBRARY = {"Pycert", "Pycert.Ceiling", "Pycert.PackedTrace"}


def _file(d: Path, name: str, text: str) -> Path:
    (d / f"{name}.lean").write_text(text)
    return d / f"{name}.lean"


def _instance(d: Path, name: str, seed: int, n: int = 60) -> Path:
    rng = random.Random(seed)
    pool = [rng.getrandbits(64) for _ in range(12)]
    return _file(d, name, instance_text([rng.choice(pool) for _ in range(n)], "0" * 64, name).decode())


def test_plan_groups_only_small_leaf_files_of_the_library_that_the_cache_cannot_answer(tmp_path: Path) -> None:
    ns = "namespace Pycert.Instance.{0}\ntheorem t : True := trivial\nend Pycert.Instance.{0}\n"
    files = [_file(tmp_path, f"A{k}", "import Pycert.Ceiling\n" + ns.format(f"A{k}")) for k in range(5)]
    files.append(_file(tmp_path, "Mod", "module\nimport Pycert.Ceiling\n" + ns.format("Mod")))  # a module header
    files.append(_file(tmp_path, "Other", "import A0\n" + ns.format("Other")))  # imports a file of the build
    files.append(_file(tmp_path, "Big", "import Pycert.Ceiling\n-- " + "x" * batch.MAX_MEMBER_BYTES + "\n"))
    files.append(_file(tmp_path, "Probe", "import Pycert.Ceiling\n#check @Pycert.Ceiling.hits_le\n"))  # no namespace
    files.append(_file(tmp_path, "Elsewhere", "import Pycert.Ceiling\n" + ns.format("A1")))  # another file's
    units = file_units(files)
    misses = {u.module for u in units} - {"A4"}  # A4: the build cache has it
    # A0 is imported by Other; over two threads the three left make a pair and a file checked alone
    assert [[u.module for u in g] for g in batch.plan(units, misses, LIBRARY, threads=2)] == [["A1", "A3"]]
    assert [[u.module for u in g] for g in batch.plan(units, misses, LIBRARY, threads=1)] == [["A1", "A2", "A3"]]
    assert batch.plan(units[:1], misses, LIBRARY, threads=2) == []


def test_messages_go_back_to_each_files_own_lines(tmp_path: Path) -> None:
    a = _file(tmp_path, "A", "-- a\nimport Pycert.Ceiling\n#check 1\n")
    b = _file(tmp_path, "B", "import Pycert.PackedTrace\nimport Pycert.Ceiling\n\n#check 2\n")
    unit, b_ = batch.write(file_units([a, b]), tmp_path)
    text = Path(b_.path).read_text().splitlines()
    assert text[:2] == ["import Pycert.Ceiling", "import Pycert.PackedTrace"]
    for m, src in zip(b_.members, (a, b)):  # every line of each file stands where the batch says
        own = src.read_text().splitlines()
        placed = text[m.first_line - 1: m.first_line - 1 + m.lines]
        assert [x for x, y in zip(placed, own) if x != y] == ["" for y in own if y.startswith("import")]
    line_a = b_.members[0].first_line + 2  # A's #check
    line_b = b_.members[1].first_line + 3
    diag = [Diagnostic(file=b_.path, line=line_a, column=0, severity="info", message="1 : Nat"),
            Diagnostic(file=b_.path, line=line_b, column=0, severity="info", message="2 : Nat"),
            Diagnostic(file=b_.path, line=1, column=0, severity="error", message="header")]
    res = CheckResult(module=unit.module, file=b_.path, ok=True, status="ok", exit_code=0, seconds=1.0, diagnostics=diag)
    ra, rb = batch.split(res, b_)
    assert [(d.file, d.line, d.message) for d in ra.diagnostics] == [(str(a), 3, "1 : Nat"), (str(a), 1, "header")]
    assert [(d.file, d.line, d.message) for d in rb.diagnostics] == [(str(b), 4, "2 : Nat"), (str(b), 1, "header")]
    assert ra.compiled_as == rb.compiled_as == unit.module
    assert batch.member_of("_private.PycertBatch1.0.Pycert.Instance.CeilingX.checked") == "CeilingX"
    assert batch.member_of("Pycert.Ceiling.hits_le") is None


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_batch_states_what_each_file_states_alone(wasm, lean_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three fresh instances: one Lean process for all (one thread), every headline's kernel type the same as
    checked alone, the audit over the batch; then one file made false: its own verdict is a refusal, the
    others hold."""
    tag = uuid.uuid4().hex[:6].upper()
    files = [_instance(lean_dir, f"CeilingB{tag}{k}", seed=k) for k in range(3)]
    heads = [f"Pycert.Instance.{f.stem}.headline" for f in files]
    together = build.build(library=library_dir(), files=files, backend=wasm, jobs=1, batch=True)
    assert together.ok and len(together.batch_sources) == 1, together.results
    home = next(iter(together.batch_sources))
    assert {r.module: r.compiled_as for r in together.results if r.module in {f.stem for f in files}} == {
        f.stem: home for f in files}
    assert set(together.compiled()) == set(library_modules(library_dir())) | {home}
    report = audit_build(together, wasm, library_dir(), digests=heads, headlines=heads)
    assert report.ok and {m.module for m in report.modules} >= {home}
    for f, h in zip(files, heads):  # each file's #check of its headline, on its own lines
        mine = together.by_module()[f.stem]
        assert any(d.severity == "info" and d.message.startswith(h) for d in mine.diagnostics), mine.diagnostics
    alone = build.build(library=library_dir(), files=files, backend=wasm, jobs=1)
    assert not alone.batch_sources and alone.ok
    solo = audit_build(alone, wasm, library_dir(), digests=heads, headlines=heads)
    assert {h: report.type_sha256[h] for h in heads} == {h: solo.type_sha256[h] for h in heads}
    assert {h: report.headlines[h] for h in heads} == {h: solo.headlines[h] for h in heads}

    bad = _instance(lean_dir, f"CeilingB{tag}Bad", seed=9)
    bad.write_text(bad.read_text().replace("public theorem headline", "public theorem headline' : 1 = 2 := rfl\n"
                                           "public theorem headline", 1))
    fresh = [_instance(lean_dir, f"CeilingB{tag}{k}", seed=k + 10) for k in range(3, 5)]
    mixed = build.build(library=library_dir(), files=[*fresh, bad], backend=wasm, jobs=1, batch=True)
    verdicts = {r.module: r for r in mixed.results}
    assert verdicts[bad.stem].status == "failed" and verdicts[bad.stem].compiled_as is None
    assert any(d.line > 1 and d.severity == "error" for d in verdicts[bad.stem].diagnostics)
    assert all(verdicts[f.stem].ok and verdicts[f.stem].compiled_as is None for f in fresh), verdicts
