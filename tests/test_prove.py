"""``pycert prove`` as a list of stages, and the families behind it: each family is one module, and what
it proves now is what the committed certificates say (provenance and the audit's own summary aside)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pycert.certify.verify import verify_certificate
from pycert.data.traces import read_trace
from pycert.families import FAMILIES, producer
from pycert.families.base import Claim, Options, Producer
from pycert.families.ceiling.produce import CeilingOptions
from pycert.families.pooling import wall as pooling_wall
from pycert.lean.emit import packed_trace
from pycert.lean.sources import declared_theorems, library_modules, parse_imports
from pycert.prove import prove, stages
from pycert.solvers.instance import COMMITTED
from pycert.solvers.instance_io import load_instance
from tests.conftest import REPO


def jobs(*names: str, traces: list[Path] | None = None) -> list[tuple[Producer, Options]]:
    """What `pycert prove NAME ...` runs, as the Python API takes it."""
    return [(producer(n), CeilingOptions(trace=traces or []) if n == "ceiling" else Options()) for n in names]


def test_every_family_is_one_package_with_its_lean_file_and_its_theorems() -> None:
    assert set(FAMILIES) == {"capacity", "ceiling", "engine", "first-touch", "first-touch-ramp", "first-touch-trace",
                             "fleet", "isolation", "isolation-cost", "leak", "leak-audit", "pooling"}
    modules = library_modules(REPO / "lean")
    for family in FAMILIES.values():
        assert isinstance(family, Claim)
        assert type(family).__module__ == f"pycert.families.{family.name.replace('-', '_')}"
        assert family.lean_module in modules, family.name
        declared = {n for path in modules.values() for n in declared_theorems(path.read_text(encoding="utf-8"))}
        assert set(family.theorem_names) <= declared, family.name
        assert family.certificate.model_fields["family"].annotation.__args__ == (family.name,)
        assert family.certificate.__name__.endswith("Certificate") and producer(family.name).claim is family


def test_the_root_imports_every_library_file() -> None:
    """`lean/Pycert.lean` is what `import Pycert` and Lake's default target mean: it must not go stale."""
    root = REPO / "lean" / "Pycert.lean"
    modules = set(library_modules(REPO / "lean")) - {"Pycert"}
    assert set(parse_imports(root.read_text(encoding="utf-8"))) == modules


def test_emitted_instance_files_are_the_committed_ones() -> None:
    """Their sha256 is in the certificates: emitting them again must give the same bytes."""
    lean = REPO / "certificates" / "lean"
    assert pooling_wall.emit(load_instance(COMMITTED)).encode() == (lean / "PoolingWall.lean").read_bytes()
    trace = read_trace(REPO / "certificates" / "inputs" / "synthetic-seed0.jsonl")
    emitted = packed_trace.emit_instance(trace.refs, trace.sha256, "CeilingSyntheticSeed0").encode()
    assert emitted == (lean / "CeilingSyntheticSeed0.lean").read_bytes()


def test_the_stages_in_order() -> None:
    names = [name for name, _ in stages(jobs(*FAMILIES))]
    assert names == ["instances: capacity", "instances: ceiling", "instances: engine", "instances: first-touch",
                     "instances: first-touch-ramp", "instances: first-touch-trace", "instances: fleet", "instances: isolation",
                     "instances: isolation-cost", "instances: leak", "instances: leak-audit", "instances: pooling",
                     "kernel", "axiom audit", "figures", "statements", "certificates"]


def _comparable(text: str) -> dict:
    """A certificate without the one part that names this machine's toolchain build (Node's version)."""
    doc = json.loads(text)
    doc.pop("backend")
    return doc


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_prove_writes_what_the_committed_certificates_say(wasm, tmp_path: Path) -> None:
    out = tmp_path / "certificates"
    res = prove(jobs("isolation", "first-touch"), backend="wasm", out_dir=out)
    assert res.ok, res.stages
    assert [(s.name, s.status) for s in res.stages] == [
        ("instances: isolation", "ok"), ("instances: first-touch", "ok"), ("kernel", "ok"),
        ("axiom audit", "ok"), ("figures", "ok"), ("statements", "ok"), ("certificates", "ok")]
    written = sorted(Path(p).name for p in res.written)
    assert written == ["first-touch-c256-n4000.json", "isolation-t8-n1024.json"]
    for name in written:
        assert _comparable((out / name).read_text()) == _comparable((REPO / "certificates" / name).read_text())
        assert verify_certificate(out / name).ok
    first = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    assert prove(jobs("isolation", "first-touch"), backend="wasm", out_dir=out).ok
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == first  # byte-identical, manifest too
    assert json.loads((out / "runs" / "last.json").read_text())["written"]


def _ids_trace(path: Path, seed: int) -> Path:
    import random

    rng = random.Random(seed)
    pool = [rng.getrandbits(64) for _ in range(60)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{rng.choice(pool)}\n" for _ in range(300)))
    return path


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_certificate_directory_can_be_renamed_and_sent(wasm, tmp_path: Path) -> None:
    """What `prove --out DIR` names under DIR is named from DIR itself: renamed, DIR still verifies;
    sent elsewhere, verify finds the trace where it was proved from; the trace moved too, verify asks for it by
    name (not checked: trace not here); handed it, verify passes."""
    from pycert.core.errors import InputError

    work = tmp_path / "work"
    trace = _ids_trace(work / "mine.txt", seed=5)
    res = prove(jobs("ceiling", traces=[trace]), backend="wasm", out_dir=work / "certs")
    assert res.ok, res.stages
    (work / "certs").rename(work / "renamed")
    cert = work / "renamed" / "ceiling-mine.json"
    assert verify_certificate(cert).ok
    assert not (work / "renamed" / "ceiling-synthetic-seed0.json").exists()  # only what was asked for
    sent = tmp_path / "inbox" / "certs"
    sent.parent.mkdir()
    (work / "renamed").rename(sent)
    assert verify_certificate(sent / "ceiling-mine.json").ok  # the trace is still where it was proved from
    trace = trace.rename(tmp_path / "moved.txt")
    far = verify_certificate(sent / "ceiling-mine.json")
    assert far.status == "not-here" and "--input mine.txt=PATH" in far.not_here[0]
    assert verify_certificate(sent / "ceiling-mine.json", inputs={"mine.txt": trace}).ok
    trace.write_text(trace.read_text() + "1\n")
    assert verify_certificate(sent / "ceiling-mine.json", inputs={"mine.txt": trace}).status == "rejected"
    with pytest.raises(InputError, match="would both make ceiling-my-trace"):
        prove(jobs("ceiling", traces=[_ids_trace(work / "my-trace.txt", 1), _ids_trace(work / "my_trace.txt", 2)]),
              backend="wasm", out_dir=work / "clash")
    assert not (work / "clash").exists()


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_check_that_runs_out_of_time_rejects_nothing(wasm, tmp_path: Path) -> None:
    """One trace's kernel check cut short by a deliberately tiny limit: the run ends with exit 3 and
    says why, that trace gets no certificate and no rejection, and the other trace's certificate is
    judged on its own evidence and written."""
    import subprocess
    import sys

    out = tmp_path / "certs"
    seen = _ids_trace(tmp_path / "seen.txt", seed=26)
    assert prove(jobs("ceiling", traces=[seen]), backend="wasm", out_dir=out).ok  # in the build cache from here on
    trace = _ids_trace(tmp_path / "fresh.txt", seed=int.from_bytes(os.urandom(4), "little"))
    proc = subprocess.run([sys.executable, "-m", "pycert", "prove", "ceiling", "--trace", str(seen), "--trace", str(trace),
                           "--out", str(out), "--timeout", "4", "--backend", "wasm"],
                          capture_output=True, text=True, cwd=REPO, timeout=1200)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "NOT CHECKED: 1 certificate written" in proc.stdout and "REJECTED" not in proc.stdout, proc.stdout
    line = proc.stderr.strip().splitlines()[-1]  # after the progress lines
    assert line.startswith("pycert: ceiling-fresh was not checked: CeilingFresh.lean (") and "MiB of Lean)" in line
    assert "ran past its time limit of 4 s" in line and "--backend native" in line, line
    assert sorted(p.name for p in out.glob("*.json")) == ["ceiling-seen.json"]
    assert verify_certificate(out / "ceiling-seen.json", inputs={"seen.txt": seen}).ok
    assert not (out / "lean" / "derived" / "CeilingFresh.lean").exists()


def test_a_trace_that_would_replace_an_earlier_certificate_is_refused(tmp_path: Path) -> None:
    from pycert.core.errors import InputError
    from pycert.families.base import Setting
    from pycert.families.ceiling.produce import PRODUCER as CEILING

    def setting(*traces: Path, everything: bool = False) -> Setting:
        return Setting(out_dir=out, options=CeilingOptions(trace=list(traces), synthetic=everything))

    out = tmp_path / "certs"
    out.mkdir()
    (out / "ceiling-t1.json").write_text(json.dumps({"inputs": [{"role": "trace", "path": "t1.txt"}]}))
    same = _ids_trace(tmp_path / "again" / "t1.txt", 1)
    CEILING.check(setting(same))  # the same trace, proved again
    other = _ids_trace(tmp_path / "t1.csv", 1)
    with pytest.raises(InputError, match="certifies trace t1.txt"):
        CEILING.check(setting(other))
    clash = _ids_trace(tmp_path / "synthetic_seed0.txt", 1)
    CEILING.check(setting(clash))  # alone: no synthetic default to clash with
    with pytest.raises(InputError, match="would both make ceiling-synthetic-seed0"):
        CEILING.check(setting(clash, everything=True))


def test_an_interrupted_first_run_leaves_no_out_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C once the ceiling family has emitted its files: the run removes them, and the --out it
    created (with its parents), now empty; an --out that was there before stays."""
    from pycert import prove as run
    from pycert.cli import main

    def ctrl_c(_run: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(run, "kernel", ctrl_c)
    out = tmp_path / "new" / "certs"
    assert main(["prove", "ceiling", "--out", str(out)]) == 130
    assert list(tmp_path.iterdir()) == []
    out.mkdir(parents=True)
    assert main(["prove", "ceiling", "--out", str(out)]) == 130
    assert out.is_dir() and list(out.iterdir()) == []


def test_a_trace_that_is_a_directory_is_named_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pycert.cli import main

    assert main(["prove", "ceiling", "--trace", str(tmp_path), "--out", str(tmp_path / "certs")]) == 2
    assert capsys.readouterr().err == f"pycert: {tmp_path}: is a directory, not a trace file\n"
    assert main(["prove", "ceiling", "--trace", str(tmp_path / "nope"), "--out", str(tmp_path / "certs")]) == 2
    assert capsys.readouterr().err == f"pycert: {tmp_path / 'nope'}: no such trace file\n"
    assert list(tmp_path.iterdir()) == []


def test_a_trace_at_the_defaults_place_is_the_default(tmp_path: Path) -> None:
    """prove's hint names the embedded default beside other traces (`prove all --trace inputs/synthetic-seed0.jsonl
    --trace T ...`): the ceiling family, which adds the default to `prove all` anyway, counts it once (it was
    refused as two traces making ceiling-synthetic-seed0)."""
    from pycert.families.base import Setting
    from pycert.families.traces import DEFAULT_TRACE

    other = tmp_path / "t.jsonl"
    named_default = tmp_path / "certs" / "." / DEFAULT_TRACE
    for synthetic in (True, False):
        setting = Setting(out_dir=tmp_path / "certs",
                          options=CeilingOptions(trace=[named_default, other], synthetic=synthetic))
        assert producer("ceiling").traces(setting) == [tmp_path / "certs" / DEFAULT_TRACE, other]
