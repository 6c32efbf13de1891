"""The leak run: the salt dropped at admission and a keyed salt replaced by an unkeyed one, each run
on the real engine (the observation must not hold, for the arm's reason), and one arm's count
altered in the recorded log (verify must reject the figure)."""

from __future__ import annotations

import json
from typing import Any

from pycert.core.files import file_sha256
from pycert.leak.admission import Admission, EngineRequest, TenantRequest, UnkeyedAdmission
from pycert.mutation.operators.base import CERT_DIR, Operator, Planned, Verdict

LEAK_CERT = "leak-transformers-cpu-k299-seed0.json"
LEAK_LOG = f"inputs/{LEAK_CERT.removesuffix('.json')}.jsonl"


def dropped_salt(secret: bytes) -> Any:
    """An admission layer that checks the tenant and then forwards the request unsalted."""
    class DroppedSalt(Admission):
        def admit(self, request: TenantRequest) -> EngineRequest:
            return EngineRequest(tuple(super().admit(request).tokens), None)

    return DroppedSalt(secret)


def unkeyed_for_keyed(secret: bytes) -> Any:
    """An admission layer whose 'keyed' salt is sha256(tenant): anyone can recompute it."""
    return UnkeyedAdmission()


class LeakRun(Operator):
    """Plant defects in the admission layer the leak run puts in front of the real engine (transformers,
    CPU, the small random model): the run must report them through the arm that catches each, and
    the family must refuse the certificate. Tamper with a recorded count: verify must reject it."""

    name = "leak"

    def plan(self, ctx: Any) -> list[Planned]:
        self.add("leak-salt-dropped", "leak-run", "the admission layer drops the salt it computed",
                 "the keyed-cross arm is served tenant A's blocks; no certificate", "pycert/leak/admission.py",
                 run=lambda c: c.leak_expect(dropped_salt, r"^arm keyed-cross: .*served from cache on [1-9]"))
        # the log's salt ids name the defect before any arm is read: the victim's keyed salt is the public
        # sha256(tenant) an attacker recomputes (the attacker-keyed arm, served from cache, shows it too)
        self.add("leak-unkeyed-salt", "leak-run", "the keyed salt replaced by the unkeyed sha256(tenant)",
                 "the keyed salt is the unkeyed scheme's (log.salt_id); no certificate", "pycert/leak/admission.py",
                 run=lambda c: c.leak_expect(unkeyed_for_keyed, r"^log\.salt_id: .* and the unkeyed scheme carried one salt"))
        self.add("leak-log-count", "verify", "one keyed-own probe's cached tokens lowered in the log (the log's "
                 "sha256 and the manifest re-forged)", "verify failure on figures.keyed_own_cached_tokens",
                 f"{CERT_DIR}/{LEAK_LOG}", run=_count_altered)
        return self.plans


def _count_altered(ctx: Any) -> Verdict:
    log = ctx.repo / CERT_DIR / LEAK_LOG
    lines = log.read_text().splitlines()
    i = next(k for k, ln in enumerate(lines) if '"arm":"keyed-own"' in ln and '"role":"probe"' in ln)
    rec = json.loads(lines[i])
    rec["cached_tokens"] //= 2
    lines[i] = json.dumps(rec, separators=(",", ":"))
    log.write_text("\n".join(lines) + "\n")
    cert = ctx.repo / CERT_DIR / LEAK_CERT
    doc = json.loads(cert.read_text())
    doc["inputs"][0]["sha256"] = file_sha256(log)  # forge the hash: only the recomputed figures can object
    cert.write_text(json.dumps(doc, indent=2) + "\n")
    ctx.forge_manifest()
    return ctx.verify_expect(LEAK_CERT, r"^figures\.keyed_own_cached_tokens$")
