"""What a theorem states, pinned: a sha256 of its kernel type read from the compiled ``.olean``.

The digest is a Merkle hash over the type's ``Expr`` tree: each node hashes its kind, its names,
universe levels, binder info and literals, and its children's digests, so it does not depend on
where the compactor put the objects, on sharing, or on the word size (the 32-bit wasm and the
64-bit native oleans of one source give one digest). ``mdata`` (elaborator annotations) is
transparent. Memoised by address and iterative, like the audit's walks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from pycert.audit import olean
from pycert.audit.olean_format import EXPR_TAGS
from pycert.core.errors import InputError

_CHILDREN = {"app": (0, 2), "lam": (1, 3), "forallE": (1, 3), "letE": (1, 4), "mdata": (1, 2), "proj": (2, 3)}


def _label(heap: olean.Heap, ptr: int, kind: str, objs: tuple[int, ...]) -> str:
    """Everything of one node but its children, as text."""
    if kind == "bvar":
        return f"bvar {heap.nat(objs[0])}"
    if kind in ("fvar", "mvar"):
        return f"{kind} {heap.name(objs[0])}"
    if kind == "sort":
        return f"sort {heap.level(objs[0])}"
    if kind == "const":
        return f"const {heap.name(objs[0])} {[str(heap.level(x)) for x in heap.list(objs[1])]}"
    if kind in ("lam", "forallE"):
        return f"{kind} {heap.name(objs[0])} bi={heap.u8(ptr, 8)}"  # after the UInt64 data word
    if kind == "letE":
        return f"letE {heap.name(objs[0])}"
    if kind == "lit":
        ltag, _, (val,) = heap.fields(objs[0])
        return f"lit nat {heap.nat(val)}" if ltag == 0 else f"lit str {heap.string(val)!r}"
    if kind == "proj":
        return f"proj {heap.name(objs[0])} {heap.nat(objs[1])}"
    return kind


def expr_digest(heap: olean.Heap, root: int) -> str:
    memo: dict[int, str] = {}
    stack = [root]
    while stack:
        cur = stack[-1]
        if cur in memo:
            stack.pop()
            continue
        tag, _, objs = heap.fields(cur)
        kind = EXPR_TAGS[tag]
        lo, hi = _CHILDREN.get(kind, (0, 0))
        subs = objs[lo:hi]
        todo = [s for s in subs if s not in memo]
        if todo:
            stack.extend(todo)
            continue
        stack.pop()
        if kind == "mdata":
            memo[cur] = memo[subs[0]]
            continue
        h = hashlib.sha256(_label(heap, cur, kind, objs).encode())
        for s in subs:
            h.update(bytes.fromhex(memo[s]))
        memo[cur] = h.hexdigest()
    return memo[root]


def type_digests(olean_dir: Path, modules: Sequence[str], names: Sequence[str]) -> dict[str, str]:
    """``name -> digest`` of each theorem's type, for the names found in ``modules`` under ``olean_dir``."""
    out: dict[str, str] = {}
    wanted = set(names)
    for module in modules:
        found = olean.find_module(module, [olean_dir])
        if found is None:
            raise InputError(f"no .olean for module {module} under {olean_dir}")
        mod = olean.OleanModule(module, found[1])
        for name in wanted & mod.by_name.keys():
            ci = mod.constant(name)
            if ci is not None and ci.kind == "thm":
                out[name] = expr_digest(mod.heap, ci.type_ptr)
    return out
