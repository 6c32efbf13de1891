"""Every figure and verdict of a black-box audit, as pure functions of its log (:mod:`pycert.leak.audit_plan`).

**Timing.** The probes' times to first token are compared arm against the ``fresh`` arm with the exact
two-sample Kolmogorov-Smirnov test (:mod:`pycert.leak.ks`) at the header's ``alpha``: ``own`` must be
told apart (the server shows a timing signal at all), ``cross`` must not (no cross-tenant reuse).
The test is two-sided: a cross-tenant arm slower than the fresh one counts as detected too.
**Power** is the share of ``power_sims`` simulated tests, each on ``samples`` values drawn with
replacement from the ``own`` probes and as many from the ``fresh`` probes, that detect at ``alpha``:
how often a test of this size would see a cross-tenant leak as large as the tenant's own reuse.

**Counters.** Where the server reports ``cached_tokens`` (on any request), a probe *hit* when it was
served one or more prompt tokens from cache; a request without the field then counts 0 (vLLM leaves
``prompt_tokens_details`` out when the count is 0). ``own`` must hit and ``fresh`` must not.

**Verdict.** ``not checked`` when the audit has no signal (``own`` neither told apart by timing nor
hit by the counter) or a control failed (a ``fresh`` probe hit): then it says nothing about leaks.
Else cross-tenant reuse is *detected* when the timing test tells ``cross`` apart (given the timing
signal) or the counter shows a ``cross`` hit. The smallest shared prefix detected is the smallest
``L`` whose ``prefix-L`` arm is told apart by timing or hit by the counter (0: none).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from statistics import median

from pycert.core.errors import Rejection
from pycert.leak import ks
from pycert.leak.audit_plan import AuditLog, arms, plan
from pycert.leak.log import prompt_digest
from pycert.leak.stats import clopper_pearson_upper


def structure_rejections(log: AuditLog) -> list[Rejection]:
    """Where the log is not the header's plan, request for request (order, arm, tenant, prompt)."""
    steps = plan(log.header)
    if len(steps) != len(log.requests):
        return [Rejection.mismatch("log.requests", f"{len(steps)} requests (the plan of the header)",
                                   str(len(log.requests)))]
    out = []
    for i, (s, r) in enumerate(zip(steps, log.requests, strict=True), 2):
        want = (s.unit, s.arm, s.role, s.tenant, len(s.tokens), s.shared)
        found = (r.unit, r.arm, r.role, r.tenant, r.prompt_tokens, r.shared_tokens)
        if want != found:
            out.append(Rejection.mismatch(f"log line {i}", "unit, arm, role, tenant, tokens, shared "
                                          + ", ".join(map(str, want)), ", ".join(map(str, found))))
        elif r.prompt_sha256 != (d := prompt_digest(s.tokens)):
            out.append(Rejection.mismatch(f"log line {i}.prompt_sha256", d, r.prompt_sha256))
        if len(out) >= 5:
            break
    return out


def probes(log: AuditLog, arm: str) -> list:  # noqa: ANN201 (AuditLine)
    return [r for r in log.requests if r.arm == arm and r.role == "probe"]


def key(arm: str) -> str:
    return arm.replace("-", "_")


def figures(log: AuditLog) -> dict[str, Fraction]:
    h = log.header
    alpha = Fraction(h.alpha)
    counted = any(r.cached_tokens is not None for r in log.requests)
    fresh = [r.ttft_s for r in probes(log, "fresh")]
    figs: dict[str, Fraction] = {"alpha": alpha, "counter_reported": Fraction(int(counted))}
    for arm in arms(h):
        mine = probes(log, arm)
        k = ks.statistic([r.ttft_s for r in mine], fresh)
        figs[f"{key(arm)}_samples"] = Fraction(len(mine))
        figs[f"{key(arm)}_cached_hits"] = Fraction(sum((r.cached_tokens or 0) > 0 for r in mine))
        if arm != "fresh":
            figs[f"{key(arm)}_ks"] = Fraction(k, len(mine) * len(fresh))
            figs[f"{key(arm)}_p_value"] = ks.p_value(len(mine), len(fresh), k)
    m, n = len(probes(log, "cross")), len(fresh)
    k_crit = ks.critical(m, n, alpha)
    figs["ks_critical"] = Fraction(k_crit, m * n)
    figs["power"] = ks.power([r.ttft_s for r in probes(log, "own")], fresh, m, n, k_crit, h.power_sims, h.seed)
    figs["cross_rate_upper"] = clopper_pearson_upper(int(figs["cross_cached_hits"]), m, Fraction(h.confidence))
    figs["timing_signal"] = Fraction(int(figs["own_p_value"] <= alpha))
    detected = [p for p in h.prefixes if _told_apart(figs, f"prefix_{p}")]
    figs["smallest_prefix_detected"] = Fraction(detected[0] if detected else 0)
    figs["cross_detected"] = Fraction(int(_told_apart(figs, "cross")))
    return figs


def _told_apart(figs: Mapping[str, Fraction], k: str) -> bool:
    """An arm's probes differ from fresh ones: by timing (where the server shows a timing signal) or by
    the counter (where it reports one)."""
    timing = figs["own_p_value"] <= figs["alpha"] and figs[f"{k}_p_value"] <= figs["alpha"]
    return timing or bool(figs["counter_reported"] and figs[f"{k}_cached_hits"])


def unchecked(figs: Mapping[str, Fraction]) -> list[str]:
    """Why the audit could not check for cross-tenant reuse (empty when it could)."""
    out = []
    if not figs["timing_signal"] and not (figs["counter_reported"] and figs["own_cached_hits"]):
        out.append(f"no signal: the tenant's own repeat was not told apart from a fresh prompt (KS p = "
                   f"{float(figs['own_p_value']):.6f} > alpha {float(figs['alpha'])}"
                   + (", and the server reported no cached tokens for it)" if figs["counter_reported"]
                      else "; the server reports no cached-token counts)"))
    if figs["counter_reported"] and figs["fresh_cached_hits"]:
        out.append(f"control failed: {figs['fresh_cached_hits']} fresh prompts were reported served from cache")
    return out


def ttft_medians_ms(log: AuditLog) -> dict[str, float]:
    """Each arm's median probe time to first token, in ms (for people; not a certificate figure)."""
    return {arm: round(median(r.ttft_s for r in mine) * 1000, 2)
            for arm in arms(log.header) if (mine := probes(log, arm))}
