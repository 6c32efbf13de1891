"""Several standalone files checked as one Lean module: the start of a process and the import of the
library paid once for all of them.

A run's instance files each import a few library modules and nothing else; each declares everything in
a namespace of its own (``Pycert.Instance.<Module>``) and ends with a ``#check`` of its headline.
:func:`plan` groups such files (small ones only, and only those the build cache cannot answer) into at
most one batch per build thread, and :func:`write` makes each batch a module: the union of their
imports, then every file's text with its import lines blanked, each inside a ``section`` of its own,
so that an option or an ``open`` one file sets ends with it. Each file's declarations keep their names,
so every headline is read off the batch's compiled ``.olean`` as it would be off the file's own, and
the audit reads every declaration of the batch. :func:`split` turns the batch's verdict into one per
file, with Lean's messages mapped back to the file's own lines; a batch Lean did not accept is not a
verdict on its files: the build checks each of them alone (:func:`pycert.lean.build.build`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from pycert.lean.diagnostics import CheckResult
from pycert.lean.emit import INSTANCE_NAMESPACE, PRELUDE
from pycert.lean.sources import Unit, file_units

MAX_MEMBER_BYTES = 1 << 20
"""A larger file (a long trace's instance) needs the whole heap of a process for itself."""
MAX_BATCH_BYTES = 4 << 20
"""At most this much Lean in one batch: a 3,000-reference capacity file is 83 KB and takes 2.0 GiB
alone, three such files 2.1 GiB in one batch (docs/fixed-costs.md)."""
PREFIX = "PycertBatch"
_OWNER = re.compile(re.escape(INSTANCE_NAMESPACE) + r"\.([A-Za-z0-9_]+)\.")
_MODULE = re.compile(r"^\s*module\s*$", re.MULTILINE)
_PRELUDE = re.compile(r"^\s*prelude\s*$", re.MULTILINE)
_IMPORT = re.compile(r"^\s*(?:public\s+)?(?:meta\s+)?import\s")


class Member(BaseModel):
    module: str
    file: str
    first_line: int
    """Line of the batch where the file's own first line stands (1-based)."""
    lines: int


class Batch(BaseModel):
    module: str
    path: str
    members: list[Member]

    def owner(self, line: int) -> Member | None:
        return next((m for m in self.members if m.first_line <= line < m.first_line + m.lines), None)


def plan(units: Sequence[Unit], misses: set[str], library: set[str], threads: int) -> list[list[Unit]]:
    """Groups of at least two files to check together: standalone files the build cache does not answer,
    small enough, importing only library modules, declaring in namespaces of their own and imported by
    no other unit. The files are spread over ``threads`` groups, largest first, so that the build's
    threads all have work; a group of one file is no batch (the file is checked as it is)."""
    imported = {i for u in units for i in u.imports}
    fit = [u for u in units if u.module in misses and u.module not in library and u.module not in imported
           and set(u.imports) <= library and u.path.stat().st_size <= MAX_MEMBER_BYTES and _own(u)]
    # a `prelude` file is checked with what it imports and nothing more: never beside one that imports all of Init
    return [g for kind in (True, False) for g in _bins([u for u in fit if _prelude(u) == kind], threads)]


def _bins(fit: list[Unit], threads: int) -> list[list[Unit]]:
    if len(fit) < 2:
        return []
    bins: list[list[Unit]] = [[] for _ in range(max(1, min(threads, len(fit))))]
    sizes = [0] * len(bins)
    for u in sorted(fit, key=lambda u: (-u.path.stat().st_size, u.module)):
        k = min(range(len(bins)), key=lambda i: sizes[i])
        if sizes[k] + u.path.stat().st_size > MAX_BATCH_BYTES:
            continue
        bins[k].append(u)
        sizes[k] += u.path.stat().st_size
    return [sorted(b, key=lambda u: u.module) for b in bins if len(b) >= 2]


def _own(u: Unit) -> bool:
    """A file that declares in its own instance namespace and is no ``module`` (whose imports and
    exports a batch would change). The statement probe, which declares nothing and is the same on every
    run, is left to the build cache."""
    text = u.path.read_text(encoding="utf-8")
    return f"namespace {INSTANCE_NAMESPACE}.{u.module}\n" in text and not _MODULE.search(text)


def _prelude(u: Unit) -> bool:
    return bool(_PRELUDE.search(u.path.read_text(encoding="utf-8")))


def write(members: Sequence[Unit], directory: Path) -> tuple[Unit, Batch]:
    """The batch module of ``members`` in ``directory``, named by its content."""
    imports: list[str] = []
    body: list[str] = []
    placed = []
    for u in members:
        lines = u.path.read_text(encoding="utf-8").splitlines()
        imports += [i for i in u.imports if i not in imports]
        body.append(f"section -- {u.module} ({u.path.name})")
        placed.append((u, len(body) + 1, len(lines)))  # body's line k is the batch's line len(head) + k
        body += ["" if _IMPORT.match(ln) or _PRELUDE.match(ln) else ln for ln in lines]
        body.append(f"end -- {u.module}")
    head = [PRELUDE] * all(_prelude(u) for u in members) + [f"import {i}" for i in imports]  # plan never mixes
    text = "".join(f"{h}\n" for h in head) + "\n".join(body) + "\n"
    name = f"{PREFIX}{hashlib.sha256(text.encode()).hexdigest()[:16]}"
    path = directory / f"{name}.lean"
    path.write_text(text, encoding="utf-8")
    batch = Batch(module=name, path=str(path), members=[
        Member(module=u.module, file=str(u.path), first_line=len(head) + k, lines=n) for u, k, n in placed])
    return file_units([path])[0], batch


def split(result: CheckResult, batch: Batch) -> list[CheckResult]:
    """Each member's verdict from the batch's: the batch's status, and its messages on the member's
    own lines (a message outside every member goes to each)."""
    out = []
    for m in batch.members:
        mine = []
        for d in result.diagnostics:
            owner = batch.owner(d.line)
            if owner is None:
                mine.append(d.model_copy(update={"file": m.file}))
            elif owner.module == m.module:
                mine.append(d.model_copy(update={"file": m.file, "line": d.line - m.first_line + 1}))
        out.append(result.model_copy(update={"module": m.module, "file": m.file, "diagnostics": mine,
                                             "compiled_as": batch.module}))
    return out


def member_of(declaration: str) -> str | None:
    """The instance module whose namespace ``declaration`` is in, if any: in a batch, a finding of the
    audit belongs to the file that declared it (one in no instance's namespace, to every file)."""
    found = _OWNER.search(declaration)
    return found.group(1) if found else None
