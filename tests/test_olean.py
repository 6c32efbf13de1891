"""The .olean reader against the toolchain's real files (and hand-built 64-bit buffers)."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from pycert.audit import olean, olean_format
from pycert.lean.wasm import WasmBackend


@pytest.fixture(scope="module")
def lib(wasm: WasmBackend) -> Path:
    return wasm.lib


@pytest.fixture(scope="module")
def prelude(lib: Path) -> olean.OleanModule:
    return olean.read_module(lib / "Init" / "Prelude.olean")


@pytest.fixture(scope="module")
def core(lib: Path) -> olean.OleanModule:
    return olean.read_module(lib / "Init" / "Core.olean")


def test_header_of_a_wasm_file(prelude: olean.OleanModule, wasm: WasmBackend) -> None:
    h = prelude.header
    assert (h.version, h.word_size) == (2, 4)
    assert h.lean_version == wasm.stamp.lean_version
    assert h.githash == wasm.stamp.lean_commit and len(h.githash) == 40
    assert h.base % 0x10000 == 0 and h.base < h.root < h.base + h.size
    assert not h.gmp  # the wasm build uses Lean's own bignums


def test_module_data(prelude: olean.OleanModule, core: olean.OleanModule) -> None:
    assert prelude.data.imports == [] and prelude.data.is_module
    assert [i.module for i in core.data.imports] == ["Init.SizeOf"]
    assert len(prelude.data.const_names) == len(prelude.data.constant_ptrs) > 1000
    assert prelude.level == ".olean"  # the toolchain ships only the exported part


def test_constant_kinds_and_fields(prelude: olean.OleanModule) -> None:
    nat = prelude.constant("Nat")
    assert nat.kind == "induct" and nat.ctors == ["Nat.zero", "Nat.succ"] and not nat.unsafe
    succ = prelude.constant("Nat.succ")
    assert succ.kind == "ctor" and succ.induct == "Nat"
    assert prelude.constant("Nat.rec").kind == "rec"
    assert prelude.constant("Quot.mk").kind == "quot"
    choice = prelude.constant("Classical.choice")
    assert choice.kind == "axiom" and choice.level_params == ["u"]
    assert prelude.constant("sorryAx").kind == "axiom"
    eq_refl = prelude.constant("Eq.refl")
    assert eq_refl.kind == "ctor" and eq_refl.induct == "Eq" and eq_refl.level_params == ["u_1"]
    assert prelude.constant("no.such.constant") is None


def test_expr_and_level_decoding(prelude: olean.OleanModule) -> None:
    ty = prelude.heap.expr(prelude.constant("Nat.succ").type_ptr)
    assert ty.kind == "forallE" and ty.name == "n"
    assert [(a.kind, a.name) for a in ty.args] == [("const", "Nat"), ("const", "Nat")]
    # Classical.choice : {α : Sort u} → Nonempty α → α
    ty = prelude.heap.expr(prelude.constant("Classical.choice").type_ptr)
    assert ty.args[0].kind == "sort" and str(ty.args[0].levels[0]) == "u"
    consts: set[str] = set()
    prelude.heap.expr_constants([prelude.constant("Classical.choice").type_ptr], consts)
    assert consts == {"Nonempty"}


def test_exported_theorems_are_stubs_with_their_kind_recorded(core: olean.OleanModule) -> None:
    # In an exported part a theorem is an axiom stub; privateConstKindsExt says what it really is.
    stub = core.constant("Nat.succ.injEq")
    assert stub.kind == "axiom" and stub.value_ptr is None
    assert core.private_kinds["Nat.succ.injEq"] == "thm"
    assert core.private_kinds.get("propext") is None  # a genuine axiom is not in that table
    assert core.constant("propext").kind == "axiom"


def test_attribute_extensions(prelude: olean.OleanModule) -> None:
    assert "Nat.add" in prelude.attribute_names("Lean.externAttr")
    assert "Nat.add" not in prelude.attribute_names("Lean.Compiler.implementedByAttr")


def test_every_toolchain_init_module_parses(lib: Path) -> None:
    paths = [p for p in (lib / "Init").rglob("*.olean") if not p.name.startswith("._")]
    assert len(paths) > 200
    kinds: set[str] = set()
    for p in paths:
        m = olean.read_module(p)
        kinds.update(c.kind for c in m.constants())
    assert kinds == set(olean.CONSTANT_KINDS)


def test_bad_files_are_input_errors(tmp_path: Path, lib: Path) -> None:
    bad = tmp_path / "X.olean"
    bad.write_bytes(b"not an olean at all" * 10)
    with pytest.raises(olean.OleanError, match="bad magic"):
        olean.read_module(bad)
    data = bytearray((lib / "Init" / "Prelude.olean").read_bytes())
    data[5] = 9
    bad.write_bytes(bytes(data))
    with pytest.raises(olean.OleanError, match="version 9"):
        olean.read_module(bad)
    with pytest.raises(olean.OleanError, match="no .olean file"):
        olean.read_module(tmp_path / "Missing.olean")


# ---------------------------------------------------------------------------- 64-bit layout


_PREFIX_OFFSET = 0x50


def _header64(base: int, root: int) -> bytes:
    head = b"olean" + bytes([2, 1]) + b"4.28.0-pre".ljust(33, b"\0") + b"0" * 40
    return head + struct.pack("<QQ", base, root)


def _obj(tag: int, other: int, body: bytes) -> bytes:
    return struct.pack("<iHBB", 0, 8 + len(body), other, tag) + body


def test_word_size_inference_and_a_64_bit_heap(tmp_path: Path) -> None:
    """A hand-laid 64-bit region: String, Name.str, Name.num, Array; pointers absolute from the base."""
    base = 0x7F0000000000
    region = bytearray(_header64(base, 0))  # root patched below
    def put(obj: bytes) -> int:
        while len(region) % 8:
            region.append(0)
        at = base + len(region)
        region.extend(obj)
        return at
    text = "Pycert".encode() + b"\0"
    s = put(_obj(249, 1, struct.pack("<QQQ", len(text), len(text), 6) + text))
    n1 = put(_obj(1, 2, struct.pack("<QQ", 1, s) + b"\0" * 8))  # Name.str anonymous "Pycert" [hash]
    n2 = put(_obj(2, 2, struct.pack("<QQ", n1, (7 << 1) | 1) + b"\0" * 8))  # Name.num _ 7
    arr = put(_obj(246, 0, struct.pack("<QQQQ", 2, 2, n1, n2)))
    struct.pack_into("<Q", region, 0x58, arr)
    path = tmp_path / "W.olean"
    path.write_bytes(bytes(region))
    h = olean_format.parse_header(path.read_bytes(), str(path))
    assert (h.word_size, h.base, h.root, h.gmp) == (8, base, arr, True)
    heap = olean.Heap([olean.Part(path)])
    assert [heap.name(x) for x in heap.array(h.root)] == ["Pycert", "Pycert.7"]
    with pytest.raises(olean.OleanError, match="dangling"):
        heap.tag(base - 8)


def test_gmp_bignum_64_bit(tmp_path: Path) -> None:
    base = 0x10000
    big = 2**100 + 12345
    limbs = big.to_bytes(16, "little")
    region = bytearray(_header64(base, 0))
    while len(region) % 8:
        region.append(0)
    at = base + len(region)
    region.extend(_obj(250, 0, struct.pack("<iiQ", 2, 2, 0) + limbs))
    struct.pack_into("<Q", region, 0x58, at)
    path = tmp_path / "B.olean"
    path.write_bytes(bytes(region))
    heap = olean.Heap([olean.Part(path)])
    assert heap.nat(at) == big
    assert heap.nat((41 << 1) | 1) == 41


@pytest.mark.parametrize("word", [4, 8])
def test_an_empty_part_shares_the_module_data_of_an_earlier_part(tmp_path: Path, word: int) -> None:
    """Native builds write 96-byte .olean.server/.olean.private parts (header, base, root) for modules
    whose level adds nothing, e.g. a module of imports only: the root points into the .olean."""
    base = 0x40E2C0880000 if word == 8 else 0x20000
    fmt = "<QQ" if word == 8 else "<II"
    head = b"olean" + bytes([2, 1]) + b"4.28.0".ljust(33, b"\0") + b"0" * 40
    region = bytearray(head + struct.pack(fmt, base, 0))
    text = b"Pycert\0"
    obj = _obj(249, 1, struct.pack("<QQQ" if word == 8 else "<III", len(text), len(text), 6) + text)
    at = base + len(region)
    region.extend(obj)
    struct.pack_into(fmt[0] + fmt[2], region, _PREFIX_OFFSET + word, at)
    main = tmp_path / "M.olean"
    main.write_bytes(bytes(region))
    empty_base = base + 0x10000
    empty = tmp_path / "M.olean.server"
    empty.write_bytes(head + struct.pack(fmt, empty_base, at))
    h = olean_format.parse_header(empty.read_bytes(), str(empty))
    assert (h.word_size, h.base, h.root, h.size) == (word, empty_base, at, 0x50 + 2 * word)
    heap = olean.Heap([olean.Part(main), olean.Part(empty)])
    assert heap.string(h.root) == "Pycert"
    dangling = tmp_path / "D.olean.server"
    dangling.write_bytes(head + struct.pack(fmt, empty_base, base - 0x10000))
    with pytest.raises(olean.OleanError, match="dangling"):
        olean.Heap([olean.Part(main), olean.Part(dangling)]).tag(olean_format.parse_header(dangling.read_bytes()).root)


NATIVE = os.environ.get("PYCERT_NATIVE_OLEANS")


@pytest.mark.skipif(not NATIVE, reason="set PYCERT_NATIVE_OLEANS to a tree of .olean files from a native build")
def test_real_native_files_decode_completely() -> None:
    """Every module of a native (64-bit) build: header, module data, every constant's type and value.

    No native Lean runs here, and public build outputs may not be committed, so this reads a tree
    named by the environment (BENCHMARKS.md and the closing note say which trees were read)."""
    files = sorted(Path(NATIVE).rglob("*.olean"))
    assert files
    for f in files:
        mod = olean.read_module(f)
        assert mod.header.word_size == 8, f
        for name, ptr in zip(mod.data.const_names, mod.data.constant_ptrs):
            ci = mod.heap.constant(ptr)
            assert ci.name == name
            mod.heap.expr_constants([ci.type_ptr] + ([ci.value_ptr] if ci.value_ptr is not None else []), set())
