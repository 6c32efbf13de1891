"""The axiom-free audit, read from what the kernel accepted: the compiled .olean files.

Rule (an allow-list): for every theorem of the audited modules, the transitive closure of the
constants its type and proof use may reach no axiom outside :data:`ALLOWED_AXIOMS`. Also rejected,
each naming the theorem and the offending constant: ``sorryAx``; an axiom declared in the project;
the axioms through which compiled code decides a goal (``Lean.ofReduceBool``, ``Lean.ofReduceNat``,
``Lean.trustCompiler``: ``native_decide``); a project constant carrying ``implemented_by`` or
``extern``, or defined ``partial`` or ``unsafe``, that a theorem reaches; a theorem the sources
declare that the compiled files do not contain; a constant the closure names that no loaded
module defines (fail closed).

Trust boundary. Modules are loaded lazily along their imports from ``search_path``. A module found
in a toolchain library (a directory holding ``Init/Prelude.olean``) is the toolchain's own: the
toolchain ships only the exported part, where theorem proofs and unexposed definition bodies are
replaced by axiom stubs, so those bodies cannot be walked and are taken on trust (counted in
:attr:`AuditReport.trusted_toolchain_bodies`); every *genuine* axiom the toolchain declares is still
checked against the allow-list, and the toolchain's own ``extern``/``implemented_by`` attributes
(how the compiler runs ``Nat.add``) are not findings. Project modules must come with their
``.olean.private`` part; a project constant that is only an exported stub is a finding.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from pycert.audit import olean
from pycert.core.errors import InputError, Rejected

if TYPE_CHECKING:
    from pycert.lean.build import BuildResult

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

Reason = Literal[
    "sorry", "native-code", "project-axiom", "axiom", "implemented_by", "extern", "partial", "unsafe",
    "missing", "not-a-theorem", "hidden-proof", "unknown-constant", "cross-check",
]

WHY: dict[str, str] = {
    "sorry": "rests on `sorry` (sorryAx)",
    "native-code": "is decided by running compiled code (native_decide / the compiler is trusted)",
    "project-axiom": "rests on an axiom declared in the project",
    "axiom": "rests on an axiom outside the allow-list {propext, Classical.choice, Quot.sound}",
    "implemented_by": "reaches a definition whose compiled code is replaced (@[implemented_by])",
    "extern": "reaches a definition implemented by foreign code (@[extern])",
    "partial": "reaches a `partial` definition",
    "unsafe": "reaches an `unsafe` declaration",
    "missing": "is declared in the sources but absent from the compiled files",
    "not-a-theorem": "is declared as a theorem in the sources but compiled as something else",
    "hidden-proof": "reaches a project constant whose body the compiled files do not contain (no .olean.private)",
    "unknown-constant": "reaches a constant that no loaded module defines",
    "cross-check": "is reported by Lean's own #print axioms with other axioms than the .olean audit found",
}


def allow_list_digest(names: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(sorted(names)).encode()).hexdigest()


def check_allow_list(names: Iterable[str] | None = None) -> None:
    """Raise :class:`Rejected` unless the allow-list is exactly the pinned one."""
    names = ALLOWED_AXIOMS if names is None else frozenset(names)
    if allow_list_digest(names) != ALLOWED_AXIOMS_SHA256:
        raise Rejected(f"the axiom allow-list was changed (now {sorted(names)}); it is pinned by sha256")


# ---------------------------------------------------------------------------- report


class Finding(BaseModel):
    declaration: str
    """The theorem (or declared name, or project axiom) the finding is about, private prefix removed."""
    module: str
    constant: str
    """The offending constant it reaches."""
    reason: Reason
    why: str
    chain: list[str]
    """A dependency path from ``declaration`` to ``constant``."""
    auxiliary: bool = False
    """The declaration is compiler-generated (a ``_proof_``/``_nativeDecide`` helper, ...)."""
    line: int | None = None
    column: int | None = None


class ModuleSummary(BaseModel):
    module: str
    file: str
    toolchain: bool
    level: str
    theorems: int


class AuditReport(BaseModel):
    verdict: Literal["pass", "fail"]
    findings: list[Finding]
    declarations_audited: int
    axioms_seen: list[str]
    """Every axiom any audited theorem reaches, allowed or not."""
    seconds: float
    allowed_axioms: list[str]
    modules: list[ModuleSummary]
    """The audited modules."""
    modules_loaded: int
    constants_walked: int
    trusted_toolchain_bodies: int
    """Toolchain theorems/definitions reached whose bodies the shipped (exported) files omit."""
    lean_version: str
    githash: str
    word_size: int
    axioms_by_theorem: dict[str, list[str]] = {}
    """Each public theorem of the audited modules and the axioms it reaches: what ``#print axioms``
    answers natively (on wasm, toolchain proofs the shipped files omit are not looked into)."""
    cross_check: str = "not run"
    """The native ``#print axioms`` comparison (:mod:`pycert.audit.print_axioms`): agreed, or why not run."""

    @property
    def ok(self) -> bool:
        return self.verdict == "pass"

    @property
    def primary_findings(self) -> list[Finding]:
        """Findings about user-written declarations (a compiler helper's twin finding left out)."""
        return [f for f in self.findings if not f.auxiliary] or self.findings

    def summary(self) -> str:
        """One line: the verdict, the figures, and the first offences."""
        figures = (f"{self.declarations_audited} theorems in {len(self.modules)} modules, "
                   f"axioms seen: {', '.join(self.axioms_seen) or 'none'}; {self.seconds:.2f} s")
        if self.ok:
            return f"pass: {figures}"
        shown = self.primary_findings
        head = "; ".join(f"{f.declaration} -> {f.constant} ({f.reason})" for f in shown[:3])
        more = f" and {len(shown) - 3} more" if len(shown) > 3 else ""
        return f"fail: {len(self.findings)} findings: {head}{more}; {figures}"


# ---------------------------------------------------------------------------- the constant graph


@dataclass(slots=True)
class _Node:
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


class _Environment:
    """Modules reachable from the audited ones, loaded on first use, and the constants they define."""

    def __init__(self, search_path: list[Path]) -> None:
        if not search_path:
            raise InputError("the audit needs a search path (the build directory, then the toolchain library)")
        self.search_path = [Path(p) for p in search_path]
        self.toolchain_dirs = {p.resolve() for p in self.search_path if (p / TOOLCHAIN_MARKER).is_file()}
        self.modules: dict[str, olean.OleanModule] = {}
        self.toolchain: dict[str, bool] = {}
        self.owner: dict[str, str] = {}
        self.nodes: dict[str, _Node] = {}
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

    def node(self, name: str) -> _Node | None:
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
            offense = _axiom_offense(name, toolchain)
        elif not toolchain:
            offense = self._attribute_offense(mod, ci)
        deps.discard(name)
        node = _Node(mod_name, tuple(sorted(deps)), offense, ci.kind == "axiom" and not hidden, trusted_body)
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


def _axiom_offense(name: str, toolchain: bool) -> str | None:
    if name == SORRY_AXIOM:
        return "sorry"
    if name in NATIVE_AXIOMS:
        return "native-code"
    if not toolchain:
        return "project-axiom"
    if name not in ALLOWED_AXIOMS:
        return "axiom"
    return None


def strongly_connected(nodes: Iterable[str], succ: dict[str, tuple[str, ...]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; components come out dependencies first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for start in nodes:
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            v, i = work[-1]
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack.add(v)
            children = succ.get(v, ())
            if i < len(children):
                work[-1] = (v, i + 1)
                w = children[i]
                if w not in index:
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
    return out


# ---------------------------------------------------------------------------- the audit


def audit_modules(
    modules: list[str],
    search_path: list[Path],
    *,
    declared_theorems: list[str] | dict[str, list[str]] | None = None,
    allowed_axioms: Iterable[str] | None = None,
) -> AuditReport:
    """Audit every theorem of ``modules`` (found on ``search_path``: the build dir, then the toolchain).

    ``declared_theorems``: the names the sources declare (see :func:`scan_declared_theorems`); each
    must be a theorem of the audited modules. A dict maps a module to the names its own source
    declares (instance files may reuse a name); a list is checked against all audited modules.
    ``allowed_axioms`` exists for the pin's own test: any value but the pinned list is rejected
    before anything is read.
    """
    t0 = time.monotonic()
    check_allow_list(allowed_axioms)
    if not modules:
        raise InputError("no modules to audit")
    env = _Environment(search_path)
    env.load_closure(list(modules))
    audited = [m for m in dict.fromkeys(modules)]

    theorems: list[tuple[str, str]] = []
    findings: list[Finding] = []
    summaries = []
    for m in audited:
        mod = env.modules[m]
        names = [n for n, p in mod.by_name.items() if mod.heap.tag(p) == 2]  # ConstantInfo.thmInfo
        theorems += [(m, n) for n in names]
        summaries.append(ModuleSummary(module=m, file=str(mod.files[".olean"]), toolchain=env.toolchain[m],
                                       level=mod.level, theorems=len(names)))
        for ci in mod.constants():  # project axioms count even when no theorem uses them
            if ci.kind == "axiom" and mod.private_kinds.get(ci.name, "axiom") == "axiom" and not env.toolchain[m]:
                reason = _axiom_offense(ci.name, toolchain=False) or "project-axiom"
                findings.append(_finding(ci.name, m, ci.name, reason, [ci.name]))

    # Walk: every constant reachable from the theorems, each decoded once.
    reach_order: list[str] = []
    seen: set[str] = set()
    todo = [n for _, n in theorems]
    unknown: set[str] = set()
    while todo:
        c = todo.pop()
        if c in seen:
            continue
        seen.add(c)
        node = env.node(c)
        if node is None:
            unknown.add(c)
            continue
        reach_order.append(c)
        todo.extend(d for d in node.deps if d not in seen)
    succ = {c: env.nodes[c].deps for c in reach_order}

    # What each constant reaches that matters (axioms and offences), per strongly connected component.
    interned: dict[frozenset[str], frozenset[str]] = {}
    marks: dict[str, frozenset[str]] = {}
    for comp in strongly_connected(reach_order, succ):
        acc: set[str] = set()
        for c in comp:
            node = env.nodes[c]
            if node.axiom or node.offense:
                acc.add(c)
            for d in node.deps:
                if d in unknown:
                    acc.add(d)
                elif d in marks:
                    acc |= marks[d]
        frozen = frozenset(acc)
        frozen = interned.setdefault(frozen, frozen)
        for c in comp:
            marks[c] = frozen

    axioms_seen: set[str] = set()
    for m, thm in theorems:
        for c in sorted(marks.get(thm, ())):
            if c in unknown:
                findings.append(_finding(thm, m, c, "unknown-constant", _chain(thm, c, succ)))
                continue
            node = env.nodes[c]
            if node.axiom:
                axioms_seen.add(c)
            if node.offense:
                findings.append(_finding(thm, m, c, node.offense, _chain(thm, c, succ)))

    axioms_by_theorem = {
        thm: sorted(display_name(c) for c in marks.get(thm, ()) if c not in unknown and env.nodes[c].axiom)
        for _, thm in theorems if not thm.startswith("_private.") and not is_auxiliary(thm)
    }
    findings += _declared_check(declared_theorems, audited, env)
    _locate(findings, env)
    env.trusted = sum(1 for c in reach_order if env.nodes[c].trusted_body)
    lean_version, githash, word = env.build or ("", "", 0)
    findings.sort(key=lambda f: (f.module, f.auxiliary, f.declaration, f.constant))
    return AuditReport(
        verdict="fail" if findings else "pass", findings=findings, declarations_audited=len(theorems),
        axioms_seen=sorted({display_name(a) for a in axioms_seen}), seconds=time.monotonic() - t0, allowed_axioms=sorted(ALLOWED_AXIOMS),
        modules=summaries, modules_loaded=len(env.modules), constants_walked=len(reach_order),
        trusted_toolchain_bodies=env.trusted, lean_version=lean_version, githash=githash, word_size=word,
        axioms_by_theorem=axioms_by_theorem,
    )


def _finding(decl: str, module: str, constant: str, reason: str, chain: list[str]) -> Finding:
    return Finding(declaration=display_name(decl), module=module, constant=display_name(constant), reason=reason,
                   why=WHY[reason], chain=[display_name(c) for c in chain], auxiliary=is_auxiliary(decl))


def _chain(start: str, goal: str, succ: dict[str, tuple[str, ...]]) -> list[str]:
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


def _declared_check(
    declared: list[str] | dict[str, list[str]] | None, audited: list[str], env: _Environment
) -> list[Finding]:
    if not declared:
        return []
    if isinstance(declared, dict):
        unknown = sorted(set(declared) - set(audited))
        if unknown:
            raise InputError(f"declared theorems given for modules not audited: {', '.join(unknown)}")
        groups = [([m], names) for m, names in declared.items()]
    else:
        groups = [(audited, declared)]
    out = []
    for mods, names in groups:
        compiled: dict[str, tuple[str, str]] = {}
        for m in mods:
            mod = env.modules[m]
            for n, p in mod.by_name.items():
                compiled.setdefault(display_name(n), (m, olean.CONSTANT_KINDS[mod.heap.tag(p)]))
        for name in dict.fromkeys(names):
            hit = compiled.get(name)
            if hit is None:
                out.append(_finding(name, mods[0] if len(mods) == 1 else "", name, "missing", [name]))
            elif hit[1] != "thm":
                out.append(_finding(name, hit[0], name, "not-a-theorem", [name]))
    return out


def _locate(findings: list[Finding], env: _Environment) -> None:
    """Source positions from the modules' declaration-range entries, where they have one."""
    ranges: dict[str, dict[str, tuple[int, int]]] = {}
    for f in findings:
        mod = env.modules.get(f.module)
        if mod is None:
            continue
        if f.module not in ranges:
            ranges[f.module] = decl_ranges(mod)
        pos = ranges[f.module].get(f.declaration)
        if pos:
            f.line, f.column = pos


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


# ---------------------------------------------------------------------------- sources


def scan_declared_theorems(source: str) -> list[str]:
    """Full names of the theorems a Lean source declares (``pycert.certify.verify``'s comment-aware scanner).

    Not the audit: it only lets the audit notice a declared theorem missing from the compiled files.
    """
    from pycert.certify.verify import scan_declarations

    return [d.name for d in scan_declarations(source) if d.kind in ("theorem", "lemma")]


def module_sources(library: Path) -> dict[str, Path]:
    """Module name -> source file, for every ``.lean`` file under ``library`` (``lean/``)."""
    if not library.is_dir():
        raise InputError("no Lean library directory", where=str(library))
    return {".".join(p.relative_to(library).with_suffix("").parts): p for p in sorted(library.rglob("*.lean"))}


# ---------------------------------------------------------------------------- the pipeline's entry


def toolchain_lib(toolchain: object) -> Path:
    """Where a toolchain keeps Init/Std/Lean's .olean files (wasm: its unpacked lib; native: the libdir)."""
    lib = getattr(toolchain, "lib", None)
    if lib is not None:
        return Path(lib)
    lean = getattr(toolchain, "lean", None)
    if lean is None:
        raise InputError(f"cannot tell where {type(toolchain).__name__} keeps its .olean library")
    try:
        out = subprocess.run([str(lean), "--print-libdir"], capture_output=True, text=True, timeout=120, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        raise InputError(f"`lean --print-libdir` failed: {exc}") from None
    return Path(out.stdout.strip())


def audit_build(build: BuildResult, toolchain: object, library_dir: Path | None = None) -> AuditReport:
    """Audit every module a :class:`pycert.lean.build.BuildResult` compiled (library and instance files).

    The olean tree of the build comes first on the search path, then the toolchain's library. Each
    module's source (the result's ``file``) is scanned for the theorems it declares, so one the
    compiled files lack is a finding. ``library_dir`` only resolves relative source paths.
    """
    from pycert.lean.build import LAKE_BUILD

    failed = [r.module for r in build.results if not r.ok]
    if failed:
        raise InputError(f"the kernel did not accept {', '.join(failed)}: nothing trustworthy to audit")
    if not build.results:
        raise InputError("the build compiled no modules")
    sources: dict[str, Path] = {}
    for r in build.results:
        src = Path(r.file)
        if not src.is_absolute() and library_dir is not None and (Path(library_dir) / src).exists():
            src = Path(library_dir) / src
        if r.module == LAKE_BUILD:  # natively one `lake build` stands for every library module
            sources |= module_sources(src)
        else:
            sources[r.module] = src
    declared: dict[str, list[str]] = {}
    for module, src in sources.items():
        try:
            declared[module] = scan_declared_theorems(src.read_text(encoding="utf-8"))
        except OSError as exc:
            raise InputError(f"cannot read the source of {module}: {exc.strerror}", where=str(src)) from None
    modules = list(sources)
    report = audit_modules(modules, [Path(build.olean_dir), toolchain_lib(toolchain)], declared_theorems=declared)
    lake = getattr(toolchain, "lake", None)
    if lake is None:
        report.cross_check = ("not run: on wasm every file is a module and Lean refuses #print axioms; "
                              "the .olean audit stands alone")
    elif library_dir is not None:
        cross_check(report, Path(lake), Path(library_dir).parent, modules)
    else:
        report.cross_check = "not run: no Lake project to run #print axioms in (pass the library directory)"
    return report


def cross_check(report: AuditReport, lake: Path, project: Path, modules: list[str],
                timeout: float = 1800.0) -> None:
    """Natively: Lean's ``#print axioms`` for every public theorem must name the same axioms as the
    .olean audit. Each disagreement is a finding, so the audit fails."""
    from pycert.audit import print_axioms

    theorems = sorted(report.axioms_by_theorem)
    lean = print_axioms.run_native(lake, project, modules, theorems, timeout)
    diffs = print_axioms.compare(report.axioms_by_theorem, lean)
    for d in diffs:
        report.findings.append(Finding(declaration=d.theorem, module="", constant=", ".join(d.lean or []) or "-",
                                       reason="cross-check", why=f"{WHY['cross-check']}: {d.render()}",
                                       chain=[d.theorem]))
    if diffs:
        report.verdict = "fail"
    report.cross_check = (f"disagree on {len(diffs)} of {len(theorems)} theorems" if diffs
                          else f"agree: #print axioms gives the same axioms for all {len(theorems)} public theorems")
