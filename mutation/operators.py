"""The defect classes. Each operator is a small class that plans its mutants against a scratch copy.

A planned mutant carries either a Python check (``run``, for verify, the solvers' checks, the trace
engine, the audit's pin and the report page) or a piece of Lean for one of the batches of
:mod:`mutation.lean_batch`. Every check returns ``(status, detail)``: ``killed`` only when the
checker rejected *for the expected reason*.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from mutation.lean_batch import LibraryEdit, Snippet, decl_ranges
from mutation.report import Mutant

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
        """The Lean batch this mutant is checked in (see :mod:`mutation.lean_batch`); None: Python."""
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
    return "\n".join(line for line in lean.splitlines() if not line.startswith(("import ", "-- "))).strip()


def sub_once(text: str, old: str, new: str) -> str:
    if text.count(old) != 1:
        raise ValueError(f"expected exactly one {old!r} in the emitted instance")
    return text.replace(old, new)


def ceiling_instance(refs: list[int], sha: str, name: str, claims: tuple[int, int] | None = None,
                     edits: tuple[tuple[str, str], ...] = (), packed: Callable[[Any], Any] | None = None) -> str:
    """The emitted ceiling instance of ``refs``, its final claims (refs, distinct) optionally replaced,
    its packed vectors optionally edited by ``packed`` before rendering."""
    from pycert import lean_trace

    inst = lean_trace.plan(refs, sha, name)
    if packed:
        inst = packed(inst)
    text = strip_header(lean_trace.render(inst))
    n, d = len(refs), len(set(refs))
    if claims:
        n2, d2 = claims
        text = sub_once(text, f"theorem refs_eq : trace.length = {n} :=", f"theorem refs_eq : trace.length = {n2} :=")
        text = sub_once(text, f"Pycert.distinct trace = {d} :=", f"Pycert.distinct trace = {d2} :=")
        text = sub_once(text, f"Pycert.Ceiling.hits P trace ≤ {n - d} :=", f"Pycert.Ceiling.hits P trace ≤ {n2 - d2} :=")
    for old, new in edits:
        text = sub_once(text, old, new)
    return text


def hash_ids(refs: list[int]) -> list[int]:
    """``refs`` renamed by a fixed injective map onto 64-bit ids in no particular order."""
    import random

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
    from solvers import lean_wall

    text = strip_header(lean_wall.emit(inst))
    if keep is not None:
        text = keep_only(text, keep)
    text = sub_once(text, f"namespace {lean_wall.NAMESPACE}", f"namespace Pycert.Mutants.{name}")
    text = sub_once(text, f"end {lean_wall.NAMESPACE}", f"end Pycert.Mutants.{name}")
    for old, new in edits:
        text = sub_once(text, old, new)
    return text


def expect_failure(errors: list[str], pattern: str, what: str) -> Verdict:
    hit = next((e for e in errors if re.search(pattern, e)), None)
    if hit:
        return "killed", hit
    if errors:
        return "survived", f"rejected, but not for the expected reason ({pattern}): {errors[0]}"
    return "survived", f"{what} accepted it"


# ---------------------------------------------------------------------------- 1. Lean statements


class LeanStatement(Operator):
    """Change a number in an emitted instance theorem, or strengthen, swap or un-hypothesise a library
    theorem's statement (its proof unchanged). The Lean kernel must reject the declaration."""

    name = "lean-statement"

    def plan(self, ctx: Any) -> list[Planned]:
        refs, sha = ctx.window()
        n, d = len(refs), len(set(refs))
        target = "pycert/lean_trace.py"
        for mid, desc, claims in (
            ("refs+1", f"claim |r| = {n + 1} for the {n}-reference window", (n + 1, d)),
            ("distinct-1", f"claim distinct = {d - 1}", (n, d - 1)),
            ("distinct+1", f"claim distinct = {d + 1}", (n, d + 1)),
        ):
            decl = "refs_eq" if mid.startswith("refs") else "distinct_eq"
            self.add(f"stmt-ceiling-{mid}", "lean-kernel", desc, f"kernel error in {decl}", target,
                     instance=Snippet(f"stmt-ceiling-{mid}", ceiling_instance(refs, sha, f"Mut_{mid.replace('+', 'p').replace('-', 'm')}", claims),
                                      decl, KERNEL_REJECTS))
        self.add("stmt-ceiling-hits-1", "lean-kernel", f"claim hits <= {n - d - 1}", "kernel error in hits_le", target,
                 instance=Snippet("stmt-ceiling-hits-1", ceiling_instance(
                     refs, sha, "Mut_hitsm1", edits=((f"hits P trace ≤ {n - d} :=", f"hits P trace ≤ {n - d - 1} :="),)),
                     "hits_le", KERNEL_REJECTS))
        for mid, desc, old in (
            ("stmt-ceiling-checked-d+1", f"the kernel test told distinct = {d + 1}", f" {d} S = true"),
            ("stmt-ceiling-checked-n+1", f"the kernel test told |r| = {n + 1}", f" {n} X K "),
        ):
            new = f" {d + 1} S = true" if mid.endswith("d+1") else f" {n + 1} X K "
            self.add(mid, "lean-kernel", desc, "kernel error in checked", target,
                     instance=Snippet(mid, ceiling_instance(refs, sha, "Mut_" + mid.replace("-", "_").replace("+", "p"),
                                                            edits=((old, new),)), "checked", KERNEL_REJECTS))
        inst = ctx.instance()
        wall = "solvers/lean_wall.py"
        for mid, desc, edits, decl, keep in (
            ("pool-distinct-31", "claim the committed trace has 31 distinct blocks",
             (("distinct (blocks trace) = 32 :=", "distinct (blocks trace) = 31 :="),), "distinct_eq", set()),
            ("pool-sum-337", "claim Σ_h distinct = 337 under the committed routing",
             (("sumDistinct 16 trace = 338 :=", "sumDistinct 16 trace = 337 :="),), "sumDistinct_eq", set()),
            ("pool-wall-33", "claim every pooled policy misses at least 33 times",
             (("32 ≤ pooledMisses P trace", "33 ≤ pooledMisses P trace"),), "pooled_wall", {"distinct_eq"}),
        ):
            text = pooling_instance(inst, mid.replace("-", "_"), edits, keep={decl} | keep)
            self.add(f"stmt-{mid}", "lean-kernel", desc, f"kernel error in {decl}", wall,
                     instance=Snippet(f"stmt-{mid}", text, decl, KERNEL_REJECTS))
        lib = [
            ("stmt-floor-lt", "Pycert/Isolation.lean", "floor", "isolation floor: 2^(T*n) <= s flipped to <",
             "(h : ∀ M t b, serve (σ M) t b = M t b) : 2 ^ (T * n) ≤ s := by",
             "(h : ∀ M t b, serve (σ M) t b = M t b) : 2 ^ (T * n) < s := by"),
            ("stmt-owner-swap", "Pycert/Isolation.lean", "owner_floor", "single-owner floor: T^n swapped to n^T",
             "= ownerAuth owner t b) : T ^ n ≤ s := by", "= ownerAuth owner t b) : n ^ T ≤ s := by"),
            ("stmt-cut-drop-hyp", "Pycert/FirstTouch.lean", "cut_gt_half", "first-touch: drop the hypothesis n >= 2c",
             "public theorem cut_gt_half {c n : Nat} (hc : 0 < c) (hn : 2 * c ≤ n) :",
             "public theorem cut_gt_half {c n : Nat} (hc : 0 < c) :"),
            ("stmt-cut-off-by-one", "Pycert/FirstTouch.lean", "cut_eq", "first-touch: closed form served + 1",
             "cut c n = (c * (n / c), n) := by", "cut c n = (c * (n / c) + 1, n) := by"),
            ("stmt-bound-weak-hyp", "Pycert/Ceiling.lean", "mem_bound",
             "ceiling: a cache line kept from `0 :: l` is assumed to come from `l` (hypothesis weakened)",
             "y ∈ bound o l → y ∈ l", "y ∈ bound o (0 :: l) → y ∈ l"),
            ("stmt-split-weak-range", "Pycert/Pooling.lean", "distinct_le_sumDistinct",
             "pooling: splitting never helps, with references allowed at host H (InRange H weakened to H + 1)",
             "public theorem distinct_le_sumDistinct {H : Nat} {t : List (Nat × Nat)} (hR : InRange H t) :",
             "public theorem distinct_le_sumDistinct {H : Nat} {t : List (Nat × Nat)} (hR : InRange (H + 1) t) :"),
            ("stmt-packed-add-weak-hyp", "Pycert/Packed.lean", "fld_add",
             "packing: a field's own guard bit left unchecked before adding (hypothesis i <= j weakened to i < j)",
             "    (∀ i, i ≤ j → fld (2 ^ (w + 1)) Y i < 2 ^ w) →\n    fld (2 ^ (w + 1)) (X + Y) j",
             "    (∀ i, i < j → fld (2 ^ (w + 1)) Y i < 2 ^ w) →\n    fld (2 ^ (w + 1)) (X + Y) j"),
            ("stmt-look-weak-range", "Pycert/PackedTrace.lean", "look_inj",
             "sorted table: the last pair of entries left unchecked (j + 1 < D weakened to j + 2 < D)",
             "(inc : ∀ j, j + 1 < D → fld (2 ^ (wt + 1)) S j < fld (2 ^ (wt + 1)) S (j + 1))",
             "(inc : ∀ j, j + 2 < D → fld (2 ^ (wt + 1)) S j < fld (2 ^ (wt + 1)) S (j + 1))"),
            ("stmt-route-wrong-partner", "Pycert/Route.lean", "pairIndex_xor",
             "network: a pair's two places claimed to share a control bit across bit k + 1 instead of bit k",
             "public theorem pairIndex_xor (k j : Nat) : pairIndex k (j ^^^ 2 ^ k) = pairIndex k j := by",
             "public theorem pairIndex_xor (k j : Nat) : pairIndex k (j ^^^ 2 ^ (k + 1)) = pairIndex k j := by"),
            ("stmt-sharing-weak-hyp", "Pycert/Pooling.lean", "distinct_lt_sumDistinct",
             "pooling: strict gap without assuming any shared block (hypothesis weakened to True)",
             "(hS : ¬ NoSharing t) : distinct (blocks t) < sumDistinct H t := by",
             "(hS : True) : distinct (blocks t) < sumDistinct H t := by"),
        ]
        for mid, rel, decl, desc, old, new in lib:
            self.add(mid, "lean-kernel", desc, f"kernel error in {decl}", f"lean/{rel}", decl_line(ctx.root / "lean", rel, decl),
                     edit=LibraryEdit(mid, rel, decl, old, new, KERNEL_REJECTS))
        return self.plans


# ---------------------------------------------------------------------------- 2. proofs


AUDIT_HEADER = """module

public import Pycert.Ceiling

namespace Pycert.Mutants
open Pycert.Ceiling
"""

HITS = "(P : Policy) (r : List Nat) : hits P r + Pycert.distinct r ≤ r.length"


class Proof(Operator):
    """Replace a proof by ``sorry``, by a new axiom, by ``native_decide`` or by a macro that hides
    ``sorry``; make a theorem rest on an ``@[implemented_by]`` definition. ``sorry`` is the kernel
    runner's to reject (it only warns); the rest compile, and the audit must name them."""

    name = "proof"

    def plan(self, ctx: Any) -> list[Planned]:
        for mid, rel, decl in (("proof-sorry-leak", "Pycert/Isolation.lean", "leak_or_refusal"),
                               ("proof-sorry-first-touch", "Pycert/FirstTouch.lean", "cut_cross")):
            old, new = proof_to_sorry((ctx.root / "lean" / rel).read_text(encoding="utf-8"), decl)
            self.add(mid, "lean-kernel", f"{decl}: proof replaced by sorry", "the `sorry` warning, as a failure",
                     f"lean/{rel}", decl_line(ctx.root / "lean", rel, decl), edit=LibraryEdit(mid, rel, decl, old, new, SORRY))
        audit = [
            ("proof-new-axiom", "the hit ceiling proved from a new axiom", "axiom_ceiling", "project-axiom",
             f"axiom cheat_ceiling : False\npublic theorem axiom_ceiling {HITS} := cheat_ceiling.elim"),
            ("proof-native-decide", "the first-touch figure decided by compiled code", "native_first_touch", "native-code",
             "public theorem native_first_touch : 256 * (4000 / 256) = 3840 := by native_decide"),
            ("proof-implemented-by", "a theorem about a definition whose compiled code is swapped", "implemented_served",
             "implemented_by",
             "public def fastServed (c n : Nat) : Nat := n - n % c\n"
             "@[implemented_by fastServed, expose] public def served' (c n : Nat) : Nat := c * (n / c)\n"
             "public theorem implemented_served : served' 256 4000 = 3840 := rfl"),
        ]
        # Lean still reports the sorry a macro hides (the runner fails it), so this one is the kernel's.
        self.add("proof-macro-sorry", "lean-kernel", "a tactic macro that expands to a synthetic sorry",
                 "the `sorry` warning, as a failure", "lean/Pycert/Ceiling.lean", instance=Snippet(
                     "proof-macro-sorry",
                     "namespace Pycert.Mutants.MacroSorry\nopen Pycert.Ceiling\n"
                     "macro \"pycert_trust\" : tactic => `(tactic| exact sorryAx _ true)\n"
                     f"theorem hidden_sorry_ceiling {HITS} := by pycert_trust\nend Pycert.Mutants.MacroSorry",
                     "hidden_sorry_ceiling", SORRY))
        for mid, desc, decl, reason, text in audit:
            self.add(mid, "audit", desc, f"audit finding {reason} on {decl}", "lean/Pycert/Ceiling.lean",
                     audit=Snippet(mid, text, decl, reason))
        return self.plans


# ---------------------------------------------------------------------------- 3. instance data


class InstanceData(Operator):
    """Drop, duplicate or reorder a trace reference without updating the counts; move a request to
    another host in the pooling instance. The kernel recounts from the data and must disagree."""

    name = "instance-data"

    def plan(self, ctx: Any) -> list[Planned]:
        refs, sha = ctx.window()
        n, d = len(refs), len(set(refs))
        target = "pycert/lean_trace.py"
        first = {b: refs.index(b) for b in refs}
        repeats = [i for i, b in enumerate(refs) if first[b] < i]  # edits here keep ids dense in first-use order
        rep = repeats[0]
        tail = refs.index(d - 1) + 1  # past every first use: a new block may enter here
        swap = next(i for i in repeats if i + 1 in repeats and refs[i] != refs[i + 1])
        cases = [
            ("data-drop-repeat", f"drop reference {rep} (a repeated block)", refs[:rep] + refs[rep + 1:], "refs_eq", None),
            ("data-new-block", f"reference {tail} replaced by a block never seen before", refs[:tail] + [d] + refs[tail + 1:],
             "distinct_eq", None),
            ("data-duplicate", f"duplicate reference {rep}", refs[:rep + 1] + refs[rep:], "refs_eq", None),
            ("data-reorder", f"swap references {swap} and {swap + 1}",
             refs[:swap] + [refs[swap + 1], refs[swap]] + refs[swap + 2:], "refs_eq",
             "the instance claims |r|, distinct r and the hit ceiling, all invariant under reordering; "
             "a reordered input file is caught by its sha256 instead (data-reorder-input)"),
        ]
        for mid, desc, mutated, decl, eq in cases:
            name = "Mut_" + mid.replace("-", "_")
            self.add(mid, "lean-kernel", desc, f"kernel error in {decl}", target, equivalent=eq,
                     instance=Snippet(mid, ceiling_instance(mutated, sha, name, claims=(n, d)), decl, KERNEL_REJECTS))
        from pycert import lean_trace

        fresh = next(i for i in range(1, n) if first[refs[i]] == i)
        packed = [
            ("data-packed-ref", f"reference {rep} recoded as a fresh block in the packed data, counter and table kept",
             lambda p: p.model_copy(update={"x": lean_trace.set_field(p.x, p.w + 1, rep, len(set(refs[:rep])))})),
            ("data-packed-fresh", f"first use at reference {fresh} recoded as an earlier block in the packed data",
             lambda p: p.model_copy(update={"x": lean_trace.set_field(p.x, p.w + 1, fresh, 0)})),
            ("data-table-dup", "the id table repeats an entry (entry 1 := entry 0)",
             lambda p: p.model_copy(update={"t": lean_trace.set_field(p.t, p.wt + 1, 1, p.t & ((1 << (p.wt + 1)) - 1))})),
        ]
        for mid, desc, edit in packed:
            name = "Mut_" + mid.replace("-", "_")
            self.add(mid, "lean-kernel", desc, "kernel error in checked", target,
                     instance=Snippet(mid, ceiling_instance(refs, sha, name, packed=edit), "checked", KERNEL_REJECTS))
        hashed = hash_ids(refs)
        self.add("data-hashed-table-dup", "lean-kernel",
                 "64-bit ids in any order: the sorted table repeats an entry (entry 1 := entry 0)",
                 "kernel error in checked", target, instance=Snippet("data-hashed-table-dup", ceiling_instance(
                     hashed, sha, "Mut_data_hashed_table_dup",
                     packed=lambda p: p.model_copy(update={"t": lean_trace.set_field(
                         p.t, p.wt + 1, 1, p.t & ((1 << (p.wt + 1)) - 1))})),
                     "checked", KERNEL_REJECTS))
        self.add("data-reorder-input", "verify", "swap two lines of the certificate's trace file",
                 "verify failure on inputs (sha256)", TRACE_INPUT, run=_reorder_input)
        inst = ctx.instance()
        moved = _move_request(inst)
        self.add("data-move-host", "lean-kernel", f"route request {moved[1]} to host {moved[2]} (counts unchanged)",
                 "kernel error in sumDistinct_eq", "solvers/instances/committed.json",
                 instance=Snippet("data-move-host", pooling_instance(moved[0], "data_move_host", edits=(
                     (f"sumDistinct 16 trace = {moved[3]} :=", "sumDistinct 16 trace = 338 :="),), keep={"sumDistinct_eq"}),
                     "sumDistinct_eq", KERNEL_REJECTS))
        return self.plans


def _move_request(inst: Any) -> tuple[Any, int, int, int]:
    """The committed instance with the first request whose move changes Σ_h distinct moved."""
    from solvers.instance import per_host_distinct

    reqs = [r.blocks for r in inst.requests]
    hosts = [inst.routing[r.id] for r in inst.requests]
    base = sum(per_host_distinct(reqs, hosts, len(inst.hosts)))
    for i, r in enumerate(inst.requests):
        for h in inst.host_ids:
            trial = hosts[:i] + [h] + hosts[i + 1:]
            total = sum(per_host_distinct(reqs, trial, len(inst.hosts)))
            if total != base:
                routing = dict(inst.routing) | {r.id: h}
                return inst.model_copy(update={"routing": routing}), r.id, h, total
    raise ValueError("no single move changes the per-host distinct sum")


def _reorder_input(ctx: Any) -> Verdict:
    path = ctx.repo / TRACE_INPUT
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1], lines[2] = lines[2], lines[1]
    path.write_bytes(b"".join(lines))
    return ctx.verify_expect(CEILING_CERT, r"^inputs")


# ---------------------------------------------------------------------------- 4. solvers


class Solver(Operator):
    """Doctor what a solver reported or the schedule it produced; the solvers' independent checks
    (bound versus objective, the wall, cross-solver agreement, the step-by-step replay) must object."""

    name = "solver"

    def plan(self, ctx: Any) -> list[Planned]:
        t = "solvers/pipeline.py"
        self.add("solver-objective-31", "solver-checks", "CP-SAT claims 31 misses on the committed pool",
                 "objective 31 below the wall", t, run=lambda c: c.paging_expect(
                     {"objective": 31}, r"CP-SAT objective 31 is below the wall"))
        self.add("solver-optimal-for-feasible", "solver-checks", "a FEASIBLE result (bound 3 below) reported OPTIMAL",
                 "OPTIMAL claimed with a bound below the objective", t, run=lambda c: c.paging_expect(
                     {"bound": float(c.pooled().cpsat.objective - 3)}, r"claims OPTIMAL but its proven bound"))
        self.add("solver-highs-disagrees", "solver-checks", "HiGHS reports one miss more than CP-SAT",
                 "objectives disagree", t, run=lambda c: c.paging_expect(
                     {"objective": c.pooled().highs.objective + 1}, r"objectives disagree", solver="highs"))
        r = "solvers/replay.py"
        self.add("solver-drop-fetch", "solver-checks", "remove one fetch from an optimal capacitated schedule",
                 "replay: referenced block not in the cache", r, run=_drop_fetch)
        self.add("solver-over-capacity", "solver-checks", "keep an evicted block: one over capacity",
                 "replay: capacity exceeded", r, run=_over_capacity)
        self.add("solver-unknown-host", "solver-checks", "route a request to a host that does not exist",
                 "routing check: unknown host", r, run=_unknown_host)
        return self.plans


def _drop_fetch(ctx: Any) -> Verdict:
    from solvers.replay import replay_schedule

    refs, cap, sched = ctx.family_schedule()
    t = next(i for i in range(1, len(refs)) if refs[i] not in sched[i - 1])
    bad = list(sched)
    bad[t] = sched[t] - {refs[t]}
    return expect_failure(replay_schedule("mutant", refs, cap, bad).violations, r"referenced block \d+ is not in the cache",
                          "the replay")


def _over_capacity(ctx: Any) -> Verdict:
    from solvers.replay import replay_schedule

    refs, cap, sched = ctx.family_schedule()
    # a full step at which some block seen before is out of the cache: keep it one step too long
    t = next(i for i in range(1, len(refs)) if len(sched[i]) == cap and set(refs[:i]) - sched[i])
    extra = min(set(refs[:t]) - sched[t])
    bad = list(sched)
    bad[t] = sched[t] | {extra}
    return expect_failure(replay_schedule("mutant", refs, cap, bad).violations, r"blocks cached, capacity", "the replay")


def _unknown_host(ctx: Any) -> Verdict:
    from solvers.replay import replay_routing

    inst = ctx.instance()
    routing = dict(inst.routing)
    routing[inst.requests[0].id] = max(inst.host_ids) + 1
    return expect_failure(replay_routing(inst, routing).routing_violations, r"routed to unknown host", "the routing check")


# ---------------------------------------------------------------------------- 5. certificates


class CertificateTamper(Operator):
    """Flip a byte, edit a figure, swap a trace hash, name a theorem that does not exist, or make
    the manifest disagree. ``pycert verify`` must reject each, naming the field."""

    name = "certificate"

    def plan(self, ctx: Any) -> list[Planned]:
        for p in sorted((ctx.root / CERT_DIR).glob("*.json")):
            self.add(f"cert-flip-byte-{p.stem}", "verify", f"flip one byte of {p.name}", "verify failure on the manifest",
                     f"{CERT_DIR}/{p.name}", run=lambda c, name=p.name: c.tamper(name, flip=True, field=r"^manifest"))

        def edit_figure(d: dict) -> None:
            fig = next(f for f in d["figures"] if f["name"] == "pooled_misses")
            fig["numerator"] -= 1
            fig["decimal"] = str(fig["numerator"])

        def swap_hash(d: dict) -> None:
            d["inputs"][0]["sha256"] = d["inputs"][0]["sha256"][::-1]

        def ghost_theorem(d: dict) -> None:
            d["theorems"][0] = d["theorems"][0] + "_strong"

        for mid, name, desc, edit, field_re in (
            ("cert-edit-figure", "pooling-committed.json", "lower an exact figure by one (manifest re-forged)", edit_figure, r"^figures"),
            ("cert-swap-trace-hash", CEILING_CERT, "swap the trace's sha256 (manifest re-forged)", swap_hash, r"^inputs"),
            ("cert-ghost-theorem", "isolation-t8-n1024.json", "name a theorem the library does not have (manifest re-forged)",
             ghost_theorem, r"^theorems"),
        ):
            self.add(mid, "verify", desc, f"verify failure on {field_re.lstrip('^')}", f"{CERT_DIR}/{name}",
                     run=lambda c, name=name, edit=edit, f=field_re: c.tamper(name, edit=edit, forge=True, field=f))
        self.add("cert-manifest-disagrees", "verify", "change one manifest entry", "verify failure on the manifest",
                 f"{CERT_DIR}/MANIFEST.sha256", run=_manifest_disagrees)
        return self.plans


def _manifest_disagrees(ctx: Any) -> Verdict:
    path = ctx.repo / CERT_DIR / "MANIFEST.sha256"
    lines = path.read_text().splitlines()
    h, name = lines[0].split(maxsplit=1)
    lines[0] = f"{h[:-1]}{'0' if h[-1] != '0' else '1'}  {name.strip()}"
    path.write_text("\n".join(lines) + "\n")
    return ctx.verify_expect(name.strip(), r"^manifest")


# ---------------------------------------------------------------------------- 6. audit self-tests


class AuditSelfTest(Operator):
    """The audit's own guards: a widened or edited allow-list is refused by its sha256 pin; an axiom
    reached only through a private theorem or an exposed definition is still found; a module whose
    private part is missing fails closed."""

    name = "audit-self-test"

    def plan(self, ctx: Any) -> list[Planned]:
        t = "pycert/audit.py"
        self.add("audit-widened-allow-list", "audit", "allow Lean.ofReduceBool too", "the allow-list pin refuses it", t,
                 run=lambda c: _allow_list(lambda a: a | {"Lean.ofReduceBool"}))
        self.add("audit-swapped-allow-list", "audit", "allow sorryAx instead of Quot.sound", "the allow-list pin refuses it", t,
                 run=lambda c: _allow_list(lambda a: (a - {"Quot.sound"}) | {"sorryAx"}))
        self.add("audit-through-private", "audit", "an axiom reached only through a private theorem",
                 "audit finding project-axiom on via_private", "lean/Pycert/Ceiling.lean", audit=Snippet(
                     "audit-through-private",
                     f"axiom cheat_private : False\ntheorem private_step {HITS} := cheat_private.elim\n"
                     f"public theorem via_private {HITS} := private_step P r", "via_private", "project-axiom"))
        self.add("audit-through-def", "audit", "an axiom reached only through an exposed definition's body",
                 "audit finding project-axiom on via_def", "lean/Pycert/Ceiling.lean", audit=Snippet(
                     "audit-through-def",
                     "public axiom cheat_def : Nat\n@[expose] public noncomputable def sneaky : Nat := cheat_def\n"
                     "public theorem via_def : sneaky = sneaky := rfl", "via_def", "project-axiom"))
        self.add("audit-missing-private", "audit", "audit the mutants' .olean without its .olean.private",
                 "audit fails closed: not-a-theorem or hidden-proof", "lean/Pycert/Ceiling.lean", hidden_proof=True)
        return self.plans


def _allow_list(change: Callable[[frozenset[str]], frozenset[str]]) -> Verdict:
    from pycert import audit
    from pycert.errors import Rejected

    try:
        audit.check_allow_list(change(audit.ALLOWED_AXIOMS))
    except Rejected as exc:
        return expect_failure([str(exc)], r"allow-list was changed", "the pin")
    return "survived", "the audit accepted a changed allow-list"


# ---------------------------------------------------------------------------- 7. trace engine


class TraceEngine(Operator):
    """Feed the trace engine a file whose id stream is off by one (or broken): the figures must
    change and the certificate of the old figures must then fail to verify (the file's sha256
    re-forged, so only the recomputed figures can catch it); a broken line is named by file:line."""

    name = "trace-engine"

    def plan(self, ctx: Any) -> list[Planned]:
        self.add("trace-off-by-one-start", "trace-engine", "the id stream starts one id late",
                 "figures change; verify failure on figures", TRACE_INPUT,
                 run=lambda c: c.trace_expect(_shift_stream))
        self.add("trace-repeated-line", "trace-engine", "one request line read twice",
                 "figures change; verify failure on figures", TRACE_INPUT,
                 run=lambda c: c.trace_expect(lambda lines: lines[:3] + lines[2:]))
        self.add("trace-relabel+1", "trace-engine", "every block id plus one", "figures change", TRACE_INPUT,
                 equivalent="renaming every block id by the same bijection leaves |r| and distinct r, hence every "
                            "ceiling figure, unchanged",
                 run=lambda c: c.trace_expect(lambda lines: [_map_ids(ln, lambda ids: [i + 1 for i in ids]) for ln in lines]))
        self.add("trace-truncated-line", "trace-engine", "the last line cut in half", "an input error naming file:line",
                 TRACE_INPUT, run=_truncated)
        return self.plans


def _map_ids(line: bytes, f: Callable[[list[int]], list[int]]) -> bytes:
    obj = json.loads(line)
    obj["hash_ids"] = f(obj["hash_ids"])
    return (json.dumps(obj) + "\n").encode()


def _shift_stream(lines: list[bytes]) -> list[bytes]:
    records = [json.loads(ln) for ln in lines]
    ids = [i for r in records for i in r["hash_ids"]][1:] + [-1]
    out, k = [], 0
    for r in records:
        r["hash_ids"], k = ids[k:k + len(r["hash_ids"])], k + len(r["hash_ids"])
        r["hash_ids"] = [i for i in r["hash_ids"] if i >= 0]
        out.append((json.dumps(r) + "\n").encode())
    return out


def _truncated(ctx: Any) -> Verdict:
    from pycert.errors import InputError
    from pycert.traces import read_trace

    path = ctx.repo / TRACE_INPUT
    data = path.read_bytes().rstrip(b"\n")
    path.write_bytes(data[: len(data) - 20])
    n_lines = data.count(b"\n") + 1
    try:
        read_trace(path)
    except InputError as exc:
        return expect_failure([str(exc)], rf"{re.escape(path.name)}:{n_lines}: truncated", "the reader")
    return "survived", "the reader accepted a truncated line"


# ---------------------------------------------------------------------------- 8. report page


class ReportVerifier(Operator):
    """Hand the report page's in-page verifier (real headless Chromium) a tampered certificate: its
    verdict must turn red ("mismatch"). A pristine copy must stay green, or the run is an error."""

    name = "report-verifier"

    def plan(self, ctx: Any) -> list[Planned]:
        self.add("report-flipped-byte", "report-verifier", "drop a certificate with one byte flipped",
                 "page verdict mismatch", "pycert/report.py", run=lambda c: c.page_expect("isolation-t8-n1024.json", "flip"))
        self.add("report-forged-figure", "report-verifier", "drop a certificate with a figure edited",
                 "page verdict mismatch", "pycert/report.py", run=lambda c: c.page_expect("pooling-committed.json", "figure"))
        return self.plans


OPERATORS: tuple[type[Operator], ...] = (LeanStatement, Proof, InstanceData, Solver, CertificateTamper, AuditSelfTest,
                                         TraceEngine, ReportVerifier)
