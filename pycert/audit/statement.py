"""What a theorem states, pinned: a sha256 of its kernel type read from the compiled ``.olean``.

The digest is a Merkle hash over the type's ``Expr`` tree as :meth:`pycert.audit.olean.Heap.expr`
decodes it: each node hashes its kind, its name, universe levels, binder info or literal, and its
children's digests, so it does not depend on where the compactor put the objects, on sharing, or on
the word size (the 32-bit wasm and the 64-bit native oleans of one source give one digest). ``mdata``
(elaborator annotations) is transparent. Iterative, each shared node hashed once.

An instance's headline theorem states a library predicate applied to literals; :func:`headline_of`
reads the predicate and the literals off the kernel type, which is where ``pycert prove`` and
``verify --kernel`` take a certificate's kernel-checked figures from.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from pycert.audit import olean
from pycert.audit.olean_format import Expr
from pycert.core.errors import InputError


def _label(e: Expr) -> str:
    """Everything of one node but its children, as text."""
    levels = [str(level) for level in e.levels]
    return f"{e.kind}|{e.name}|{levels}|{type(e.value).__name__}:{e.value!r}"


def _post_order(root: Expr) -> list[Expr]:
    """Every distinct node below ``root``, children before parents."""
    out: list[Expr] = []
    seen: set[int] = set()
    todo: list[tuple[Expr, bool]] = [(root, False)]
    while todo:
        node, expanded = todo.pop()
        if expanded:
            out.append(node)
        elif id(node) not in seen:
            seen.add(id(node))
            todo.append((node, True))
            todo.extend((a, False) for a in node.args)
    return out


def expr_digest(heap: olean.Heap, root: int) -> str:
    memo: dict[int, str] = {}
    order = _post_order(heap.expr(root))
    for node in order:
        if node.kind == "mdata":
            memo[id(node)] = memo[id(node.args[0])]
            continue
        h = hashlib.sha256(_label(node).encode())
        for a in node.args:
            h.update(bytes.fromhex(memo[id(a)]))
        memo[id(node)] = h.hexdigest()
    return memo[id(order[-1])]


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


class Headline(BaseModel):
    """What an instance's headline theorem states, read off its kernel type: the predicate it applies
    (the head constant) and the natural-number literals of the statement, in order."""

    head: str
    literals: list[int]


def _spine(e: Expr) -> tuple[Expr, list[Expr]]:
    args: list[Expr] = []
    while e.kind in ("app", "mdata"):
        if e.kind == "mdata":
            e = e.args[0]
            continue
        args.append(e.args[1])
        e = e.args[0]
    return e, args[::-1]


def headline_of(root: Expr) -> Headline:
    """The head constant and the literals of a statement, pre-order: ``OfNat.ofNat _ n _`` and a raw
    literal each give ``n`` once (what the source and Lean's printed form show, in the same order)."""
    head, _ = _spine(root)
    literals: list[int] = []
    todo = [root]
    while todo:
        node = todo.pop()
        fn, args = _spine(node)
        if fn.kind == "const" and fn.name == "OfNat.ofNat" and len(args) == 3 and args[1].kind == "lit":
            literals.append(int(args[1].value))  # type: ignore[arg-type]
            continue
        if fn.kind == "lit" and isinstance(fn.value, int) and not args:
            literals.append(fn.value)
            continue
        children = [fn, *args] if args else list(fn.args)
        todo.extend(reversed(children))
    return Headline(head=head.name or head.kind, literals=literals)
