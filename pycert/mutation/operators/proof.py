"""Proofs: ``sorry``, a new axiom, ``native_decide``, a macro hiding ``sorry``, ``@[implemented_by]``."""

from __future__ import annotations

from typing import Any

from pycert.mutation.lean_batch import LibraryEdit, Snippet
from pycert.mutation.operators.base import (
    HITS,
    SORRY,
    Operator,
    Planned,
    decl_line,
    proof_to_sorry,
)


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
