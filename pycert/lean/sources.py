"""Lean sources as text: module names and files, imports, and the declarations a file makes.

No Lean runs here. :func:`parse_imports` reads a header; :func:`scan_declarations` finds top-level
declarations with their namespace-qualified names (comments and strings blanked first), for
``pycert verify`` (does a certificate's theorem exist?), the audit (did the compiled files keep
every theorem the source declares?) and the mutation batches (which lines a declaration spans).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from pycert.core.errors import InputError

_IMPORT_RE = re.compile(r"^\s*(?:public\s+)?(?:meta\s+)?import\s+(?:all\s+)?([\w.«»]+)")


def module_name(root: Path, path: Path) -> str:
    """``root/A/B.lean`` -> ``A.B``: a module's name is its path below the library root."""
    return ".".join(path.relative_to(root).with_suffix("").parts)


def module_path(module: str) -> Path:
    """``A.B`` -> ``A/B`` (add the suffix wanted)."""
    return Path(*module.split("."))


def library_modules(root: Path) -> dict[str, Path]:
    """Every module of the library under ``root`` (``lean/``), by name."""
    if not root.is_dir():
        raise InputError("no Lean library directory", where=str(root))
    return {module_name(root, p): p for p in sorted(root.rglob("*.lean"))}


class Unit(BaseModel):
    """Something to compile: a library module, or a standalone file (its module name is its stem)."""

    module: str
    path: Path
    imports: list[str]


def library_units(root: Path) -> list[Unit]:
    return [Unit(module=m, path=p, imports=parse_imports(p.read_text(encoding="utf-8")))
            for m, p in library_modules(root).items()]


def file_units(paths: Sequence[Path]) -> list[Unit]:
    """Standalone files, each its own module named by its stem (two with one stem are an input error)."""
    units = []
    seen: dict[str, Path] = {}
    for p in paths:
        if not p.is_file():
            raise InputError("no such Lean file", where=str(p))
        if p.stem in seen:
            raise InputError(f"two files would both be module {p.stem!r} ({seen[p.stem]})", where=str(p))
        seen[p.stem] = p
        units.append(Unit(module=p.stem, path=p, imports=parse_imports(p.read_text(encoding="utf-8"))))
    return units


def parse_imports(source: str) -> list[str]:
    """Module names a Lean file imports (its header: imports come before anything else)."""
    names: list[str] = []
    in_block_comment = False
    for raw in source.splitlines():
        line = raw.strip()
        if in_block_comment:
            in_block_comment = "-/" not in line
            continue
        if not line or line.startswith("--") or line in ("module", "prelude"):
            continue
        if line.startswith("/-"):
            in_block_comment = "-/" not in line
            continue
        if m := _IMPORT_RE.match(line):
            names.append(m.group(1))
            continue
        break
    return names


# ---------------------------------------------------------------------------- declarations


class Declaration(BaseModel):
    name: str
    kind: str
    private: bool
    file: str
    line: int


_DECL = re.compile(
    r"^\s*(?:@\[[^\]]*\]\s*)*(?P<mods>(?:(?:private|protected|public|noncomputable|partial|unsafe|nonrec)\s+)*)"
    r"(?P<kind>theorem|lemma|def|abbrev|instance|structure|class|inductive|axiom|opaque)\b\s*(?P<name>[^\s:({\[]+)?"
)
_OPEN_IN = re.compile(r"^\s*open\b.*?\bin\b\s*")
_NAMESPACE = re.compile(r"^\s*namespace\s+(\S+)")
_SECTION = re.compile(r"^\s*(?:(?:public|private|noncomputable|@\[[^\]]*\])\s+)*section\b")
_END = re.compile(r"^\s*end(?:\s+(\S+))?\s*$")


_OUTSIDE = re.compile(r"/-|--|'\"'|\"")
"""What starts something special outside a comment: a block comment, a line comment, the character
literal '"', a string."""
_INSIDE = re.compile(r"/-|-/")
_NOT_NEWLINE = re.compile(r"[^\n]")


def strip_comments(source: str, keep_strings: bool = False) -> str:
    """Blank out (nested) block comments, line comments and (unless ``keep_strings``) string literals,
    keeping line numbers. Plain text between them is copied a run at a time (a 35 MB emitted shard is
    almost all hex literals: one character at a time took 25 s)."""
    out: list[str] = []
    i, depth, n = 0, 0, len(source)
    while i < n:
        m = (_INSIDE if depth else _OUTSIDE).search(source, i)
        j = m.start() if m else n
        run = source[i:j]
        out.append(_NOT_NEWLINE.sub(" ", run) if depth else run)
        if m is None:
            break
        tok, i = m.group(), j
        if depth:
            depth, i = (depth + 1 if tok == "/-" else depth - 1), i + 2
        elif tok == "/-":
            depth, i = 1, i + 2
            out.append("  ")
        elif tok == "--":
            k = source.find("\n", i)
            i = n if k < 0 else k
        elif tok == "'\"'":  # the character literal '"' opens no string
            out.append(tok)
            i += 3
        else:
            k = i + 1
            while k < n and source[k] != '"':
                k += 2 if source[k] == "\\" else 1
            out.append(source[i:k + 1] if keep_strings else '""' + "\n" * source.count("\n", i, k))
            i = k + 1
    return "".join(out)


def _is_module(text: str) -> bool:
    """A file under Lean's module system, where a declaration is private unless made public."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "") == "module"


def _private(mods: list[str], in_module: bool, scopes: list[tuple[str, str]]) -> bool:
    if "private" in mods:
        return True
    return in_module and "public" not in mods and ("section", "public") not in scopes


def scan_declarations(source: str, file: str = "") -> list[Declaration]:
    """Top-level declarations with their namespace-qualified names (``namespace``/``section``/``end``)
    and whether they are private (explicitly, or by default in a ``module`` file outside a
    ``public section``)."""
    scopes: list[tuple[str, str]] = []  # ("ns", component) or ("section", "" | "public")
    found: list[Declaration] = []
    text = strip_comments(source)
    in_module = _is_module(text)
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = _OPEN_IN.sub("", raw, count=1)
        if m := _NAMESPACE.match(line):
            scopes += [("ns", part) for part in m.group(1).split(".")]
        elif _SECTION.match(line):
            scopes.append(("section", "public" if re.match(r"^\s*(?:@\[[^\]]*\]\s*)*public\b", line) else ""))
        elif m := _END.match(line):
            if scopes and scopes[-1][0] == "section":
                scopes.pop()
            else:
                del scopes[len(scopes) - len(m.group(1).split(".")) if m.group(1) else len(scopes) - 1:]
        elif (m := _DECL.match(line)) and m.group("name"):
            name = m.group("name").replace("«", "").replace("»", "").removesuffix(".")  # `foo.{u}`: universes
            if name.startswith("_root_."):
                full = name.removeprefix("_root_.")
            else:
                full = ".".join([c for kind, c in scopes if kind == "ns"] + [name])
            found.append(Declaration(name=full, kind=m.group("kind"), private=_private(m.group("mods").split(), in_module, scopes),
                                     file=file, line=lineno))
    return found


def declared_theorems(source: str) -> list[str]:
    """Full names of the theorems a Lean source declares."""
    return [d.name for d in scan_declarations(source) if d.kind in ("theorem", "lemma")]


_THEOREM_KEYWORD = re.compile(r"\b(?:theorem|lemma)\s")
_OPEN, _CLOSE = "([{⟨", ")]}⟩"


def _signature_from(text: str, start: int) -> str:
    """From ``start`` (a ``theorem`` keyword) to the ``:=``, ``|`` or ``where`` that ends the statement
    outside brackets and strings, whitespace-normalised."""
    depth, i, n = 0, start, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth = max(0, depth - 1)
        elif depth == 0 and (text.startswith(":=", i) or (ch == "|" and text[text.rfind("\n", 0, i) + 1:i].strip() == "")
                             or re.match(r"\bwhere\b", text[i:i + 6]) and not text[i - 1].isalnum()):
            break
        i += 1
    return " ".join(text[start:i].split())


def theorem_signatures(source: str) -> dict[str, str]:
    """Each public theorem's statement as written (``theorem name binders : type``), comments stripped
    and whitespace normalised: what a certificate pins beside the type's digest, so a same-name theorem
    with another statement is told apart from the sources alone."""
    text = strip_comments(source, keep_strings=True)
    offsets = [0]
    for line in text.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    out: dict[str, str] = {}
    for d in scan_declarations(source):
        if d.kind not in ("theorem", "lemma") or d.private:
            continue
        line_start = offsets[d.line - 1]
        m = _THEOREM_KEYWORD.search(text, line_start, offsets[d.line] if d.line < len(offsets) else len(text))
        if m:
            out.setdefault(d.name, _signature_from(text, m.start()))
    return out


def library_signatures(library: Path) -> dict[str, str]:
    """Every theorem's source signature in the library under ``library`` (``lean/``)."""
    out: dict[str, str] = {}
    for path in sorted((library / "Pycert").rglob("*.lean")):
        for name, sig in theorem_signatures(path.read_text(encoding="utf-8")).items():
            out.setdefault(name, sig)
    return out


_NUMERAL = re.compile(r"(?<![\w.])\d+(?![\w.])")


def statement_literals(signature: str, predicate: str) -> list[int] | None:
    """The natural-number literals of a headline's statement as its source writes it (``theorem headline :
    Pycert.Ceiling.Bounded trace 5339 1356 3983``), in order; None when the statement is not an application
    of ``predicate`` (its full name, or its last component under an ``open``)."""
    _, sep, statement = signature.partition(" : ")
    words = statement.split()
    if not sep or not words or words[0] not in (predicate, predicate.rsplit(".", 1)[-1]):
        return None
    return [int(m) for m in _NUMERAL.findall(statement)]
