"""The black-box audit's plan and log (``pycert leak audit``): what is sent, in which order, and what
each answer was. Everything here is a pure function of the header, so verify can lay the plan out
again and hold the log to it.

**Arms.** Every sample is one *unit*: tenant A sends a prompt (the prime), then one probe follows:

===============  ==========================================================  =======================
arm              probe                                                       what it must show
===============  ==========================================================  =======================
``own``          A sends the prime's prompt again                            a hit (the signal)
``cross``        B sends the prime's prompt                                  no hit (the audit)
``fresh``        B sends a prompt nobody sent before                         a miss (the baseline)
``prefix-L``     A sends the prime's first L tokens and a fresh tail         the audit's resolution
===============  ==========================================================  =======================

Every prompt is drawn fresh (``random.Random(seed)``: lengths uniform in ``min_tokens..max_tokens``,
ids uniform in ``16..vocab - 1``; a probe is as long as its prime, in every arm, so that no arm differs
from ``fresh`` by its length: a first version drew ``prefix-L`` prompts at ``max_tokens`` and the
two-sided test told a 16-token prefix apart from fresh prompts by length alone), so a probe can only
find in the cache what its own prime left: no reset of the server's cache is needed.
The units are shuffled (``random.Random(seed + 1)``), as the published method does (Gu et al., ICML
2025: hit and miss procedures in random order), so drift in the server's speed falls on every arm alike.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from pycert.leak.admission import FIRST_ID
from pycert.leak.log import Level, prompt_digest

AUDIT_SCHEMA = "pycert-audit-log/1"
MAX_SAMPLES = 5_000
MAX_TOKENS = 1 << 16
Role = Literal["prime", "probe"]
BASE_ARMS = ("own", "cross", "fresh")
GENERATED = 2
"""Tokens asked of every request: a request with one leaves nothing to share on transformers' engine
(docs/engine-measured.md), and the second token costs one decode step."""


class _Line(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, populate_by_name=True)


class AuditHeader(_Line):
    """What the audit asked for, and what the server said it was."""

    kind: Literal["header"] = "header"
    schema_id: Literal["pycert-audit-log/1"] = Field(default=AUDIT_SCHEMA, alias="schema")
    model: str = Field(min_length=1, max_length=300, pattern=r"^[^\n]+$", description="the served model's id")
    server: str = Field(min_length=1, max_length=300, pattern=r"^[^\n]+$",
                        description="what the server's /version said (or that it said nothing)")
    tenants: tuple[str, str] = Field(strict=False, description="tenant A (primes, own) and tenant B (cross, fresh)")
    seed: int = Field(ge=0, le=(1 << 63) - 1)
    samples: int = Field(ge=2, le=MAX_SAMPLES, description="units per arm of own, cross, fresh")
    prefix_samples: int = Field(ge=0, le=MAX_SAMPLES, description="units per prefix length")
    prefixes: tuple[int, ...] = Field(default=(), max_length=16, strict=False, description="shared prefix lengths, increasing")
    min_tokens: int = Field(ge=2, le=MAX_TOKENS)
    max_tokens: int = Field(ge=2, le=MAX_TOKENS)
    vocab: int = Field(ge=FIRST_ID + 2, le=1 << 24)
    alpha: Level = "0.01"
    confidence: Level = "0.95"
    power_sims: int = Field(default=1000, ge=1, le=100_000)

    @field_validator("tenants")
    @classmethod
    def _two(cls, v: tuple[str, str]) -> tuple[str, str]:
        if v[0] == v[1]:
            raise ValueError("tenants A and B must differ")
        return v

    @property
    def max_requests(self) -> int:
        """A prime and a probe for every unit of every arm."""
        return 2 * (3 * self.samples + len(self.prefixes) * self.prefix_samples)

    @model_validator(mode="after")
    def _shape(self) -> AuditHeader:
        if self.min_tokens > self.max_tokens:
            raise ValueError(f"min_tokens {self.min_tokens} exceeds max_tokens {self.max_tokens}")
        if list(self.prefixes) != sorted(set(self.prefixes)) or any(not 0 < p < self.min_tokens for p in self.prefixes):
            raise ValueError(f"prefixes must increase and lie in 1..{self.min_tokens - 1} (below the shortest prompt)")
        return self


class AuditLine(_Line):
    """One request as sent and answered."""

    kind: Literal["request"] = "request"
    unit: int = Field(ge=0, lt=4 * MAX_SAMPLES + 16 * MAX_SAMPLES)
    arm: str = Field(pattern=r"^(own|cross|fresh|prefix-[0-9]+)$")
    role: Role
    tenant: str = Field(min_length=1, max_length=64)
    prompt_tokens: int = Field(ge=1, le=MAX_TOKENS)
    shared_tokens: int = Field(ge=0, le=MAX_TOKENS, description="leading tokens the probe shares with its prime")
    prompt_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    ttft_s: float = Field(ge=0, le=86_400, description="send to the first chunk with text, on the auditor's clock")
    cached_tokens: int | None = Field(default=None, ge=0, description="usage.prompt_tokens_details.cached_tokens; "
                                                                     "null where the server wrote none")
    reported_prompt_tokens: int | None = Field(default=None, ge=0, description="usage.prompt_tokens")

    @field_validator("ttft_s", mode="before")
    @classmethod
    def _number(cls, v: object) -> object:
        return float(v) if isinstance(v, int) and not isinstance(v, bool) else v


class AuditLog(BaseModel):
    model_config = ConfigDict(frozen=True)

    header: AuditHeader
    requests: tuple[AuditLine, ...]


@dataclass(frozen=True)
class Step:
    """One request of the plan."""

    unit: int
    arm: str
    role: Role
    tenant: str
    tokens: tuple[int, ...]
    shared: int


def arms(h: AuditHeader) -> list[str]:
    return [*BASE_ARMS, *(f"prefix-{p}" for p in h.prefixes)]


def plan(h: AuditHeader) -> list[Step]:
    """Every request of the audit, in the order it is sent."""
    draw = random.Random(h.seed)

    def prompt(n: int) -> tuple[int, ...]:
        return tuple(draw.randrange(FIRST_ID, h.vocab) for _ in range(n))

    units = [a for a in BASE_ARMS for _ in range(h.samples)]
    units += [f"prefix-{p}" for p in h.prefixes for _ in range(h.prefix_samples)]
    random.Random(h.seed + 1).shuffle(units)
    a, b = h.tenants
    steps: list[Step] = []
    for u, arm in enumerate(units):
        prime = prompt(draw.randint(h.min_tokens, h.max_tokens))
        if arm.startswith("prefix-"):
            shared = int(arm.removeprefix("prefix-"))
            probe, tenant = prime[:shared] + prompt(len(prime) - shared), a
        else:
            probe, tenant, shared = {"own": (prime, a, len(prime)), "cross": (prime, b, len(prime)),
                                     "fresh": (prompt(len(prime)), b, 0)}[arm]
        steps += [Step(u, arm, "prime", a, prime, 0), Step(u, arm, "probe", tenant, probe, shared)]
    return steps


def line_of(step: Step, ttft_s: float, cached: int | None, reported: int | None) -> AuditLine:
    return AuditLine(unit=step.unit, arm=step.arm, role=step.role, tenant=step.tenant, prompt_tokens=len(step.tokens),
                     shared_tokens=step.shared, prompt_sha256=prompt_digest(step.tokens), ttft_s=round(ttft_s, 6),
                     cached_tokens=cached, reported_prompt_tokens=reported)
