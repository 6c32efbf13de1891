"""The first-touch dataset's measurements on a real engine, and their per-request log.

For each workload (a prompt, and what pre-warms the store for it) the engine's cache is emptied before
each arm, and the requests of the arm go one after another:

===========  ====================================================  ===================================
arm          requests                                              what it measures
===========  ====================================================  ===================================
``cold``     the probe prompt                                      prefill with no pooling (cold cache)
``pooled``   the pre-warm prompt, then the probe prompt             prefill with the store pre-warmed
``tenants``  A's prime, B's probe, A's repeat, each under its      cross-tenant reuse under the salt,
             tenant's keyed salt (the probe prompt each time)      and A's own reuse as the control
===========  ====================================================  ===================================

**What "another instance of the pool" is here.** transformers' engine has no external KV store, so the
pool is realised as one engine whose paged cache stands for the pooled store, shared by every instance:
the pre-warm request is another client's (another instance's) request for the same prompt, in the same
namespace, and the measured request is the first this client sends. Nothing else is shared: the two
requests have their own request ids and the engine decides the reuse itself.

**Why the cut arms are unsalted.** This engine takes a salt only as tokens prepended to the prompt,
which would move every block boundary by the salt's length; vLLM's ``cache_salt`` enters the first
block's hash and adds no token. The ``cold`` and ``pooled`` arms run in one namespace without a salt,
so the prompt's blocks start at its first token as they would behind a salt field; the ``tenants`` arm
runs every request through the admission layer (:mod:`pycert.leak.admission`).

Workloads whose figures come from a trace rather than the engine (the Mooncake rows) run the
``tenants`` arm only (``cut=False``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pycert.core.errors import Rejection
from pycert.core.gate import Source, named
from pycert.core.limits import MAX_JSON_BYTES
from pycert.leak.admission import FIRST_ID, Admission, EngineRequest, TenantRequest
from pycert.leak.engines import Engine
from pycert.leak.log import (
    MAX_PROMPT_TOKENS,
    Device,
    LogLine,
    ModelName,
    Text,
    parse_lines,
    render_lines,
    served_fields,
)

LOG_SCHEMA = "pycert-first-touch-log/1"
WORKLOAD_ID = r"^(synthetic|mooncake)-[0-9]{3}$"
POOL, TENANT_A, TENANT_B = "pool", "tenant-a", "tenant-b"
MAX_WORKLOADS = 999
MAX_RAMP_BLOCKS = 64

FtArm = Literal["cold", "pooled", "tenants"]
FtRole = Literal["probe", "prewarm", "prime", "cross", "own"]

SEQUENCE: dict[FtArm, tuple[tuple[FtRole, str, Literal["none", "keyed"], Literal["prewarm", "probe"]], ...]] = {
    "cold": (("probe", POOL, "none", "probe"),),
    "pooled": (("prewarm", POOL, "none", "prewarm"), ("probe", POOL, "none", "probe")),
    "tenants": (("prime", TENANT_A, "keyed", "probe"), ("cross", TENANT_B, "keyed", "probe"),
                ("own", TENANT_A, "keyed", "probe")),
}
"""Each arm's requests in order: role, tenant, salt, and which of the workload's prompts it sends."""

Progress = Callable[[str], None]


class FtHeader(LogLine):
    """What the measurements were taken on."""

    kind: Literal["header"] = "header"
    schema_id: Literal["pycert-first-touch-log/1"] = Field(default=LOG_SCHEMA, alias="schema")
    engine: Text
    engine_version: Text
    model: ModelName
    device: Device
    seed: int = Field(ge=0, le=(1 << 63) - 1)
    page_size: int | None = Field(default=None, ge=1, le=MAX_PROMPT_TOKENS)
    salt_form: Text
    vocab: int = Field(ge=FIRST_ID + 1, le=1 << 24, description="prompt token ids are drawn below this")
    ramp_blocks: int = Field(ge=0, le=MAX_RAMP_BLOCKS, description="the ramp's chunks (4 prompts each)")
    trace_rows: int = Field(ge=0, le=MAX_WORKLOADS, description="workloads read off the trace")
    trace: str | None = Field(default=None, max_length=255, pattern=r"^[^/\n]+$",
                              description="the trace's file name, where trace_rows > 0")
    trace_sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")

    @property
    def max_requests(self) -> int:
        """Six requests for each ramp workload (every arm), three for each trace workload (the tenants)."""
        return 6 * 4 * self.ramp_blocks + 3 * self.trace_rows


class FtRequest(LogLine):
    """One request as the engine served it."""

    kind: Literal["request"] = "request"
    workload: str = Field(pattern=WORKLOAD_ID)
    arm: FtArm
    role: FtRole
    tenant: str = Field(min_length=1, max_length=100, pattern=r"^[a-z0-9-]+$")
    salt: Literal["none", "keyed"]
    salt_id: str | None = Field(default=None, pattern=r"^[0-9a-f]{16}$")
    prompt_tokens: int = Field(ge=1, le=MAX_PROMPT_TOKENS)
    prompt_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    engine_tokens: int = Field(ge=1, le=2 * MAX_PROMPT_TOKENS)
    cached_tokens: int = Field(ge=0, le=2 * MAX_PROMPT_TOKENS)
    ttft_s: float = Field(ge=0, le=86_400)


class FtLog(BaseModel):
    model_config = ConfigDict(frozen=True)

    header: FtHeader
    requests: tuple[FtRequest, ...]


@dataclass(frozen=True)
class Workload:
    """One row's prompts: the probe (the prompt the row is about) and what pre-warms the store for it."""

    id: str
    probe: tuple[int, ...]
    prewarm: tuple[int, ...]
    cut: bool
    """Whether the engine measures the cut (the ``cold`` and ``pooled`` arms) or only the tenants."""

    def arms(self) -> tuple[FtArm, ...]:
        return ("cold", "pooled", "tenants") if self.cut else ("tenants",)


@dataclass(frozen=True)
class Plan:
    """What a run measures, beside what the engine says about itself: the log's header records both."""

    seed: int
    ramp_blocks: int
    trace_rows: int = 0
    trace: str | None = None
    trace_sha256: str | None = None


def run_workloads(engine: Engine, plan: Plan, workloads: Sequence[Workload], admission: Admission,
                  progress: Progress = lambda _m: None) -> FtLog:
    records = []
    for k, w in enumerate(workloads, 1):
        for arm in w.arms():
            engine.empty_cache()
            for role, tenant, salt, which in SEQUENCE[arm]:
                tokens = w.probe if which == "probe" else w.prewarm
                req = admission.admit(TenantRequest(tenant, tokens)) if salt == "keyed" else EngineRequest(tokens, None)
                records.append(FtRequest(workload=w.id, arm=arm, role=role, tenant=tenant, salt=salt,
                                         **served_fields(engine, req)))
        progress(f"{w.id} ({k}/{len(workloads)}): {len(w.probe)} tokens, "
                 + ", ".join(f"{r.arm} {r.role} {r.cached_tokens}" for r in records if r.workload == w.id
                             and r.role in ("probe", "cross")))
    header = FtHeader(engine=engine.name, engine_version=engine.version, model=engine.model, device=engine.device,
                      page_size=engine.page_size, salt_form=engine.salt_form, vocab=engine.vocab,
                      **{k: getattr(plan, k) for k in ("seed", "ramp_blocks", "trace_rows", "trace", "trace_sha256")})
    return FtLog(header=header, requests=tuple(records))


@dataclass(frozen=True)
class Counts:
    """What the engine said about one workload (``None``: the arm was not run)."""

    cold: int | None
    pooled: int | None
    cross: int
    own: int


def workload_counts(log: FtLog, workload: str, probe_sha256: str, prewarm_sha256: str,
                    cut: bool) -> Counts | Rejection:
    """The counts of ``workload`` in ``log``, or why its lines are not the arms of :data:`SEQUENCE` on
    the prompts whose digests are given (in order, each salt as the arm says, every first request of an
    arm served from an empty cache)."""
    mine = [r for r in log.requests if r.workload == workload]
    want = [(arm, *step) for arm in Workload(workload, (), (), cut).arms() for step in SEQUENCE[arm]]
    subject = f"log workload {workload}"
    if len(mine) != len(want):
        return Rejection.mismatch(subject, f"{len(want)} requests (the arms {', '.join(dict.fromkeys(a for a, *_ in want))})",
                                  str(len(mine)))
    got: dict[tuple[str, str], int] = {}
    for r, (arm, role, tenant, salt, which) in zip(mine, want, strict=True):
        where = f"{subject} ({arm} {role})"
        if (r.arm, r.role, r.tenant, r.salt) != (arm, role, tenant, salt):
            return Rejection.mismatch(where, f"{arm} {role} from {tenant}, salt {salt}",
                                      f"{r.arm} {r.role} from {r.tenant}, salt {r.salt}")
        digest = probe_sha256 if which == "probe" else prewarm_sha256
        if r.prompt_sha256 != digest:
            return Rejection.mismatch(f"{where}.prompt_sha256", f"{digest} (the {which} prompt)", r.prompt_sha256)
        if (r.salt_id is None) != (salt == "none"):
            return Rejection.mismatch(f"{where}.salt_id", "a salt" if salt == "keyed" else "none", str(r.salt_id))
        got[(arm, role)] = r.cached_tokens
    first = [(arm, SEQUENCE[arm][0][0]) for arm in dict.fromkeys(a for a, *_ in want)]
    if busy := [k for k in first if got[k] != 0]:
        return Rejection.mismatch(f"{subject} ({busy[0][0]} {busy[0][1]}).cached_tokens",
                                  "0 (the first request after the cache was emptied)", str(got[busy[0]]))
    salts = {r.role: r.salt_id for r in mine if r.arm == "tenants"}
    if salts["prime"] != salts["own"] or salts["prime"] == salts["cross"]:
        return Rejection.mismatch(f"{subject} (tenants).salt_id", "the prime's salt on the own repeat and another "
                                  "on the cross probe", f"prime {salts['prime']}, cross {salts['cross']}, own {salts['own']}")
    return Counts(cold=got.get(("cold", "probe")), pooled=got.get(("pooled", "probe")),
                  cross=got[("tenants", "cross")], own=got[("tenants", "own")])


def replay_differences(recorded: FtLog, again: FtLog) -> list[Rejection]:
    """Where a re-run disagrees with the recorded log: the settings, then each request's prompt and cached
    count (times to first token and salts, fresh each run, are not compared)."""
    out = []
    for field in ("engine", "model", "device", "page_size", "salt_form", "vocab", "seed", "ramp_blocks", "trace_rows",
                  "trace_sha256"):
        if (a := getattr(recorded.header, field)) != (b := getattr(again.header, field)):
            out.append(Rejection.mismatch(f"log header.{field}", str(b), str(a)))
    for i, (a, b) in enumerate(zip(recorded.requests, again.requests, strict=False), 2):
        where = f"log line {i} ({a.workload} {a.arm} {a.role})"
        if (a.workload, a.arm, a.role, a.prompt_sha256) != (b.workload, b.arm, b.role, b.prompt_sha256):
            out.append(Rejection.mismatch(f"{where}: the request", f"{b.workload} {b.arm} {b.role} {b.prompt_sha256[:16]}",
                                          f"{a.workload} {a.arm} {a.role} {a.prompt_sha256[:16]}"))
        elif a.cached_tokens != b.cached_tokens:
            out.append(Rejection.mismatch(f"{where}.cached_tokens", f"{b.cached_tokens} (the engine, again)",
                                          f"{a.cached_tokens} (recorded)"))
    if len(recorded.requests) != len(again.requests):
        out.append(Rejection.mismatch("log requests", str(len(again.requests)), str(len(recorded.requests))))
    return out


def render(log: FtLog) -> bytes:
    return render_lines(log.header, log.requests)


def parse(data: bytes, where: str) -> FtLog:
    header, requests = parse_lines(data, where, FtHeader, FtRequest, "a first-touch log")
    return FtLog(header=header, requests=tuple(requests))


def read(source: Source | Path) -> FtLog:
    """The log in a dataset's directory (:func:`pycert.core.gate.inside`) or at a path pycert wrote."""
    source = source if isinstance(source, Source) else named(source)
    return parse(source.read("a first-touch log", MAX_JSON_BYTES), str(source))
