"""The audit's own guards: the allow-list pin, axioms reached indirectly, a missing private part."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pycert.audit.graph import ALLOWED_AXIOMS, check_allow_list
from pycert.core.errors import Rejected
from pycert.mutation.lean_batch import Snippet
from pycert.mutation.operators.base import (
    HITS,
    Operator,
    Planned,
    Verdict,
    expect_failure,
)


class AuditSelfTest(Operator):
    """The audit's own guards: a widened or edited allow-list is refused by its sha256 pin; an axiom
    reached only through a private theorem or an exposed definition is still found; a module whose
    private part is missing fails closed."""

    name = "audit-self-test"

    def plan(self, ctx: Any) -> list[Planned]:
        t = "pycert/audit/graph.py"
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
    try:
        check_allow_list(change(ALLOWED_AXIOMS))
    except Rejected as exc:
        return expect_failure([str(exc)], r"allow-list was changed", "the pin")
    return "survived", "the audit accepted a changed allow-list"
