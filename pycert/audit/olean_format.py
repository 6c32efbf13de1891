"""The .olean file format (version 2, the Lean 4.2x series): the header, one part of a module, and
the values the heap decodes into (:mod:`pycert.audit.olean` reads them).

An .olean file is a header followed by a *compacted region*: Lean heap objects copied verbatim,
children before parents, with every pointer rewritten to an absolute address computed from the
file's base address. The word size is not stored in the header; it is the reading under which the
base address is 64 KiB aligned and the root falls inside the file (the wasm backend writes 32-bit
files, a native build 64-bit ones).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from pycert.core.errors import InputError

MAGIC = b"olean"
SUPPORTED_VERSIONS = frozenset({2})
_PREFIX = 0x50  # magic (5) + version (1) + flags (1) + Lean version (33) + githash (40)
PART_SUFFIXES = (".olean", ".olean.server", ".olean.private")
"""The parts a module may be saved as, from the least to the most complete."""

# Object tags (lean.h).
MAX_CTOR_TAG = 243
TAG_ARRAY = 246
TAG_SCALAR_ARRAY = 248
TAG_STRING = 249
TAG_MPZ = 250
TAG_THUNK = 251
TAG_TASK = 252
TAG_REF = 253

CONSTANT_KINDS = ("axiom", "defn", "thm", "opaque", "quot", "induct", "ctor", "rec")
"""``ConstantInfo`` constructors in declaration order (their object tags)."""
ConstantKind = Literal["axiom", "defn", "thm", "opaque", "quot", "induct", "ctor", "rec"]

PRIVATE_KIND_ORDER = ("defn", "thm", "axiom", "opaque", "quot", "induct", "ctor", "rec")
"""``Lean.ConstantKind`` (Environment.lean) in declaration order: the enum the extension
``privateConstKindsExt`` stores for constants whose exported form hides the real kind."""

SAFETY = ("unsafe", "safe", "partial")
"""``DefinitionSafety`` in declaration order."""

EXPR_TAGS = ("bvar", "fvar", "mvar", "sort", "const", "app", "lam", "forallE", "letE", "lit", "mdata", "proj")
LEVEL_TAGS = ("zero", "succ", "max", "imax", "param", "mvar")


class OleanError(InputError):
    """A file that is not a readable .olean of a supported version."""


class OleanHeader(BaseModel):
    path: str
    version: int
    flags: int
    lean_version: str
    githash: str
    base: int
    word_size: Literal[4, 8]
    size: int
    root: int

    @property
    def gmp(self) -> bool:
        """Big naturals in GMP's layout (flag bit 0) rather than Lean's own."""
        return bool(self.flags & 1)


def _cstr(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("ascii", "replace")


def parse_header(data: bytes, path: str = "<bytes>") -> OleanHeader:
    """The header, with the word size inferred from which reading of base and root is consistent."""
    if len(data) < _PREFIX + 8 or data[:5] != MAGIC:
        raise OleanError("not an .olean file (bad magic)", where=path)
    version = data[5]
    if version not in SUPPORTED_VERSIONS:
        raise OleanError(f"unsupported .olean format version {version}", where=path)
    readings = []
    for p, fmt in ((4, "<II"), (8, "<QQ")):
        if len(data) < _PREFIX + 2 * p:
            continue
        base, root = struct.unpack_from(fmt, data, _PREFIX)
        if base % 0x10000 or root % p:
            continue
        if base + _PREFIX + 2 * p <= root < base + len(data):
            readings.append((p, base, root))
        elif len(data) == _PREFIX + 2 * p and root < base:
            # A part with no objects of its own (a module whose .server/.private level adds nothing):
            # its root is the ModuleData of an earlier part. The heap resolves it or calls it dangling.
            readings.append((p, base, root))
    if len(readings) != 1:
        raise OleanError(f"cannot tell the word size ({len(readings)} consistent readings)", where=path)
    p, base, root = readings[0]
    return OleanHeader(
        path=path, version=version, flags=data[6], lean_version=_cstr(data[7:0x28]), githash=_cstr(data[0x28:_PREFIX]),
        base=base, word_size=p, size=len(data), root=root,
    )


# ---------------------------------------------------------------------------- decoded values


@dataclass(frozen=True, slots=True)
class Level:
    kind: str
    args: tuple[Level, ...] = ()
    name: str | None = None

    def __str__(self) -> str:
        if self.kind == "zero":
            return "0"
        if self.kind == "succ":
            return f"succ({self.args[0]})"
        if self.kind in ("param", "mvar"):
            return str(self.name)
        return f"{self.kind}({', '.join(map(str, self.args))})"


@dataclass(frozen=True, slots=True)
class Expr:
    """A decoded expression node; ``args`` holds sub-expressions, ``name``, ``levels`` and ``value`` the
    rest by kind (``value``: a bvar's index, a literal, a proj's field, a binder's info: 0 default,
    1 implicit, 2 strict implicit, 3 instance implicit)."""

    kind: str
    args: tuple[Expr, ...] = ()
    name: str | None = None
    levels: tuple[Level, ...] = ()
    value: int | str | None = None


@dataclass(slots=True)
class ConstantInfo:
    kind: ConstantKind
    name: str
    level_params: list[str]
    type_ptr: int
    value_ptr: int | None = None
    safety: str | None = None
    """Definitions: ``unsafe``, ``safe`` or ``partial``."""
    is_unsafe: bool = False
    all: list[str] = field(default_factory=list)
    ctors: list[str] = field(default_factory=list)
    induct: str | None = None

    @property
    def unsafe(self) -> bool:
        return self.is_unsafe or self.safety == "unsafe"


@dataclass(frozen=True, slots=True)
class Import:
    module: str
    import_all: bool
    is_exported: bool
    is_meta: bool


@dataclass(slots=True)
class ModuleData:
    imports: list[Import]
    const_names: list[str]
    constant_ptrs: list[int]
    extra_const_names: list[str]
    entries: dict[str, int]
    """Extension name -> pointer to its ``Array EnvExtensionEntry``."""
    is_module: bool


class Part:
    """One file of a module, loaded whole (mapping it at its base is neither possible nor needed)."""

    def __init__(self, path: Path) -> None:
        try:
            self.data = path.read_bytes()
        except OSError as exc:
            raise OleanError(f"cannot read: {exc.strerror}", where=str(path)) from None
        self.path = path
        self.header = parse_header(self.data, str(path))
        self.base = self.header.base
        self.end = self.base + len(self.data)
