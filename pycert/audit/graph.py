"""The audit's rules and the graph it walks: every constant the audited theorems reach, across modules.

Rules (an allow-list): a theorem may reach no axiom outside :data:`ALLOWED_AXIOMS` (pinned by
sha256, :func:`check_allow_list`), nor ``sorryAx``, an axiom declared in the project, the axioms
through which compiled code decides a goal (``native_decide``), or a project constant carrying
``implemented_by`` or ``extern``, or defined ``partial`` or ``unsafe``.

Trust boundary. Modules are loaded lazily along their imports from ``search_path``. A module found
in a toolchain library (a directory holding ``Init/Prelude.olean``) is the toolchain's own: the
toolchain ships only the exported part, where theorem proofs and unexposed definition bodies are
replaced by axiom stubs, so those bodies cannot be walked and are taken on trust; every *genuine*
axiom the toolchain declares is still checked against the allow-list, and the toolchain's own
``extern``/``implemented_by`` attributes (how the compiler runs ``Nat.add``) are not offences.
Project modules must come with their ``.olean.private`` part; a project constant that is only an
exported stub is an offence (``hidden-proof``).
"""

from __future__ import annotations

import hashlib
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pycert.audit import olean
from pycert.core.errors import InputError, Rejected

ALLOWED_AXIOMS: frozenset[str] = frozenset({"propext", "Classical.choice", "Quot.sound"})
"""The only axioms a theorem may rest on. Do not widen: :func:`check_allow_list` pins it."""

ALLOWED_AXIOMS_SHA256 = "118dbe3070706ccab3cf3c2b619838c8b87613556f4cb9e0b80a8c874e29f1d8"
"""sha256 of the sorted allow-list, one name per line (see :func:`allow_list_digest`)."""

NATIVE_AXIOMS = frozenset({"Lean.ofReduceBool", "Lean.ofReduceNat", "Lean.trustCompiler"})
"""Axioms through which the kernel accepts what compiled code computed."""
SORRY_AXIOM = "sorryAx"
TOOLCHAIN_MARKER = Path("Init") / "Prelude.olean"

IMPLEMENTED_BY_EXT = "Lean.Compiler.implementedByAttr"
EXTERN_EXT = "Lean.externAttr"
DECL_RANGE_EXT = "Lean.declRangeExt"


def allow_list_digest(names: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(sorted(names)).encode()).hexdigest()


def check_allow_list(names: Iterable[str] | None = None) -> None:
    """Raise :class:`Rejected` unless the allow-list is exactly the pinned one."""
    names = ALLOWED_AXIOMS if names is None else frozenset(names)
    if allow_list_digest(names) != ALLOWED_AXIOMS_SHA256:
        raise Rejected(f"the axiom allow-list was changed (now {sorted(names)}); it is pinned by sha256")


def axiom_offense(name: str, toolchain: bool) -> str | None:
    if name == SORRY_AXIOM:
        return "sorry"
    if name in NATIVE_AXIOMS:
        return "native-code"
    if not toolchain:
        return "project-axiom"
    if name not in ALLOWED_AXIOMS:
        return "axiom"
    return None


# ---------------------------------------------------------------------------- the constant graph


@dataclass(slots=True)
class Node:
    module: str
    deps: tuple[str, ...]
    offense: str | None
    """A reason when the constant itself is the problem (an axiom outside the allow-list, ...)."""
    axiom: bool
    trusted_body: bool = False


_PRIVATE = re.compile(r"^_private\.(?:[^.]+\.)*?0\.")


def display_name(name: str) -> str:
    """The user-facing name: ``_private.Mod.Path.0.N.x`` is written ``N.x`` in the sources."""
    return _PRIVATE.sub("", name, count=1)


def is_auxiliary(name: str) -> bool:
    return any(part.startswith("_") for part in display_name(name).split("."))


class Environment:
    """Modules reachable from the audited ones, loaded on first use, and the constants they define."""

    def __init__(self, search_path: list[Path]) -> None:
        if not search_path:
            raise InputError("the audit needs a search path (the build directory, then the toolchain library)")
        self.search_path = [Path(p) for p in search_path]
        self.toolchain_dirs = {p.resolve() for p in self.search_path if (p / TOOLCHAIN_MARKER).is_file()}
        self.modules: dict[str, olean.OleanModule] = {}
        self.toolchain: dict[str, bool] = {}
        self.owner: dict[str, str] = {}
        self.nodes: dict[str, Node] = {}
        self.build: tuple[str, str, int] | None = None
        self.trusted = 0
        self._attrs: dict[tuple[str, str], set[str]] = {}

    def load_closure(self, roots: list[str]) -> None:
        todo = deque(roots)
        while todo:
            name = todo.popleft()
            if name in self.modules:
                continue
            found = olean.find_module(name, self.search_path)
            if found is None:
                raise InputError(f"no .olean for module {name} on the search path "
                                 f"({', '.join(map(str, self.search_path))})")
            root, files = found
            mod = olean.OleanModule(name, files)
            build = (mod.header.lean_version, mod.header.githash, mod.header.word_size)
            if self.build is None:
                self.build = build
            elif build != self.build:
                raise InputError(f"module {name} was built by Lean {build[0]} ({build[1][:12]}), "
                                 f"the others by {self.build[0]} ({self.build[1][:12]})", where=str(files[".olean"]))
            self.modules[name] = mod
            self.toolchain[name] = root.resolve() in self.toolchain_dirs
            for c in mod.data.const_names:
                self.owner.setdefault(c, name)
            todo.extend(i.module for i in mod.data.imports)

    def closure(self, roots: list[str]) -> set[str]:
        """The loaded modules that ``roots`` import, directly or not, and the roots."""
        seen: set[str] = set()
        todo = deque(roots)
        while todo:
            name = todo.popleft()
            if name not in seen and name in self.modules:
                seen.add(name)
                todo.extend(i.module for i in self.modules[name].data.imports)
        return seen

    def rehome(self, search_path: list[Path]) -> bool:
        """Take ``search_path`` as this environment's own when every module loaded so far is found there as the
        very same files (hard links of them: the build tree links the build cache's) with the same standing
        (toolchain or project), and relabel the modules with those paths; else change nothing and say so.
        What was decoded from the files stands: it is a function of their bytes."""
        search_path = [Path(p) for p in search_path]
        toolchain_dirs = {p.resolve() for p in search_path if (p / TOOLCHAIN_MARKER).is_file()}
        moved: dict[str, tuple[dict[str, Path], bool]] = {}
        for name, mod in self.modules.items():
            found = olean.find_module(name, search_path)
            if found is None:
                return False
            root, files = found
            if files.keys() != mod.files.keys() or any(not files[k].samefile(mod.files[k]) for k in files):
                return False
            if (root.resolve() in toolchain_dirs) != self.toolchain[name]:
                return False
            moved[name] = (files, self.toolchain[name])
        for name, (files, _) in moved.items():
            mod = self.modules[name]
            mod.files = files
            for suffix, part in mod.parts.items():
                part.path = files[suffix]
        self.search_path, self.toolchain_dirs = search_path, toolchain_dirs
        return True

    def node(self, name: str) -> Node | None:
        cached = self.nodes.get(name)
        if cached is not None:
            return cached
        mod_name = self.owner.get(name)
        if mod_name is None:
            return None
        mod = self.modules[mod_name]
        ci = mod.constant(name)
        assert ci is not None
        toolchain = self.toolchain[mod_name]
        hidden = ci.kind == "axiom" and mod.private_kinds.get(name, "axiom") != "axiom"
        deps: set[str] = set()
        offense: str | None = None
        roots = [ci.type_ptr]
        if ci.value_ptr is not None:
            roots.append(ci.value_ptr)
        mod.heap.expr_constants(roots, deps)
        if ci.kind == "induct":
            deps.update(ci.ctors)
        trusted_body = False
        if hidden:
            # An exported stub: the real declaration (a theorem or an unexposed definition) lives in a
            # private part. The toolchain does not ship it; a project build must.
            if toolchain:
                trusted_body = True
            else:
                offense = "hidden-proof"
        elif ci.kind == "axiom":
            offense = axiom_offense(name, toolchain)
        elif not toolchain:
            offense = self._attribute_offense(mod, ci)
        deps.discard(name)
        node = Node(mod_name, tuple(sorted(deps)), offense, ci.kind == "axiom" and not hidden, trusted_body)
        self.nodes[name] = node
        return node

    def _attribute_set(self, mod: olean.OleanModule, ext: str) -> set[str]:
        key = (mod.name, ext)
        if key not in self._attrs:
            self._attrs[key] = mod.attribute_names(ext)
        return self._attrs[key]

    def _attribute_offense(self, mod: olean.OleanModule, ci: olean.ConstantInfo) -> str | None:
        if ci.unsafe:
            return "unsafe"
        if ci.safety == "partial":
            return "partial"
        if ci.kind == "opaque" and f"{ci.name}._unsafe_rec" in mod.by_name:
            return "partial"  # `partial def f` compiles to an opaque `f` run as the partial `f._unsafe_rec`
        if ci.name in self._attribute_set(mod, IMPLEMENTED_BY_EXT):
            return "implemented_by"
        if ci.name in self._attribute_set(mod, EXTERN_EXT):
            return "extern"
        return None



def reachable(env: Environment, roots: list[str]) -> tuple[list[str], set[str]]:
    """Every constant reachable from ``roots`` (each decoded once), and the names no loaded module defines."""
    order: list[str] = []
    seen: set[str] = set()
    unknown: set[str] = set()
    todo = list(roots)
    while todo:
        c = todo.pop()
        if c in seen:
            continue
        seen.add(c)
        node = env.node(c)
        if node is None:
            unknown.add(c)
            continue
        order.append(c)
        todo.extend(d for d in node.deps if d not in seen)
    return order, unknown


def strongly_connected(nodes: Iterable[str], succ: dict[str, tuple[str, ...]]) -> list[list[str]]:
    """The strongly connected components of the graph ``succ`` restricted to ``nodes``, dependencies
    first (networkx's condensation, in reverse topological order)."""
    import networkx as nx  # here, not at the top: every pycert command imports this module, few audit

    graph = nx.DiGraph()
    nodes = list(nodes)
    graph.add_nodes_from(nodes)
    graph.add_edges_from((c, d) for c in nodes for d in succ.get(c, ()))
    dag = nx.condensation(graph)
    return [sorted(dag.nodes[i]["members"]) for i in reversed(list(nx.topological_sort(dag)))]


def marks(env: Environment, order: list[str], unknown: set[str]) -> dict[str, frozenset[str]]:
    """Constant -> the axioms, offending constants and unknown names it reaches, computed once per
    strongly connected component (dependencies first), equal sets shared."""
    succ = {c: env.nodes[c].deps for c in order}
    interned: dict[frozenset[str], frozenset[str]] = {}
    out: dict[str, frozenset[str]] = {}
    for comp in strongly_connected(order, succ):
        acc: set[str] = set()
        for c in comp:
            node = env.nodes[c]
            if node.axiom or node.offense:
                acc.add(c)
            for d in node.deps:
                if d in unknown:
                    acc.add(d)
                elif d in out:
                    acc |= out[d]
        frozen = frozenset(acc)
        frozen = interned.setdefault(frozen, frozen)
        for c in comp:
            out[c] = frozen
    return out


def chain(start: str, goal: str, succ: dict[str, tuple[str, ...]]) -> list[str]:
    """A shortest dependency path (breadth first); only computed for findings."""
    parent: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        c = queue.popleft()
        if c == goal:
            break
        for d in succ.get(c, ()):
            if d not in parent:
                parent[d] = c
                queue.append(d)
    if goal not in parent:
        return [start, goal]
    path = []
    cur: str | None = goal
    while cur is not None:
        path.append(cur)
        cur = parent[cur]
    return path[::-1]


def decl_ranges(mod: olean.OleanModule) -> dict[str, tuple[int, int]]:
    """Declaration -> (line, column) of its start, from ``Lean.declRangeExt``."""
    heap = mod.heap
    out = {}
    for e in mod.entries(DECL_RANGE_EXT):
        _, _, (name, ranges) = heap.fields(e)
        _, _, (rng, _sel) = heap.fields(ranges)
        _, _, robjs = heap.fields(rng)
        _, _, (line, col) = heap.fields(robjs[0])
        out.setdefault(display_name(heap.name(name)), (heap.nat(line), heap.nat(col)))
    return out
