"""Lean statements: a wrong number in an emitted instance, a strengthened, swapped or un-hypothesised library theorem."""

from __future__ import annotations

from typing import Any

from pycert.mutation.lean_batch import LibraryEdit, Snippet
from pycert.mutation.operators.base import (
    KERNEL_REJECTS,
    Operator,
    Planned,
    ceiling_instance,
    decl_line,
    pooling_instance,
)

LIBRARY_EDITS = [
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
"""(mutant id, module path under lean/, declaration, description, old text, new text): library
statements strengthened, swapped or un-hypothesised, each proof left as it was."""


class LeanStatement(Operator):
    """Change a number in an emitted instance theorem, or strengthen, swap or un-hypothesise a library
    theorem's statement (its proof unchanged). The Lean kernel must reject the declaration."""

    name = "lean-statement"

    def plan(self, ctx: Any) -> list[Planned]:
        self._ceiling(ctx)
        self._pooling(ctx)
        for mid, rel, decl, desc, old, new in LIBRARY_EDITS:
            self.add(mid, "lean-kernel", desc, f"kernel error in {decl}", f"lean/{rel}", decl_line(ctx.root / "lean", rel, decl),
                     edit=LibraryEdit(mid, rel, decl, old, new, KERNEL_REJECTS))
        return self.plans

    def _ceiling(self, ctx: Any) -> None:
        refs, sha = ctx.window()
        n, d = len(refs), len(set(refs))
        target = "pycert/lean/emit/packed_trace.py"
        for mid, desc, claims in (
            ("refs+1", f"claim |r| = {n + 1} for the {n}-reference window", (n + 1, d)),
            ("distinct-1", f"claim distinct = {d - 1}", (n, d - 1)),
            ("distinct+1", f"claim distinct = {d + 1}", (n, d + 1)),
        ):
            decl = "refs_eq" if mid.startswith("refs") else "distinct_eq"
            self.add(f"stmt-ceiling-{mid}", "lean-kernel", desc, f"kernel error in {decl}", target,
                     instance=Snippet(f"stmt-ceiling-{mid}", ceiling_instance(refs, sha, f"Mut_{mid.replace('+', 'p').replace('-', 'm')}", claims),
                                      decl, KERNEL_REJECTS))
        self.add("stmt-ceiling-hits-1", "lean-kernel", f"the headline claims hits <= {n - d - 1}",
                 "kernel error in headline", target,
                 instance=Snippet("stmt-ceiling-hits-1", ceiling_instance(
                     refs, sha, "Mut_hitsm1", edits=((f"Bounded trace {n} {d} {n - d} :=", f"Bounded trace {n} {d} {n - d - 1} :="),)),
                     "headline", KERNEL_REJECTS))
        for mid, desc, old in (
            ("stmt-ceiling-checked-d+1", f"the kernel test told distinct = {d + 1}", f" {d} S = true"),
            ("stmt-ceiling-checked-n+1", f"the kernel test told |r| = {n + 1}", f" {n} X K "),
        ):
            new = f" {d + 1} S = true" if mid.endswith("d+1") else f" {n + 1} X K "
            self.add(mid, "lean-kernel", desc, "kernel error in checked", target,
                     instance=Snippet(mid, ceiling_instance(refs, sha, "Mut_" + mid.replace("-", "_").replace("+", "p"),
                                                            edits=((old, new),)), "checked", KERNEL_REJECTS))

    def _pooling(self, ctx: Any) -> None:
        inst = ctx.instance()
        wall = "pycert/families/pooling/wall.py"
        for mid, desc, edits, decl, keep in (
            ("pool-distinct-31", "claim the committed trace has 31 distinct blocks",
             (("distinct (blocks trace) = 32 :=", "distinct (blocks trace) = 31 :="),), "distinct_eq", set()),
            ("pool-sum-337", "claim Σ_h distinct = 337 under the committed routing",
             (("sumDistinct 16 trace = 338 :=", "sumDistinct 16 trace = 337 :="),), "sumDistinct_eq", set()),
            ("pool-wall-33", "the headline claims every pooled policy misses at least 33 times",
             (("Pycert.Pooling.Walls trace 16 512 32 338 :=", "Pycert.Pooling.Walls trace 16 512 33 338 :="),), "headline",
             {"refs_eq", "distinct_eq", "sumDistinct_eq"}),
        ):
            text = pooling_instance(inst, mid.replace("-", "_"), edits, keep={decl} | keep)
            self.add(f"stmt-{mid}", "lean-kernel", desc, f"kernel error in {decl}", wall,
                     instance=Snippet(f"stmt-{mid}", text, decl, KERNEL_REJECTS))
