"""The gate (``pycert.core.gate``): what it refuses, that it refuses before reading, and that no module
reading a stranger's directory goes around it."""

from __future__ import annotations

import ast
import gzip
import os
import time
from pathlib import Path

import pytest

from pycert.core import gate
from pycert.core.console import escaped
from pycert.core.errors import InputError
from tests.conftest import REPO

OWN_FILES = {
    "pycert/core/gate.py": "the gate itself",
    "pycert/core/files.py": "writes: temporaries and the directory fsync",
    "pycert/core/memo.py": "pycert's own cache of kept results and its own source",
    "pycert/core/resources.py": "pycert's own Lean library (its content hash)",
    "pycert/analysis/plot.py": "the PNG it has just drawn into its own scratch directory",
    "pycert/leak/engines/transformers.py": "the model directory the user names (--model)",
    "pycert/leak/engines/worker.py": "its child's stderr log in a temporary directory it made, and its own pipe (fd 1)",
    "pycert/solvers/highs.py": "os.devnull",
    "pycert/core/console.py": "os.devnull, where output goes once its reader has closed the pipe",
    "pycert/core/extras.py": "pip's record of where pycert itself was installed from (its own dist-info)",
    "pycert/cli/audit.py": "the olean tree pycert's build has just written",
    "pycert/prove.py": "the olean tree and the instance files this run wrote",
    "pycert/lean/": "the toolchain pycert installed and verified, and the files its build writes",
    "pycert/audit/": "the compiled .olean files pycert's build wrote",
    "pycert/mutation/": "the scratch copies the campaign made of pycert's own files",
}
"""Modules that read only files pycert wrote or the user named for a tool (never a certificate directory),
and why. Every other module reads through the gate alone."""

RAW_ATTRS = {"read_bytes", "read_text", "glob", "rglob", "iterdir", "fdopen", "listdir", "scandir", "walk", "fromfile"}
RAW_OPENERS = {"os", "io", "gzip", "bz2", "lzma", "tarfile", "zipfile", "shutil"}


def raw_reads(source: str) -> list[tuple[int, str]]:
    """Calls that read or list files without the gate: ``open()``, ``Path.open/read_bytes/read_text``, a
    directory listing, ``os.open``, a decompressor's ``open``, ``json.load``/``np.load`` of a file."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id == "open":
            out.append((node.lineno, "open()"))
        elif isinstance(f, ast.Attribute):
            base = f.value.id if isinstance(f.value, ast.Name) else ""
            if f.attr in RAW_ATTRS or (f.attr == "load" and base in ("json", "np", "numpy", "pickle")):
                out.append((node.lineno, f"{base}.{f.attr}()"))
            elif f.attr == "open" and (base in RAW_OPENERS or not node.args):  # a Source's open names what it reads
                out.append((node.lineno, f"{base}.open()"))
            elif f.attr in ("copyfile", "copy", "copy2", "copytree") and base == "shutil":
                out.append((node.lineno, f"shutil.{f.attr}()"))
    return out


def test_no_module_reads_a_stranger_directory_around_the_gate() -> None:
    found = []
    for path in sorted((REPO / "pycert").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if any(rel == own or (own.endswith("/") and rel.startswith(own)) for own in OWN_FILES):
            continue
        found += [f"{rel}:{line}: {what}" for line, what in raw_reads(path.read_text())]
    assert not found, "read through pycert.core.gate (or list the module in OWN_FILES, with why):\n" + "\n".join(found)


def test_the_scan_finds_what_it_looks_for() -> None:
    source = 'open(p)\nPath(p).read_bytes()\nq.read_text()\nd.glob("*.json")\nos.open(p, 0)\ngzip.open(p)\nf.open()\n'
    assert [w for _, w in raw_reads(source)] == ["open()", ".read_bytes()", "q.read_text()", "d.glob()", "os.open()",
                                                  "gzip.open()", "f.open()"]
    assert raw_reads('src.open("a trace file", 10)\nsrc.read("a log", 10)\n') == []


def test_a_link_anywhere_in_the_path_is_refused_unread(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "x.json").write_text("{}")
    (tmp_path / "linked").symlink_to(tmp_path / "real")
    (tmp_path / "l.json").symlink_to(tmp_path / "real" / "x.json")
    assert gate.inside(tmp_path, "real/x.json").read("a file", 10) == b"{}"
    for rel in ("linked/x.json", "l.json"):
        with pytest.raises(InputError, match="symbolic link|not a directory"):
            gate.inside(tmp_path, rel).read("a file", 10)
    assert gate.named(tmp_path / "l.json").read("a file", 10) == b"{}"  # the user named it: followed


@pytest.mark.parametrize("rel, why", [("../x", "leaves"), ("/etc/passwd", "leaves"), ("a\0b", "NUL"),
                                      ("x" * 300, "longer than 255")])
def test_a_path_that_cannot_be_inside_is_refused_before_any_system_call(tmp_path: Path, rel: str, why: str) -> None:
    with pytest.raises(InputError, match=why):
        gate.inside(tmp_path, rel)


def test_a_fifo_and_a_device_are_refused_without_blocking_or_reading(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    t0 = time.monotonic()
    with pytest.raises(InputError, match="not a regular file"):
        gate.inside(tmp_path, "fifo").read("a file", 10)
    with pytest.raises(InputError, match="not a regular file"):
        gate.named("/dev/zero").read("a file", 10)
    assert time.monotonic() - t0 < 2


def test_the_size_is_checked_before_a_byte_is_read(tmp_path: Path) -> None:
    with open(tmp_path / "big", "wb") as f:
        f.truncate(1 << 31)  # sparse: 2 GiB that would fill memory if read
    with pytest.raises(InputError, match="2,147,483,648 bytes, above the limit of 1,024"):
        gate.inside(tmp_path, "big").sha256("a log", 1024)


def test_decompression_is_capped_at_a_ratio_of_what_is_stored(tmp_path: Path) -> None:
    from pycert.core.limits import MAX_INFLATE_RATIO
    from pycert.data.traces import read_trace

    data = gzip.compress(b"0\n" * 5_000_000, mtime=0)
    assert len(data) * MAX_INFLATE_RATIO < 10_000_000
    (tmp_path / "bomb.txt").write_bytes(data)
    with pytest.raises(InputError, match="compression bomb"):
        read_trace(tmp_path / "bomb.txt")
    (tmp_path / "fine.txt").write_bytes(gzip.compress("".join(f"{i}\n" for i in range(10_000)).encode()))
    assert read_trace(tmp_path / "fine.txt").n_refs == 10_000


def test_a_count_past_its_bound_is_refused() -> None:
    gate.bounded(5, 5, "inputs", "x")
    with pytest.raises(InputError, match="more than 5 inputs"):
        gate.bounded(6, 5, "inputs", "x")


def test_confined_refuses_a_link_and_a_path_outside(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "out" / "lean").symlink_to(tmp_path / "elsewhere")
    assert gate.confined(tmp_path / "out", tmp_path / "out" / "inputs" / "x") == tmp_path / "out" / "inputs" / "x"
    with pytest.raises(InputError, match="symbolic link"):
        gate.confined(tmp_path / "out", tmp_path / "out" / "lean" / "X.lean")
    with pytest.raises(InputError, match="outside"):
        gate.confined(tmp_path / "out", tmp_path / "elsewhere" / "X.lean")


def test_escaped_leaves_nothing_a_terminal_acts_on() -> None:
    assert escaped("a\x1b[1A\r\x1b[2Kok\n\u202ex") == "a\\x1b[1A\\x0d\\x1b[2Kok\\x0a\\u202ex"
    assert escaped("line\nnext\tcell", keep="\n\t") == "line\nnext\tcell"
    assert escaped("plain ünïcode") == "plain ünïcode"


def test_the_scratch_directory_must_be_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    from pycert.core.resources import scratch_root

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    made = scratch_root()
    assert made == tmp_path / f"pycert-{os.getuid()}" and (made.stat().st_mode & 0o777) == 0o700
    made.chmod(0o777)
    with pytest.raises(InputError, match="not private"):
        scratch_root()
    made.rmdir()
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    made.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(InputError, match="not private"):
        scratch_root()
