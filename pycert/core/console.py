"""Terminal output: JSON for machines, tables and progress for people.

Commands never print directly; they hand a result to :func:`emit` (or text to :func:`write_out`).
Progress goes to stderr and only when stderr is a terminal and ``--json`` was not given, so pipes and
CI logs stay clean. Output into a pipe whose reader has gone (``pycert trace stats T --json | head -1``)
ends quietly: the command finishes with its own exit code and no traceback.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shlex
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel


def to_jsonable(data: Any) -> Any:
    if isinstance(data, BaseModel):
        return data.model_dump(mode="json")
    if isinstance(data, (list, tuple)):
        return [to_jsonable(d) for d in data]
    if isinstance(data, dict):
        return {k: to_jsonable(v) for k, v in data.items()}
    return data


_ACTIVE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
"""What a terminal acts on instead of showing: C0 and C1 controls (the escape that starts a cursor move or a
line clear, carriage return, newline), DEL, and Unicode's invisible line, direction and joiner marks."""


def escaped(text: object, keep: str = "") -> str:
    """``text`` with every character a terminal would act on written as ``\\xNN`` or ``\\uNNNN`` (those in
    ``keep`` left as they are): a name from a stranger's directory can neither move the cursor, clear a line,
    reorder what follows nor start a line of its own. Every path and string from a directory that text
    output shows goes through here (each field alone, newline included; whole outputs with ``keep="\\n"``)."""
    def one(m: re.Match[str]) -> str:
        c = m.group()
        return c if c in keep else (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")

    return _ACTIVE.sub(one, str(text))


def out(text: str) -> None:
    """Print human text on stdout, escaped (:func:`escaped`, lines and tabs kept; :func:`write_out`)."""
    write_out(escaped(text, keep="\n\t"))


def write_out(text: str) -> None:
    """``text`` and a newline on stdout, flushed now: a reader that has gone (a closed pipe) is seen
    here, not at exit, and the rest of the output goes to /dev/null, so the command still ends with
    its own exit code and without the interpreter's "Exception ignored" on the final flush."""
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def invocation() -> str:
    """How a command pycert prints for the user to run next starts, so that it runs as printed here: ``pycert``
    when that is the command on PATH (or pycert runs inside another program), else the path of the script that
    runs (``.venv/bin/pycert`` after ``make prove``), else this interpreter with ``-m pycert``."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    main = getattr(sys.modules.get("__main__"), "__spec__", None)
    if main is not None and main.name == "pycert.__main__":
        return f"{_shown(Path(sys.executable))} -m pycert"
    if script is None or script.name != "pycert":
        return "pycert"
    found = shutil.which("pycert")
    if found is not None and Path(found).resolve() == script.resolve():
        return "pycert"
    return _shown(script)


def _shown(path: Path) -> str:
    """``path`` for a command line: relative to the working directory when it lies below it, else absolute."""
    absolute = path.absolute()
    text = str(absolute.relative_to(Path.cwd())) if absolute.is_relative_to(Path.cwd()) else str(absolute)
    return shlex.quote(text if "/" in text else f"./{text}")  # a bare name would be looked up on PATH


def warn(text: str) -> None:
    """``pycert: warning: text`` as one line on stderr, escaped, with or without ``--json``: something the user
    should know that stops nothing (stdout stays the command's output, JSON included)."""
    try:
        sys.stderr.write(escaped(" ".join(f"pycert: warning: {text}".split())) + "\n")
        sys.stderr.flush()
    except (BrokenPipeError, OSError):
        pass


def emit(as_json: bool, data: Any, human: Callable[[], str] | None = None) -> None:
    """Print ``data`` as JSON, or the human rendering ``human()`` (falls back to JSON), escaped."""
    if as_json or human is None:
        write_out(json.dumps(to_jsonable(data), indent=2, sort_keys=False))
    else:
        text = human()
        if text:
            out(text)


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``1 certificate``, ``2 certificates``, ``1,024 blocks``: the count with its noun in the right number
    (``many`` for a noun whose plural is not ``noun + "s"``)."""
    return f"{count:,} {noun if count == 1 else many or noun + 's'}"


def share_of(name: str, hits: int, refs: int) -> str:
    """A run table's figure: ``ceiling 3,983 of 5,339 refs (74.60%)``, the count and the total, never a fraction."""
    return f"{name} {hits:,} of {refs:,} refs ({100 * hits / refs:.2f}%)"


_FORMULA = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def spreadsheet_cell(value: Any) -> Any:
    """A CSV cell no spreadsheet evaluates (OWASP's rule against CSV injection): text that starts with ``=``,
    ``+``, ``-``, ``@``, a tab or a carriage return gets a leading ``'``, so a trace named ``=HYPERLINK(...)``
    is shown, not run; a number (``-0.5``) stays a number, and anything not text is left as it is."""
    if isinstance(value, str) and value.startswith(_FORMULA) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def csv_lines(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """CSV (the csv module's quoting, ``\\n`` line ends) with a header row, every cell through
    :func:`spreadsheet_cell`: the one way pycert writes CSV."""
    buf = io.StringIO()
    plain = csv.writer(buf, lineterminator="\n")
    quoted = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_ALL)  # with "\n" line ends the csv module
    for row in [headers, *rows]:  # leaves a carriage return in a cell unquoted, where readers end the row
        cells = [spreadsheet_cell(c) for c in row]
        (quoted if any(isinstance(c, str) and "\r" in c for c in cells) else plain).writerow(cells)
    return buf.getvalue()


def csv_text(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """:func:`csv_lines` without the last line end (:func:`emit` prints one)."""
    return csv_lines(headers, rows).removesuffix("\n")


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A plain aligned text table (no colour: it must read well in CI logs too)."""
    body = [[str(c) for c in r] for r in rows]
    widths = [len(h) for h in headers]
    for r in body:
        for i, c in enumerate(r):
            widths[i] = max(widths[i], len(c))
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    out = [line(list(headers)), line(["-" * w for w in widths])]
    out += [line(r) for r in body]
    return "\n".join(out)


class Progress:
    """Line-per-event progress on stderr; silent under --json or when stderr is not a tty.

    ``force=True`` prints even without a tty (used by ``pycert prove`` so CI logs show stages).
    Parallel Lean runs report from several threads: each line is one ``write`` under a lock shared by
    every printer (``print`` writes the text and the newline separately, so two lines could interleave).
    """

    _lock = threading.Lock()

    def __init__(self, enabled: bool = True, force: bool = False) -> None:
        self.enabled = enabled and (force or sys.stderr.isatty())
        self.t0 = time.monotonic()

    def __call__(self, message: str) -> None:
        if self.enabled:
            line = f"[{time.monotonic() - self.t0:7.1f}s] {escaped(message)}\n"
            with Progress._lock:
                sys.stderr.write(line)
                sys.stderr.flush()


QUIET = Progress(enabled=False)
