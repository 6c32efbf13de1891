"""The axiom-free audit, read from what the kernel accepted: the compiled .olean files.

For every theorem of the audited modules, the transitive closure of the constants its type and proof
use may reach nothing the rules of :mod:`pycert.audit.graph` forbid (an axiom outside the pinned
allow-list, ``sorry``, ``native_decide``, a project axiom, an ``implemented_by``/``extern``/
``partial``/``unsafe`` project constant, a bodiless project stub). Also rejected: a theorem the
sources declare that the compiled files do not contain, and a constant the closure names that no
loaded module defines (fail closed). Each :class:`Finding` names the theorem, the offending constant
and a dependency path between them. :func:`audit_build` audits what a build compiled, and has the
backend cross-check the result with Lean's own ``#print axioms`` where it can.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from pycert.audit import olean
from pycert.audit.graph import (
    ALLOWED_AXIOMS,
    Environment,
    axiom_offense,
    chain,
    check_allow_list,
    decl_ranges,
    display_name,
    is_auxiliary,
    marks,
    reachable,
)
from pycert.audit.statement import Headline, expr_digest, headline_of
from pycert.core.console import plural
from pycert.core.errors import InputError, Rejection
from pycert.core.resources import scratch_root
from pycert.lean.backend import Backend, PrintedAxioms
from pycert.lean.build import DEFAULT_TIMEOUT, BuildResult
from pycert.lean.scheduler import BuildCache
from pycert.lean.sources import declared_theorems, library_units

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


# ---------------------------------------------------------------------------- report


class Finding(Rejection):
    """A rejected theorem: ``subject`` is the theorem (or declared name, or project axiom), private
    prefix removed; ``reason`` one of :data:`Reason`; ``detail`` why, in words."""

    reason: Reason
    module: str
    constant: str
    """The offending constant it reaches."""
    chain: list[str]
    """A dependency path from ``subject`` to ``constant``."""
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
    """The comparison with Lean's own ``#print axioms`` (:func:`cross_check`): agreed, or why not run."""
    type_sha256: dict[str, str] = {}
    """The digest of each requested theorem's kernel type (:func:`pycert.audit.statement.expr_digest`),
    read in the same pass as the axioms."""
    headlines: dict[str, Headline] = {}
    """What each requested headline theorem states (:func:`pycert.audit.statement.headline_of`)."""

    @property
    def ok(self) -> bool:
        return self.verdict == "pass"

    @property
    def primary_findings(self) -> list[Finding]:
        """Findings about user-written declarations (a compiler helper's twin finding left out)."""
        return [f for f in self.findings if not f.auxiliary] or self.findings

    def summary(self) -> str:
        """One line: the verdict, the figures, and the first offences."""
        figures = (f"{plural(self.declarations_audited, 'theorem')} in {plural(len(self.modules), 'module')}, "
                   f"axioms seen: {', '.join(self.axioms_seen) or 'none'}; {self.seconds:.2f} s")
        if self.ok:
            return f"pass: {figures}"
        shown = self.primary_findings
        head = "; ".join(f"{f.subject} -> {f.constant} ({f.reason})" for f in shown[:3])
        more = f" and {len(shown) - 3} more" if len(shown) > 3 else ""
        return f"fail: {plural(len(self.findings), 'finding')}: {head}{more}; {figures}"


def finding(decl: str, module: str, constant: str, reason: str, path: list[str]) -> Finding:
    return Finding(subject=display_name(decl), reason=reason, detail=WHY[reason], module=module,
                   constant=display_name(constant), chain=[display_name(c) for c in path],
                   auxiliary=is_auxiliary(decl))


# ---------------------------------------------------------------------------- the audit


def _theorems(env: Environment, audited: list[str]) -> tuple[list[tuple[str, str]], list[ModuleSummary], list[Finding]]:
    """(module, theorem) for every theorem of the audited modules, their summaries, and a finding for
    every project axiom (which counts even when no theorem uses it)."""
    theorems: list[tuple[str, str]] = []
    summaries, findings = [], []
    for m in audited:
        mod = env.modules[m]
        names = [n for n, p in mod.by_name.items() if mod.heap.tag(p) == 2]  # ConstantInfo.thmInfo
        theorems += [(m, n) for n in names]
        summaries.append(ModuleSummary(module=m, file=str(mod.files[".olean"]), toolchain=env.toolchain[m],
                                       level=mod.level, theorems=len(names)))
        for ci in mod.constants():
            if ci.kind == "axiom" and mod.private_kinds.get(ci.name, "axiom") == "axiom" and not env.toolchain[m]:
                reason = axiom_offense(ci.name, toolchain=False) or "project-axiom"
                findings.append(finding(ci.name, m, ci.name, reason, [ci.name]))
    return theorems, summaries, findings


def _offences(env: Environment, theorems: list[tuple[str, str]], reached: dict[str, frozenset[str]],
              unknown: set[str], succ: dict[str, tuple[str, ...]]) -> tuple[list[Finding], set[str]]:
    """A finding for every offending constant each theorem reaches, and every axiom seen."""
    findings: list[Finding] = []
    axioms_seen: set[str] = set()
    for m, thm in theorems:
        for c in sorted(reached.get(thm, ())):
            if c in unknown:
                findings.append(finding(thm, m, c, "unknown-constant", chain(thm, c, succ)))
                continue
            node = env.nodes[c]
            if node.axiom:
                axioms_seen.add(c)
            if node.offense:
                findings.append(finding(thm, m, c, node.offense, chain(thm, c, succ)))
    return findings, axioms_seen


def preload(modules: list[str], search_path: list[Path]) -> Environment:
    """``modules`` and what they import, loaded, and every constant their theorems reach, decoded: most of the
    work of an audit of a build that holds them, done ahead (while Lean checks the build's other files) and
    handed to :func:`audit_modules` as ``env``."""
    env = Environment(search_path)
    env.load_closure(list(modules))
    theorems, _, _ = _theorems(env, list(dict.fromkeys(modules)))
    reachable(env, [n for _, n in theorems])
    return env


def library_preload(backend: Backend, library: Path) -> Environment | None:
    """:func:`preload` of the library as the build cache holds it (its files linked into a tree of their own,
    removed at exit); None when the cache lacks a module of it (a build of the library is to come) or the
    backend keeps its own build tree."""
    identity = backend.cache_identity()
    if identity is None:
        return None
    units = library_units(library)
    cache = BuildCache(identity, units)
    tree = Path(tempfile.mkdtemp(prefix="oleans-audit-", dir=scratch_root()))
    atexit.register(shutil.rmtree, tree, ignore_errors=True)
    if any(cache.lookup(u, tree) is None for u in units):
        return None
    # Init too: an instance file, as every file that is not a `prelude`, imports all of it (the library does not)
    return preload([u.module for u in units] + ["Init"], [tree, backend.toolchain_library()])


def audit_modules(
    modules: list[str],
    search_path: list[Path],
    *,
    declared_theorems: list[str] | dict[str, list[str]] | None = None,
    allowed_axioms: Iterable[str] | None = None,
    digests: Sequence[str] = (),
    headlines: Sequence[str] = (),
    env: Environment | None = None,
) -> AuditReport:
    """Audit every theorem of ``modules`` (found on ``search_path``: the build dir, then the toolchain).

    ``declared_theorems``: the names the sources declare (:func:`pycert.lean.sources.declared_theorems`);
    each must be a theorem of the audited modules. A dict maps a module to the names its own source
    declares (instance files may reuse a name); a list is checked against all audited modules.
    ``allowed_axioms`` exists for the pin's own test: any value but the pinned list is rejected
    before anything is read. ``digests``: theorems whose type digest to compute in the same pass (those
    the audited modules hold). ``env``: a :func:`preload` whose modules ``search_path`` finds as the same
    files (else it is set aside): the report is the one a fresh environment gives.
    """
    t0 = time.monotonic()
    check_allow_list(allowed_axioms)
    if not modules:
        raise InputError("no modules to audit")
    if env is not None and env.rehome(search_path):
        env.load_closure(list(modules))
        if env.modules.keys() != env.closure(list(modules)):  # it read modules this audit would not: start afresh
            env = None
    else:
        env = None
    if env is None:
        env = Environment(search_path)
        env.load_closure(list(modules))
    audited = list(dict.fromkeys(modules))
    theorems, summaries, findings = _theorems(env, audited)
    order, unknown = reachable(env, [n for _, n in theorems])
    succ = {c: env.nodes[c].deps for c in order}
    reached = marks(env, order, unknown)
    offences, axioms_seen = _offences(env, theorems, reached, unknown, succ)
    findings += offences + _declared_check(declared_theorems, audited, env)
    _locate(findings, env)
    findings.sort(key=lambda f: (f.module, f.auxiliary, f.subject, f.constant))
    lean_version, githash, word = env.build or ("", "", 0)
    return AuditReport(
        verdict="fail" if findings else "pass", findings=findings, declarations_audited=len(theorems),
        axioms_seen=sorted({display_name(a) for a in axioms_seen}), seconds=time.monotonic() - t0,
        allowed_axioms=sorted(ALLOWED_AXIOMS), modules=summaries, modules_loaded=len(env.modules),
        constants_walked=len(order), trusted_toolchain_bodies=sum(1 for c in order if env.nodes[c].trusted_body),
        lean_version=lean_version, githash=githash, word_size=word,
        axioms_by_theorem={thm: sorted(display_name(c) for c in reached.get(thm, ())
                                       if c not in unknown and env.nodes[c].axiom)
                           for _, thm in theorems if not thm.startswith("_private.") and not is_auxiliary(thm)},
        type_sha256={n: expr_digest(heap, ptr) for n, (heap, ptr) in _types(env, audited, digests).items()},
        headlines={n: headline_of(heap.expr(ptr)) for n, (heap, ptr) in _types(env, audited, headlines).items()},
    )


def _types(env: Environment, audited: list[str], names: Sequence[str]) -> dict[str, tuple[olean.Heap, int]]:
    """Where the kernel type of each of ``names`` that the audited modules hold as a theorem is."""
    out: dict[str, tuple[olean.Heap, int]] = {}
    wanted = set(names)
    for m in audited:
        mod = env.modules[m]
        for name in wanted & mod.by_name.keys():
            ci = mod.constant(name)
            if ci is not None and ci.kind == "thm":
                out[name] = (mod.heap, ci.type_ptr)
    return out


def _declared_check(
    declared: list[str] | dict[str, list[str]] | None, audited: list[str], env: Environment
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
                out.append(finding(name, mods[0] if len(mods) == 1 else "", name, "missing", [name]))
            elif hit[1] != "thm":
                out.append(finding(name, hit[0], name, "not-a-theorem", [name]))
    return out


def _locate(findings: list[Finding], env: Environment) -> None:
    """Source positions from the modules' declaration-range entries, where they have one."""
    ranges: dict[str, dict[str, tuple[int, int]]] = {}
    for f in findings:
        mod = env.modules.get(f.module)
        if mod is None:
            continue
        if f.module not in ranges:
            ranges[f.module] = decl_ranges(mod)
        pos = ranges[f.module].get(f.subject)
        if pos:
            f.line, f.column = pos


# ---------------------------------------------------------------------------- what a build compiled


def module_declarations(sources: dict[str, Path]) -> dict[str, list[str]]:
    """Module -> the theorems its source declares (so one the compiled files lack is a finding)."""
    declared: dict[str, list[str]] = {}
    for module, src in sources.items():
        try:
            declared[module] = declared_theorems(src.read_text(encoding="utf-8"))
        except OSError as exc:
            raise InputError(f"cannot read the source of {module}: {exc.strerror}", where=str(src)) from None
    return declared


def audit_build(build: BuildResult, backend: Backend, library: Path | None = None, digests: Sequence[str] = (),
                headlines: Sequence[str] = (), timeout: float = DEFAULT_TIMEOUT,
                preloaded: Environment | None = None) -> AuditReport:
    """Audit every module a :class:`pycert.lean.build.BuildResult` compiled (library and instance files),
    and compute the type digests of ``digests`` in the same read.

    The olean tree of the build comes first on the search path, then the backend's own library. The
    report is cross-checked with Lean's own ``#print axioms`` where the backend can run it (in the Lake
    project around ``library``).
    """
    failed = [r.module for r in build.results if not r.ok]
    if failed:
        raise InputError(f"the kernel did not accept {', '.join(failed)}: nothing trustworthy to audit")
    if not build.results:
        raise InputError("the build compiled no modules")
    sources = build.compiled()
    modules = list(sources)
    report = audit_modules(modules, [Path(build.olean_dir), backend.toolchain_library()],
                           declared_theorems=module_declarations(sources), digests=digests, headlines=headlines,
                           env=preloaded)
    cross_check(report, backend.print_axioms(library.parent if library else None, modules,
                                             sorted(report.axioms_by_theorem), timeout))
    return report


def _shown(axioms: list[str] | None) -> str:
    return "no answer" if axioms is None else "[" + ", ".join(sorted(axioms)) + "]"


def compare(pycert: dict[str, list[str]], lean: dict[str, list[str]]) -> list[Rejection]:
    """Every theorem either side names whose axiom sets differ (or that one side did not answer):
    ``expected`` is what the .olean audit found, ``found`` what ``#print axioms`` printed (each the
    axioms joined by ", ", or None when that side said nothing about the theorem)."""
    out = []
    for name in sorted(pycert.keys() | lean.keys()):
        ours, theirs = pycert.get(name), lean.get(name)
        if ours is None or theirs is None or sorted(ours) != sorted(theirs):
            out.append(Rejection(subject=name, reason="cross-check",
                                 detail=f"pycert {_shown(ours)}, #print axioms {_shown(theirs)}",
                                 expected=None if ours is None else ", ".join(sorted(ours)),
                                 found=None if theirs is None else ", ".join(sorted(theirs))))
    return out


def cross_check(report: AuditReport, printed: PrintedAxioms) -> None:
    """Lean's ``#print axioms`` for every public theorem must name the same axioms as the .olean audit.
    Each disagreement is a finding, so the audit fails; when Lean was not asked, the report says why."""
    if printed.answers is None:
        report.cross_check = f"not run: {printed.not_run}"
        return
    theorems = sorted(report.axioms_by_theorem)
    diffs = compare(report.axioms_by_theorem, printed.answers)
    for d in diffs:
        report.findings.append(Finding(subject=d.subject, reason="cross-check", detail=f"{WHY['cross-check']}: {d.render()}",
                                       expected=d.expected, found=d.found, module="", constant=d.found or "-",
                                       chain=[d.subject]))
    if diffs:
        report.verdict = "fail"
    report.cross_check = (f"disagree on {len(diffs)} of {len(theorems)} theorems" if diffs
                          else f"agree: #print axioms gives the same axioms for all {len(theorems)} public theorems")
