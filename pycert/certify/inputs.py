"""Where verify and report find a certificate's inputs: inside the certificate's directory, and an
external one (a trace from outside it) where the user hands it in, beside the directory, where it was
proved from, or in a checkout's shared trace folder."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pycert.core.errors import InputError, NotHere
from pycert.core.gate import Source, inside, named, recorded
from pycert.core.limits import MAX_TRACE_BYTES
from pycert.core.resources import shared_traces_dir
from pycert.core.schema import InputFile


@dataclass
class Locator:
    """Where verify finds a certificate's inputs: under ``root``, the certificate's directory (as
    :func:`pycert.core.gate.inside` reads it: no symbolic link, nothing outside it). An external one is, in
    this order: where the user handed it in (``--input NAME=PATH``); by its file name beside that directory (a
    plain file there, never a link: where ``pycert prove --trace NAME --out DIR`` run from the trace's
    directory left it); at the absolute path the certificate records (``origin``: where it was proved from);
    in the Mooncake trace folder beside a checkout. The last two are a stranger's hints: a file there counts
    only when it is a regular file of at most :data:`~pycert.core.limits.MAX_TRACE_BYTES` whose sha256 is the
    input's (a wrong file there is passed over, not read as the input). Either way its sha256 decides."""

    root: Path
    external: Mapping[str, Path] = field(default_factory=dict)
    found: dict[tuple[str, str], Source] = field(default_factory=dict)
    """Hints already hashed this run: (name, sha256) -> the file that holds it."""

    def locate(self, inp: InputFile) -> Source:
        """The file to read, or :class:`InputError` (exit 2; :class:`NotHere`, exit 5, for an external input that
        is nowhere here) before anything is opened."""
        root = self.root.resolve()
        if not inp.external:
            return inside(root, inp.path)
        if (given := self.external.get(inp.path)) is not None:
            return named(given)
        found = inside(root.parent, inp.path)
        if found.exists():
            return found
        if (hinted := self.hinted(inp)) is not None:
            return hinted
        origin = f", not at {inp.origin} (where it was proved from)" if inp.origin else ""
        raise NotHere(f"trace not here: external {inp.role} {inp.path} (sha256 {inp.sha256[:12]}...) is not beside the "
                      f"certificate directory ({root.parent}){origin}: give it with --input {inp.path}=PATH")

    def hinted(self, inp: InputFile) -> Source | None:
        """The file at the input's recorded origin, else in the shared trace folder, that has its name and sha256."""
        key = (inp.path, inp.sha256)
        if key in self.found:
            return self.found[key]
        for where in (inp.origin, shared_copy(inp)):
            if (source := holding(where, inp)) is not None:
                self.found[key] = source
                return source
        return None


def shared_copy(inp: InputFile) -> str | None:
    """Where a checkout keeps a file of the input's name (its shared Mooncake trace folder), if pycert runs from one."""
    shared = shared_traces_dir()
    return None if shared is None else str((shared / inp.path).absolute())


def holding(where: str | None, inp: InputFile) -> Source | None:
    """The file at the absolute path ``where`` when it is a regular file of the input's name and sha256 (read
    through :func:`pycert.core.gate.recorded`, bounded), else None."""
    try:
        source = recorded(where) if where else None
        if source is not None and source.name == inp.path and source.sha256(
                f"a {inp.role} file", MAX_TRACE_BYTES) == inp.sha256:
            return source
    except InputError:
        pass
    return None
