"""The arms of the experiment, and every figure and check of a leak log, as pure functions.

Each arm sends, for every prompt, a *prime* request and then a *probe* request with the same prompt
text, on an engine whose cache was emptied just before the prime: whatever the probe is served
from cache, the prime left. The arms are those of the published run:

========================  =============================  ==========================================
arm                       prime                          probe
========================  =============================  ==========================================
``unsalted-cross``        tenant A, no salt              tenant B, no salt: the leak
``keyed-cross``           A through the admission layer  B through it: the closure
``keyed-own``             A through it                   A again: own reuse kept
``attacker-unkeyed``      A, unkeyed salt sha256(A)      an attacker who sends that salt himself
``attacker-keyed``        A through the admission layer  the same attacker: the keyed salt holds
========================  =============================  ==========================================

The observation *holds* (:func:`closure_rejections` is empty) when the leak is reproduced on every
prompt, the keyed salt leaves no cross-tenant reuse, each tenant keeps its own reuse on every
prompt, the attacker reads the victim's blocks under the unkeyed scheme on every prompt (so the
keyed zero is not vacuous) and none under the keyed one, and every prime found an empty cache.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from pycert.core.errors import Rejection
from pycert.leak.admission import unkeyed_salt
from pycert.leak.log import ArmName, Log, SaltKind, salt_id
from pycert.leak.stats import clopper_pearson_upper, rule_of_three

TENANT_A, TENANT_B, ATTACKER = "tenant-a", "tenant-b", "attacker"


@dataclass(frozen=True)
class Arm:
    name: ArmName
    prime: tuple[str, SaltKind]
    probe: tuple[str, SaltKind]
    meaning: str
    expect_hits: bool
    """True: the probe must be served from cache on every prompt; False: on none."""

    @property
    def key(self) -> str:
        return self.name.replace("-", "_")


ARMS: tuple[Arm, ...] = (
    Arm("unsalted-cross", (TENANT_A, "none"), (TENANT_B, "none"),
        "tenant B served tenant A's cached blocks without a salt (the leak)", True),
    Arm("keyed-cross", (TENANT_A, "keyed"), (TENANT_B, "keyed"),
        "tenant B served tenant A's blocks with the keyed salt (the residual)", False),
    Arm("keyed-own", (TENANT_A, "keyed"), (TENANT_A, "keyed"),
        "tenant A served its own blocks again under the keyed salt (reuse kept)", True),
    Arm("attacker-unkeyed", (TENANT_A, "unkeyed"), (ATTACKER, "forged-unkeyed"),
        "an attacker sending sha256(A) as the salt, against an unkeyed scheme", True),
    Arm("attacker-keyed", (TENANT_A, "keyed"), (ATTACKER, "forged-unkeyed"),
        "the same attacker against the keyed scheme", False),
)
ARM_BY_NAME: dict[str, Arm] = {a.name: a for a in ARMS}
SALTED: frozenset[SaltKind] = frozenset({"keyed", "unkeyed", "forged-unkeyed"})


def structure_rejections(log: Log) -> list[Rejection]:
    """What makes ``log`` something other than the run of :data:`ARMS` over its header's prompts: each
    arm, each prompt, one prime then one probe with the arm's tenants and salts, the same prompt text."""
    h, out = log.header, []
    expected = [(a, p, role) for a in ARMS for p in range(h.prompts) for role in ("prime", "probe")]
    if len(log.requests) != len(expected):
        return [Rejection.mismatch("log.requests", f"{len(expected)} requests (5 arms x {h.prompts} prompts x 2)",
                                   str(len(log.requests)))]
    digests: dict[int, str] = {}
    for i, (r, (arm, p, role)) in enumerate(zip(log.requests, expected), 2):
        where = f"log line {i}"
        tenant, salt = arm.prime if role == "prime" else arm.probe
        want = (arm.name, p, role, tenant, salt)
        found = (r.arm, r.prompt, r.role, r.tenant, r.salt)
        if found != want:
            out.append(Rejection.mismatch(where, "arm, prompt, role, tenant, salt " + ", ".join(map(str, want)),
                                          ", ".join(map(str, found))))
            continue
        if not h.min_tokens <= r.prompt_tokens <= h.max_tokens:
            out.append(Rejection.mismatch(f"{where}.prompt_tokens", f"{h.min_tokens}..{h.max_tokens}", str(r.prompt_tokens)))
        if digests.setdefault(p, r.prompt_sha256) != r.prompt_sha256:
            out.append(Rejection.mismatch(f"{where}.prompt_sha256", f"prompt {p}'s text in every arm", r.prompt_sha256))
        if r.salt == "none" and r.salt_id is not None:
            out.append(Rejection.mismatch(f"{where}.salt_id", "none for an unsalted request", str(r.salt_id)))
    return out or salt_rejections(log)


def salt_rejections(log: Log) -> list[Rejection]:
    """Where the salts the engine received contradict the claim: an unkeyed or forged salt is not
    sha256(tenant A) (a public figure anyone recomputes), a tenant's keyed salt is not one salt throughout,
    or two tenants, or a keyed and the unkeyed scheme, share one (then the keyed zero would show nothing)."""
    unkeyed = salt_id(unkeyed_salt(TENANT_A))
    keyed: dict[str, str] = {}
    for i, r in enumerate(log.requests, 2):
        if r.salt_id is None:
            continue  # a salted request that reached the engine without a salt: closure_rejections says so
        if r.salt in ("unkeyed", "forged-unkeyed") and r.salt_id != unkeyed:
            return [Rejection.mismatch(f"log line {i}.salt_id", f"{unkeyed} (sha256 of {TENANT_A}'s unkeyed salt)",
                                       r.salt_id)]
        if r.salt == "keyed" and keyed.setdefault(r.tenant, r.salt_id) != r.salt_id:
            return [Rejection.mismatch(f"log line {i}.salt_id", f"{keyed[r.tenant]} ({r.tenant}'s keyed salt, as "
                                       "on its first request)", r.salt_id)]
    shared = [(t, u) for t in keyed for u in keyed if t < u and keyed[t] == keyed[u]]
    if shared or unkeyed in keyed.values():
        t, u = shared[0] if shared else (next(t for t, v in keyed.items() if v == unkeyed), "the unkeyed scheme")
        return [Rejection(subject="log.salt_id", reason="shared-salt", detail=f"{t} and {u} carried one salt "
                          f"({keyed[t]}): a keyed per-tenant salt separates them, so this is not the run the claim describes")]
    return []


def arm_figures(log: Log) -> dict[str, Fraction]:
    """Per arm, over its probes: ``<arm>_requests``, ``<arm>_hits`` (probes served anything from cache)
    and ``<arm>_cached_tokens`` (their sum); ``prime_cached_tokens`` over every prime (0 when each arm
    began from an empty cache); the residual bound on the keyed-cross rate, the rule-of-three figure
    beside it, and ``underpowered`` (1 when the bound is above the header's level)."""
    h = log.header
    figs: dict[str, Fraction] = {}
    for arm in ARMS:
        probes = [r for r in log.requests if r.arm == arm.name and r.role == "probe"]
        figs[f"{arm.key}_requests"] = Fraction(len(probes))
        figs[f"{arm.key}_hits"] = Fraction(sum(r.cached_tokens > 0 for r in probes))
        figs[f"{arm.key}_cached_tokens"] = Fraction(sum(r.cached_tokens for r in probes))
    figs["prime_cached_tokens"] = Fraction(sum(r.cached_tokens for r in log.requests if r.role == "prime"))
    n, x = int(figs["keyed_cross_requests"]), int(figs["keyed_cross_hits"])
    bound = clopper_pearson_upper(x, n, h.level("confidence"))
    figs["residual_rate_upper"] = bound
    figs["rule_of_three"] = rule_of_three(n)
    figs["underpowered"] = Fraction(int(bound > h.level("underpowered_above")))
    return figs


def closure_rejections(log: Log, figures: Mapping[str, Fraction]) -> list[Rejection]:
    """Why the observation does not show the leak and its closure (empty when it does)."""
    out = []
    for arm in ARMS:
        n, hits = figures[f"{arm.key}_requests"], figures[f"{arm.key}_hits"]
        if arm.expect_hits and hits != n:
            out.append(Rejection(subject=f"arm {arm.name}", reason="no-reuse",
                                 detail=f"{arm.meaning}: served from cache on {hits} of {n} prompts, expected all",
                                 expected=str(n), found=str(hits)))
        elif not arm.expect_hits and hits:
            out.append(Rejection(subject=f"arm {arm.name}", reason="leak",
                                 detail=f"{arm.meaning}: served from cache on {hits} of {n} prompts "
                                        f"({figures[f'{arm.key}_cached_tokens']} tokens), expected none",
                                 expected="0", found=str(hits)))
    if figures["prime_cached_tokens"]:
        out.append(Rejection.mismatch("primes", "every prime served nothing from cache (each began empty)",
                                      f"{figures['prime_cached_tokens']} cached tokens over the primes"))
    unsalted = [r for r in log.requests if r.salt in SALTED and r.salt_id is None]
    if unsalted:
        r = unsalted[0]
        out.append(Rejection(subject=f"arm {r.arm}", reason="unsalted",
                             detail=f"{len(unsalted)} requests meant to carry a {r.salt} salt reached the engine "
                                    f"without one (first: prompt {r.prompt} {r.role}, {r.tenant})"))
    return out
