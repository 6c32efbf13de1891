"""``pycert trace convert``: any trace as the canonical one-id-per-line file, with a record of its source.

The canonical file is a plain ids trace (one decimal id and a newline per reference), so every reader
and every command takes it; it keeps the references and their order, and drops what the ids layout
cannot hold (requests, prompt lengths, tenants, the block size). The record beside it,
``OUT.source.json``, says what it was made from: the source's name and the sha256 of its bytes as
stored, the layout and block size it was read with, the order of its requests, and the sha256 of the
canonical file. Both files are written as one batch (temporaries, then renames), so an interrupted run
leaves neither half.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from pycert.core.errors import InputError
from pycert.core.files import atomic_write, publish_files, special
from pycert.data.traces import Trace

SIDECAR = ".source.json"
_CHUNK = 1 << 20


class ConvertedTrace(BaseModel):
    """The record written beside a canonical trace (and what ``trace convert --json`` prints)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    output: str
    output_sha256: str
    source: str
    source_sha256: str
    format: str
    block_tokens: int | None
    requests: int | None
    refs: int
    order: Literal["file", "timestamp"] = "file"
    """The order the requests were written in: the source's, or its timestamps' (``--sort``)."""


def sidecar(out: Path) -> Path:
    return out.with_name(out.name + SIDECAR)


def canonical_lines(refs: np.ndarray) -> Iterator[bytes]:
    """The ids file's bytes, a chunk of references at a time."""
    for i in range(0, len(refs), _CHUNK):
        yield ("\n".join(map(str, refs[i:i + _CHUNK].tolist())) + "\n").encode()


def convert(trace: Trace, out: Path) -> ConvertedTrace:
    """Write ``trace`` to ``out`` as one id per line, and the record of its source beside it."""
    digest = hashlib.sha256()
    for chunk in canonical_lines(trace.refs):
        digest.update(chunk)
    record = ConvertedTrace(output=out.name, output_sha256=digest.hexdigest(), source=Path(trace.name).name,
                            source_sha256=trace.sha256, format=trace.format, block_tokens=trace.block_tokens,
                            requests=trace.n_requests, refs=trace.n_refs, order="timestamp" if trace.sorted else "file")
    if special(out) is not None:  # a device or a FIFO is written through, and nothing is written beside it
        atomic_write(out, canonical_lines(trace.refs))
        return record
    try:
        publish_files({}, {out: canonical_lines(trace.refs),  # type: ignore[dict-item]
                           sidecar(out): (record.model_dump_json(indent=2) + "\n").encode()})
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", where=str(out)) from None
    return record
