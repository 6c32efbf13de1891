"""``pycert leak run``: the five arms of :mod:`pycert.leak.observation` on a real engine, recorded.

The prompts are seeded: ``random.Random(seed)`` draws each prompt's length uniformly from
``min_tokens..max_tokens`` (544..784 by default, like the published run) and its token ids uniformly
from the engine's vocabulary. For every arm and prompt the engine's cache is emptied, the prime is
sent and then the probe, one after another, each through the admission layer or around it as the
arm says. The admission layer under test is a parameter, so a planted defect can replace it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pycert.core.errors import Rejection
from pycert.leak.admission import (
    FIRST_ID,
    Admission,
    EngineRequest,
    TenantRequest,
    UnkeyedAdmission,
    unkeyed_salt,
)
from pycert.leak.engines import Engine
from pycert.leak.log import Header, Log, Request, SaltKind, served_fields
from pycert.leak.observation import ARMS, TENANT_A

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Plan:
    """What a run asks for; the header records it beside what the engine says about itself."""

    prompts: int = 12
    seed: int = 0
    min_tokens: int = 544
    max_tokens: int = 784
    confidence: str = "0.95"
    underpowered_above: str = "0.05"


def make_prompts(plan: Plan, vocab: int, first_id: int = FIRST_ID) -> list[list[int]]:
    rng = random.Random(plan.seed)
    return [[rng.randrange(first_id, vocab) for _ in range(rng.randint(plan.min_tokens, plan.max_tokens))]
            for _ in range(plan.prompts)]


def engine_request(salt: SaltKind, tenant: str, tokens: Sequence[int], admission: Admission) -> EngineRequest:
    """The request the engine receives for one side of an arm."""
    if salt == "none":
        return EngineRequest(tuple(tokens), None)
    if salt == "keyed":
        return admission.admit(TenantRequest(tenant, tokens))
    if salt == "unkeyed":
        return UnkeyedAdmission().admit(TenantRequest(tenant, tokens))
    # the attacker sets the salt field himself, to the victim's salt under the unkeyed scheme
    return EngineRequest(tuple(tokens), unkeyed_salt(TENANT_A))


def header(engine: Engine, plan: Plan) -> Header:
    return Header(engine=engine.name, engine_version=engine.version, model=engine.model, device=engine.device,
                  seed=plan.seed, prompts=plan.prompts, min_tokens=plan.min_tokens, max_tokens=plan.max_tokens,
                  page_size=engine.page_size, salt_form=engine.salt_form, confidence=plan.confidence,
                  underpowered_above=plan.underpowered_above)


def run_arms(engine: Engine, plan: Plan, admission: Admission, progress: Progress = lambda _m: None) -> Log:
    prompts = make_prompts(plan, engine.vocab)
    records: list[Request] = []
    for arm in ARMS:
        for p, tokens in enumerate(prompts):
            engine.empty_cache()
            for role, (tenant, salt) in (("prime", arm.prime), ("probe", arm.probe)):
                req = engine_request(salt, tenant, tokens, admission)
                records.append(Request(arm=arm.name, prompt=p, role=role, tenant=tenant, salt=salt,
                                       **served_fields(engine, req)))
            progress(f"{arm.name:17} prompt {p + 1:>3}/{plan.prompts}: {len(tokens)} tokens, probe served "
                     f"{records[-1].cached_tokens} from cache")
    return Log(header=header(engine, plan), requests=tuple(records))


def replay_differences(recorded: Log, again: Log) -> list[Rejection]:
    """Where a re-run on the recorded settings disagrees with the log: the prompts (their digests),
    and each request's cached tokens. Times to first token are measurements of the moment and are
    not compared."""
    out = []
    h0, h1 = recorded.header, again.header
    for field in ("engine", "model", "device", "seed", "prompts", "min_tokens", "max_tokens", "page_size", "salt_form"):
        if getattr(h0, field) != getattr(h1, field):
            out.append(Rejection.mismatch(f"header.{field}", str(getattr(h0, field)), str(getattr(h1, field))))
    for i, (a, b) in enumerate(zip(recorded.requests, again.requests), 2):
        where = f"log line {i} ({a.arm}, prompt {a.prompt}, {a.role})"
        if a.prompt_sha256 != b.prompt_sha256:
            out.append(Rejection.mismatch(f"{where}.prompt_sha256", a.prompt_sha256, b.prompt_sha256))
        elif a.cached_tokens != b.cached_tokens:
            out.append(Rejection.mismatch(f"{where}.cached_tokens", str(a.cached_tokens), str(b.cached_tokens)))
    if len(recorded.requests) != len(again.requests):
        out.append(Rejection.mismatch("requests", str(len(recorded.requests)), str(len(again.requests))))
    return out
