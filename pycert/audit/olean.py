"""A reader for Lean 4 ``.olean`` files: the heap of a module's parts and the decoders over it.

Nothing is relocated: a pointer is resolved by finding the part whose ``[base, base + size)`` holds
it, because the three parts a ``module`` file is saved as (``.olean``, ``.olean.server``,
``.olean.private``) come out of one compactor and point into each other. The first payload word is
the root pointer (a ``ModuleData``). Object layouts (:mod:`pycert.audit.olean_format` has the file
format) are parameterised by the word size ``p``: an 8-byte header (rc int32, cs_sz u16, other u8,
tag u8); a word with its low bit set is a boxed scalar; a constructor (tag <= 243) has ``other``
object fields, then scalars; an Array (246) size, capacity, elements at ``8 + 2p``; a String (249)
size, capacity, length, UTF-8 at ``8 + 3p``; an MPZ (250) sign, size, digits pointer, 32-bit digits,
or with the header's GMP flag alloc, signed size, limb pointer, p-byte limbs.

The decoders cover what the axiom audit needs and a little more: ``Name``, ``Level``, ``Expr``,
``ConstantInfo`` and ``ModuleData``. Expressions are maximally shared DAGs; walks are iterative and
memoised by address, never recursive.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path

from pycert.audit.olean_format import (
    CONSTANT_KINDS,
    EXPR_TAGS,
    LEVEL_TAGS,
    MAX_CTOR_TAG,
    PART_SUFFIXES,
    PRIVATE_KIND_ORDER,
    SAFETY,
    TAG_ARRAY,
    TAG_MPZ,
    TAG_STRING,
    ConstantInfo,
    Expr,
    Import,
    Level,
    ModuleData,
    OleanError,
    Part,
)


class Heap:
    """The objects of one module's parts, addressed by the pointers stored in them."""

    def __init__(self, parts: list[Part]) -> None:
        if not parts:
            raise ValueError("a heap needs at least one part")
        sizes = {p.header.word_size for p in parts}
        if len(sizes) != 1:
            raise OleanError("parts of one module disagree on the word size", where=str(parts[0].path))
        self.parts = sorted(parts, key=lambda p: p.base)
        for a, b in zip(self.parts, self.parts[1:]):
            if a.end > b.base:
                raise OleanError("parts of one module overlap in address space", where=str(b.path))
        self.p = sizes.pop()
        self._word = struct.Struct("<I" if self.p == 4 else "<Q")
        self._hdr = struct.Struct("<iHBB")
        self._names: dict[int, str] = {0x1: ""}
        self._last = self.parts[0]

    # -- raw access
    def locate(self, ptr: int) -> tuple[bytes, int]:
        """The buffer holding object ``ptr`` and its offset there."""
        part = self._last
        if not part.base <= ptr < part.end:
            for part in self.parts:
                if part.base <= ptr < part.end:
                    self._last = part
                    break
            else:
                raise OleanError(f"dangling pointer {ptr:#x}", where=str(self.parts[0].path))
        return part.data, ptr - part.base

    def tag(self, ptr: int) -> int:
        buf, off = self.locate(ptr)
        return buf[off + 7]

    def num_objs(self, ptr: int) -> int:
        buf, off = self.locate(ptr)
        return buf[off + 6]

    def field(self, ptr: int, i: int) -> int:
        buf, off = self.locate(ptr)
        return self._word.unpack_from(buf, off + 8 + i * self.p)[0]

    def fields(self, ptr: int) -> tuple[int, int, tuple[int, ...]]:
        """(tag, number of object fields, the object fields) of a constructor object."""
        buf, off = self.locate(ptr)
        n, tag = buf[off + 6], buf[off + 7]
        if tag > MAX_CTOR_TAG:
            raise OleanError(f"object {ptr:#x} (tag {tag}) is not a constructor", where=str(self.parts[0].path))
        fmt = "<%d%s" % (n, "I" if self.p == 4 else "Q")
        return tag, n, struct.unpack_from(fmt, buf, off + 8)

    def u8(self, ptr: int, offset: int) -> int:
        """Byte ``offset`` of the scalar area of a constructor object."""
        buf, off = self.locate(ptr)
        return buf[off + 8 + buf[off + 6] * self.p + offset]

    # -- runtime types
    def array(self, ptr: int) -> tuple[int, ...]:
        buf, off = self.locate(ptr)
        if buf[off + 7] != TAG_ARRAY:
            raise OleanError(f"object {ptr:#x} is not an array (tag {buf[off + 7]})", where=str(self.parts[0].path))
        n = self._word.unpack_from(buf, off + 8)[0]
        fmt = "<%d%s" % (n, "I" if self.p == 4 else "Q")
        return struct.unpack_from(fmt, buf, off + 8 + 2 * self.p)

    def string(self, ptr: int) -> str:
        buf, off = self.locate(ptr)
        if buf[off + 7] != TAG_STRING:
            raise OleanError(f"object {ptr:#x} is not a string (tag {buf[off + 7]})", where=str(self.parts[0].path))
        size = self._word.unpack_from(buf, off + 8)[0]
        start = off + 8 + 3 * self.p
        return buf[start : start + size - 1].decode("utf-8")

    def nat(self, w: int) -> int:
        if w & 1:
            return w >> 1
        buf, off = self.locate(w)
        if buf[off + 7] != TAG_MPZ:
            raise OleanError(f"object {w:#x} is not a natural number (tag {buf[off + 7]})", where=str(self.parts[0].path))
        return self._mpz(buf, off)

    def _mpz(self, buf: bytes, off: int) -> int:
        p = self.p
        if self.parts[0].header.gmp:
            _alloc, size = struct.unpack_from("<ii", buf, off + 8)
            limb, count, negative = p, abs(size), size < 0
            data = off + 8 + 8 + p
        else:
            negative = bool(buf[off + 8])
            count = self._word.unpack_from(buf, off + 8 + p)[0]
            limb, data = 4, off + 8 + 3 * p
        value = int.from_bytes(buf[data : data + limb * count], "little")
        return -value if negative else value

    def list(self, w: int) -> Iterator[int]:
        """The elements of a ``List`` (nil is ``box(0)``, cons is tag 1 with head and tail)."""
        while not w & 1:
            buf, off = self.locate(w)
            head, w = struct.unpack_from("<II" if self.p == 4 else "<QQ", buf, off + 8)
            yield head

    # -- Lean types
    def name(self, w: int) -> str:
        """A ``Name`` in dotted form; components that need it are quoted with guillemets."""
        cached = self._names.get(w)
        if cached is not None:
            return cached
        chain = []
        cur = w
        while cur not in self._names:
            tag, _, (prefix, last) = self.fields(cur)
            if tag == 1:
                part = self.string(last)
                if not part or "." in part or part[0].isdigit() or " " in part:
                    part = f"«{part}»"
            elif tag == 2:
                part = str(self.nat(last))
            else:
                raise OleanError(f"object {cur:#x} is not a Name (tag {tag})", where=str(self.parts[0].path))
            chain.append((cur, part))
            cur = prefix
        text = self._names[cur]
        for ptr, part in reversed(chain):
            text = f"{text}.{part}" if text else part
            self._names[ptr] = text
        return text

    def level(self, w: int) -> Level:
        if w & 1:
            return Level("zero")
        tag, _, objs = self.fields(w)
        kind = LEVEL_TAGS[tag]
        if kind in ("param", "mvar"):
            return Level(kind, name=self.name(objs[0]))
        return Level(kind, tuple(self.level(o) for o in objs))

    def expr(self, w: int, _memo: dict[int, Expr] | None = None) -> Expr:
        """Decode an expression tree (shared nodes decoded once). For inspection, not for speed."""
        memo: dict[int, Expr] = {} if _memo is None else _memo
        stack = [w]
        while stack:
            cur = stack[-1]
            if cur in memo:
                stack.pop()
                continue
            tag, _, objs = self.fields(cur)
            kind = EXPR_TAGS[tag]
            subs = {"app": objs[0:2], "lam": objs[1:3], "forallE": objs[1:3], "letE": objs[1:4],
                    "mdata": objs[1:2], "proj": objs[2:3]}.get(kind, ())
            todo = [s for s in subs if s not in memo]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            args = tuple(memo[s] for s in subs)
            if kind == "bvar":
                node = Expr(kind, value=self.nat(objs[0]))
            elif kind in ("fvar", "mvar"):
                node = Expr(kind, name=self.name(objs[0]))
            elif kind == "sort":
                node = Expr(kind, levels=(self.level(objs[0]),))
            elif kind == "const":
                node = Expr(kind, name=self.name(objs[0]), levels=tuple(self.level(x) for x in self.list(objs[1])))
            elif kind in ("lam", "forallE", "letE"):  # a binder's info: the byte after the UInt64 data word
                node = Expr(kind, args, name=self.name(objs[0]), value=self.u8(cur, 8) if kind != "letE" else None)
            elif kind == "lit":
                ltag, _, (val,) = self.fields(objs[0])
                node = Expr(kind, value=self.nat(val) if ltag == 0 else self.string(val))
            elif kind == "proj":
                node = Expr(kind, args, name=self.name(objs[0]), value=self.nat(objs[1]))
            else:
                node = Expr(kind, args)
            memo[cur] = node
        return memo[w]

    def expr_constants(self, roots: list[int], out: set[str]) -> None:
        """Add to ``out`` every constant named in the expressions ``roots`` (the fast walk).

        ``proj`` nodes count their structure too: the kernel needs that inductive to type them.
        """
        seen: set[int] = set()
        stack = list(roots)
        p4 = self.p == 4
        unpack_w = self._word.unpack_from
        two = struct.Struct("<II" if p4 else "<QQ").unpack_from
        three = struct.Struct("<III" if p4 else "<QQQ").unpack_from
        p = self.p
        names = self._names
        while stack:
            w = stack.pop()
            if w in seen:
                continue
            seen.add(w)
            buf, off = self.locate(w)
            tag = buf[off + 7]
            if tag == 5:  # app
                stack.extend(two(buf, off + 8))
            elif tag in (6, 7):  # lam, forallE: name, type, body
                _, t, b = three(buf, off + 8)
                stack.append(t)
                stack.append(b)
            elif tag == 4:  # const
                n = unpack_w(buf, off + 8)[0]
                out.add(names.get(n) or self.name(n))
            elif tag == 8:  # letE: name, type, value, body
                stack.extend(struct.unpack_from("<4I" if p4 else "<4Q", buf, off + 8)[1:])
            elif tag == 10:  # mdata: KVMap, expr
                stack.append(unpack_w(buf, off + 8 + p)[0])
            elif tag == 11:  # proj: struct name, index, expr
                n = unpack_w(buf, off + 8)[0]
                out.add(names.get(n) or self.name(n))
                stack.append(unpack_w(buf, off + 8 + 2 * p)[0])
            elif tag > 11:
                raise OleanError(f"object {w:#x} (tag {tag}) is not an Expr", where=str(self.parts[0].path))

    def constant(self, ptr: int) -> ConstantInfo:
        kind_tag, _, (val,) = self.fields(ptr)
        kind = CONSTANT_KINDS[kind_tag]
        _, n, objs = self.fields(val)
        _, _, (name_w, lparams_w, type_w) = self.fields(objs[0])
        ci = ConstantInfo(kind=kind, name=self.name(name_w), level_params=[self.name(x) for x in self.list(lparams_w)],
                          type_ptr=type_w)
        names = lambda w: [self.name(x) for x in self.list(w)]  # noqa: E731
        if kind == "axiom":  # cval [isUnsafe]
            ci.is_unsafe = bool(self.u8(val, 0))
        elif kind == "defn":  # cval value hints all [safety]
            ci.value_ptr, ci.all = objs[1], names(objs[3])
            ci.safety = SAFETY[self.u8(val, 0)]
        elif kind == "thm":  # cval value all
            ci.value_ptr, ci.all = objs[1], names(objs[2])
        elif kind == "opaque":  # cval value all [isUnsafe]
            ci.value_ptr, ci.all = objs[1], names(objs[2])
            ci.is_unsafe = bool(self.u8(val, 0))
        elif kind == "induct":  # cval numParams numIndices all ctors numNested [isRec isUnsafe isReflexive]
            ci.all, ci.ctors = names(objs[3]), names(objs[4])
            ci.is_unsafe = bool(self.u8(val, 1))
        elif kind == "ctor":  # cval induct cidx numParams numFields [isUnsafe]
            ci.induct = self.name(objs[1])
            ci.is_unsafe = bool(self.u8(val, 0))
        elif kind == "rec":  # cval all numParams numIndices numMotives numMinors rules [k isUnsafe]
            ci.all = names(objs[1])
            ci.is_unsafe = bool(self.u8(val, 1))
        if n != {"axiom": 1, "defn": 4, "thm": 3, "opaque": 3, "quot": 1, "induct": 6, "ctor": 5, "rec": 7}[kind]:
            raise OleanError(f"{ci.name}: unexpected layout for a {kind} ({n} object fields)", where=str(self.parts[0].path))
        return ci

    def module_data(self, ptr: int) -> ModuleData:
        tag, n, objs = self.fields(ptr)
        if n != 5:
            raise OleanError(f"root object has {n} fields, expected ModuleData's 5", where=str(self.parts[0].path))
        imports = []
        for imp in self.array(objs[0]):
            _, _, (mod,) = self.fields(imp)
            imports.append(Import(self.name(mod), bool(self.u8(imp, 0)), bool(self.u8(imp, 1)), bool(self.u8(imp, 2))))
        entries = {}
        for pair in self.array(objs[4]):
            _, _, (ext, arr) = self.fields(pair)
            entries[self.name(ext)] = arr
        return ModuleData(
            imports=imports, const_names=[self.name(x) for x in self.array(objs[1])], constant_ptrs=list(self.array(objs[2])),
            extra_const_names=[self.name(x) for x in self.array(objs[3])], entries=entries, is_module=bool(self.u8(ptr, 0)),
        )


# ---------------------------------------------------------------------------- modules


class OleanModule:
    """A compiled module: its parts, and the most complete ``ModuleData`` among them."""

    def __init__(self, name: str, files: dict[str, Path]) -> None:
        if ".olean" not in files:
            raise OleanError(f"module {name}: no .olean file", where=str(next(iter(files.values()), name)))
        self.name = name
        self.files = files
        self.parts = {suffix: Part(path) for suffix, path in files.items()}
        self.heap = Heap(list(self.parts.values()))
        headers = [p.header for p in self.parts.values()]
        if len({(h.lean_version, h.githash) for h in headers}) != 1:
            raise OleanError(f"module {name}: parts come from different Lean builds", where=str(files[".olean"]))
        self.header = self.parts[".olean"].header
        # The private part lists every constant with its real value; the exported one only the
        # public signatures (theorems there are axiom stubs). Read the most complete one present.
        self.level = next(s for s in reversed(PART_SUFFIXES) if s in self.parts)
        self.data = self.heap.module_data(self.parts[self.level].header.root)
        self._by_name: dict[str, int] | None = None

    @property
    def has_private(self) -> bool:
        return ".olean.private" in self.parts

    @property
    def by_name(self) -> dict[str, int]:
        if self._by_name is None:
            self._by_name = dict(zip(self.data.const_names, self.data.constant_ptrs))
        return self._by_name

    def constant(self, name: str) -> ConstantInfo | None:
        ptr = self.by_name.get(name)
        return None if ptr is None else self.heap.constant(ptr)

    def constants(self) -> Iterator[ConstantInfo]:
        for ptr in self.data.constant_ptrs:
            yield self.heap.constant(ptr)

    def entries(self, extension: str) -> list[int]:
        """The entries one environment extension stored, across all parts (a name may repeat)."""
        out: list[int] = []
        seen: set[int] = set()
        for suffix in PART_SUFFIXES:
            if suffix not in self.parts:
                continue
            data = self.data if suffix == self.level else self.heap.module_data(self.parts[suffix].header.root)
            arr = data.entries.get(extension)
            if arr is not None and arr not in seen:
                seen.add(arr)
                out.extend(self.heap.array(arr))
        return out

    @cached_property
    def private_kinds(self) -> dict[str, str]:
        """Constants whose exported form hides their kind (theorems exported as axioms), by name."""
        out = {}
        for e in self.entries("_private.Lean.AddDecl.0.Lean.privateConstKindsExt"):
            _, _, (n, kind) = self.heap.fields(e)
            out[self.heap.name(n)] = PRIVATE_KIND_ORDER[kind >> 1] if kind & 1 else "?"
        return out

    def attribute_names(self, extension: str) -> set[str]:
        """Declarations a parametric attribute's extension names (entries are pairs, name first)."""
        return {self.heap.name(self.heap.fields(e)[2][0]) for e in self.entries(extension)}


def find_module(name: str, search_path: list[Path]) -> tuple[Path, dict[str, Path]] | None:
    """The first search-path directory holding ``<Module/Path>.olean``, and the parts there."""
    rel = Path(*name.split("."))
    for root in search_path:
        base = root / rel.parent / (rel.name + ".olean")
        if base.is_file():
            parts = {suffix: root / rel.parent / (rel.name + suffix) for suffix in PART_SUFFIXES}
            return root, {suffix: p for suffix, p in parts.items() if p.is_file()}
    return None


def read_module(path: Path) -> OleanModule:
    """Read one module from its ``.olean`` path (sibling ``.server``/``.private`` parts included)."""
    path = Path(path)
    if not path.name.endswith(".olean"):
        raise OleanError("expected a path ending in .olean", where=str(path))
    files = {s: path.with_name(path.name[: -len(".olean")] + s) for s in PART_SUFFIXES}
    return OleanModule(path.name[: -len(".olean")], {s: p for s, p in files.items() if p.is_file()})
