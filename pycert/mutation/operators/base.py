"""What every operator shares: the planned mutant, the operator base class, and the helpers that
build mutated Lean text (emitted instances with a claim or the packed data edited, a proof replaced
by ``sorry``) and read a checker's verdict (:func:`expect_failure`).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pycert.core.errors import Rejection
from pycert.families.pooling import wall as lean_wall
from pycert.lean.emit import packed_trace as lean_trace
from pycert.mutation.lean_batch import LibraryEdit, Snippet, decl_ranges
from pycert.mutation.report import Mutant

Verdict = tuple[str, str]
CERT_DIR = "certificates"
CEILING_CERT = "ceiling-synthetic-seed0.json"
TRACE_INPUT = "certificates/inputs/synthetic-seed0.jsonl"
WINDOW = 96
"""References of the committed synthetic trace that the instance mutants emit (small: cheap to check)."""


@dataclass
class Planned:
    mutant: Mutant
    run: Callable[[Any], Verdict] | None = None
    edit: LibraryEdit | None = None
    instance: Snippet | None = None
    audit: Snippet | None = None
    hidden_proof: bool = False
    """Audit the audit batch's .olean without its private part (the audit must fail closed)."""

    @property
    def batch(self) -> str | None:
        """The Lean batch this mutant is checked in (see :mod:`pycert.mutation.lean_batch`); None: Python."""
        if self.edit:
            return "library"
        if self.instance:
            return "instances"
        return "audit" if self.audit or self.hidden_proof else None


@dataclass
class Operator:
    name: ClassVar[str]
    plans: list[Planned] = field(default_factory=list)

    def add(self, mid: str, checker: str, description: str, expected: str, target: str, line: int = 1,
            equivalent: str | None = None, **kind: Any) -> None:
        m = Mutant(id=mid, operator=self.name, checker=checker, description=description, expected=expected,
                   target=target, line=line, equivalent=equivalent)
        self.plans.append(Planned(mutant=m, **kind))

    def plan(self, ctx: Any) -> list[Planned]:
        raise NotImplementedError


# ---------------------------------------------------------------------------- helpers

KERNEL_REJECTS = (r"(?i)proved that the proposition|type mismatch|could not unify|could not prove|tactic\b.*\bfailed|"
                  r"Error pretty printing|unsolved goals")
"""What Lean says when a decided or rewritten claim does not hold (``decide`` found it false; a
proof no longer fits the statement, or leaves a goal it cannot close; a too-large false proposition
that it could not print)."""
SORRY = r"declaration uses .sorry."


def decl_line(root: Path, rel: str, decl: str) -> int:
    return decl_ranges((root / rel).read_text(encoding="utf-8")).get(decl, (1, 1))[0]


def proof_to_sorry(source: str, decl: str) -> tuple[str, str]:
    """(old, new): the whole declaration ``decl``, and the same statement proved by ``sorry``."""
    start, end = decl_ranges(source)[decl]
    lines = source.splitlines()
    old = "\n".join(lines[start - 1:end]).rstrip()
    cut = old.index(":= by") if ":= by" in old else old.rindex(":=")
    return old, old[:cut] + ":= by\n  sorry"


def strip_header(lean: str) -> str:
    """An emitted instance file without its import lines and leading comments (for a batch file)."""
    return "\n".join(line for line in lean.splitlines() if not line.startswith(("import ", "-- ", "#check "))).strip()


def sub_once(text: str, old: str, new: str) -> str:
    if text.count(old) != 1:
        raise ValueError(f"expected exactly one {old!r} in the emitted instance")
    return text.replace(old, new)


def ceiling_instance(refs: list[int], sha: str, name: str, claims: tuple[int, int] | None = None,
                     edits: tuple[tuple[str, str], ...] = (), packed: Callable[[Any], Any] | None = None) -> str:
    """The emitted ceiling instance of ``refs``, its final claims (refs, distinct) optionally replaced,
    its packed vectors optionally edited by ``packed`` before rendering."""

    inst = lean_trace.plan(refs, sha, name)
    if packed:
        inst = packed(inst)
    text = strip_header(lean_trace.render(inst))
    n, d = len(refs), len(set(refs))
    if claims:
        n2, d2 = claims
        text = sub_once(text, f"theorem refs_eq : trace.length = {n} :=", f"theorem refs_eq : trace.length = {n2} :=")
        text = sub_once(text, f"Pycert.distinct trace = {d} :=", f"Pycert.distinct trace = {d2} :=")
        text = sub_once(text, f"Pycert.Ceiling.Bounded trace {n} {d} {n - d} :=",
                        f"Pycert.Ceiling.Bounded trace {n2} {d2} {n2 - d2} :=")
    for old, new in edits:
        text = sub_once(text, old, new)
    return text


def hash_ids(refs: list[int]) -> list[int]:
    """``refs`` renamed by a fixed injective map onto 64-bit ids in no particular order."""

    rng, name = random.Random(0), {}
    for b in dict.fromkeys(refs):
        while (v := rng.getrandbits(64)) in name.values():
            pass
        name[b] = v
    return [name[b] for b in refs]


def keep_only(text: str, keep: set[str]) -> str:
    """Drop docstrings and every theorem not in ``keep``: each decided count costs kernel time."""
    text = re.sub(r"/--.*?-/\n", "", text, flags=re.S)
    lines = text.splitlines()
    drop = set()
    for name, (a, b) in decl_ranges(text).items():
        if name not in keep and re.match(r"^(?:public\s+)?theorem\b", lines[a - 1]):
            drop |= set(range(a, b + 1))
    return "\n".join(line for i, line in enumerate(lines, 1) if i not in drop)


def pooling_instance(inst: Any, name: str, edits: tuple[tuple[str, str], ...] = (), keep: set[str] | None = None) -> str:
    text = strip_header(lean_wall.emit(inst))
    if keep is not None:
        text = keep_only(text, keep)
    text = sub_once(text, f"namespace {lean_wall.NAMESPACE}", f"namespace Pycert.Mutants.{name}")
    text = sub_once(text, f"end {lean_wall.NAMESPACE}", f"end Pycert.Mutants.{name}")
    for old, new in edits:
        text = sub_once(text, old, new)
    return text


def expect_failure(errors: list[Rejection] | list[str], pattern: str, what: str) -> Verdict:
    """Killed when one of the checker's objections matches ``pattern``; survived otherwise."""
    texts = [e.render() if isinstance(e, Rejection) else e for e in errors]
    hit = next((t for t in texts if re.search(pattern, t)), None)
    if hit:
        return "killed", hit
    if texts:
        return "survived", f"rejected, but not for the expected reason ({pattern}): {texts[0]}"
    return "survived", f"{what} accepted it"

AUDIT_HEADER = """module

public import Pycert.Ceiling

namespace Pycert.Mutants
open Pycert.Ceiling
"""

HITS = "(P : Policy) (r : List Nat) : hits P r + Pycert.distinct r ≤ r.length"
