"""Fold the Lean mutants into few kernel runs and map the kernel's answers back to each mutant.

Three batches, each one Lean process per file, all in one build:

* **library**: every library-statement and proof edit applied at once to a scratch copy of ``lean/``;
  each edit sits in its own declaration, so a diagnostic is attributed by line to the declaration it
  falls in. Edits go only to declarations no other edited declaration uses, so one mutant's change
  can never be what rejects another's.
* **instances**: emitted instance files, one namespace per mutant, in one file.
* **audit**: defects the kernel accepts (a new axiom, ``native_decide``, a hidden ``sorry``...), one
  namespaced declaration per mutant in one ``module`` that must compile; the audit then reads its
  .olean and must name each mutant's theorem with the expected reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pycert.lean.diagnostics import DID_NOT_RUN, CheckResult
from pycert.lean.sources import module_name, scan_declarations, strip_comments


def decl_ranges(source: str, first_line: int = 1, suffixes: bool = False) -> dict[str, tuple[int, int]]:
    """Short declaration name -> (first, last) line, counting from ``first_line``; with ``suffixes``,
    also each longer suffix of its full name (``C2.headline``: a curve has a ``headline`` per capacity,
    and the short name is the last one's).

    A declaration runs until the next line that starts in column 0 outside a comment, or starts a
    docstring: its docstring belongs to the declaration after it.
    """
    original = source.splitlines()
    stripped = strip_comments(source).splitlines()
    tops = [i for i, line in enumerate(stripped, 1) if line[:1].strip() or original[i - 1].startswith("/-")]
    out = {}
    for d in scan_declarations(source):
        nxt = next((t for t in tops if t > d.line), len(stripped) + 1)
        parts = d.name.split(".")
        for k in range(1, len(parts) + 1 if suffixes else 2):
            out[".".join(parts[-k:])] = (first_line + d.line - 1, first_line + nxt - 2)
    return out


@dataclass(frozen=True)
class LibraryEdit:
    """Replace ``old`` (once) by ``new`` in ``module_path`` (relative to ``lean/``) inside ``decl``."""

    mutant_id: str
    module_path: str
    decl: str
    old: str
    new: str
    expect: str
    """A regular expression a failure diagnostic inside ``decl`` must match."""


@dataclass(frozen=True)
class Snippet:
    """Lean text for a batch file; ``decl`` is the declaration (short name) the verdict is read at."""

    mutant_id: str
    text: str
    decl: str
    expect: str
    """instances: regex on a failure diagnostic in ``decl``; audit: the audit reason expected for it."""


@dataclass(frozen=True)
class Located:
    module: str
    start: int
    end: int
    expect: str
    decl: str


def apply_library_edits(lean_dir: Path, edits: list[LibraryEdit]) -> dict[str, Located]:
    """Apply every edit to the scratch library; where each mutated declaration now lies."""
    by_file: dict[str, list[LibraryEdit]] = {}
    for e in edits:
        by_file.setdefault(e.module_path, []).append(e)
    located = {}
    for rel, group in by_file.items():
        path = lean_dir / rel
        text = path.read_text(encoding="utf-8")
        for e in group:
            if text.count(e.old) != 1:
                raise ValueError(f"{e.mutant_id}: the text to mutate occurs {text.count(e.old)} times in {rel}")
            text = text.replace(e.old, e.new)
        path.write_text(text, encoding="utf-8")
        ranges = decl_ranges(text)
        module = module_name(lean_dir, path)
        for e in group:
            if e.decl not in ranges:
                raise ValueError(f"{e.mutant_id}: no declaration {e.decl} in the mutated {rel}")
            located[e.mutant_id] = Located(module, *ranges[e.decl], e.expect, e.decl)
    return located


def compose(header: str, snippets: list[Snippet], module: str) -> tuple[str, dict[str, Located]]:
    """One batch file: the header, then each snippet; where each mutant's declaration lies."""
    parts = [header.rstrip("\n")]
    line = header.rstrip("\n").count("\n") + 2
    located = {}
    for s in snippets:
        body = s.text.strip("\n")
        line += 1  # the blank line before it
        ranges = decl_ranges(body, first_line=line, suffixes=True)
        if s.decl not in ranges:
            raise ValueError(f"{s.mutant_id}: no declaration {s.decl} in its snippet")
        located[s.mutant_id] = Located(module, *ranges[s.decl], s.expect, s.decl)
        parts.append(body)
        line += body.count("\n") + 1
    return "\n\n".join(parts) + "\n", located


def kernel_verdict(result: CheckResult | None, where: Located) -> tuple[str, str]:
    """(status, detail) of a mutant the kernel must reject, from its module's diagnostics."""
    if result is None:
        return "error", f"{where.module} was not checked"
    if result.status == "resources" and result.cause == "timeout":
        return "timeout", result.detail
    if result.status in (*DID_NOT_RUN, "skipped"):
        return "error", f"{where.module} {result.status}: {result.detail[:200]}"
    inside = [d for d in result.failures if where.start <= d.line <= where.end]
    hit = next((d for d in inside if re.search(where.expect, d.message)), None)
    if hit:
        return "killed", f"{where.decl}: {hit.render()}"
    if inside:
        return "survived", f"rejected, but not for the expected reason ({where.expect}): {inside[0].render()}"
    return "survived", f"the kernel accepted {where.decl} (lines {where.start}-{where.end})"
