"""Forgeries of what a certificate says about itself, each with its manifest line re-forged (issue 14):
verify derives the claim, the theorem list, the limits and each figure's evidence again, trusts
only public theorems of its own library, checks the audit record, confines inputs to the root and
bounds every parameter, so each must be rejected (exit 1) on the field forged."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pycert.mutation.operators.base import CEILING_CERT, CERT_DIR, Operator, Planned

ISOLATION_CERT = "isolation-t8-n1024.json"


def set_theorems(names: list[str]) -> Callable[[dict], None]:
    """Replace the theorem list and keep the audit record consistent with it (a careful forger)."""
    def edit(d: dict) -> None:
        d["theorems"] = names
        d["audit"]["axioms_by_theorem"] = {t: ["propext"] for t in names}
        d["audit"]["axioms"] = ["propext"]
    return edit


def _shipped(d: dict) -> None:
    d["inputs"].append({"role": "lean", "path": "lean/Shipped.lean", "sha256": "0" * 64})
    set_theorems([*d["theorems"], "Pycert.Ceiling.ceiling_strong"])(d)


def sorry_in_audit(d: dict) -> None:
    first = d["theorems"][0]
    d["audit"]["axioms_by_theorem"][first] = ["sorryAx"]
    d["audit"]["axioms"] = sorted({a for v in d["audit"]["axioms_by_theorem"].values() for a in v})


def _upgrade(d: dict) -> None:
    fig = next(f for f in d["figures"] if f["name"] == "ceiling")
    fig["evidence"] = "kernel-checked"


FORGERIES: tuple[tuple[str, str, str, Callable[[dict], None], str], ...] = (
    ("forge-claim", CEILING_CERT, "raise the claimed ceiling to 0.990000",
     lambda d: d.update(claim=d["claim"].replace("0.746020", "0.990000")), r"^claim$"),
    ("forge-theorem-list", CEILING_CERT, "cut the theorem list to one theorem",
     set_theorems(["Pycert.Ceiling.hits_add_distinct_le"]), r"^theorems$"),
    ("forge-private-theorem", CEILING_CERT, "name a private lemma (Pycert.Ceiling.mem_bound)",
     set_theorems(["Pycert.Ceiling.mem_bound"]), r"^theorems\[0\]$"),
    ("forge-shipped-theorem", CEILING_CERT, "name a theorem declared only in a Lean file shipped beside it",
     _shipped, r"^theorems\[6\]$"),
    ("forge-audit-axioms", CEILING_CERT, "set the audit's axioms to sorryAx", lambda d: d["audit"].update(
        axioms=["sorryAx"]), r"^audit\.axioms$"),
    ("forge-audit-sorry", CEILING_CERT, "record sorryAx for a named theorem", sorry_in_audit, r"^audit\.axioms_by_theorem\["),
    ("forge-limit-removed", CEILING_CERT, "remove a does_not_prove line", lambda d: d["does_not_prove"].pop(),
     r"^does_not_prove$"),
    ("forge-evidence-upgraded", CEILING_CERT, "say a computed figure was kernel-checked", _upgrade,
     r"^figures\.ceiling\.evidence$"),
    ("forge-dotdot-input", CEILING_CERT, "point the trace at ../../../../etc/passwd",
     lambda d: d["inputs"][0].update(path="../../../../etc/passwd"), r"^inputs\[0\]$"),
    ("forge-huge-parameter", ISOLATION_CERT, "isolation with T = n = 2^20 (2^(T*n) must never be built)",
     lambda d: d["parameters"].update(T=1 << 20, n=1 << 20), r"^parameters"),
)


class Forgery(Operator):
    """Re-forge the manifest after each edit: only re-derivation can catch these."""

    name = "forgery"

    def plan(self, ctx: Any) -> list[Planned]:
        for mid, cert, desc, edit, field_re in FORGERIES:
            self.add(mid, "verify", f"{desc} (manifest re-forged)", f"verify rejects {field_re}",
                     f"{CERT_DIR}/{cert}",
                     run=lambda c, cert=cert, edit=edit, f=field_re: c.tamper(cert, edit=edit, forge=True, field=f))
        return self.plans
