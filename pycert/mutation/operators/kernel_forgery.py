"""Forgeries only a rebuild can see (``verify --kernel``): a same-name theorem with a weaker statement
and a new proof, its statement re-pinned from the forger's own build; and an axiom reached by a named
theorem in the library the verifier builds. Each is rejected (exit 1) on the field it forged."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pycert.audit.statement import type_digests
from pycert.certify.verify import verify_certificate
from pycert.lean import build
from pycert.lean.sources import library_signatures
from pycert.mutation.operators.base import (
    CERT_DIR,
    Operator,
    Planned,
    Verdict,
    sub_once,
)

ISOLATION_CERT = "isolation-t8-n1024.json"
LIBRARY_FILE = "lean/Pycert/Isolation.lean"
FLOOR = "Pycert.Isolation.floor"
WEAKENED = "Pycert.Isolation.leak_or_refusal"  # nothing in the library uses it, so the rest still builds
DICHOTOMY = "∃ M t b, (serve (σ M) t b = true ∧ M t b = false) ∨ (serve (σ M) t b = false ∧ M t b = true) := by\n"
STRONG_LOG2 = f"    (hs : s < 2 ^ (T * n)) :\n    {DICHOTOMY}  apply Classical.byContradiction"
WEAK_LOG2 = ("    (hs : s < 2 ^ (T * n)) :\n    True := trivial\n"
             "theorem leak_or_refusal_old {T n s : Nat} (σ : Auth T n → Fin s) (serve : Fin s → Fin T → Fin n → Bool)\n"
             f"    (hs : s < 2 ^ (T * n)) :\n    {DICHOTOMY}  apply Classical.byContradiction")
STRONG = "(h : ∀ M t b, serve (σ M) t b = M t b) : 2 ^ (T * n) ≤ s := by\n  apply le_of_inj"
CHEAT = ("axiom floor_cheat : False\n\npublic theorem floor {T n s : Nat}",
         "(h : ∀ M t b, serve (σ M) t b = M t b) : 2 ^ (T * n) ≤ s := floor_cheat.elim\n"
         "theorem floor_old_proof {T n s : Nat} (σ : Auth T n → Fin s) (serve : Fin s → Fin T → Fin n → Bool)\n"
         "    (h : ∀ M t b, serve (σ M) t b = M t b) : 2 ^ (T * n) ≤ s := by\n  apply le_of_inj")


def _edit_library(repo: Path, *pairs: tuple[str, str]) -> None:
    path = repo / LIBRARY_FILE
    text = path.read_text(encoding="utf-8")
    for old, new in pairs:
        text = sub_once(text, old, new)
    path.write_text(text, encoding="utf-8")


def _verify_kernel(ctx: Any, library: Path, field: str) -> Verdict:

    res = verify_certificate(ctx.repo / CERT_DIR / ISOLATION_CERT, kernel=True, backend=ctx.backend_name,
                             library=library)
    if res.status != "rejected":
        return "survived", f"verify --kernel: {res.status}"
    hit = next((f for f in res.failures if re.search(field, f.subject)), None)
    return ("killed", hit.render()) if hit else ("survived", f"rejected, but not on {field}: {res.failures[0].render()}")


def weakened_theorem(ctx: Any) -> Verdict:
    """The forger weakens leak_or_refusal to True, rebuilds, pins the weakened statement into the certificate and
    re-forges the manifest; the verifier rebuilds its own library and compares the type digest."""


    _edit_library(ctx.repo, (STRONG_LOG2, WEAK_LOG2))
    forged = build.build(library=ctx.repo / "lean", backend=ctx.backend_name)
    if not forged.ok:
        return "error", "the weakened library does not build: " + "; ".join(r.status for r in forged.results if not r.ok)
    digest = type_digests(Path(forged.olean_dir), [r.module for r in forged.results], [WEAKENED])[WEAKENED]
    path = ctx.repo / CERT_DIR / ISOLATION_CERT
    doc = json.loads(path.read_text())
    doc["statements"][WEAKENED].update(signature=library_signatures(ctx.repo / "lean")[WEAKENED], type_sha256=digest,
                                       statement=f"{WEAKENED} : ∀ {{T n s : Nat}}, True")
    path.write_text(json.dumps(doc, indent=2) + "\n")
    ctx.forge_manifest()
    return _verify_kernel(ctx, ctx.root / "lean", rf"^statements\[{WEAKENED}\]\.type_sha256$")


def axiom_reached(ctx: Any) -> Verdict:
    """The library the verifier builds proves floor from an axiom: the re-run audit must refuse it."""
    _edit_library(ctx.repo, ("public theorem floor {T n s : Nat}", CHEAT[0]), (STRONG, CHEAT[1]))
    return _verify_kernel(ctx, ctx.repo / "lean", r"^audit")


class KernelForgery(Operator):
    """Forge what only a rebuild can check: a weakened theorem re-pinned from the forger's build, and an
    axiom in the library verify builds. ``verify --kernel`` must reject each, naming the field."""

    name = "kernel-forgery"

    def plan(self, ctx: Any) -> list[Planned]:
        self.add("forge-weakened-theorem", "verify-kernel", "same-name leak_or_refusal weakened to True with a new proof, "
                 "rebuilt and re-pinned (manifest re-forged)", "verify --kernel rejects the type digest",
                 LIBRARY_FILE, run=weakened_theorem)
        self.add("kernel-axiom-reached", "verify-kernel", "floor proved from an axiom in the library verify builds",
                 "verify --kernel's re-run audit rejects it", LIBRARY_FILE, run=axiom_reached)
        return self.plans
