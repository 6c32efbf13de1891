"""A black-box audit of a live server for cross-tenant prefix-cache reuse (``pycert leak audit``):
figures from its recorded log, evidence ``observed`` or ``computed``.

Every figure and verdict is a pure function of the log (:mod:`pycert.leak.audit_figures`); verify lays
the plan out again from the header (the prompts' digests, the shuffled order, the tenants) and holds
the log to it before it re-derives a figure. A log whose audit was *not checked* (no signal, a failed
control) is never certified. Like the ``leak`` family it names the isolation theorems, for what a
manager without per-tenant state must do, and has no Lean instance.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Literal

from pydantic import Field

from pycert.core.errors import Rejection
from pycert.core.gate import Source, named
from pycert.core.limits import MAX_JSON_BYTES
from pycert.core.schema import Certificate, InputFile, Params
from pycert.families.base import Claim, Reader, input_path
from pycert.families.observations import ISOLATION_MODULE, ISOLATION_THEOREMS, THEOREMS_LIMIT, held_to
from pycert.leak import audit_figures
from pycert.leak import log as leaklog
from pycert.leak.audit_plan import MAX_SAMPLES, MAX_TOKENS, AuditHeader, AuditLine, AuditLog

LOG_GLOB = "audit-*.jsonl"


class AuditParams(Params):
    model: str = Field(min_length=1, max_length=300, pattern=r"^[^\n]+$")
    server: str = Field(min_length=1, max_length=300, pattern=r"^[^\n]+$")
    tenants: tuple[str, str] = Field(strict=False)
    seed: int = Field(ge=0, le=(1 << 63) - 1)
    samples: int = Field(ge=2, le=MAX_SAMPLES)
    prefix_samples: int = Field(ge=0, le=MAX_SAMPLES)
    prefixes: tuple[int, ...] = Field(max_length=16, strict=False)
    min_tokens: int = Field(ge=2, le=MAX_TOKENS)
    max_tokens: int = Field(ge=2, le=MAX_TOKENS)
    vocab: int = Field(ge=18, le=1 << 24)
    alpha: leaklog.Level
    confidence: leaklog.Level
    power_sims: int = Field(ge=1, le=100_000)

    @classmethod
    def of(cls, h: AuditHeader) -> AuditParams:
        return cls(**{name: getattr(h, name) for name in cls.model_fields})


class AuditCertificate(Certificate):
    family: Literal["leak-audit"]
    parameters: AuditParams


def read(source: Source | Path) -> AuditLog:
    """The audit log in a certificate directory (:func:`pycert.core.gate.inside`) or at a path pycert wrote,
    through the gate (a regular file of at most :data:`~pycert.core.limits.MAX_JSON_BYTES`)."""
    source = source if isinstance(source, Source) else named(source)
    header, lines = leaklog.parse_lines(source.read("an audit log", MAX_JSON_BYTES), str(source), AuditHeader,
                                        AuditLine, "an audit log")
    return AuditLog(header=header, requests=tuple(lines))


def log_figures(log: AuditLog) -> tuple[dict[str, Fraction], list[Rejection]]:
    """The figures of a log, and why it cannot be certified (not the plan; not checked)."""
    if bad := audit_figures.structure_rejections(log):
        return {}, bad
    figures = audit_figures.figures(log)
    return figures, [Rejection(subject="audit", reason="not-checked", detail=why)
                     for why in audit_figures.unchecked(figures)]


def headline(f: Mapping[str, Fraction]) -> str:
    return (f"cross-tenant reuse {'DETECTED' if f['cross_detected'] else 'not detected'}: KS p "
            f"{float(f['cross_p_value']):.6f}, own p {float(f['own_p_value']):.6f}, power {float(f['power']):.3f}")


def sentence(p: AuditParams, f: Mapping[str, Fraction]) -> str:
    a, b = p.tenants
    told = "was told apart" if f["cross_detected"] else "was not told apart"
    counter = (f"the server reported cached tokens on {f['cross_cached_hits']} of {f['cross_samples']} of {b}'s probes "
               f"(exact one-sided Clopper-Pearson {p.confidence} upper bound {float(f['cross_rate_upper']):.6f} on "
               f"the rate), on {f['own_cached_hits']} of {f['own_samples']} of {a}'s own repeats and on "
               f"{f['fresh_cached_hits']} of {f['fresh_samples']} fresh prompts"
               if f["counter_reported"] else "the server reported no cached-token counts")
    signal = "" if f["timing_signal"] else ", above alpha: at this size timing alone shows no signal"
    prefix = (f"{f['smallest_prefix_detected']} tokens" if f["smallest_prefix_detected"] else "none")
    return (f"Through the endpoint serving {p.model} ({p.server}), in {p.samples} shuffled samples an arm (seed {p.seed}, "
            f"prompts of {p.min_tokens}-{p.max_tokens} token ids, each sent once by tenant {a} first), tenant {b}'s "
            f"repeat of {a}'s prompt {told} from a fresh prompt (cross-tenant reuse "
            f"{'detected' if f['cross_detected'] else 'not detected'}): two-sample Kolmogorov-Smirnov on time to first "
            f"token at alpha {p.alpha}, D = {float(f['cross_ks']):.4f}, p = {float(f['cross_p_value']):.6f}, power "
            f"{float(f['power']):.3f} against a shift as large as {a}'s own reuse (D = {float(f['own_ks']):.4f}, "
            f"p = {float(f['own_p_value']):.6f}{signal}); {counter}; the smallest shared prefix told apart from a fresh "
            f"prompt among {', '.join(map(str, p.prefixes)) or 'no'} tokens: {prefix}.")


OBSERVED = "counted over the probes of the audit log, as the server reported them"


class LeakAudit(Claim):
    name = "leak-audit"
    params = AuditParams
    certificate = AuditCertificate
    lean_module = ISOLATION_MODULE
    primary = ("log",)
    theorem_names = ISOLATION_THEOREMS
    limits = (
        "This is an observation of one server at one time, not a proof: other traffic, load, prompts, tenants or "
        "a restart may behave otherwise; the server is named only by the model it served and what its /version said.",
        "Not told apart is not absent: a leak smaller than the test's power at this sample size, or one the "
        "auditor's clock cannot see, goes undetected. The power figure is a simulation from the measured own-repeat "
        "and fresh times, not a guarantee.",
        "The KS test is two-sided: a cross-tenant arm slower than the fresh one counts as detected too. Its "
        "p-value assumes no ties between the samples; ties only make the true p-value smaller.",
        "Only two tenants, their whole prompts and the listed shared-prefix lengths were tried, each probe right "
        "after its prime; a leak through a shorter prefix, after eviction, or between other tenants is not measured.",
        "The cached-token counts are what the server wrote in usage.prompt_tokens_details.cached_tokens; a request "
        "without the field counts 0 when any request had it (vLLM leaves it out at 0). pycert reads nothing inside "
        "the server.",
        THEOREMS_LIMIT,
    )
    evidence_of = {
        **{f"{a}_cached_hits": ("observed", OBSERVED) for a in ("own", "cross", "fresh")},
        **{f"{a}_samples": ("observed", "probe requests of the arm in the audit log") for a in ("own", "cross", "fresh")},
        "counter_reported": ("observed", "1 when the server wrote usage.prompt_tokens_details.cached_tokens on any "
                                         "request of the log"),
        "alpha": ("computed", "the level of the KS tests, from the log's header"),
        "ks_critical": ("computed", "the smallest D the exact two-sided KS test detects at alpha for the cross and "
                                    "fresh sample sizes (pycert.leak.ks.critical, integer lattice-path counts)"),
        "power": ("computed", "share of power_sims resampled KS tests (random.Random(seed).choices of the own-repeat "
                              "and fresh times, at the cross and fresh sizes) that reach ks_critical"),
        "cross_rate_upper": ("computed", "exact one-sided Clopper-Pearson upper limit of cross_cached_hits in "
                                         "cross_samples at the log's confidence, rounded up to 1e-6"),
        "timing_signal": ("computed", "1 when own_p_value <= alpha"),
        "cross_detected": ("computed", "1 when cross is told apart from fresh: by timing given the timing signal, or "
                                       "by a cached-token hit"),
        "smallest_prefix_detected": ("computed", "the smallest prefix length whose arm is told apart from fresh "
                                                 "(0: none)"),
    }

    def evidence(self, name: str, solver: object, params: Params | None = None) -> tuple[str, str]:  # type: ignore[override]
        if name.endswith("_ks"):
            return "computed", "two-sample KS statistic D of the arm's probe times against the fresh probes', exact"
        if name.endswith("_p_value"):
            return "computed", ("exact two-sided KS p-value of D (pycert.leak.ks.p_value: lattice paths counted as "
                                "integers), rounded up to 1e-6")
        if name.startswith("prefix_"):
            return "observed", OBSERVED if name.endswith("_cached_hits") else "probe requests of the arm in the audit log"
        return self.evidence_of[name]

    def sentence(self, params: AuditParams, figures: Mapping[str, Fraction], inputs: Sequence[InputFile]) -> str:
        return sentence(params, figures)

    def figures(self, params: AuditParams, kernel: Mapping[str, int], inputs: Sequence[InputFile],
                read_: Reader) -> dict[str, Fraction]:
        log = read(input_path(inputs, "log", read_))
        return held_to(params, AuditParams.of(log.header), *log_figures(log))


CLAIM = LeakAudit()
