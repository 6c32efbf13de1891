"""Fuzzing the CLI contract with Hypothesis: every subcommand over generated malformed inputs.

Each example runs ``pycert.cli.main(argv)`` in-process (stdout and stderr captured) in a fresh
scratch directory and checks the README's contract:

- no traceback (no exception other than ``SystemExit`` escapes ``main``);
- exit 0, 1 or 2; an exit 2 prints exactly one line on stderr (and nothing on stdout unless it is
  ``verify``'s report), a success nothing on stderr; under ``--json`` stdout is one JSON document,
  and on exit 2 an object with ``error``, ``where`` and ``exit == 2``;
- nothing half-written: an output file is unchanged after a failure and complete after a success
  (it parses back); no hidden ``.*.tmp`` temporary is left in the scratch directory.

Commands that run Lean (toolchain install/selfcheck, check, build, prove, audit, mutate, verify
--kernel) are only driven with a command line that fails before Lean starts (a bad flag value).
``pooling solve`` is only run on instances or flags that must be refused before solving.

Reproducible: ``derandomize=True`` and no example database. ``PYCERT_FUZZ_EXAMPLES`` scales the
number of examples (default 1: the CI budget, about a minute on 2 cores); ``PYCERT_FUZZ_REPORT=FILE``
writes per-command figures (cases, seconds, violations) as JSON; ``PYCERT_FUZZ_COLLECT=1`` records
violations instead of failing on the first, to count what a run finds (BENCHMARKS.md).

The harness imports nothing but ``main`` and the readers it checks outputs with, so it also runs
against older revisions of pycert.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import re
import signal
import tempfile
import time
import traceback
from collections import defaultdict
from pathlib import Path

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pycert.cli import main

REPO = Path(__file__).resolve().parent.parent
CERTS = {name: (REPO / "certificates" / name).read_bytes()
         for name in ("isolation-t8-n1024.json", "first-touch-c256-n4000.json")}
INSTANCE = (REPO / "certificates" / "inputs" / "committed.json").read_text()

SCALE = float(os.environ.get("PYCERT_FUZZ_EXAMPLES", "1"))
COLLECT = os.environ.get("PYCERT_FUZZ_COLLECT") == "1"
FUZZ = settings(deadline=None, derandomize=True, database=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])


def examples(n: int) -> settings:
    return settings(FUZZ, max_examples=max(1, int(n * SCALE)))


# ---------------------------------------------------------------------------- bookkeeping

STATS: dict[str, dict] = defaultdict(lambda: {"cases": 0, "seconds": 0.0, "violations": {}})


@pytest.fixture(scope="module", autouse=True)
def _figures():
    yield
    report = os.environ.get("PYCERT_FUZZ_REPORT")
    if report:
        Path(report).write_text(json.dumps(STATS, indent=2, sort_keys=True) + "\n")


CASE_SECONDS = float(os.environ.get("PYCERT_FUZZ_CASE_SECONDS", "30"))
"""No generated case may run longer: every input is small, so a long run is a limit not enforced."""


class Overrun(BaseException):
    pass


def _overrun(signum, frame) -> None:  # noqa: ANN001
    raise Overrun(f"ran past {CASE_SECONDS:g} s")


class Run:
    def __init__(self, argv: list[str]) -> None:
        self.argv, self.exc = argv, None
        out, err = io.StringIO(), io.StringIO()
        t0 = time.perf_counter()
        old = signal.signal(signal.SIGALRM, _overrun)
        signal.setitimer(signal.ITIMER_REAL, CASE_SECONDS)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    self.rc = main(argv)
                except SystemExit as exc:  # argparse: --help, a usage error
                    self.rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
                except BaseException:  # noqa: BLE001 (anything else escaping is a traceback: the bug we hunt)
                    self.rc = None
                    self.exc = traceback.format_exc()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
        self.seconds = time.perf_counter() - t0
        self.out, self.err = out.getvalue(), err.getvalue()


ACTIONS = {"trace": {"stats", "mrc", "offload", "plot", "convert", "generate"}, "pooling": {"solve", "generate", "check"},
           "toolchain": {"install", "selfcheck"}, "leak": {"run", "serve", "gateway", "audit"}, "dataset": {"first-touch"},
           "engine": {"replay"}}


def command_of(argv: list[str]) -> str:
    words = [a for a in argv if not a.startswith("-")][:2]
    if len(words) > 1 and words[1] in ACTIONS.get(words[0], ()):
        return " ".join(words)
    return words[0] if words else "(none)"


def violations(run: Run, outputs: dict[Path, bytes | None], scratch: Path, complete) -> list[str]:  # noqa: ANN001
    found = []
    if run.exc:
        found.append("traceback: " + run.exc.strip().splitlines()[-1][:160])
        return found
    if run.rc not in (0, 1, 2):
        found.append(f"exit {run.rc}")
    if "Traceback" in run.err:
        found.append("traceback text on stderr")
    lines = run.err.splitlines()
    if run.rc == 2 and (len(lines) != 1 or not run.err.endswith("\n") or not lines[0].startswith("pycert")):
        found.append(f"exit 2 without exactly one line on stderr: {run.err[:200]!r}")
    if run.rc == 1 and len(lines) > 1:
        found.append(f"exit 1 with {len(lines)} lines on stderr")
    if run.rc == 0 and run.err:
        found.append(f"success with stderr {run.err[:120]!r}")
    if "--json" in run.argv and run.rc in (0, 1, 2) and not (run.rc == 0 and "--help" in run.argv):
        try:
            doc = json.loads(run.out)
        except ValueError:
            found.append(f"--json: stdout is not one JSON document: {run.out[:120]!r}")
        else:
            if run.rc == 2 and not (isinstance(doc, dict) and doc.get("exit") == 2 and "error" in doc and "where" in doc):
                found.append("--json exit 2 without an {error, where, exit} object")
    elif run.rc == 2 and run.out and command_of(run.argv) != "verify":
        found.append(f"exit 2 with output on stdout: {run.out[:80]!r}")
    for path, before in outputs.items():
        now = path.read_bytes() if path.is_file() else None
        if run.rc != 0 and now != before:
            found.append(f"failed run changed {path.name}")
        elif run.rc == 0 and now is not None and now != before and not complete(now):
            found.append(f"{path.name} written incomplete")
    temps = [p.name for p in scratch.rglob(".*.tmp")]
    if temps:
        found.append(f"temporary left: {temps[0]}")
    return found


def drive(argv: list[str], scratch: Path, outputs: tuple[Path, ...] = (), complete=lambda b: True,  # noqa: ANN001
          expect: int | None = None) -> Run:
    before = {p: (p.read_bytes() if p.is_file() else None) for p in outputs}
    run = Run(argv)
    bad = violations(run, before, scratch, complete)
    if expect is not None and run.rc != expect and not run.exc:
        bad.append(f"exit {run.rc} where {expect} was expected (not refused before the work)")
    stats = STATS[command_of(argv)]
    stats["cases"] += 1
    stats["seconds"] += run.seconds
    for v in bad:
        key = re.sub(r"'[^']*'|\d+", "_", v)[:120]
        stats["violations"].setdefault(key, {"count": 0, "example": [a[:60] for a in argv]})["count"] += 1
    if bad and not COLLECT:
        raise AssertionError(f"pycert {' '.join(a[:80] for a in argv)}\nexit {run.rc}\n" + "\n".join(bad)
                             + f"\nstdout: {run.out[:400]}\nstderr: {run.err[:400]}\n{run.exc or ''}")
    return run


@contextlib.contextmanager
def scratch_dir():
    with tempfile.TemporaryDirectory(prefix="pycert-fuzz-") as d:
        yield Path(d)


# ---------------------------------------------------------------------------- strategies

JUNK_NUMBERS = ["", " ", ",", "nan", "inf", "-inf", "-0", "0", "1e3", "0x10", "٣", "1_000", "_", " 5", "+7", "--1",
                "9" * 30, "9" * 5000, "-" + "9" * 25, str(2**63), str(2**70), "1.5", "true", "١٢", "\x00"]
number_text = st.one_of(st.integers(-5, 70).map(str), st.integers(-(10**30), 10**30).map(str),
                        st.sampled_from(JUNK_NUMBERS), st.text(max_size=6))


def int_flag(lo: int, hi: int) -> st.SearchStrategy[str]:
    """Mostly valid values (so that most cases get past the command line to the input), often not."""
    valid = st.integers(lo, hi).map(str)
    return st.one_of(valid, valid, valid, number_text)


json_scalar = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True),
                        st.text(max_size=8), st.sampled_from([2**63, 2**63 - 1, -1, 0, 10**40]))
json_value = st.recursive(json_scalar, lambda kids: st.one_of(st.lists(kids, max_size=4),
                                                              st.dictionaries(st.text(max_size=6), kids, max_size=4)),
                          max_leaves=10)


def deep(n: int) -> str:
    return "[" * n + "]" * n


@st.composite
def byte_mutations(draw, data: bytes) -> bytes:  # noqa: ANN001
    """Byte-level damage on top of ``data``: flips, truncation, insertions, encodings, gzip."""
    ops = draw(st.lists(st.sampled_from(["flip", "truncate", "insert", "bom", "crlf", "nonutf8", "deep", "bigint",
                                         "gzip", "badgzip", "zstd", "badzstd", "nul", "longline"]), max_size=3))
    for op in ops:
        pos = draw(st.integers(0, max(0, len(data))))
        if op == "flip" and data:
            i = min(pos, len(data) - 1)
            data = data[:i] + bytes([data[i] ^ draw(st.integers(1, 255))]) + data[i + 1:]
        elif op == "truncate":
            data = data[:pos]
        elif op == "insert":
            data = data[:pos] + draw(st.binary(max_size=8)) + data[pos:]
        elif op == "bom":
            data = b"\xef\xbb\xbf" + data
        elif op == "crlf":
            data = data.replace(b"\n", b"\r\n")
        elif op == "nonutf8":
            data = data[:pos] + b"\xff\xfe\xc3" + data[pos:]
        elif op == "deep":
            data = data[:pos] + deep(draw(st.sampled_from([40, 1000, 5000]))).encode() + data[pos:]
        elif op == "bigint":
            data = data[:pos] + b"9" * draw(st.sampled_from([20, 4301, 5000])) + data[pos:]
        elif op == "gzip":
            data = gzip.compress(data)
        elif op == "badgzip":
            data = gzip.compress(data)[: max(2, pos % 40)]
        elif op == "zstd":
            data = zstandard.ZstdCompressor().compress(data)
        elif op == "badzstd":
            data = zstandard.ZstdCompressor().compress(data)[: max(4, pos % 40)]
        elif op == "nul":
            data = data[:pos] + b"\x00" + data[pos:]
        elif op == "longline" and draw(st.integers(0, 9)) == 0:  # rare: 1 MiB lines are slow to hash
            data = data + b"1" * ((1 << 20) + 1) + b"\n"
    return data


LAYOUT_FIELDS = {
    "mooncake": ("timestamp", "input_length", "output_length", "hash_ids"),
    "bailian": ("chat_id", "parent_chat_id", "timestamp", "input_length", "output_length", "type", "turn", "hash_ids"),
    "aiperf": ("session_id", "delay", "input_length", "output_length", "hash_ids"),
    "prompts": ("prompt_token_ids", "timestamp"),
}
"""Each JSON layout's fields (docs/formats.md), drawn valid-looking or wrong, with an optional tenant."""


@st.composite
def trace_bytes(draw) -> bytes:  # noqa: ANN001
    kind = draw(st.sampled_from([*LAYOUT_FIELDS, "ids", "binary"]))
    if kind in LAYOUT_FIELDS:
        field = st.one_of(st.integers(-1, 10**6), st.floats(0, 100), st.text(max_size=4), json_value)
        block = st.one_of(st.integers(0, 50), st.integers(0, 2**63 - 1), json_value)
        values = {f: st.one_of(st.lists(block, max_size=40), json_value) if f in ("hash_ids", "prompt_token_ids")
                  else field for f in LAYOUT_FIELDS[kind]}
        tenant = draw(st.sampled_from([None, st.sampled_from(["a", "b", ""]), json_value]))
        if tenant is not None:
            values["tenant"] = tenant
        recs = draw(st.lists(st.fixed_dictionaries(values), max_size=12))
        for r in recs:
            if draw(st.integers(0, 5)) == 0:
                r.pop(draw(st.sampled_from(sorted(r))))
        lines = [json.dumps(r) for r in recs]
        if draw(st.integers(0, 3)) == 0:  # a well-formed line whose value nests too deep, or a 5,000-digit id
            bad = draw(st.sampled_from([deep(40), deep(1000), "9" * 5000, str(2**64), "[" + "9" * 4400 + "]"]))
            lines.insert(draw(st.integers(0, len(lines))),
                         '{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": ' + bad + "}")
        data = "".join(line + "\n" for line in lines).encode()
    elif kind == "ids":
        tok = st.one_of(st.integers(0, 40).map(str), st.integers(0, 2**63 - 1).map(str), st.sampled_from(JUNK_NUMBERS))
        data = ("\n".join(draw(st.lists(tok, max_size=40))) + draw(st.sampled_from(["", "\n"]))).encode()
    else:
        data = draw(st.binary(max_size=64))
    return draw(byte_mutations(data))


@st.composite
def out_path(draw, scratch: Path, suffix: str) -> tuple[str, Path | None]:  # noqa: ANN001
    """An output path and, when it names a file, that file (perhaps existing, with old content)."""
    kind = draw(st.sampled_from(["new", "nested", "existing", "dir", "empty", "blank", "under-file"]))
    if kind == "new":
        return str(scratch / f"out{suffix}"), scratch / f"out{suffix}"
    if kind == "nested":
        return str(scratch / "a" / "b" / f"out{suffix}"), scratch / "a" / "b" / f"out{suffix}"
    if kind == "existing":
        p = scratch / f"old{suffix}"
        p.write_bytes(b"old content")
        return str(p), p
    if kind == "dir":
        return str(scratch), None
    if kind == "under-file":
        (scratch / "plain").write_text("x")
        return str(scratch / "plain" / f"out{suffix}"), None
    return ("" if kind == "empty" else " "), None


def maybe(flag: str, values) -> st.SearchStrategy[list[str]]:  # noqa: ANN001
    return st.one_of(st.just([]), values.map(lambda v: [flag, v]))


def shuffle_flags(draw, *groups: list[str]) -> list[str]:  # noqa: ANN001
    pieces = [g for g in groups if g]
    return [a for g in draw(st.permutations(pieces)) for a in g] if pieces else []


# ---------------------------------------------------------------------------- trace


@given(st.data())
@examples(250)
def test_trace_analyses(data) -> None:  # noqa: ANN001
    with scratch_dir() as scratch:
        action = data.draw(st.sampled_from(["stats", "mrc", "offload"]))
        argv = ["trace", action]
        if data.draw(st.integers(0, 9)):
            path = scratch / data.draw(st.sampled_from(["t.jsonl", "t.ids", "t.gz", "t"]))
            path.write_bytes(data.draw(trace_bytes()))
            argv.append(str(path))
        else:  # no file, a missing one, a directory, an empty name
            argv += data.draw(st.sampled_from([[], [str(scratch / "none")], [str(scratch)], [""]]))
        outputs = [[], ["--json"]] + ([["--csv"], ["--csv", "--json"]] if action != "stats" else [])
        flags = [data.draw(maybe("--format", st.sampled_from(FORMATS))), data.draw(maybe("--block-tokens", int_flag(1, 64))),
                 data.draw(maybe("--granularity", int_flag(1, 4))), data.draw(st.sampled_from(outputs))]
        if action == "mrc":
            caps = st.lists(int_flag(0, 64), min_size=1, max_size=4).map(",".join)
            flags += [data.draw(maybe("-c", st.one_of(caps, caps, number_text))),
                      data.draw(st.sampled_from([[], ["--no-belady"], ["--all"]]))]
        if action == "offload":
            flags += [data.draw(st.one_of(st.just([]), int_flag(1, 1 << 16).map(lambda v: ["--capacity-tokens", v]),
                                          st.just(["--capacity-tokens", "4096"]))),
                      data.draw(maybe("--host-tokens", int_flag(0, 1 << 16))),
                      data.draw(maybe("--control-k", int_flag(1, 8)))]
        drive(argv + shuffle_flags(data.draw, *flags), scratch)


FORMATS = ["auto", "mooncake", "bailian", "aiperf", "prompts", "ids"] * 2 + ["csv", ""]


def ids_complete(b: bytes) -> bool:
    from pycert.data.traces import trace_from_bytes

    return trace_from_bytes(b, "written").format == "ids"


@given(st.data())
@examples(80)
def test_trace_convert(data) -> None:  # noqa: ANN001
    """Whatever the input, the canonical file and its record are written whole, or neither changes."""
    with scratch_dir() as scratch:
        (scratch / "t.jsonl").write_bytes(data.draw(trace_bytes()))
        src = data.draw(st.sampled_from([str(scratch / "t.jsonl")] * 4 + [str(scratch / "none"), str(scratch), ""]))
        out, target = data.draw(out_path(scratch, ".ids"))
        argv = ["trace", "convert", src, "-o", out] + data.draw(maybe("--format", st.sampled_from(FORMATS)))
        argv += data.draw(maybe("--block-tokens", int_flag(1, 64))) + data.draw(st.sampled_from([[], ["--json"]]))
        outputs = (target, target.with_name(target.name + ".source.json")) if target else ()
        drive(argv, scratch, outputs=outputs, complete=lambda b: b.startswith(b"{") or ids_complete(b))


def png_complete(b: bytes) -> bool:
    return b.startswith(b"\x89PNG\r\n\x1a\n") and b.endswith(b"IEND\xaeB`\x82")


FIGURE_COMPLETE = {".png": png_complete, ".svg": lambda b: b.startswith(b"<?xml") and b.rstrip().endswith(b"</svg>"),
                   ".pdf": lambda b: b.startswith(b"%PDF-") and b.rstrip().endswith(b"%%EOF"),
                   ".jpg": lambda b: False}  # refused: nothing may be written


@given(st.data())
@examples(25)
def test_trace_plot(data) -> None:  # noqa: ANN001
    with scratch_dir() as scratch:
        argv = ["trace", "plot"]
        if data.draw(st.booleans()):
            (scratch / "t.jsonl").write_bytes(data.draw(trace_bytes()))
            argv.append(str(scratch / "t.jsonl"))
        suffix = data.draw(st.sampled_from(sorted(FIGURE_COMPLETE)))
        out, target = data.draw(out_path(scratch, suffix))
        argv += ["-o", out, "--points", data.draw(int_flag(0, 3))]
        argv += data.draw(st.sampled_from([[], ["--json"]]))
        drive(argv, scratch, outputs=(target,) if target else (), complete=FIGURE_COMPLETE[suffix])


def trace_complete(b: bytes) -> bool:
    from pycert.data.traces import trace_from_bytes

    return trace_from_bytes(b, "written").format == "mooncake"


@given(st.data())
@examples(60)
def test_trace_generate(data) -> None:  # noqa: ANN001
    with scratch_dir() as scratch:
        out, target = data.draw(out_path(scratch, ".jsonl"))
        argv = ["trace", "generate", "-o", out]
        # a valid --requests stays small: a million is valid and takes minutes
        argv += data.draw(maybe("--requests", st.one_of(st.integers(-2, 30).map(str), st.sampled_from(JUNK_NUMBERS))))
        argv += data.draw(maybe("--seed", int_flag(-(2**63), 2**63 - 1))) + data.draw(st.sampled_from([[], ["--json"]]))
        drive(argv, scratch, outputs=(target,) if target else (), complete=trace_complete)


# ---------------------------------------------------------------------------- certificates


@st.composite
def certificate_bytes(draw) -> bytes:  # noqa: ANN001
    original = draw(st.sampled_from(sorted(CERTS)))
    doc = json.loads(CERTS[original])
    how = draw(st.sampled_from(["edit", "edit", "bytes", "replace", "original"]))
    if how == "original":
        return CERTS[original]
    if how == "replace":
        return draw(st.one_of(json_value.map(lambda v: json.dumps(v).encode()), st.binary(max_size=40),
                              st.sampled_from([b"", deep(1000).encode(), b"{" * 3000, "é".encode("latin-1")])))
    if how == "bytes":
        return draw(byte_mutations(CERTS[original]))
    for _ in range(draw(st.integers(1, 3))):  # edit the JSON tree
        node, keys = doc, []
        while isinstance(node, (dict, list)) and node and draw(st.booleans()):
            k = draw(st.sampled_from(sorted(node) if isinstance(node, dict) else range(len(node))))
            parent, node = node, node[k]
            keys.append((parent, k))
        if not keys:
            continue
        parent, k = keys[-1]
        if isinstance(parent, dict) and draw(st.booleans()):
            parent.pop(k)
        else:
            parent[k] = draw(json_value)
    return json.dumps(doc, indent=2).encode()


def sha(b: bytes) -> str:
    import hashlib

    return hashlib.sha256(b).hexdigest()


def write_cert_dir(draw, d: Path, name: str, cert: bytes) -> None:  # noqa: ANN001
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(cert)
    manifest = draw(st.sampled_from(["match", "mismatch", "absent", "directory", "junk"]))
    if manifest == "match":
        (d / "MANIFEST.sha256").write_text(f"{sha(cert)}  {name}\n")
    elif manifest == "mismatch":
        (d / "MANIFEST.sha256").write_text(f"{'0' * 64}  {name}\n")
    elif manifest == "directory":
        (d / "MANIFEST.sha256").mkdir()
    elif manifest == "junk":
        (d / "MANIFEST.sha256").write_bytes(draw(st.binary(max_size=80)))


@given(st.data())
@examples(200)
def test_verify(data) -> None:  # noqa: ANN001
    with scratch_dir() as scratch:
        name = data.draw(st.sampled_from(["c.json", "isolation-t8-n1024.json"]))
        write_cert_dir(data.draw, scratch / "certs", name, data.draw(certificate_bytes()))
        target = data.draw(st.sampled_from(["cert", "cert", "cert", "missing", "dir", "empty"]))
        cert = {"cert": str(scratch / "certs" / name), "missing": str(scratch / "none.json"),
                "dir": str(scratch / "certs"), "empty": ""}[target]
        flags = [data.draw(maybe("--root", st.sampled_from([str(REPO), str(scratch), str(scratch / "none"), ""]))),
                 data.draw(maybe("--manifest", st.sampled_from([str(scratch / "certs" / "MANIFEST.sha256"), str(scratch),
                                                                str(scratch / "none"), ""]))),
                 data.draw(maybe("--timeout", int_flag(1, 100))), data.draw(st.sampled_from([[], ["--json"]]))]
        argv = ["verify", cert] + shuffle_flags(data.draw, *flags)
        drive(argv, scratch)


@given(st.data())
@examples(150)
def test_dataset_check(data) -> None:  # noqa: ANN001
    """A stranger's dataset directory: a table made from a well-formed one by byte edits, with or without
    a log beside it. Refused in one line (1: the table or its rows; 2: a file missing or malformed), never
    a traceback, and never after starting the engine (no certificate here verifies)."""
    with scratch_dir() as scratch:
        good = (b"workload_id,source,prompt_tokens,apc_prefill_computed,pooled_prefill_computed,cached_tokens,"
                b"first_touch_cut,closed_form_cut,zero_tenant_leak,certificate\n"
                b"synthetic-001,synthetic_ramp,257,257,1,256,0.99610894941634241245,0.99610894941634241245,true,"
                b"certificates/synthetic-001.json\n")
        (scratch / "first_touch.csv").write_bytes(data.draw(byte_mutations(good)))
        if data.draw(st.booleans()):
            log = scratch / "certificates" / "inputs" / "first-touch-engine.jsonl"
            log.parent.mkdir(parents=True)
            log.write_bytes(data.draw(st.one_of(st.binary(max_size=60), st.sampled_from([b"", b"{}\n", b"[1]\n"]))))
        argv = ["dataset", "first-touch", "--check", str(scratch), "--no-engine",
                *data.draw(st.sampled_from([[], ["--json"]])), *data.draw(st.sampled_from([[], ["--kernel"]]))]
        run = drive(argv, scratch)
        assert run.rc in (1, 2), (run.rc, run.err)


def html_complete(b: bytes) -> bool:
    return b.startswith(b"<!doctype html>") and b.rstrip().endswith(b"</html>")


@given(st.data())
@examples(120)
def test_report(data) -> None:  # noqa: ANN001
    with scratch_dir() as scratch:
        name = data.draw(st.sampled_from(["c.json", "isolation-t8-n1024.json"]))
        write_cert_dir(data.draw, scratch / "certs", name, data.draw(certificate_bytes()))
        if data.draw(st.integers(0, 4)) == 0:  # a stray certificate the manifest does not list
            (scratch / "certs" / "stray.json").write_bytes(CERTS["isolation-t8-n1024.json"])
        certs = data.draw(st.sampled_from([str(scratch / "certs")] * 4 + [str(scratch / "certs" / name),
                                                                          str(scratch / "none"), ""]))
        out, target = data.draw(out_path(scratch, ".html"))
        argv = ["report", "--no-curves", "--certs", certs, "--out", out] + data.draw(st.sampled_from([[], ["--json"]]))
        drive(argv, scratch, outputs=(target,) if target else (), complete=html_complete)


# ---------------------------------------------------------------------------- pooling


@st.composite
def instance_text(draw) -> str:  # noqa: ANN001
    doc = json.loads(INSTANCE)
    how = draw(st.sampled_from(["field", "field", "field", "bytes", "replace"]))
    if how == "replace":
        return draw(st.one_of(json_value.map(json.dumps), st.sampled_from(["", deep(1000), "{", "[]"])))
    if how == "bytes":
        return draw(byte_mutations(INSTANCE.encode())).decode("utf-8", "surrogateescape")
    bad = st.one_of(json_value, st.sampled_from([2**70, 2**63, -1, 0, "32", True, 1.0, 1.5, None, [], {}]))
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(["pool_capacity", "host", "request", "block", "routing", "provenance", "drop"]))
        if where == "pool_capacity":
            doc["pool_capacity"] = draw(bad)
        elif where == "host" and isinstance(doc.get("hosts"), list) and doc["hosts"]:
            h = draw(st.sampled_from(doc["hosts"]))
            h[draw(st.sampled_from(["id", "capacity", "load_limit", "extra"]))] = draw(bad)
        elif where == "request" and isinstance(doc.get("requests"), list) and doc["requests"]:
            r = draw(st.sampled_from(doc["requests"]))
            r[draw(st.sampled_from(["id", "blocks"]))] = draw(bad)
        elif where == "block" and isinstance(doc.get("requests"), list) and doc["requests"] \
                and isinstance(doc["requests"][0].get("blocks"), list) and doc["requests"][0]["blocks"]:
            doc["requests"][0]["blocks"][0] = draw(bad)
        elif where == "routing" and isinstance(doc.get("routing"), dict):
            doc["routing"][draw(st.sampled_from(["0", "x", "-1", str(2**70), "1"]))] = draw(bad)
        elif where == "provenance" and isinstance(doc.get("provenance"), dict):
            params = doc["provenance"]["params"]
            params[draw(st.sampled_from(sorted(params)))] = draw(bad)
        elif where == "drop" and doc:
            doc.pop(draw(st.sampled_from(sorted(doc))), None)
    return json.dumps(doc)


def instance_refused(text: str) -> bool:
    from pycert.core.errors import InputError
    from pycert.solvers.instance_io import parse_instance

    try:
        parse_instance(text, "probe")
    except InputError:
        return True
    except Exception:  # noqa: BLE001 (a crash here is for `pooling check` to report)
        return True
    return False


@given(st.data())
@examples(150)
def test_pooling_check_and_solve(data) -> None:  # noqa: ANN001
    with scratch_dir() as scratch:
        text = data.draw(instance_text())
        path = scratch / "inst.json"
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
        target = data.draw(st.sampled_from([str(path)] * 5 + [str(scratch), str(scratch / "none"), ""]))
        json_flag = data.draw(st.sampled_from([[], ["--json"]]))
        drive(["pooling", "check", target] + json_flag, scratch)
        # solve only where it must stop before solving: a refused instance, or a refused flag
        bad_flag = data.draw(st.sampled_from([[], ["--workers", "0"], ["--time-limit", "nan"], ["--family-sizes", ","],
                                               ["--seed", "9" * 5000], ["--lean-file", str(scratch)],
                                               ["--lean-file", ""], ["--backend", "jvm"]]))
        if bad_flag or target != str(path) or instance_refused(text):
            drive(["pooling", "solve", target, *bad_flag] + json_flag, scratch)


def instance_complete(b: bytes) -> bool:
    from pycert.solvers.instance_io import parse_instance

    return parse_instance(b.decode(), "written").name != ""


@given(st.data())
@examples(100)
def test_pooling_generate(data) -> None:  # noqa: ANN001
    with scratch_dir() as scratch:
        keys = ["hosts", "requests", "request_blocks", "blocks", "shared_prefix", "popularity_skew", "pool_capacity",
                "host_capacity", "host_load_limit", "target_pooled_misses", "target_per_instance_misses",
                "search_steps", "nonsense", ""]
        # values stay small when valid (a valid hosts=4096, requests=65536 is slow, not wrong)
        value = st.one_of(st.integers(-3, 40).map(str), st.sampled_from(
            ["true", '"32"', "1e400", "NaN", "null", deep(40), deep(1000), "9" * 5000, str(2**70), "4097", "70000",
             "1.5", "", "[1]", "{}"]))
        sets = data.draw(st.lists(st.tuples(st.sampled_from(keys), value, st.sampled_from(["=", ""])), max_size=3))
        argv = ["pooling", "generate"]
        for k, v, eq in sets:
            argv += ["--set", f"{k}{eq}{v}"]
        argv += data.draw(maybe("--seed", int_flag(0, 5))) + data.draw(maybe("--name", st.text(max_size=8)))
        target = None
        if data.draw(st.booleans()):
            out, target = data.draw(out_path(scratch, ".json"))
            argv += ["--out", out]
        argv += data.draw(st.sampled_from([[], ["--json"]]))
        drive(argv, scratch, outputs=(target,) if target else (), complete=instance_complete)


# ---------------------------------------------------------------------------- engine replay


def replay_refused(path: Path, flags: list[str]) -> bool:
    """Whether ``engine replay`` must stop before the engine starts: a bad flag, or a trace it cannot replay."""
    from pycert.cli import build_parser
    from pycert.cli.engine import checked_trace
    from pycert.core.errors import PycertError

    try:
        args = build_parser().parse_args(["engine", "replay", "--trace", str(path), *flags])
        if None in (args.num_blocks, args.out):
            return True
        checked_trace(path, args.num_blocks, args.block_tokens)  # without --block-tokens, the trace's block size
    except (SystemExit, PycertError):
        return True
    return False


@given(st.data())
@examples(60)
def test_engine_replay_refusals(data) -> None:  # noqa: ANN001
    """Only command lines refused before the engine runs (a replay of a valid trace takes seconds to minutes)."""
    with scratch_dir() as scratch:
        path = scratch / data.draw(st.sampled_from(["t.jsonl", "t.ids", "t.gz"]))
        path.write_bytes(data.draw(trace_bytes()))
        out, _ = data.draw(out_path(scratch, ""))
        flags = [data.draw(maybe("--num-blocks", int_flag(1, 6))), data.draw(maybe("--block-tokens", int_flag(2, 64))),
                 data.draw(maybe("--seed", int_flag(-5, 5))), data.draw(st.one_of(st.just([]), st.just(["--out", out]))),
                 data.draw(maybe("--max-tokens", int_flag(0, 99))), data.draw(st.sampled_from([[], ["--json"]]))]
        argv = shuffle_flags(data.draw, *flags)
        if replay_refused(path, [a for a in argv if a != "--json"]):
            drive(["engine", "replay", "--trace", str(path), *argv], scratch, expect=2)


# ---------------------------------------------------------------------------- commands that run Lean


LEAN_REFUSED = [  # each must be refused before a Lean process starts
    ["check"], ["check", "x.lean", "--jobs", "0"], ["check", "x.lean", "--timeout", "nan"], ["check", "", "--json"],
    ["check", "x.lean", "--backend", "jvm"], ["build", "--jobs", "-1"], ["build", "--timeout", "0"],
    ["build", "--jobs", "9" * 5000], ["prove"], ["prove", "everything"], ["prove", "all", "--backend", "jvm"],
    ["prove", "ceiling", "--shard-refs", "0"], ["prove", "ceiling", "--shard-refs", "9" * 5000],
    ["prove", "ceiling", "--timeout", "-1"], ["prove", "ceiling", "--ray-address"],
    ["prove", "isolation-cost", "--out", "o"], ["prove", "isolation-cost", "--tenants", "0", "--out", "o"],
    ["prove", "isolation-cost", "--tenants", "9" * 5000, "--out", "o"],
    ["prove", "isolation-cost", "--tenant-rule", "prefix:0", "--out", "o"],
    ["prove", "isolation-cost", "--tenant-rule", "prefix:" + "9" * 5000, "--out", "o"],
    ["prove", "isolation-cost", "--tenant-rule", "", "--out", "o"],
    ["prove", "isolation-cost", "--capacity-blocks", "0", "--out", "o"],
    ["prove", "isolation-cost", "--capacity-blocks", "1", "--tenants", "8", "--out", "o"],
    ["prove", "isolation-cost", "--capacity-blocks", "1", "--tenant-rule", "round-robin", "--out", "o"],
    ["prove", "isolation-cost", "--capacity-blocks", "1", "--tenant-rule", "round-robin", "--tenants", "2",
     "--shard-refs", "9", "--out", "o"],
    ["prove", "isolation-cost", "--capacity-blocks", "1", "--trace", "/nonexistent-pycert-fuzz/t.jsonl", "--out", "o"],
    ["prove", "all", "--tenants", "0"], ["prove", "all", "--tenant-rule", "x"],
    ["prove", "fleet", "--out", "o"], ["prove", "fleet", "--hosts", "0", "--out", "o"],
    ["prove", "fleet", "--hosts", "9" * 5000, "--out", "o"], ["prove", "fleet", "--hosts", "65", "--out", "o"],
    ["prove", "fleet", "--routing", "", "--out", "o"], ["prove", "fleet", "--routing", "prefix:0", "--out", "o"],
    ["prove", "fleet", "--routing", "field:" + "x" * 65, "--out", "o"],
    ["prove", "fleet", "--hosts", "2", "--capacity-blocks", "2", "--out", "o"],
    ["prove", "fleet", "--hosts", "2", "--routing", "round-robin", "--out", "o"],
    ["prove", "fleet", "--hosts", "2", "--capacity-blocks", "2", "--routing", "round-robin", "--threshold", "0.3",
     "--out", "o"],
    ["prove", "fleet", "--routing", "cache-aware", "--threshold", "nan", "--out", "o"],
    ["prove", "fleet", "--routing", "cache-aware", "--threshold", "9" * 5000, "--out", "o"],
    ["prove", "fleet", "--engine", "jvm", "--out", "o"], ["prove", "fleet", "--engine-block-tokens", "2", "--out", "o"],
    ["prove", "fleet", "--hosts", "2", "--capacity-blocks", "2", "--routing", "round-robin", "--trace",
     "/nonexistent-pycert-fuzz/t.jsonl", "--out", "o"],
    ["prove", "all", "--hosts", "0"], ["prove", "all", "--routing", "x"],
    ["audit", "--module", "Pycert.Basic"], ["audit", "--olean-dir", "/nonexistent-pycert-fuzz"],
    ["audit", "--timeout", "-1"], ["audit", "--sarif", ""], ["mutate", "--only", "nonsense"],
    ["mutate", "--timeout", "x"], ["toolchain", "--backend", "jvm"], ["toolchain", "selfcheck", "--backend", "jvm"],
    ["toolchain", "install", "--from"], ["verify", "--kernel", "--timeout", "nan", "c.json"],
    ["verify", "--kernel", "--backend", "jvm", "c.json"], ["verify", "--fresh", "c.json"],
    ["verify", "--kernel", "--fresh", "--timeout", "0", "c.json"], ["nonsense"], [], ["--json"], ["trace"], ["pooling"],
    ["leak"], ["leak", "run", "--prompts", "0"], ["leak", "run", "--prompts", "9" * 5000], ["leak", "run", "--seed", "x"],
    ["leak", "run", "--confidence", "1"], ["leak", "run", "--confidence", "nan"], ["leak", "run", "--device", "tpu"],
    ["leak", "run", "--page-size", "2"], ["leak", "run", "--replay", ""], ["leak", "run", "--backend", "jvm"],
    ["leak", "run", "--endpoint", "http://127.0.0.1:9"], ["leak", "run", "--min-tokens", "800"],
    ["leak", "run", "--replay", "/nonexistent-pycert-fuzz/c.json"], ["leak", "run", "--secret-file", "/nonexistent-x"],
    ["leak", "serve", "--port", "70000"], ["leak", "serve", "--port", "-1"], ["leak", "serve", "--num-blocks", "0"],
    ["leak", "serve", "--model", "/nonexistent-pycert-fuzz"], ["leak", "gateway"],
    ["leak", "gateway", "--upstream", "ftp://x", "--keys", "k"],
    ["leak", "gateway", "--upstream", "http://127.0.0.1:9", "--keys", "/nonexistent-pycert-fuzz/k"],
    ["leak", "gateway", "--upstream", "http://127.0.0.1:9", "--keys", "k", "--salt-in", "bits"],
    ["leak", "audit", "--endpoint", "http://127.0.0.1:9", "--keys", "/nonexistent-pycert-fuzz/k", "--out", "o"],
    ["leak", "audit", "--endpoint", "127.0.0.1:9", "--keys", "k", "--out", "o"],
    ["leak", "audit", "--endpoint", "http://127.0.0.1:9", "--keys", "k", "--out", "o", "--samples", "1"],
    ["leak", "audit", "--endpoint", "http://127.0.0.1:9", "--keys", "k", "--out", "o", "--alpha", "1"],
    ["leak", "audit", "--endpoint", "http://127.0.0.1:9", "--keys", "k", "--out", "o", "--prefixes", "x"],
    ["leak", "audit", "--endpoint", "http://127.0.0.1:9", "--keys", "k"],
    ["dataset"], ["dataset", "first-touch"], ["dataset", "first-touch", "--out", "/nonexistent-pycert-fuzz/d"],
    ["dataset", "first-touch", "--out", "a", "--check", "b"], ["dataset", "first-touch", "--check", ""],
    ["dataset", "first-touch", "--check", "/nonexistent-pycert-fuzz/d"],
    ["dataset", "first-touch", "--out", "/nonexistent-pycert-fuzz/d", "--ramp-blocks", "0"],
    ["dataset", "first-touch", "--out", "/nonexistent-pycert-fuzz/d", "--ramp-blocks", "9" * 5000],
    ["dataset", "first-touch", "--out", "/nonexistent-pycert-fuzz/d", "--trace-rows", "-1"],
    ["dataset", "first-touch", "--out", "/nonexistent-pycert-fuzz/d", "--seed", "-1"],
    ["dataset", "first-touch", "--out", "/nonexistent-pycert-fuzz/d", "--no-engine"],
    ["dataset", "first-touch", "--out", "/nonexistent-pycert-fuzz/d", "--trace", "/nonexistent-pycert-fuzz/t.jsonl"],
    ["dataset", "first-touch", "--check", "/nonexistent-pycert-fuzz/d", "--seed", "4"],
    ["dataset", "first-touch", "--out", "/nonexistent-pycert-fuzz/d", "--timeout", "nan"],
    ["dataset", "first-touch", "--out", "/nonexistent-pycert-fuzz/d", "--backend", "jvm"],
    ["dataset", "first-touch", "--reprove", "/nonexistent-pycert-fuzz/d"],
    ["dataset", "first-touch", "--reprove", "/nonexistent-pycert-fuzz/d", "--trace-rows", "3"],
    ["dataset", "first-touch", "--reprove", "a", "--check", "b"],
    ["dataset", "first-touch", "--out", "/nonexistent-pycert-fuzz/d", "--kernel"],
    ["dataset", "first-touch", "--check", "/nonexistent-pycert-fuzz/d", "--kernel"],
    ["engine"], ["engine", "replay"], ["engine", "replay", "--num-blocks", "1"], ["engine", "replay", "--block-tokens", "2"],
    ["engine", "replay", "--num-blocks", "9" * 5000], ["engine", "replay", "--block-tokens", "-64"],
    ["engine", "replay", "--replay", ""], ["engine", "replay", "--replay", "/nonexistent-pycert-fuzz/c.json"],
    ["engine", "replay", "--seed", "x"], ["engine", "replay", "--backend", "jvm"], ["engine", "replay", "--input", "x"],
    ["engine", "replay", "--trace", "/nonexistent-pycert-fuzz/t.jsonl", "--num-blocks", "8", "--block-tokens", "16",
     "--out", "/tmp/pycert-fuzz-never"],
    ["daemon", "start", "--idle", "nan"], ["daemon", "start", "--idle", "0"], ["daemon", "start", "--idle", "9" * 5000],
    ["daemon", "start", "--idle"], ["daemon", "stop", "--idle", "60"],
]


@given(st.sampled_from(LEAN_REFUSED), st.sampled_from([[], ["--json"]]))
@examples(60)
def test_lean_commands_fail_before_lean(argv: list[str], json_flag: list[str]) -> None:
    with scratch_dir() as scratch:
        drive([*argv, *json_flag], scratch, expect=2)


def test_help_of_every_command_exits_0() -> None:
    from pycert.cli import build_parser

    parser = build_parser()
    top = next(a for a in parser._actions if getattr(a, "dest", None) == "command")
    with scratch_dir() as scratch:
        for name, sub in top.choices.items():
            actions = [a for a in sub._actions if getattr(a, "dest", None) == "action"]
            for extra in [[]] + [[n] for a in actions for n in a.choices]:
                run = drive([name, *extra, "--help"], scratch, expect=0)
                assert run.out.startswith("usage: pycert"), (name, extra)
