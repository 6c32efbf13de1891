"""Certificates: a flipped byte, an edited figure, a swapped hash, a ghost theorem, another library's
hash, a disagreeing manifest."""

from __future__ import annotations

import hashlib
from typing import Any

from pycert.mutation.operators.base import (
    CEILING_CERT,
    CERT_DIR,
    Operator,
    Planned,
    Verdict,
)


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

        def other_library(d: dict) -> None:  # proved with a library whose content differs by one byte
            d["provenance"]["library_sha256"] = hashlib.sha256(d["provenance"]["library_sha256"].encode()).hexdigest()

        for mid, name, desc, edit, field_re in (
            ("cert-edit-figure", "pooling-committed.json", "lower an exact figure by one (manifest re-forged)", edit_figure, r"^figures"),
            ("cert-swap-trace-hash", CEILING_CERT, "swap the trace's sha256 (manifest re-forged)", swap_hash, r"^inputs"),
            ("cert-ghost-theorem", "isolation-t8-n1024.json", "name a theorem the library does not have (manifest re-forged)",
             ghost_theorem, r"^theorems"),
            ("cert-other-library", "first-touch-c256-n4000.json", "name another Lean library's hash (manifest re-forged)",
             other_library, r"^provenance\.library_sha256"),
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
