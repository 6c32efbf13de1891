"""One block id per line: a non-negative integer below 2^64, no request structure, no block size."""

from __future__ import annotations

from array import array
from collections.abc import Iterable

import numpy as np

from pycert.core.errors import InputError
from pycert.core.gate import bounded
from pycert.core.limits import MAX_ID_DIGITS, MAX_TRACE_REFS


def read(lines: Iterable[tuple[int, bytes]], name: str) -> np.ndarray:
    refs = array("Q")
    for lineno, line in lines:
        text = line.strip()
        if not text.isdigit() or not text.isascii():  # isdigit alone admits e.g. superscripts
            try:
                shown = repr(text.decode()[:40])
                binary = any(b < 32 for b in text)
            except UnicodeDecodeError:
                binary = True
            if binary:  # a binary file's bytes, escaped, never echoed raw to the terminal
                shown = repr(text[:40])
            reason = ("negative id" if text.startswith(b"-") and text[1:].isdigit() else
                      "binary data, not a text trace" if binary else "not a non-negative integer id")
            raise InputError(f"{reason}: {shown}", where=f"{name}:{lineno}")
        digits = text.lstrip(b"0") or b"0"
        if len(digits) > MAX_ID_DIGITS:  # before int(), which refuses 4,300 digits
            raise InputError(f"id does not fit in 64 bits: {len(digits)} digits (at most {MAX_ID_DIGITS})",
                             where=f"{name}:{lineno}")
        value = int(digits)
        if value >= 1 << 64:
            raise InputError(f"id does not fit in 64 bits: {value}", where=f"{name}:{lineno}")
        if len(refs) >= MAX_TRACE_REFS:
            bounded(len(refs) + 1, MAX_TRACE_REFS, "block references", f"{name}:{lineno}")
        refs.append(value)
    return np.frombuffer(refs, dtype=np.uint64).copy()
