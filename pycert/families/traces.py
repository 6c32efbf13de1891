"""What the families of a trace share (the ceiling, and the optimum at a capacity): where a trace's Lean
instance goes, the names a trace's file name makes, how a trace was read (its layout, recorded in the
parameters, and read again the same way by verify), the embedded default trace, and the earlier
certificate of a name in ``--out``. Below both families, so that neither imports the other.

This module is the one place a family reads a trace (an import-linter contract in pyproject.toml keeps
:mod:`pycert.data.traces` out of every other family module): a claim's trace is :func:`certified`, read as
the certificate's :class:`TraceReading` says, and a producer's is :func:`read_for_proof`, whose reading the
parameters then record (:func:`reading_of`). A figure cannot come from a trace read any other way.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from pycert.core.errors import InputError, Refused, Rejected, Rejection
from pycert.core.gate import Source
from pycert.core.memo import kept
from pycert.core.schema import InputFile, Params, declared_inputs
from pycert.data import synthetic
from pycert.data.formats import Format
from pycert.data.formats.source import is_stdin
from pycert.families.base import Reader, Setting, input_path

if TYPE_CHECKING:  # the families name the type through here; only this module imports the reader
    from pycert.data.traces import Trace

DEFAULT_TRACE = Path("inputs/synthetic-seed0.jsonl")
"""The embedded default trace's place, relative to the certificate directory, like the two below."""
LEAN_OUT = Path("lean")
LEAN_DERIVED = LEAN_OUT / "derived"
"""Where the instance file of a trace from outside the certificate directory goes: full-resolution data
derived from that trace (ignored by git in the repository) that verify regenerates."""


class TraceReading(Params):
    """How the trace was read: what the list of block ids depends on besides the file's bytes, so that
    verify reads the same list from the same file."""

    trace_format: Format | None = None
    """The layout (:mod:`pycert.data.formats`); None: a certificate made before layouts were recorded,
    whose trace is read as the first line says (``auto``)."""
    block_tokens: int | None = Field(None, ge=1)
    """How prompts' token ids were cut into blocks (the prompts layout, and the requests layout given token ids);
    None where the trace names its blocks."""
    trace_order: Literal["file", "timestamp"] | None = None
    """The order the requests were read in: the file's, or their timestamps' (``--sort``); None: a certificate
    made before the order was recorded, read in file order."""


SUMMED = "summed in numpy's int64, exact: a trace of more than 2^62 prompt tokens is refused as it is read"
PROMPT_TOKENS = f"the trace's prompt tokens (each request's input_length, or its prompt's length), {SUMMED}"
"""What computed a token figure's denominator, in every family that has one."""
BLOCK_IDENTITY = "Block identity is the trace's hash ids at the trace's block size; another granularity gives other figures."


def block_identity(params: TraceReading) -> str:
    """The ``does_not_prove`` line that says what a block is, for the way the trace was read."""
    if params.block_tokens is None:
        return BLOCK_IDENTITY
    return (f"A block is {params.block_tokens} consecutive tokens from a prompt's start, named by the whole prompt prefix "
            "up to its end (exact interning, vLLM's chained-hash semantics): only full blocks are references, a "
            "partial last block is none; another block size gives other figures.")


def reading(params: TraceReading) -> str:
    """What the claim sentence says of the blocks and their order, where the reading made them (prompts cut into
    blocks, requests put in timestamp order)."""
    order = "its requests in timestamp order, " if params.trace_order == "timestamp" else ""
    if params.block_tokens is None:
        return order
    return f"{order}prompts cut into blocks of {params.block_tokens} tokens, full blocks only: "


AS_FOUND = TraceReading()
"""The reading of a family whose certificates record none: the layout by the first line, a prompts trace at
its default block size."""


def certified(inputs: Sequence[InputFile], read: Reader, params: TraceReading, role: str = "trace") -> Trace:
    """The certificate's trace, read as its parameters say (:func:`read_certified`): the one way a claim has
    a trace, for its instance files and every figure alike. Read once per run for every certificate of the
    same bytes and reading (a curve's capacities, a ceiling and a capacity of one trace); a file whose bytes
    are not the sha256 the certificate names is rejected."""
    source = input_path(inputs, role, read)
    sha = next(i.sha256 for i in inputs if i.role == role and i.derived_from is None)
    trace = kept("certified-trace", (sha, params.trace_format, params.block_tokens, params.trace_order),
                 lambda: read_certified(source, params))
    if trace.sha256 != sha:
        raise Rejected(Rejection.mismatch(f"inputs[role={role}]", sha, f"{trace.sha256} (the bytes read)",
                                          reason="mismatch"))
    return trace


def read_certified(path: Path | Source, params: TraceReading) -> Trace:
    """The trace of a certificate, read as its parameters say. The file's sha256 was checked before, so a
    file that reads in another layout but not in the one named means the parameters are not the ones it
    was proved with (a rejection); one that reads in no layout is malformed input, named at its line."""
    from pycert.data.traces import read_trace  # numpy: only where a trace is read, not where a claim is

    if params.trace_format == "prompts" and params.block_tokens is None:
        raise Rejected(Rejection.mismatch("parameters.block_tokens", "the block size, for the prompts layout", "None"))
    try:
        trace = read_trace(path, params.trace_format or "auto", params.block_tokens,
                           sort=params.trace_order == "timestamp")
    except Refused:
        raise
    except InputError as err:
        if params.trace_format in (None, "auto"):
            raise
        try:
            found = read_trace(path).format
        except InputError:
            raise err from None
        raise Rejected(Rejection.mismatch("parameters.trace_format", f"a layout the trace reads in ({err})",
                                          f"{params.trace_format!r} (the trace reads as {found!r})")) from None
    if trace.cut != (params.block_tokens is not None):
        raise Rejected(Rejection.mismatch("parameters.block_tokens", "the block size exactly when the blocks are cut "
                                          "from prompt token ids", repr(params.block_tokens)))
    return trace


def slug(name: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in name.lower()).strip("-")


def lean_ident(name: str) -> str:
    return "".join(part.capitalize() for part in slug(name).split("-") if part)


def check_name(trace: Path) -> None:
    """A trace's file name names its certificates and its Lean module: it needs a letter or a digit."""
    if not slug(trace.stem):
        raise InputError("a trace's file name needs a letter or digit (it names the certificate)", where=str(trace))


def reading_of(trace: Trace) -> dict[str, object]:
    """The parameters that record how ``trace`` was read (:class:`TraceReading`)."""
    return {"trace_format": trace.format, "block_tokens": trace.block_tokens if trace.cut else None,
            "trace_order": "timestamp" if trace.sorted else "file"}


def read_for_proof(path: Path, opts: object) -> Trace:
    """A ``--trace`` read as ``--format``, ``--block-tokens`` and ``--sort`` say (options of the trace families);
    timestamps out of order in a trace read in file order are a warning on stderr."""
    from pycert.core.console import warn  # with read_trace: only where a trace is read
    from pycert.data.traces import read_trace  # numpy: only where a trace is read, not where a claim is

    trace = read_trace(path, getattr(opts, "trace_format", "auto"), getattr(opts, "block_tokens", None),
                       sort=getattr(opts, "sort", False))
    if trace.disorder:
        warn(trace.disorder)
    return trace


def refuse_stdin(traces: list[Path]) -> None:
    """A certificate names its trace by file and sha256, for verify to read again: stdin cannot be."""
    for trace in traces:
        if is_stdin(trace):
            raise InputError("a certificate's trace must be a file, which verify reads again: stdin cannot be; "
                             "save it to a file and give that", where="--trace -")


def certified_trace(cert: Path) -> str | None:
    """The file name of the trace an existing certificate names, or None (no such certificate, or one that
    cannot be read: writing over it then loses nothing a verifier could check)."""
    return next((PurePosixPath(i["path"]).name for i in declared_inputs(cert) or [] if i.get("role") == "trace"), None)


def trace_files(traces: Iterable[Path], setting: Setting) -> Iterator[tuple[Path, Path | None]]:
    """Each trace of a run as a file to read, and for the embedded default (regenerated byte-identically into
    ``--out``) its place in the certificate directory; None for a user's trace."""
    for trace in traces:
        if trace == setting.out_dir / DEFAULT_TRACE:
            yield setting.emit(DEFAULT_TRACE, synthetic.to_jsonl(synthetic.generate(0))), DEFAULT_TRACE
        else:
            yield trace, None
