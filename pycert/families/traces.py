"""What the families of a trace share (the ceiling, and the optimum at a capacity): where a trace's Lean
instance goes, the names a trace's file name makes, how a trace was read (its layout, recorded in the
parameters, and read again the same way by verify), the embedded default trace, and the earlier
certificate of a name in ``--out``. Below both families, so that neither imports the other.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from pydantic import Field

from pycert.core.errors import InputError, Refused, Rejected, Rejection
from pycert.core.schema import Params, declared_inputs
from pycert.data import synthetic
from pycert.data.formats import Format
from pycert.data.formats.source import is_stdin
from pycert.families.base import Setting

if TYPE_CHECKING:
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
    """How a prompts trace was cut into blocks; None for every other layout, whose blocks the trace names."""


SUMMED = "summed in numpy's int64, exact: a trace of more than 2^62 prompt tokens is refused as it is read"
PROMPT_TOKENS = f"the trace's prompt tokens (each request's input_length, or its prompt's length), {SUMMED}"
"""What computed a token figure's denominator, in every family that has one."""
BLOCK_IDENTITY = "Block identity is the trace's hash ids at the trace's block size; another granularity gives other figures."


def block_identity(params: TraceReading) -> str:
    """The ``does_not_prove`` line that says what a block is, for the layout the trace was read in."""
    if params.trace_format != "prompts":
        return BLOCK_IDENTITY
    return (f"A block is {params.block_tokens} consecutive tokens from a prompt's start, named by the whole prompt prefix "
            "up to its end (exact interning, vLLM's chained-hash semantics): only full blocks are references, a "
            "partial last block is none; another block size gives other figures.")


def reading(params: TraceReading) -> str:
    """What the claim sentence says of the blocks, where the reading made them (a prompts trace)."""
    if params.trace_format != "prompts":
        return ""
    return f"prompts cut into blocks of {params.block_tokens} tokens, full blocks only: "


def read_certified(path: Path, params: TraceReading) -> Trace:
    """The trace of a certificate, read as its parameters say. The file's sha256 was checked before, so a
    file that reads in another layout but not in the one named means the parameters are not the ones it
    was proved with (a rejection); one that reads in no layout is malformed input, named at its line."""
    from pycert.data.traces import read_trace  # numpy: only where a trace is read, not where a claim is

    if (params.trace_format == "prompts") != (params.block_tokens is not None):
        raise Rejected(Rejection.mismatch("parameters.block_tokens", "the block size exactly when the layout is prompts",
                                          repr(params.block_tokens)))
    try:
        return read_trace(path, params.trace_format or "auto", params.block_tokens)
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
    return {"trace_format": trace.format, "block_tokens": trace.block_tokens if trace.format == "prompts" else None}


def read_for_proof(path: Path, opts: object) -> Trace:
    """A ``--trace`` read as ``--format`` and ``--block-tokens`` say (options of either trace family)."""
    from pycert.data.traces import read_trace  # numpy: only where a trace is read, not where a claim is

    return read_trace(path, getattr(opts, "trace_format", "auto"), getattr(opts, "block_tokens", None))


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
