"""The leak and its closure, observed (``pycert leak run``): figures per arm from a recorded
per-request log, evidence ``observed``, the exact Clopper-Pearson bound on the residual rate.

Every figure and check is a pure function of the log (:mod:`pycert.leak.observation`); this module
is the claim, which names them for a certificate; :mod:`pycert.families.leak.produce` certifies every
log under the certificate directory's ``inputs/leak-*.jsonl`` (``pycert prove leak``, and ``all``);
``pycert leak run`` records one there first. The family has no Lean instance: its figures are
``observed``, and the theorems it names are the isolation floor's, for the admission state it used.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Literal

from pydantic import Field

from pycert.core.errors import Rejection
from pycert.core.limits import MAX_JSON_BYTES
from pycert.core.schema import Certificate, InputFile, Params
from pycert.families.base import Claim, Reader, input_path
from pycert.families.observations import ISOLATION_MODULE, ISOLATION_THEOREMS, THEOREMS_LIMIT, held_to
from pycert.leak import log as leaklog
from pycert.leak.observation import ARMS, arm_figures, closure_rejections, structure_rejections
from pycert.leak.stats import trials_needed

LOG_GLOB = "leak-*.jsonl"


class LeakParams(Params):
    engine: leaklog.Text
    engine_version: leaklog.Text
    model: leaklog.ModelName
    device: leaklog.Device
    seed: int = Field(ge=-(1 << 63), le=(1 << 63) - 1)
    prompts: int = Field(ge=1, le=leaklog.MAX_PROMPTS)
    min_tokens: int = Field(ge=1, le=leaklog.MAX_PROMPT_TOKENS)
    max_tokens: int = Field(ge=1, le=leaklog.MAX_PROMPT_TOKENS)
    confidence: leaklog.Level
    underpowered_above: leaklog.Level

    @classmethod
    def of(cls, h: leaklog.Header) -> LeakParams:
        return cls(**{name: getattr(h, name) for name in cls.model_fields})


class LeakCertificate(Certificate):
    """A certificate of the leak family."""

    family: Literal["leak"]
    parameters: LeakParams


def log_figures(log: leaklog.Log) -> tuple[dict[str, Fraction], list[Rejection]]:
    """The figures of a log and why it does not show the closure (structure first: a log that is not
    the run of the five arms has no meaningful figures)."""
    if bad := structure_rejections(log):
        return {}, bad
    figures = arm_figures(log)
    return figures, closure_rejections(log, figures)


def headline(figures: Mapping[str, Fraction]) -> str:
    return (f"{figures['keyed_cross_hits']} of {figures['keyed_cross_requests']} cross-tenant under the salt, "
            f"bound {float(figures['residual_rate_upper']):.6f}")


def sentence(p: LeakParams, f: Mapping[str, Fraction]) -> str:
    k = f["keyed_cross_requests"]
    power = f", underpowered above {p.underpowered_above}" if f["underpowered"] else ""
    return (f"On {p.engine} ({p.engine_version}) with a {p.model} on {p.device}, seed {p.seed}, {p.prompts} prompts "
            f"of {p.min_tokens}-{p.max_tokens} tokens: without a salt tenant B was served tenant A's cached blocks "
            f"on {f['unsalted_cross_hits']} of {f['unsalted_cross_requests']} prompts "
            f"({f['unsalted_cross_cached_tokens']} tokens); with a keyed per-tenant salt bound at admission, on "
            f"{f['keyed_cross_hits']} of {k} (exact one-sided Clopper-Pearson {p.confidence} upper bound "
            f"{float(f['residual_rate_upper']):.6f} on the residual rate{power}), while tenant A's own reuse held on "
            f"{f['keyed_own_hits']} of {f['keyed_own_requests']} ({f['keyed_own_cached_tokens']} tokens); an attacker "
            f"who knew an unkeyed salt scheme read {f['attacker_unkeyed_cached_tokens']} tokens under it and "
            f"{f['attacker_keyed_cached_tokens']} under the keyed one.")


OBSERVED = "the engine's own cached-token count for each request, summed from the per-request log"


class Leak(Claim):
    name = "leak"
    params = LeakParams
    certificate = LeakCertificate
    lean_module = ISOLATION_MODULE
    primary = ("log",)
    input_limits = {"log": MAX_JSON_BYTES}
    theorem_names = ISOLATION_THEOREMS
    limits = (
        "This is an observation, not a proof: one engine, model, device and seed, the prompts of the log, sent "
        "one at a time; another engine, model, prompt mix, concurrency or eviction may behave otherwise.",
        "Zero cross-tenant hits in n trials bounds the residual rate (exact Clopper-Pearson, at the stated "
        "confidence); it does not show that the rate is zero. The rule-of-three figure 3/n is an approximation "
        "reported beside it, not the bound.",
        "The cached-token counts are what the engine reports (transformers: the return value of "
        "PagedAttentionCache.search_prefix_match; vLLM: usage.prompt_tokens_details.cached_tokens); pycert does "
        "not inspect the KV blocks themselves.",
        "The salt is a namespace separator, not encryption: the engine's operator sees every prompt, a tenant who "
        "learns the server secret can compute every salt, and signals other than shared cache blocks are not "
        "measured.",
        THEOREMS_LIMIT,
        "Each arm's cache was emptied before every prompt, so a probe could match only its prime's blocks; "
        "interleaved traffic from many tenants is not measured.",
    )
    evidence_of = {
        **{f"{a.key}_{what}": ("observed", OBSERVED) for a in ARMS for what in ("hits", "cached_tokens")},
        **{f"{a.key}_requests": ("observed", "probe requests of the arm in the per-request log") for a in ARMS},
        "prime_cached_tokens": ("observed", OBSERVED + ", over the prime requests (0: each began from an empty cache)"),
        "residual_rate_upper": ("computed", "exact one-sided Clopper-Pearson upper limit of keyed_cross_hits in "
                                            "keyed_cross_requests at the log's confidence, rounded up to 1e-6 "
                                            "(pycert.leak.stats, integer arithmetic)"),
        "rule_of_three": ("computed", "3 / keyed_cross_requests: the rule-of-three approximation, not the bound"),
        "underpowered": ("computed", "1 when residual_rate_upper exceeds the log's underpowered_above level"),
    }

    def sentence(self, params: LeakParams, figures: Mapping[str, Fraction], inputs: Sequence[InputFile]) -> str:
        return sentence(params, figures)

    def does_not_prove(self, params: LeakParams, figures: Mapping[str, Fraction],
                       inputs: Sequence[InputFile]) -> tuple[str, ...]:
        if not figures.get("underpowered"):
            return self.limits
        level, conf = Fraction(params.underpowered_above), Fraction(params.confidence)
        return (*self.limits,
                f"Underpowered: the bound is above the level {params.underpowered_above} set for this run; a zero "
                f"in {trials_needed(level, conf)} or more prompts would bring it to that level.")

    def figures(self, params: LeakParams, kernel: Mapping[str, int], inputs: Sequence[InputFile],
                read: Reader) -> dict[str, Fraction]:
        """Every figure from the recorded log alone; a header that says other parameters is rejected."""
        log = leaklog.read(input_path(inputs, "log", read))
        return held_to(params, LeakParams.of(log.header), *log_figures(log))


CLAIM = Leak()


def log_path(out_dir: Path, stem: str) -> Path:
    """Where ``pycert leak run`` records a log for ``pycert prove leak`` to certify."""
    return out_dir / "inputs" / f"{stem}.jsonl"
