"""The commands pycert prints for what comes next: after prove, the verify and report of what it wrote
(found where prove read the trace; ``--input`` only for a certificate made before origins were recorded) and
the prove of what it left alone; on the report page, the verify of the real directory. Each printed command
is run here as a newcomer would paste it, and none leads to NOT VERIFIED or exit 2."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from pycert.certify import hints
from pycert.certify.manifest import write_certificates
from pycert.certify.report import write_report
from pycert.cli import main
from pycert.cli.prove import next_steps, render
from pycert.core.files import file_sha256
from pycert.core.schema import InputFile
from pycert.lean.emit import packed_trace
from pycert.prove import ProveResult
from tests.certs import make_cert
from tests.conftest import REPO, SHARED_TRACES


def ceiling_cert(cert_dir: Path, trace: Path, origin: bool = True) -> Path:
    """A ceiling certificate of ``trace``, from outside ``cert_dir`` (as prove names it: by file name and its
    absolute path; without ``origin``, as prove named it before it recorded that)."""
    inp = InputFile(role="trace", path=trace.name, sha256=file_sha256(trace), external=True,
                    origin=str(trace.resolve()) if origin else None)
    cert = make_cert(f"ceiling-{trace.stem}", "ceiling", {"lean_encoding": packed_trace.ENCODING}, [inp],
                     external={trace.name: trace})
    write_certificates([cert], cert_dir)
    return cert_dir / cert.filename


def run_printed(command: str, capsys: pytest.CaptureFixture[str]) -> int:
    argv = shlex.split(command)
    assert argv[0] == "pycert"
    rc = main(argv[1:])
    capsys.readouterr()
    return rc


@pytest.fixture()
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A newcomer's working directory, with their trace in a directory of its own beside it."""
    (tmp_path / "work").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "t.ids").write_text("5\n6\n5\n7\n5\n6\n")
    monkeypatch.chdir(tmp_path / "work")
    return tmp_path / "work"


def test_prove_prints_the_verify_and_report_that_work(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = Path("../elsewhere/t.ids")
    written = ceiling_cert(Path("certs"), trace)
    steps = next_steps([written], Path("certs"), [trace])
    assert steps.verify == "pycert verify certs/*.json"  # verify finds the trace where prove read it
    assert steps.report == "pycert report --certs certs"
    assert (steps.left_alone, steps.prove_again) == ([], None)
    assert run_printed("pycert verify certs/ceiling-t.json", capsys) == 0  # what the newcomer tries first
    assert run_printed(steps.verify.replace("*.json", "ceiling-t.json"), capsys) == 0
    assert run_printed(steps.report, capsys) == 0
    page = (work / "report.html").read_text()
    assert "Re-check them offline with <code>pycert verify certs/*.json</code>" in page and "<strong>NOT " not in page
    text = render(ProveResult(ok=True, stages=[], rows=[], written=[str(written)]), steps)
    assert text.endswith(f"check them, offline:\n  {steps.verify}\n  {steps.report}")


def test_a_certificate_without_an_origin_gets_input_and_one_whose_trace_moved_is_not_checked(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = Path("../elsewhere/t.ids")
    written = ceiling_cert(Path("certs"), trace, origin=False)  # made before prove recorded where traces were
    steps = next_steps([written], Path("certs"), [trace])
    assert steps.verify == "pycert verify certs/*.json --input t.ids=../elsewhere/t.ids"
    assert steps.report == "pycert report --certs certs --input t.ids=../elsewhere/t.ids"
    assert run_printed(steps.verify.replace("*.json", "ceiling-t.json"), capsys) == 0
    assert run_printed(steps.report, capsys) == 0
    assert run_printed("pycert verify certs/ceiling-t.json", capsys) == 5  # not checked: trace not here
    moved = ceiling_cert(Path("mine"), trace)
    (work.parent / "elsewhere" / "t.ids").rename(work.parent / "elsewhere" / "u.ids")
    assert main(["verify", str(moved)]) == 5
    out, err = capsys.readouterr()
    assert out.startswith("NOT CHECKED") and "trace not here" in err and "(where it was proved from)" in err
    assert main(["report", "--certs", "mine", "--out", "r.html"]) == 0
    assert "1 shown marked NOT CHECKED (a trace not on this machine)" in capsys.readouterr().out
    assert "<strong>NOT CHECKED</strong>" in (work / "r.html").read_text()


def test_a_trace_beside_the_directory_needs_no_input_and_an_unknown_one_is_named(work: Path) -> None:
    (work / "t.ids").write_bytes((work.parent / "elsewhere" / "t.ids").read_bytes())
    written = ceiling_cert(work / "certs", Path("t.ids"), origin=False)
    assert next_steps([written], Path("certs"), [Path("t.ids")]).verify == "pycert verify certs/*.json"
    write_report(Path("certs"), Path("r.html"), curves=False)
    assert "<code>pycert verify certs/*.json</code>" in (work / "r.html").read_text()
    (work / "t.ids").unlink()
    write_report(Path("certs"), Path("r.html"))  # the trace is nowhere pycert can see: no curve, no error
    page = (work / "r.html").read_text()
    assert "<code>pycert verify certs/*.json</code>" in page and "<strong>NOT CHECKED</strong>" in page
    far = Path("/tmp") if not Path.cwd().is_relative_to("/tmp") else Path("/")
    assert hints.shown(far) == str(far.absolute()) and hints.shown("a b/c") == "'a b/c'"


def test_prove_names_what_it_left_alone_and_the_command_that_would_prove_it(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    iso = make_cert("isolation-t3-n4", "isolation", {"T": 3, "n": 4})
    write_certificates([iso], work / "certs")
    old = ceiling_cert(work / "certs", work.parent / "elsewhere" / "t.ids", origin=False)  # an earlier run's
    steps = next_steps([work / "certs" / iso.filename], Path("certs"), [])
    assert steps.verify == "pycert verify certs/isolation-t3-n4.json"
    assert steps.left_alone == ["ceiling-t.json"]
    assert steps.prove_again.startswith("pycert prove ceiling --trace ") and steps.prove_again.endswith(
        "t.ids --out certs") and steps.needs == [f"t.ids (sha256 {file_sha256(work.parent / 'elsewhere' / 't.ids')[:12]}...)"]
    assert steps.report == "pycert report --certs certs"  # runs as printed: t.ids's certificate is marked not checked
    assert run_printed(steps.report, capsys) == 0
    text = render(ProveResult(ok=True, stages=[], rows=[], written=[iso.filename]), steps)
    assert "not proved by this run, left as they were: ceiling-t.json; to prove them again:\n  (it needs t.ids" in text
    (work / "t.ids").write_bytes((work.parent / "elsewhere" / "t.ids").read_bytes())  # now beside the directory
    again = next_steps([work / "certs" / iso.filename], Path("certs"), [])
    assert again.prove_again == "pycert prove ceiling --trace t.ids --out certs" and again.needs == []
    assert old.is_file()
    recorded = ceiling_cert(work / "certs", work.parent / "elsewhere" / "t.ids")  # the same, with its origin
    (work / "t.ids").unlink()
    third = next_steps([work / "certs" / iso.filename], Path("certs"), [])
    assert third.prove_again == "pycert prove ceiling --trace ../elsewhere/t.ids --out certs" and not third.needs
    assert recorded.is_file()


def test_make_prove_names_the_committed_mooncake_certificates_it_leaves_alone() -> None:
    """``make prove`` is ``pycert prove all`` without the Mooncake traces, a capacity or a tenant map: it says
    which ten it did not prove again (their ceilings, the two fleets of the embedded trace, and each trace at 128 blocks, the embedded one included:
    the engine certificate's companion, with and without a per-tenant salt), and the command that would (the
    traces where the README's Data section keeps them, each named once, the embedded one by its path since a
    --trace replaces the default, the capacity and the tenant map)."""
    out = REPO / "certificates"
    written = [out / n for n in ("first-touch-c256-n4000.json", "isolation-t8-n1024.json", "pooling-committed.json",
                                 "ceiling-synthetic-seed0.json", "leak-transformers-cpu-k299-seed0.json",
                                 "audit-pycert-small-seed0-s250-seed0.json", "engine-synthetic-seed0-c128-b16-seed0.json")]
    steps = next_steps(written, out, [])
    assert steps.left_alone == ["capacity-conversation-trace-c128.json", "capacity-synthetic-seed0-c128.json",
                                "capacity-synthetic-trace-c128.json", "ceiling-conversation-trace.json",
                                "ceiling-synthetic-trace.json", "fleet-synthetic-seed0-prefix-2-h4-c64.json",
                                "fleet-synthetic-seed0-round-robin-h4-c64.json",
                                "isolation-cost-conversation-trace-prefix2-t8-c128.json",
                                "isolation-cost-synthetic-seed0-prefix2-t8-c128.json",
                                "isolation-cost-synthetic-trace-prefix2-t8-c128.json"]
    traces = [hints.shown(SHARED_TRACES / n) for n in ("conversation_trace.jsonl", "synthetic_trace.jsonl")]
    embedded = hints.shown(out / "inputs" / "synthetic-seed0.jsonl")
    assert steps.prove_again == (f"pycert prove all --trace {embedded} --trace {traces[0]} --trace {traces[1]} "
                                 f"--capacity-blocks 128 --tenants 8 --tenant-rule prefix:2 --out {hints.shown(out)}\n"
                                 # the fleets by their own command: hosts, routings and engine are no flags of prove all
                                 "  pycert prove fleet --capacity-blocks 64 --hosts 4 --routing prefix:2 --routing "
                                 f"round-robin --engine vllm --out {hints.shown(out)}")
    here = (SHARED_TRACES / "conversation_trace.jsonl").is_file()  # the command names them there either way
    assert [n.split(" ")[0] for n in steps.needs] == ([] if here else ["conversation_trace.jsonl", "synthetic_trace.jsonl"])
    ceilings = [out / n for n in steps.left_alone if n.startswith("ceiling-")]
    assert hints.prove_command(ceilings, out)[0] == (f"pycert prove ceiling --trace {traces[0]} --trace {traces[1]} "
                                                     f"--out {hints.shown(out)}")
