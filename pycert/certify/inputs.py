"""Where verify and report find a certificate's inputs: inside the certificate's directory, and an
external one (a shared trace) where the user hands it in."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pycert.core.errors import InputError
from pycert.core.gate import Source, inside, named
from pycert.core.schema import InputFile


@dataclass(frozen=True)
class Locator:
    """Where verify finds a certificate's inputs: under ``root``, the certificate's directory (as
    :func:`pycert.core.gate.inside` reads it: no symbolic link, nothing outside it), and an external one
    where the user handed it in (``--input NAME=PATH``), else by its file name beside that directory
    (where ``pycert prove --trace NAME --out DIR`` run from the trace's directory left it; a plain file
    there, never a link). Either way its sha256 decides, not where it was."""

    root: Path
    external: Mapping[str, Path] = field(default_factory=dict)

    def locate(self, inp: InputFile) -> Source:
        """The file to read, or :class:`InputError` (exit 2) before anything is opened."""
        root = self.root.resolve()
        if not inp.external:
            return inside(root, inp.path)
        if (given := self.external.get(inp.path)) is not None:
            return named(given)
        found = inside(root.parent, inp.path)
        if not found.exists():
            raise InputError(f"external {inp.role} {inp.path} is not beside the certificate directory "
                             f"({root.parent}): give it with --input {inp.path}=PATH")
        return found
