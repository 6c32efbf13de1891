"""The CLI contract (README: exit codes, limits): one regression test per case of issue 15.

0 holds, 1 a checker rejected, 2 a usage or input error with one line naming where and why, never a
traceback; under ``--json`` an error is one JSON object ``{error, where, exit}`` on stdout; 130 on
Ctrl-C, 143 on SIGTERM, with no temporary left behind. No test here starts Lean.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pycert.certify.manifest import MANIFEST_NAME, write_certificates
from pycert.cli import main
from pycert.core import console, files
from pycert.core.files import file_sha256
from pycert.core.limits import MAX_ID, MAX_INSTANCE_ID
from pycert.core.schema import InputFile
from pycert.lean.emit.packed_trace import ENCODING
from pycert.solvers.instance import COMMITTED
from tests.certs import make_cert, trace_input

REPO = Path(__file__).resolve().parent.parent
GOOD = {"timestamp": 0, "input_length": 1024, "output_length": 3, "hash_ids": [1, 2, 1]}


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run ``pycert argv`` in-process: (exit code, stdout, stderr)."""
    try:
        rc = main(list(argv))
    except SystemExit as exc:  # argparse: --help, or a usage error after the shared error path
        rc = exc.code if isinstance(exc.code, int) else 0
    out, err = capsys.readouterr()
    return rc, out, err


def one_line(err: str) -> str:
    assert err.endswith("\n") and err.count("\n") == 1 and "Traceback" not in err, err
    return err.strip()


def expect_error(capsys: pytest.CaptureFixture[str], argv: list[str], code: int, *needles: str) -> str:
    rc, out, err = cli(capsys, *argv)
    assert rc == code, (rc, out, err)
    line = one_line(err)
    assert all(n in line for n in needles), line
    # the same under --json: one JSON object on stdout, the same exit code and line
    rc_j, out_j, err_j = cli(capsys, *argv, "--json") if "--" not in argv else (rc, None, err)
    if out_j is not None:
        obj = json.loads(out_j)
        assert rc_j == code and obj["exit"] == code and set(obj) >= {"error", "where", "exit"}, obj
        assert one_line(err_j) == line
    return line


def instance_variant(tmp_path: Path, name: str, edit) -> Path:  # noqa: ANN001
    data = json.loads(COMMITTED.read_text())
    edit(data)
    path = tmp_path / name
    path.write_text(json.dumps(data, indent=1))
    return path


# ---------------------------------------------------------------------------- tracebacks that were


def test_id_of_5000_digits(tmp_path: Path, capsys) -> None:
    p = tmp_path / "big.ids"
    p.write_text("7\n" + "1" * 5000 + "\n")
    expect_error(capsys, ["trace", "stats", str(p)], 2, f"{p}:2:", "64 bits")


def test_mooncake_line_nested_1000_deep(tmp_path: Path, capsys) -> None:
    p = tmp_path / "deep.jsonl"
    deep = json.dumps(GOOD)[:-1] + ', "x": ' + "[" * 1000 + "]" * 1000 + "}"
    p.write_text(json.dumps(GOOD) + "\n" + deep + "\n")
    expect_error(capsys, ["trace", "stats", str(p)], 2, f"{p}:2:", "nested deeper than 32")


def test_mooncake_number_of_5000_digits(tmp_path: Path, capsys) -> None:
    p = tmp_path / "n.jsonl"
    p.write_text(json.dumps(GOOD).replace("[1, 2, 1]", "[" + "9" * 5000 + "]") + "\n")
    expect_error(capsys, ["trace", "stats", str(p)], 2, f"{p}:1:", "4,300 digits")


@pytest.mark.parametrize("argv, flag", [
    (["trace", "stats", "--granularity", "99999999999999999999999"], "--granularity"),
    (["trace", "offload", "--control-k", "99999999999999999999", "--block-tokens", "16", "--capacity-tokens", "1024"],
     "--control-k"),
    (["trace", "offload", "--capacity-tokens", "9" * 5000], "--capacity-tokens"),
])
def test_huge_integer_flags(capsys, argv: list[str], flag: str) -> None:
    line = expect_error(capsys, argv, 2, flag, "must be between 1 and 1,099,511,627,776")
    assert "digit number" in line


def test_verify_manifest_is_a_directory(tmp_path: Path, capsys) -> None:
    cert = REPO / "certificates" / "isolation-t8-n1024.json"
    expect_error(capsys, ["verify", "--root", str(REPO), "--manifest", str(tmp_path), str(cert)], 2,
                 "is a directory, not a manifest file")


def _mini_repo(root: Path, kept: bytes | None = None, instance: Path | None = None, trace: bytes | None = None) -> Path:
    """A certificate directory under ``root``: an isolation certificate (``kept``: bytes left at its
    instance's place), a pooling one resting on ``instance``, or a ceiling one of a ``trace``."""
    root.mkdir(parents=True, exist_ok=True)
    if instance is not None:
        (root / "inputs").mkdir(exist_ok=True)
        (root / "inputs" / "committed.json").write_bytes(instance.read_bytes())
        primary = [InputFile(role="instance", path="inputs/committed.json", sha256=file_sha256(instance))]
        cert = make_cert("pool-demo", "pooling", {"hosts": 16, "pool_capacity": 32, "load_limit": 32},
                         [InputFile(role="instance", path="inputs/committed.json", sha256=file_sha256(COMMITTED))],
                         root=REPO / "certificates")
        cert = cert.model_copy(update={"inputs": [*primary, *cert.inputs[1:]]})
    elif trace is not None:
        (root / "t.ids").write_bytes(trace)
        cert = make_cert("ceiling-t", "ceiling", {"lean_encoding": ENCODING}, [trace_input(root / "t.ids", root)], root=root)
    else:
        cert = make_cert("iso-demo", "isolation", {"T": 3, "n": 4})
        if kept is not None:
            (root / cert.inputs[-1].path).parent.mkdir(parents=True, exist_ok=True)
            (root / cert.inputs[-1].path).write_bytes(kept)
    write_certificates([cert], root / "certificates")
    return root / "certificates" / cert.filename


def test_a_kept_instance_that_is_not_what_pycert_writes_is_rejected(tmp_path: Path, capsys) -> None:
    path = _mini_repo(tmp_path, kept=b"theorem x : True := True.intro -- \xff\xfe\n")
    rc, out, err = cli(capsys, "verify", "--root", str(tmp_path), str(path))
    assert rc == 1 and err == "", (out, err)  # Lean never sees it: verify compiles only what it regenerates
    assert "lean/IsolationT3N4.lean (the copy beside the certificate): expected the bytes pycert regenerates" in out


def test_pooling_block_id_past_64_bits(tmp_path: Path, capsys) -> None:
    huge = instance_variant(tmp_path, "huge.json", lambda d: d["requests"][0]["blocks"].__setitem__(0, 2**70))
    for action in ("check", "solve"):
        expect_error(capsys, ["pooling", action, str(huge)], 2, f"{huge}:", "64 bits")
    repo = tmp_path / "repo"
    cert = _mini_repo(repo, instance=huge)
    rc, out, err = cli(capsys, "verify", "--root", str(repo), str(cert))
    # a pooling certificate speaks of the committed instance: another file is rejected before it is read
    assert rc == 1 and "(the committed instance)" in out, (out, err)
    assert MAX_INSTANCE_ID == 2**63 - 1 and MAX_ID == 2**64 - 1


def test_report_certs_is_a_file_and_manifest_is_a_directory(tmp_path: Path, capsys) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    expect_error(capsys, ["report", "--certs", str(f), "--out", str(tmp_path / "r.html")], 2,
                 str(f), "not a directory of certificates")
    d = tmp_path / "certs"
    (d / MANIFEST_NAME).mkdir(parents=True)
    expect_error(capsys, ["report", "--certs", str(d), "--out", str(tmp_path / "r.html")], 2,
                 "is a directory, not a manifest file")
    assert not (tmp_path / "r.html").exists()


def test_pooling_check_deep_json(tmp_path: Path, capsys) -> None:
    p = tmp_path / "deep.json"
    p.write_text("[" * 1000 + "]" * 1000)
    expect_error(capsys, ["pooling", "check", str(p)], 2, str(p), "nested deeper than 32")


def test_output_paths_that_are_directories(tmp_path: Path, capsys) -> None:
    for argv in (["pooling", "generate", "--out", str(tmp_path)], ["pooling", "solve", "--lean-file", str(tmp_path)],
                 ["trace", "generate", "-o", str(tmp_path)], ["trace", "plot", "-o", str(tmp_path)],
                 ["report", "--out", str(tmp_path)]):
        expect_error(capsys, argv, 2, "is a directory: give a file name")
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_while_importing_in_process(monkeypatch, capsys) -> None:
    import importlib

    real = importlib.import_module

    def interrupted(name: str, *a, **k):  # noqa: ANN002, ANN003, ANN202
        if name == "pycert.cli.trace":
            raise KeyboardInterrupt
        return real(name, *a, **k)

    monkeypatch.setattr(importlib, "import_module", interrupted)
    rc, out, err = cli(capsys, "trace", "stats")
    assert rc == 130 and out == "" and one_line(err) == "pycert: interrupted"


def test_ctrl_c_during_the_imports_of_a_real_process(sigint_raises: None) -> None:
    """SIGINT once numpy is mapped into the process: it is still importing the commands."""
    proc = subprocess.Popen([sys.executable, "-m", "pycert", "trace", "stats"], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if "numpy" in Path(f"/proc/{proc.pid}/maps").read_text():
                break
        except OSError:
            pass
        time.sleep(0.002)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and out == "" and err == "pycert: interrupted\n", (proc.returncode, err)


def test_ctrl_c_tests_pass_where_sigint_is_ignored() -> None:
    """Started with ``&`` or under ``nohup`` the suite inherits SIGINT ignored: the Ctrl-C tests set the
    disposition they rely on (``sigint_raises``) rather than fail there."""
    tests = ["tests/test_cli_contract.py::test_ctrl_c_during_the_imports_of_a_real_process",
             "tests/test_certificate.py::test_ctrl_c_during_commit_is_held_until_the_manifest_is_in_place"]
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests], cwd=REPO,
                         capture_output=True, text=True, timeout=300,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert run.returncode == 0, run.stdout[-2000:]


def test_ctrl_c_during_a_command(monkeypatch, capsys) -> None:
    from pycert.cli import trace

    def boom(trace_, k):  # noqa: ANN001, ANN202
        raise KeyboardInterrupt

    monkeypatch.setattr(trace, "coarsen", boom)
    rc, out, err = cli(capsys, "trace", "stats", "--json")
    assert rc == 130 and json.loads(out)["exit"] == 130 and one_line(err) == "pycert: interrupted"


# ---------------------------------------------------------------------------- wrong or unclear answers


def test_json_errors_are_one_object_on_stdout(tmp_path: Path, capsys) -> None:
    cases = [
        (["trace", "stats", "--json", str(tmp_path / "none")], 2, str(tmp_path / "none")),
        (["trace", "stats", "--json", "--granularity", "0"], 2, "pycert trace stats --granularity"),
        (["pooling", "check", "--json", str(tmp_path)], 2, str(tmp_path)),
        (["report", "--json", "--certs", str(tmp_path / "none")], 2, str(tmp_path / "none")),
        (["verify", "--json", str(tmp_path / "none.json")], 2, str(tmp_path / "none.json")),
        (["--json", "nonsense"], 2, "pycert COMMAND"),
    ]
    for argv, code, where in cases:
        rc, out, err = cli(capsys, *argv)
        obj = json.loads(out)
        assert rc == code and obj["exit"] == code and obj["where"] == where and obj["error"], (argv, obj)
        one_line(err)
    rc, out, _ = cli(capsys, "verify", "--json", str(tmp_path / "none.json"))
    assert json.loads(out)["results"][0]["status"] == "missing-input"


def test_json_errors_name_where_never_null(tmp_path: Path, capsys, monkeypatch) -> None:
    """Where the error has a place (a flag, a certificate field), ``where`` names it; where it has none, the
    command that ran: never ``null``. The line on stderr is unchanged."""
    ids = tmp_path / "t.ids"
    ids.write_text("5\n6\n5\n")
    offload = ["trace", "offload", str(ids), "--json", "--block-tokens", "16"]
    certs = tmp_path / "certs"
    write_certificates([make_cert("isolation-t3-n4", "isolation", {"T": 3, "n": 4})], certs)
    (certs / "isolation-t3-n4.json").write_text((certs / "isolation-t3-n4.json").read_text().replace('"T": 3', '"T": 4'))
    cases = [
        (["trace", "offload", str(Path(__file__).parent / "traces" / "mooncake-sample.jsonl"), "--json",
          "--block-tokens", "16", "--capacity-tokens", "4096"], 2, "--block-tokens"),
        (offload + ["--capacity-tokens", "8"], 2, "--capacity-tokens"),
        (["prove", "capacity", "--json", "--trace", str(ids), "--out", str(tmp_path / "out")], 2, "pycert prove capacity"),
        (["report", "--json", "--no-curves", "--certs", str(certs), "--out", str(tmp_path / "r.html")], 1,
         "manifest[isolation-t3-n4.json].sha256"),
    ]
    for argv, code, where in cases:
        rc, out, err = cli(capsys, *argv)
        obj = json.loads(out)
        assert rc == code and obj["where"] == where and obj["error"], (argv, obj)
        assert one_line(err) == (f"pycert: {obj['error']}" if where.startswith("pycert ") else f"pycert: {where}: {obj['error']}")
    from pycert.cli import trace

    monkeypatch.setattr(trace, "coarsen", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt))
    rc, out, err = cli(capsys, "trace", "stats", "--json")
    assert rc == 130 and json.loads(out)["where"] == "pycert trace stats" and one_line(err) == "pycert: interrupted"


@pytest.mark.parametrize("trace, flags, needles", [
    ("plain", [], ["plain.jsonl", "names no tenants", "--tenants T --tenant-rule"]),  # no tenants and no rule
    ("plain", ["--tenants", "0"], ["--tenants", "must be between 1 and 65,536"]),
    ("plain", ["--tenants", "9" * 40], ["--tenants", "must be between 1 and 65,536"]),
    ("plain", ["--tenant-rule", "round-robin"], ["--tenant-rule", "give --tenants T"]),
    ("plain", ["--tenant-rule", "prefix:0", "--tenants", "2"], ["--tenant-rule", "prefix:K"]),
    ("plain", ["--tenant-rule", "owner", "--tenants", "2"], ["--tenant-rule", "field, round-robin or prefix:K"]),
    ("tenants", ["--tenants", "2"], ["--tenants", "names its own tenants"]),
    ("tenants", ["--capacity-blocks", "0"], ["--capacity-blocks", "must be between 1 and"]),
    ("tenants", ["--capacity-blocks", "9" * 30], ["--capacity-blocks", "must be between 1 and"]),
    ("tenants", ["--shard-refs", "100"], ["--shard-refs", "no pieces"]),
    ("ids", ["--tenant-rule", "round-robin", "--tenants", "2"], ["t.ids", "has no requests"]),
])
def test_isolation_cost_refuses_bad_input_in_one_line(tmp_path: Path, capsys, trace: str, flags: list[str],
                                                      needles: list[str]) -> None:
    """No tenants and no rule, an absurd T or C, a rule without its T, a trace without requests: one line, exit 2,
    before any Lean runs, and nothing left in --out."""
    (tmp_path / "plain.jsonl").write_text(json.dumps(GOOD) + "\n")
    (tmp_path / "tenants.jsonl").write_text(json.dumps({**GOOD, "tenant": "a"}) + "\n")
    (tmp_path / "t.ids").write_text("1\n2\n1\n")
    name = {"plain": "plain.jsonl", "tenants": "tenants.jsonl", "ids": "t.ids"}[trace]
    argv = ["prove", "isolation-cost", "--trace", str(tmp_path / name), "--out", str(tmp_path / "out")]
    argv += flags if "--capacity-blocks" in flags else ["--capacity-blocks", "4", *flags]
    rc, out, err = cli(capsys, *argv)  # an error met reading the trace follows the run's progress lines
    assert rc == 2 and "Traceback" not in err and all(n in err.splitlines()[-1] for n in needles), err
    rc, out, err = cli(capsys, *argv, "--json")
    assert rc == 2 and json.loads(out)["exit"] == 2 and all(n in one_line(err) for n in needles), (out, err)
    assert not (tmp_path / "out").exists()
    expect_error(capsys, ["prove", "isolation-cost", "--trace", str(tmp_path / "tenants.jsonl"), "--out",
                          str(tmp_path / "out")], 2, "give the capacities")


def test_mooncake_with_bom_and_crlf_is_detected(tmp_path: Path, capsys) -> None:
    plain, bom = tmp_path / "plain.jsonl", tmp_path / "bom.jsonl"
    plain.write_text(json.dumps(GOOD) + "\n" + json.dumps(GOOD) + "\n")
    bom.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes().replace(b"\n", b"\r\n"))
    rc, out, err = cli(capsys, "trace", "stats", "--json", str(bom))
    assert rc == 0, err
    got, want = json.loads(out), json.loads(cli(capsys, "trace", "stats", "--json", str(plain))[1])
    assert (got["format"], got["refs"], got["distinct"], got["requests"]) == ("mooncake", 6, 2, 2)
    assert (got["refs"], got["distinct"]) == (want["refs"], want["distinct"])


def test_malformed_certificates_are_input_errors(tmp_path: Path, capsys) -> None:
    for name, text, why in (("bad.json", "{ nope", "invalid JSON"), ("arr.json", "[1, 2]", "a JSON array, not an object"),
                            ("deep.json", "[" * 500 + "]" * 500, "nested deeper than 32")):
        (tmp_path / name).write_text(text)
        expect_error(capsys, ["verify", str(tmp_path / name)], 2, f"{tmp_path / name}: not a certificate", why)
    expect_error(capsys, ["verify", str(tmp_path)], 2, str(tmp_path), "is a directory, not a certificate file")


def test_a_directory_as_a_certificate_input_is_not_missing(tmp_path: Path, capsys) -> None:
    path = _mini_repo(tmp_path, trace=b"1\n2\n1\n")
    (tmp_path / "t.ids").unlink()
    (tmp_path / "t.ids").mkdir()
    line = expect_error(capsys, ["verify", "--root", str(tmp_path), str(path)], 2, "is a directory, not a trace file")
    assert "missing" not in line


def test_report_names_the_invalid_certificate(tmp_path: Path, capsys) -> None:
    path = _mini_repo(tmp_path)
    data = json.loads(path.read_text())
    del data["claim"]
    path.write_text(json.dumps(data))
    write_certificates([], path.parent)  # the manifest keeps the old hash: refresh it by hand
    import hashlib

    (path.parent / MANIFEST_NAME).write_text(f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.name}\n")
    line = expect_error(capsys, ["report", "--no-curves", "--certs", str(path.parent), "--out", str(tmp_path / "r.html")],
                        1, str(path), "claim")
    assert "absent" in line
    path.write_text("[]")
    (path.parent / MANIFEST_NAME).write_text(f"{hashlib.sha256(b'[]').hexdigest()}  {path.name}\n")
    expect_error(capsys, ["report", "--no-curves", "--certs", str(path.parent), "--out", str(tmp_path / "r.html")],
                 2, str(path), "not a certificate")


@pytest.mark.parametrize("argv, needle", [
    (["trace", "stats", "--granularity", "-1"], "must be between 1 and"),
    (["trace", "offload", "--capacity-tokens", "-5"], "must be between 1 and"),
    (["trace", "mrc", "-c", "-5"], "must be between 0 and"),
    (["report", "--out", ""], "empty path"),
    (["trace", "generate", "-o", ""], "empty path"),
    (["trace", "mrc", "-c", ","], "no number in ','"),
    (["trace", "stats", "--granularity=--1"], "not an integer: '--1'"),
    (["trace", "stats", "--granularity", "٣"], "not an integer"),
    (["trace", "generate", "-o", "x.jsonl", "--requests", "10000001"], "must be between 1 and 10,000,000"),
    (["trace", "plot", "--points", "1001"], "must be between 0 and 1,000"),
    (["pooling", "solve", "--time-limit", "nan"], "must be > 0"),
    (["pooling", "solve", "--family-sizes", "0"], "must be between 1 and"),
])
def test_parameter_ranges_say_the_real_minimum(capsys, argv: list[str], needle: str) -> None:
    line = expect_error(capsys, argv, 2, needle)
    assert ">= 0" not in line and "busy" not in line


@pytest.mark.parametrize("edit, field", [
    (lambda d: d.__setitem__("pool_capacity", "32"), "pool_capacity"),
    (lambda d: d["hosts"][0].__setitem__("capacity", True), "hosts.0.capacity"),
    (lambda d: d["routing"].__setitem__("0", 1.0), "routing.0"),
])
def test_instance_integers_are_strict(tmp_path: Path, capsys, edit, field: str) -> None:  # noqa: ANN001
    p = instance_variant(tmp_path, "i.json", edit)
    expect_error(capsys, ["pooling", "check", str(p)], 2, f"{p}:", f"{field}: Input should be a valid integer")


# ---------------------------------------------------------------------------- signals and atomic writes


def _temporaries(d: Path) -> list[str]:
    return sorted(p.name for p in d.rglob(".*.tmp"))


def test_sigterm_during_report_leaves_no_temporary(tmp_path: Path, capsys, monkeypatch) -> None:
    path = _mini_repo(tmp_path)
    out = tmp_path / "site" / "r.html"
    real_fsync = os.fsync

    def fsync_then_sigterm(fd: int) -> None:  # the signal arrives in the middle of the write
        os.kill(os.getpid(), signal.SIGTERM)
        real_fsync(fd)

    monkeypatch.setattr(files.os, "fsync", fsync_then_sigterm)
    rc, stdout, err = cli(capsys, "report", "--no-curves", "--certs", str(path.parent), "--out", str(out))
    assert rc == 143 and one_line(err) == "pycert: terminated"
    assert _temporaries(tmp_path) == [] and "<!doctype html>" in out.read_text()  # whole or nothing


def test_sigterm_before_the_write_leaves_nothing(tmp_path: Path, capsys, monkeypatch) -> None:
    from pycert.certify import report

    path = _mini_repo(tmp_path)
    monkeypatch.setattr(report, "render_page", lambda *a, **k: os.kill(os.getpid(), signal.SIGTERM) or "x")
    rc, _, err = cli(capsys, "report", "--no-curves", "--certs", str(path.parent), "--out", str(tmp_path / "r.html"))
    assert rc == 143 and one_line(err) == "pycert: terminated"
    assert not (tmp_path / "r.html").exists() and _temporaries(tmp_path) == []


@pytest.mark.parametrize("argv", [
    ["trace", "generate", "--requests", "5", "-o"],
    ["trace", "plot", "--points", "2", "-o"],
    ["pooling", "generate", "--out"],
])
def test_writes_are_atomic(tmp_path: Path, capsys, monkeypatch, argv: list[str]) -> None:
    target = tmp_path / ("out.png" if "plot" in argv else "out.file")  # a figure's suffix names its format
    target.write_bytes(b"the old file")
    # once unpatched first: a cold numba cache writes its index with os.replace too, and must not be what fails
    assert cli(capsys, *argv, str(tmp_path / f"warm{target.suffix}"))[0] == 0

    def refuse(src, dst):  # noqa: ANN001, ANN202 (the rename fails: the old file must be untouched)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", refuse)
    rc, out, err = cli(capsys, *argv, str(target))
    assert rc == 2 and "No space left on device" in one_line(err)
    assert target.read_bytes() == b"the old file" and _temporaries(tmp_path) == []
    monkeypatch.undo()
    rc, out, err = cli(capsys, *argv, str(target))
    assert rc == 0 and target.read_bytes() != b"the old file", err


def test_parallel_progress_lines_stay_whole(monkeypatch) -> None:
    class Slow:
        """A stream that yields the GIL inside every write, as a pipe or terminal may."""

        def __init__(self) -> None:
            self.parts: list[str] = []

        def write(self, s: str) -> int:
            time.sleep(0)
            self.parts.append(s)
            return len(s)

        def flush(self) -> None:
            pass

        def isatty(self) -> bool:
            return True

    stream = Slow()
    monkeypatch.setattr(sys, "stderr", stream)
    progress = console.Progress(force=True)
    threads = [threading.Thread(target=lambda m=m: [progress(f"Pycert.M{m}: ok (cached)") for _ in range(200)])
               for m in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = "".join(stream.parts).splitlines()
    assert len(lines) == 1200
    assert all(line.count("Pycert.") == 1 and line.endswith("ok (cached)") for line in lines)


# ---------------------------------------------------------------------------- engine replay (issue 33)


@pytest.mark.parametrize("case", ["ids", "huge", "line", "big-request", "not-engine", "out-file", "no-out",
                                  "endpoint-and-engine", "model-alone", "endpoint-url"])
def test_engine_replay_refuses_before_the_engine_with_one_line(tmp_path: Path, capsys, case: str) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps(GOOD) + "\n" + json.dumps({**GOOD, "hash_ids": [1, 2, 3, 4]}) + "\n")
    flags = ["--trace", str(trace), "--num-blocks", "8", "--block-tokens", "16", "--out", str(tmp_path / "out")]
    if case == "ids":
        (tmp_path / "t.ids").write_text("1\n2\n")
        argv, needles = [*flags, "--trace", str(tmp_path / "t.ids")], (f"{tmp_path / 't.ids'}:", "no request boundaries")
    elif case == "huge":
        argv, needles = [*flags, "--num-blocks", "32768"], ("--num-blocks:", "at most 131,072")
    elif case == "line":
        trace.write_text(json.dumps(GOOD) + "\n" + '{"timestamp": 0, "hash_ids": [1]}\n')
        argv, needles = flags, (f"{trace}:2:", "missing field")
    elif case == "big-request":
        argv, needles = [*flags, "--num-blocks", "4"], (f"{trace}:2:", "request 1 (0-based) has 4 blocks",
                                                        "--num-blocks 5 or more")
    elif case == "not-engine":
        argv = ["--replay", str(REPO / "certificates" / "isolation-t8-n1024.json")]
        needles = ("isolation-t8-n1024.json:", "--replay takes an engine certificate")
    elif case == "out-file":
        (tmp_path / "f").write_text("x")
        argv, needles = [*flags, "--out", str(tmp_path / "f")], ("--out", "exists and is not a directory")
    elif case == "endpoint-and-engine":
        argv, needles = [*flags, "--endpoint", "http://127.0.0.1:9", "--engine", "vllm"], ("--engine:", "leave --engine out")
    elif case == "model-alone":
        argv, needles = [*flags, "--model", "m"], ("--model:", "give --endpoint")
    elif case == "endpoint-url":
        argv, needles = [*flags, "--endpoint", "ftp://x"], ("--endpoint:", "expected http://HOST:PORT")
    else:
        argv, needles = flags[:-2], ("--out:", "give --trace, --num-blocks and --out")
    expect_error(capsys, ["engine", "replay", *argv], 2, *needles)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("failure", ["start", "memory", "missing"])
def test_engine_replay_an_engine_that_fails_to_load_is_one_line(tmp_path: Path, capsys, monkeypatch,  # noqa: ANN001
                                                                failure: str) -> None:
    """The engine module stood in for (torch is not imported): its failures, mapped by the command, leave
    nothing in --out."""
    import types

    def refuse(**_kw: object) -> None:
        raise {"start": RuntimeError("no\nkernel image"), "memory": MemoryError("cannot allocate 2 GiB")}[failure]

    fake = types.ModuleType("pycert.leak.engines.transformers")
    fake.TINY, fake.TransformersEngine = {}, refuse  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pycert.leak.engines.transformers", None if failure == "missing" else fake)
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps(GOOD) + "\n" + json.dumps(GOOD) + "\n")
    argv = ["engine", "replay", "--trace", str(trace), "--num-blocks", "8", "--block-tokens", "16",
            "--out", str(tmp_path / "out")]
    code, needles = {"start": (2, ("engine:", "the engine did not start: no kernel image")),
                     "memory": (3, ("engine:", "cannot allocate a cache of 8 blocks of 16 tokens")),
                     "missing": (2, ("pycert engine replay:", "pip install -e", "[leak]'"))}[failure]
    expect_error(capsys, argv, code, *needles)
    assert not (tmp_path / "out").exists()
