"""Where a fleet's hits went (``lean/Pycert/Fleet.lean``): on a trace, ``H`` hosts of ``C`` blocks behind a
routing, the reuse the workload had (the capacity-free ceiling), the pooled optimum at ``H · C`` blocks (which
bounds every fleet under every routing: the union bound), the routed optimum (the sum of the hosts' optima on
their sub-traces: the best any per-host caches do under the routing) and, with an engine, what the engine's own
cache code served on each host, observed. The differences are the waterfall: capacity loss, routing loss,
eviction loss.

The certificate rests on a composition (:mod:`pycert.lean.emit.fleet`) importing the pooled instance and one
instance per host that receives a reference, each the capacity family's (:mod:`pycert.lean.emit.capacity`, a
``module`` whose data stays home; a trace too long for one instance in pieces both ways,
:mod:`pycert.lean.emit.joints`). Its headline, ``Pycert.Fleet.CertifiedCeiling`` (``Certified`` when the pooled
trace is in pieces), carries every block figure. The per-request host list is a derived input (each request's
host, a line each); verify makes it, every sub-trace and every Lean file again from the trace and the routing.

This module is the claim; :mod:`pycert.families.fleet.produce` makes the certificates, and
:mod:`pycert.families.fleet.derive` computes what both derive from a trace.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import PurePosixPath
from typing import Literal

from pydantic import Field, field_validator, model_validator

from pycert.core.errors import Rejected, Rejection
from pycert.core.gate import Source
from pycert.core.limits import MAX_JSON_BYTES, MAX_PARAM, MAX_PIECE_REFS, MAX_SHARDS
from pycert.core.schema import Certificate, EvidenceState, InputFile, Params, SolverInfo
from pycert.families.base import Claim, Instance, Reader, Wanted, compare_inputs, input_path
from pycert.families.capacity import ADMISSION_THEOREMS, JOINT_THEOREMS, WITNESS_THEOREMS, piece_names
from pycert.families.capacity import CLAIM as CAPACITY
from pycert.families.fleet.text import CERTIFIED, CERTIFIED_CEILING, evidence_of, limits, routing_text, sentence
from pycert.families.traces import (BLOCK_IDENTITY, LEAN_DERIVED, LEAN_OUT, TraceReading, block_identity, certified,
                                    lean_ident, reading, slug)

ENCODING = "fleet-optima/1"
"""The layout: the pooled instance and the hosts' (capacity instances, or pieces both ways) and their composition
(:mod:`pycert.lean.emit.fleet`)."""
MAX_FLEET_HOSTS = 64
"""The most hosts a fleet certificate speaks of: each host is a Lean module of its own (and a few figures)."""
ROUTING_PATTERN = r"^(round-robin|cache-aware|prefix:[1-9][0-9]{0,12}|(field|hash):[A-Za-z0-9_.-]{1,64})$"
HOST_LIST = "inputs"
"""Where a certificate's host list and its engine logs go, relative to its directory."""


class EngineSetting(Params):
    """The engine each host's sub-trace was replayed on, as its replay logs' headers say."""

    engine: str = Field(min_length=1, max_length=300, pattern=r"^[^\n]+$")
    engine_version: str = Field(min_length=1, max_length=300, pattern=r"^[^\n]+$")
    model: str = Field(min_length=1, max_length=300, pattern=r"^[^\n]+$")
    device: str = Field(min_length=1, max_length=40, pattern=r"^[a-z0-9:_-]+$")
    seed: int = Field(ge=-(1 << 63), le=(1 << 63) - 1)
    block_tokens: int = Field(ge=4, le=1 << 12)
    """Tokens each trace block became in the replay (the engine's page size)."""


class FleetParams(TraceReading):
    hosts: int = Field(ge=1, le=MAX_FLEET_HOSTS)
    """``H``."""
    capacity_blocks: int = Field(ge=1, le=MAX_PARAM)
    """``C``: each host's cache holds at most this many blocks."""
    routing: str = Field(pattern=ROUTING_PATTERN)
    """How requests go to hosts (:mod:`pycert.analysis.fleet`)."""
    threshold: str | None = Field(None, pattern=r"^[0-9]{1,6}/[1-9][0-9]{0,6}$")
    """The cache-aware router's match ratio, an exact fraction; None for every other routing."""
    hosts_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """sha256 of the host list: each request's host in decimal, a newline after each."""
    pooled_pieces: int = Field(ge=1, le=MAX_SHARDS)
    """How many pieces the pooled trace is checked in (1: one instance, with the capacity-free ceiling)."""
    host_pieces: list[int] = Field(min_length=1, max_length=MAX_FLEET_HOSTS)
    """Per host: 0 (no reference routed to it), 1 (one instance) or the pieces of its sub-trace."""
    piece_refs: int | None = Field(None, ge=2, le=MAX_PIECE_REFS)
    """The piece-size limit a split was computed with (None: the default, one instance where it fits)."""
    engine: EngineSetting | None = None
    """The engine the hosts were replayed on; None: no replay."""
    lean_encoding: str

    @field_validator("host_pieces")
    @classmethod
    def _counts(cls, counts: list[int]) -> list[int]:
        if any(not 0 <= k <= MAX_SHARDS for k in counts):
            raise ValueError(f"each host's pieces are 0 to {MAX_SHARDS}")
        return counts

    @model_validator(mode="after")
    def _shape(self) -> FleetParams:
        # read before any input is looked for: these fix which files the certificate must name
        if len(self.host_pieces) != self.hosts:
            raise ValueError(f"parameters.host_pieces: one count per host ({self.hosts}), got {len(self.host_pieces)}")
        if (self.routing == "cache-aware") != (self.threshold is not None):
            raise ValueError("parameters.threshold: the match ratio exactly when the routing is cache-aware")
        if self.pooled_pieces + sum(self.host_pieces) > MAX_SHARDS:  # bounds the inputs a certificate must name
            raise ValueError(f"parameters: at most {MAX_SHARDS} pieces in all, the pooled trace's and the hosts'")
        return self


class FleetCertificate(Certificate):
    """A certificate of the fleet family."""

    family: Literal["fleet"]
    parameters: FleetParams


def routing_tag(routing: str) -> str:
    """The routing in a certificate's name: its slug, with a digest of the text where the slug loses characters
    (``field:a.b`` and ``field:a-b`` name different certificates)."""
    tag = slug(routing)
    if tag != routing.replace(":", "-").lower():
        tag += "-" + hashlib.sha256(routing.encode()).hexdigest()[:6]
    return tag


def names(trace: PurePosixPath, routing: str, hosts: int, capacity: int) -> tuple[str, str]:
    """The certificate id and the composition's Lean module for a trace, a routing, ``H`` and ``C``."""
    name, tag = slug(trace.stem), routing_tag(routing)
    return f"fleet-{name}-{tag}-h{hosts}-c{capacity}", f"Fleet{lean_ident(name)}{lean_ident(tag)}H{hosts}C{capacity}"


def pooled_module(trace: PurePosixPath, pooled_capacity: int, pieced: bool, piece_refs: int | None) -> str:
    """The pooled instance's module: the trace at ``H · C`` blocks, shared by every fleet certificate of the
    trace with that product (and, in pieces, that piece size)."""
    return f"Fleet{lean_ident(slug(trace.stem))}Pool{pooled_capacity}" + (f"R{piece_refs or MAX_PIECE_REFS}" if pieced else "")


def host_module(composition: str, host: int) -> str:
    return f"{composition}Host{host}"


def _part_paths(where: PurePosixPath, module: str, count: int) -> list[str]:
    mods = (piece_names(module, count) if count > 1 else []) + [module]
    return [(where / f"{m}.lean").as_posix() for m in mods]


def part_modules(params: FleetParams, instance: str, trace: PurePosixPath | None = None) -> list[str]:
    """The paths of the modules the composition ``instance`` imports, with their pieces, in the order a
    certificate names them: the pooled part, then each host's that receives a reference."""
    where, composition = PurePosixPath(instance).parent, PurePosixPath(instance).stem
    out = []
    if trace is not None:
        pooled = pooled_module(trace, params.hosts * params.capacity_blocks, params.pooled_pieces > 1, params.piece_refs)
        out += _part_paths(where, pooled, params.pooled_pieces)
    for k, count in enumerate(params.host_pieces):
        if count:
            out += _part_paths(where, host_module(composition, k), count)
    return out


def host_list_path(cert_id: str) -> str:
    return f"{HOST_LIST}/{cert_id}.hosts"


def log_paths(cert_id: str, params: FleetParams) -> list[str]:
    """The replay logs of the hosts that receive a reference (an engine replays requests: an empty host has none)."""
    return [f"{HOST_LIST}/{cert_id}-host{k}.jsonl" for k, count in enumerate(params.host_pieces) if count]


def ceiling_stated(params: FleetParams) -> bool:
    return params.pooled_pieces == 1


def _trace(inputs: Sequence[InputFile]) -> InputFile | None:
    return next((i for i in inputs if i.role == "trace" and i.derived_from is None), None)


class Fleet(Claim):
    name = "fleet"
    params = FleetParams
    certificate = FleetCertificate
    lean_module = "Pycert.Fleet"
    theorem_names = ("Pycert.Fleet.union_run", "Pycert.Fleet.fleet_le", "Pycert.Fleet.pooled_of",
                     "Pycert.Fleet.host_run", "Pycert.Fleet.host_fleet", "Pycert.Fleet.routed_of_optima",
                     "Pycert.Fleet.certified_of", *CAPACITY.theorem_names, *WITNESS_THEOREMS, *ADMISSION_THEOREMS)
    primary = ("trace", "log")
    input_limits = {"log": MAX_JSON_BYTES}
    headline_predicate = CERTIFIED_CEILING
    limits = limits("round-robin", 1, False)

    def predicate(self, params: FleetParams) -> str:  # type: ignore[override]
        return CERTIFIED_CEILING if ceiling_stated(params) else CERTIFIED

    def predicates(self) -> tuple[str, ...]:
        return CERTIFIED_CEILING, CERTIFIED

    def literal_names(self, params: FleetParams) -> tuple[str, ...]:  # type: ignore[override]
        h = params.hosts
        return ("refs", *(("distinct", "workload_hits") if ceiling_stated(params) else ()), "hosts", "capacity_blocks",
                "pooled_hits", *(f"host_refs_{k}" for k in range(h)), *(f"host_hits_{k}" for k in range(h)), "routed_hits")

    def library_theorems(self, params: FleetParams) -> tuple[str, ...]:
        pieced = params.pooled_pieces > 1 or any(k > 1 for k in params.host_pieces)
        return tuple(dict.fromkeys(self.theorem_names + ((*JOINT_THEOREMS,) if pieced else ()) + (
            ("Pycert.Ceiling.bounded_of_counts",) if ceiling_stated(params) else ())))

    def does_not_prove(self, params: FleetParams, figures: Mapping[str, Fraction],
                       inputs: Sequence[InputFile]) -> tuple[str, ...]:
        return tuple(block_identity(params) if line == BLOCK_IDENTITY else line
                     for line in limits(params.routing, params.pooled_pieces, params.engine is not None))

    def evidence(self, name: str, solver: SolverInfo | None,
                 params: FleetParams | None = None) -> tuple[EvidenceState, str]:  # type: ignore[override]
        return evidence_of(name)

    def sentence(self, params: FleetParams, figures: Mapping[str, Fraction], inputs: Sequence[InputFile]) -> str:
        trace = next((PurePosixPath(i.path).name for i in inputs if i.role == "trace"), "(none)")
        engine = None if params.engine is None else f"{params.engine.engine} ({params.engine.engine_version})"
        return sentence(trace, figures, routing_text(params.routing, params.threshold), engine, reading(params))

    def instance(self, params: FleetParams, primary: Sequence[InputFile]) -> Instance:
        """``lean/Fleet<Name><Routing>H<H>C<C>.lean``, or ``lean/derived/`` for a trace from outside the
        certificate directory (full-resolution data derived from it, which verify regenerates)."""
        trace = _trace(primary)
        assert trace is not None
        module = names(PurePosixPath(trace.path), params.routing, params.hosts, params.capacity_blocks)[1]
        return Instance(path=((LEAN_DERIVED if trace.external else LEAN_OUT) / f"{module}.lean").as_posix(),
                        derived_from="trace")

    def primary_count_errors(self, inputs: Sequence[InputFile]) -> list[Rejection]:
        """Exactly one trace; the engine logs (one per host, or none) are checked against the parameters."""
        n = sum(i.role == "trace" for i in self.primary_inputs(inputs))
        return [] if n == 1 else [Rejection.mismatch("inputs[role=trace]", "exactly one trace input", str(n))]

    def expected_inputs(self, params: FleetParams, inputs: Sequence[InputFile]) -> list[Wanted]:
        """The trace, the host list derived from it, each host's replay log (with an engine), the composition and
        the modules it imports, in that order."""
        trace = _trace(inputs)
        assert trace is not None
        cert = names(PurePosixPath(trace.path), params.routing, params.hosts, params.capacity_blocks)[0]
        inst = self.instance(params, [trace])
        logs = log_paths(cert, params) if params.engine is not None else []
        return [("trace", trace.path, trace.external, None), ("hosts", host_list_path(cert), False, "trace"),
                *(("log", path, False, None) for path in logs), ("lean", inst.path, False, "trace"),
                *(("lean", path, False, "trace") for path in part_modules(params, inst.path, PurePosixPath(trace.path)))]

    def required(self, params: FleetParams, inputs: Sequence[InputFile]) -> list[Rejection]:  # type: ignore[override]
        if out := self.primary_count_errors(inputs):
            return out
        return compare_inputs(self.expected_inputs(params, inputs), inputs)

    def derived_files(self, params: FleetParams, inputs: Sequence[InputFile], read: Reader) -> dict[str, bytes]:
        """The composition and every module it imports, made again from the trace and the routing."""
        from pycert.families.fleet import derive  # numpy, numba: only for a claim with a trace

        if params.lean_encoding != ENCODING:
            raise Rejected(Rejection.mismatch("parameters.lean_encoding", repr(ENCODING), repr(params.lean_encoding)))
        inst = self.instance(params, self.primary_inputs(inputs))
        return derive.files(self._split(params, inputs, read), params, inst.path,
                            PurePosixPath(_trace(inputs).path))[0]  # type: ignore[union-attr]

    def regenerate(self, params: FleetParams, inputs: Sequence[InputFile], read: Reader) -> bytes:
        inst = self.instance(params, self.primary_inputs(inputs))
        return self.derived_files(params, inputs, read)[inst.path]

    def _split(self, params: FleetParams, inputs: Sequence[InputFile], read: Reader):  # noqa: ANN202
        from pycert.families.fleet import derive  # numpy: see derived_files

        return derive.certified_split(certified(inputs, read, params), input_path(inputs, "trace", read), params)

    def figures(self, params: FleetParams, kernel: Mapping[str, int], inputs: Sequence[InputFile],
                read: Reader) -> dict[str, Fraction]:
        """The kernel's literals, each optimum equal to Belady's MIN with bypass on its list, the host list as
        recorded, the waterfall, and with an engine each host's replay log read and held to its sub-trace."""
        from pycert.families.fleet import derive  # numpy: see derived_files

        if params.lean_encoding != ENCODING:
            raise Rejected(Rejection.mismatch("parameters.lean_encoding", repr(ENCODING), repr(params.lean_encoding)))
        s = self._split(params, inputs, read)
        trace = _trace(inputs)
        assert trace is not None
        cert = names(PurePosixPath(trace.path), params.routing, params.hosts, params.capacity_blocks)[0]
        listed = next((i for i in inputs if i.role == "hosts"), None)
        derive.check_host_list(s, params, listed, read)
        out = derive.figures(s, params, dict(kernel))
        if params.engine is not None:
            logs: list[Source] = [read.locate(i) for path in log_paths(cert, params)
                                  for i in inputs if i.path == path and i.role == "log"]
            out |= derive.engine_figures(s, params, logs, out)
        return out


CLAIM = Fleet()
