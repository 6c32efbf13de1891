"""The optimum at ``C`` blocks: the most hits a cache of ``C`` blocks gets on a trace, kernel-checked on the
whole trace both ways in two cache models (``lean/Pycert/Capacity.lean``, ``Realise.lean``,
``Admission.lean``, ``AdmissionOptimum.lean``, ``PrefixCache.lean``; the sorted instance
``SortedTrace.lean``, ``SortedOptimum.lean``, ``SortedAdmission.lean`` and its emitter
:mod:`pycert.lean.emit.capacity`).

* **Caches that store every missed block and start empty** (demand fetch, ``Pycert.Cache``): for every
  cut list ``Y``, hits ≤ (C - 1)·|Y| + the reuses with no cut strictly between (``hits_le_free``).
* **Caches with bypass** (a missed block may be left out, any block evicted at any step,
  ``Pycert.Admission.Run``), which include the first: hits ≤ C·|Y| + the reuses with no cut at or after
  the earlier reference (``hits_le_freeA``). Every prefix cache is one (``Pycert.PrefixCache``).

Python computes Belady's MIN without and with bypass, a cut list for each that makes the bound its hit
count (:func:`pycert.analysis.capacity.cut_list`, untrusted) and its hit pairs as the witness that some
cache reaches it; the kernel checks both on every reference. Where each request's hits are a prefix of
it (and the trace is prefix-closed), the kernel also checks that a prefix cache reaches the optimum with
bypass. Which headline a certificate states is a function of its parameters: the one-file
layout of both models states ``Pycert.Admission.Optima`` or ``PrefixOptima``; the older one-file layouts
``Optimum`` or ``Bounded``; a trace in pieces both ways (``Joints.lean``, ``SortedJoints.lean``, the pairs open
across each joint carried into the next piece) ``Pycert.Admission.OptimumA``, the model with bypass
alone; the older pieced layout ``Bounded``.

This module is the claim; :mod:`pycert.families.capacity.produce` makes the certificates, and
:mod:`pycert.families.capacity.derive` computes what both derive from a trace.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Literal

from pydantic import Field, field_validator, model_validator

from pycert.core.errors import InputError, Rejected, Rejection
from pycert.core.limits import MAX_CURVE, MAX_PARAM, MAX_PIECE_REFS, MAX_SHARDS
from pycert.core.memo import kept
from pycert.core.schema import Certificate, EvidenceState, InputFile, SolverInfo
from pycert.families.base import Claim, Instance, Reader, input_path
from pycert.families.capacity.text import (
    BOTH_WAYS,
    BOUNDED,
    LIMITS,
    OPTIMA,
    OPTIMA_LIMITS,
    OPTIMUM,
    OPTIMUM_A,
    PREFIX_NOT_CLAIMED,
    PREFIX_OPTIMA,
    UPPER_ONLY,
    evidence_of,
    joint_limits,
    piece_limit,
    sentence,
)
from pycert.families.traces import (
    BLOCK_IDENTITY,
    LEAN_DERIVED,
    LEAN_OUT,
    TraceReading,
    block_identity,
    lean_ident,
    read_certified,
    reading,
    slug,
)
from pycert.lean.emit import CAPACITY_CURVE_ENCODING as CURVE_ENCODING
from pycert.lean.emit import CAPACITY_ENCODING as ENCODING
from pycert.lean.emit import CAPACITY_JOINTS_ENCODING as JOINTS_ENCODING
from pycert.lean.emit import CAPACITY_OPTIMA_ENCODING as OPTIMA_ENCODING
from pycert.lean.emit import CAPACITY_OPTIMUM_ENCODING as OPTIMUM_ENCODING
from pycert.lean.emit import CAPACITY_PIECES_ENCODING as PIECES_ENCODING

if TYPE_CHECKING:  # numpy: a claim reads its trace only when it has one (read_certified imports it)
    from pycert.data.traces import Trace


class CapacityParams(TraceReading):
    capacity_blocks: int = Field(ge=1, le=MAX_PARAM)
    """``C``: the cache holds at most this many blocks."""
    lean_encoding: str
    """The layout of the emitted instance file: :data:`CURVE_ENCODING` (both cache models, both ways, at each
    capacity of ``curve``: what prove writes for a trace that fits one instance), :data:`OPTIMA_ENCODING` (the
    same at one capacity), :data:`OPTIMUM_ENCODING` (caches that store every missed block, both ways),
    :data:`ENCODING` (that bound alone) or :data:`PIECES_ENCODING` (a trace checked in pieces)."""
    curve: list[int] | None = Field(None, min_length=1, max_length=MAX_CURVE)
    """Under :data:`CURVE_ENCODING`: every capacity the instance file checks, in increasing order, this
    certificate's among them (the certificates of the others name the same file); it fixes the file."""
    prefix_cache: Literal["attained", "no-requests", "not-prefix-closed", "not-a-prefix"] | None = None
    """Under :data:`OPTIMA_ENCODING`: ``attained`` when the certificate claims that a prefix cache reaches
    the optimum with bypass, else why it does not (:func:`pycert.analysis.requests.prefix_verdict`)."""
    pieces: int = Field(1, ge=1, le=MAX_SHARDS)
    """How many pieces the trace is checked in (1: one instance file)."""
    piece_refs: int | None = Field(None, ge=2, le=MAX_PIECE_REFS)
    """The piece-size limit the split was computed with (no piece holds more): with the trace and the
    capacity it fixes the split (None: one instance file)."""


    @field_validator("curve")
    @classmethod
    def _increasing(cls, curve: list[int] | None) -> list[int] | None:
        if curve is not None and (any(not 1 <= c <= MAX_PARAM for c in curve) or any(b <= a for a, b in zip(curve, curve[1:]))):
            raise ValueError(f"the capacities of a curve are in increasing order, each 1 to {MAX_PARAM}")
        return curve

    @model_validator(mode="after")
    def _in_its_curve(self) -> CapacityParams:
        # read before any input is looked for: a curve that leaves this capacity out names a file that
        # does not check it, and verify would otherwise only say that file is missing
        curved = self.lean_encoding == CURVE_ENCODING
        if curved != (self.curve is not None) or curved and self.capacity_blocks not in (self.curve or ()):
            raise ValueError(f"parameters.curve: the capacities of the instance file, this certificate's "
                             f"among them, exactly when the layout is a curve (got {self.curve!r})")
        return self


class CapacityCertificate(Certificate):
    """A certificate of the capacity family."""

    family: Literal["capacity"]
    parameters: CapacityParams


def names(trace: PurePosixPath, capacity: int) -> tuple[str, str]:
    """The certificate id and the Lean instance module a trace makes at ``capacity`` blocks."""
    name = slug(trace.stem)
    return f"capacity-{name}-c{capacity}", f"Capacity{lean_ident(name)}C{capacity}"


def curve_module(trace: PurePosixPath, curve: Sequence[int]) -> str:
    """The Lean module of a trace's curve: the one-capacity name for a curve of one, else named by a digest
    of its capacities, so that another list never writes the same file with other content."""
    if len(curve) == 1:
        return names(trace, curve[0])[1]
    digest = hashlib.sha256(",".join(map(str, curve)).encode()).hexdigest()[:10]
    return f"Capacity{lean_ident(slug(trace.stem))}Curve{digest}"


LITERALS = {BOUNDED: ("refs", "capacity_blocks", "max_hits"), OPTIMUM: ("refs", "capacity_blocks", "max_hits"),
            OPTIMA: ("refs", "capacity_blocks", "max_hits", "bypass_hits"),
            PREFIX_OPTIMA: ("refs", "capacity_blocks", "max_hits", "bypass_hits", "prefix_cache_hits"),
            OPTIMUM_A: ("refs", "capacity_blocks", "bypass_hits")}
"""Each headline predicate's literals, in order, by figure name."""
WITNESS_THEOREMS = ("Pycert.Capacity.realise", "Pycert.Capacity.optimum_of", "Pycert.SortedOptimum.linked_of_sortOK",
                    "Pycert.SortedOptimum.optimum_of_checks")
CURVE_WITNESS_THEOREMS = ("Pycert.Capacity.realise", "Pycert.Capacity.optimum_of", "Pycert.SortedOptimum.linked_of_sortOK",
                          "Pycert.SortedOptimum.linked_facts", "Pycert.SortedOptimum.optimum_of_facts")
"""What a capacity of a curve rests on in place of :data:`WITNESS_THEOREMS` (the sort's facts derived once)."""
"""The library theorems a certificate with the witness rests on as well."""
ADMISSION_THEOREMS = ("Pycert.Admission.run_of_policy", "Pycert.Admission.spans_le", "Pycert.Admission.hits_le_freeA",
                      "Pycert.Admission.realiseA", "Pycert.Admission.optimumA_of", "Pycert.SortedOptimum.ends_spec",
                      "Pycert.SortedAdmission.freeA_le_of_checks", "Pycert.SortedAdmission.boundedA_of_checks",
                      "Pycert.SortedAdmission.optimumA_of_checks")
PREFIX_THEOREMS = ("Pycert.PrefixCache.prefixHits_le", "Pycert.Admission.prefixOptimum_of",
                   "Pycert.SortedAdmission.prefixOptimum_of_checks")
BOUNDS = {BOUNDED: ("max_hits", "that stores every missed block and starts empty"),
          OPTIMUM: ("max_hits", "that stores every missed block and starts empty"),
          OPTIMA: ("bypass_hits", "that starts empty"), PREFIX_OPTIMA: ("bypass_hits", "that starts empty"),
          OPTIMUM_A: ("bypass_hits", "that starts empty")}
"""For each headline predicate: its figure that bounds the widest class of caches of ``C`` blocks, and the
words after "any cache of C blocks" that name that class (caches with bypass include every cache
of ``C`` blocks, prefix caches too, that starts empty): what a sentence comparing another cache, a real
engine's, with the certificate says."""
JOINT_THEOREMS = ("Pycert.Admission.hits_le_freeA", "Pycert.Admission.realiseA", "Pycert.Admission.optimumA_of",
                  "Pycert.SortedAdmission.freeA_le_of_checks", "Pycert.Joints.pieceA_glue", "Pycert.Joints.wpiece_glue",
                  "Pycert.Joints.both_glue", "Pycert.Joints.optimumA_of_both", "Pycert.SortedJoints.piece_of_checks",
                  "Pycert.SortedJoints.piece_of_looks")
"""What a trace in pieces both ways (:data:`JOINTS_ENCODING`) rests on beside the sort's theorems."""
PIECE_THEOREMS = ("Pycert.Capacity.piece_glue", "Pycert.Capacity.bounded_of_piece", "Pycert.SortedTrace.piece_of_checks")


def piece_names(module: str, count: int) -> list[str]:
    """The modules of a trace's pieces, beside its composition ``module``."""
    return [f"{module}Piece{k:0{len(str(count - 1))}d}" for k in range(count)]


def witnessed(params: CapacityParams) -> bool:
    """Whether a certificate's instance carries Belady's hit pairs (states an optimum, not only a bound)."""
    return params.lean_encoding in (OPTIMUM_ENCODING, OPTIMA_ENCODING, CURVE_ENCODING)


def joined(params: CapacityParams) -> bool:
    """Whether a certificate's trace is checked in pieces both ways with bypass (``OptimumA``)."""
    return params.lean_encoding == JOINTS_ENCODING


def attained(params: CapacityParams) -> bool:
    """Whether a certificate's headline states its widest bound attained too (a witness checked by the kernel):
    the one-file layouts with Belady's pairs, and a trace in pieces both ways (``OptimumA``); not a bound alone."""
    return witnessed(params) or joined(params)


def both_models(params: CapacityParams) -> bool:
    return params.lean_encoding in (OPTIMA_ENCODING, CURVE_ENCODING)


def prefix_claimed(params: CapacityParams) -> bool:
    return both_models(params) and params.prefix_cache == "attained"


def check_optimum(figure: str, proved: int, opt: int, capacity: int, what: str) -> None:
    """A kernel bound above Belady's count is loose (not certified as the optimum); one below it means an
    engine is wrong (the bound is proved)."""
    if proved > opt:
        loose = f"{proved - opt} hit{'s' if proved - opt > 1 else ''}"
        raise Rejected(Rejection(
            subject=f"figures.{figure}", reason="loose-bound", expected=str(opt), found=str(proved),
            detail=f"the kernel proved at most {proved} hits at {capacity} blocks but {what} hits {opt}: the cut list was "
                   f"not optimal (the bound is loose by {loose}), so it is not certified as the optimum at {capacity} blocks"))
    if proved < opt:
        raise Rejected(Rejection(
            subject=f"figures.{figure}", reason="engine-disagrees", expected=f"at most {proved}", found=str(opt),
            detail=f"{what}'s engine reports {opt} hits at {capacity} blocks, more than the {proved} the kernel proved "
                   "possible for every cache of the model: a defect in the engine"))


def _certified(inputs: Sequence[InputFile], read: Reader, params: CapacityParams) -> Trace:
    """The certificate's trace, read as its parameters say: once per run for the certificates of a curve (by the
    sha256 its bytes were checked against, and the reading)."""
    source = input_path(inputs, "trace", read)
    sha = next(i.sha256 for i in inputs if i.role == "trace")
    return kept("capacity-trace", (sha, params.trace_format, params.block_tokens), lambda: read_certified(source, params))


class Capacity(Claim):
    name = "capacity"
    params = CapacityParams
    certificate = CapacityCertificate
    lean_module = "Pycert.Capacity"
    theorem_names = ("Pycert.Capacity.straddle_le", "Pycert.Capacity.hits_le_free",
                     "Pycert.SortedTrace.adjacent_of_sortOK", "Pycert.SortedTrace.capacity_bound",
                     "Pycert.SortedTrace.bounded_of_checks", "Pycert.PackedTrace.traceOK_sound",
                     "Pycert.Route.route_inj")
    primary = ("trace",)
    headline_predicate = OPTIMA
    headline_figures = LITERALS[PREFIX_OPTIMA]
    limits = LIMITS

    def predicate(self, params: CapacityParams) -> str:  # type: ignore[override]
        if joined(params):
            return OPTIMUM_A
        if both_models(params):
            return PREFIX_OPTIMA if prefix_claimed(params) else OPTIMA
        return OPTIMUM if witnessed(params) else BOUNDED

    def predicates(self) -> tuple[str, ...]:
        return tuple(LITERALS)

    def literal_names(self, params: CapacityParams) -> tuple[str, ...]:  # type: ignore[override]
        return LITERALS[self.predicate(params)]

    def widest_bound(self, params: CapacityParams) -> tuple[str, str]:
        """The figure of a certificate with these parameters that bounds the most caches, and which (:data:`BOUNDS`)."""
        return BOUNDS[self.predicate(params)]

    def library_theorems(self, params: CapacityParams) -> tuple[str, ...]:
        witness = CURVE_WITNESS_THEOREMS if params.lean_encoding == CURVE_ENCODING else WITNESS_THEOREMS
        if joined(params):
            return self.theorem_names[2:] + JOINT_THEOREMS
        return (self.theorem_names + (PIECE_THEOREMS if params.pieces > 1 else ())
                + (witness if witnessed(params) else ()) + (ADMISSION_THEOREMS if both_models(params) else ())
                + (PREFIX_THEOREMS if prefix_claimed(params) else ()))

    def does_not_prove(self, params: CapacityParams, figures: Mapping[str, Fraction],
                       inputs: Sequence[InputFile]) -> tuple[str, ...]:
        """The model's limits, the block identity as the trace was read, and for a trace in pieces how it was
        checked."""
        if joined(params):
            limits = joint_limits(params.pieces)
            return tuple(block_identity(params) if line == BLOCK_IDENTITY else line for line in limits)
        if both_models(params):
            why = PREFIX_NOT_CLAIMED.get(params.prefix_cache or "")
            limits = OPTIMA_LIMITS + ((why,) if why else ())
        else:
            limits = tuple(BOTH_WAYS if line == UPPER_ONLY and witnessed(params) else line for line in self.limits)
        limits = tuple(block_identity(params) if line == BLOCK_IDENTITY else line for line in limits)
        return limits + ((piece_limit(params.pieces),) if params.pieces > 1 else ())

    def evidence(self, name: str, solver: SolverInfo | None,
                 params: CapacityParams | None = None) -> tuple[EvidenceState, str]:  # type: ignore[override]
        return evidence_of(name, None if params is None else self.predicate(params))

    def sentence(self, params: CapacityParams, figures: Mapping[str, Fraction], inputs: Sequence[InputFile]) -> str:
        trace = next((PurePosixPath(i.path).name for i in inputs if i.role == "trace"), "(none)")
        return sentence(trace, self.predicate(params), figures, reading(params))

    def instance(self, params: CapacityParams, primary: Sequence[InputFile]) -> Instance:
        """``lean/Capacity<Name>C<C>.lean``, or ``lean/derived/`` for a trace from outside the certificate
        directory (full-resolution data derived from it, which verify regenerates)."""
        [trace] = primary
        where = LEAN_DERIVED if trace.external else LEAN_OUT
        if params.lean_encoding == CURVE_ENCODING and params.curve:  # one file, a namespace per capacity
            module = curve_module(PurePosixPath(trace.path), params.curve)
            return Instance(path=(where / f"{module}.lean").as_posix(), derived_from="trace",
                            section=f"C{params.capacity_blocks}")
        module = names(PurePosixPath(trace.path), params.capacity_blocks)[1]
        return Instance(path=(where / f"{module}.lean").as_posix(), derived_from="trace")

    def figures(self, params: CapacityParams, kernel: Mapping[str, int], inputs: Sequence[InputFile],
                read: Reader) -> dict[str, Fraction]:
        """The kernel's literals and, from the trace, Belady's MIN at ``C`` (and with bypass, for both models),
        which must equal the kernel's figures; the optima as hit rates; whether a prefix cache reaches the optimum
        with bypass, which must be what the parameters say; and the figures in tokens."""
        from pycert.analysis.requests import prefix_verdict  # numpy, numba: only for a claim with a trace
        from pycert.families.capacity import derive

        refs, c = kernel["refs"], kernel["capacity_blocks"]
        if c != params.capacity_blocks:
            raise Rejected(Rejection.mismatch("headline (capacity_blocks)", str(params.capacity_blocks), str(c)))
        if refs == 0:
            raise Rejected(Rejection.mismatch("inputs[trace]", "a trace with at least one block reference", "an empty trace"))
        trace = _certified(inputs, read, params)
        if refs != trace.n_refs:  # the headline's N against the file's, end to end
            raise Rejected(Rejection.mismatch("figures.refs", f"{trace.n_refs} (the references of the trace file)", str(refs)))
        if joined(params):
            ha = kernel["bypass_hits"]
            check_optimum("bypass_hits", ha, derive.engines(trace.refs, c, admission=True), c, "Belady's MIN with bypass")
            out = {"refs": Fraction(refs), "capacity_blocks": Fraction(c), "bypass_hits": Fraction(ha),
                   "bypass_hit_rate": Fraction(ha, refs),
                   "bypass_cuts": Fraction(len(derive.model(trace.refs, c, admission=True).cuts))}
            if trace.n_requests is not None:
                out["requests"] = Fraction(trace.n_requests)
            return out | derive.token_figures(trace, out, None)
        h = kernel["max_hits"]
        opt = derive.engines(trace.refs, c, admission=False)
        check_optimum("max_hits", h, opt, c, "Belady's MIN")
        out = {"refs": Fraction(refs), "capacity_blocks": Fraction(c), "max_hits": Fraction(h),
               "max_hit_rate": Fraction(h, refs), "belady_hits": Fraction(opt),
               "cuts": Fraction(len(derive.model(trace.refs, c, admission=False).cuts))}
        prefix_ends = None
        if both_models(params):
            ha = kernel["bypass_hits"]
            check_optimum("bypass_hits", ha, derive.engines(trace.refs, c, admission=True), c, "Belady's MIN with bypass")
            admitted = derive.model(trace.refs, c, admission=True)
            verdict, why = prefix_verdict(trace, admitted.ends)
            if verdict != params.prefix_cache:
                raise Rejected(Rejection.mismatch("parameters.prefix_cache", f"{verdict!r} ({why})", repr(params.prefix_cache)))
            out |= {"bypass_hits": Fraction(ha), "bypass_hit_rate": Fraction(ha, refs),
                    "bypass_cuts": Fraction(len(admitted.cuts))}
            if verdict == "attained":
                out["prefix_cache_hits"] = Fraction(kernel["prefix_cache_hits"])
                prefix_ends = admitted.ends
        if trace.n_requests is not None:
            out["requests"] = Fraction(trace.n_requests)
        return out | derive.token_figures(trace, out, prefix_ends)

    def regenerate(self, params: CapacityParams, inputs: Sequence[InputFile], read: Reader) -> bytes:
        inst = self.instance(params, self.primary_inputs(inputs))
        return self.derived_files(params, inputs, read)[inst.path]

    def parts(self, params: CapacityParams, instance: Instance) -> list[str]:
        """The piece modules beside the instance, ``<Module>Piece<k>.lean``, one per piece: a certificate
        names every one, so verify emits no more pieces than the certificate it read names."""
        where = PurePosixPath(instance.path).parent
        return ([(where / f"{m}.lean").as_posix() for m in piece_names(instance.module, params.pieces)]
                if params.pieces > 1 else [])

    def derived_files(self, params: CapacityParams, inputs: Sequence[InputFile], read: Reader) -> dict[str, bytes]:
        """The instance file, and for a trace in pieces every piece module beside it, from the trace."""
        from pycert.families.capacity import derive  # numpy: see figures

        pieced = params.pieces > 1
        expected = (JOINTS_ENCODING, PIECES_ENCODING) if pieced else (CURVE_ENCODING, OPTIMA_ENCODING, OPTIMUM_ENCODING, ENCODING)
        if params.lean_encoding not in expected:
            raise Rejected(Rejection.mismatch("parameters.lean_encoding", " or ".join(map(repr, expected)),
                                              repr(params.lean_encoding)))
        if pieced != (params.piece_refs is not None):
            raise Rejected(Rejection.mismatch("parameters.piece_refs", "the piece size the split was computed with, "
                                              "exactly when the trace is in pieces", repr(params.piece_refs)))
        if both_models(params) != (params.prefix_cache is not None):
            raise Rejected(Rejection.mismatch("parameters.prefix_cache", "set exactly when both cache models are stated",
                                              repr(params.prefix_cache)))
        curved = params.lean_encoding == CURVE_ENCODING
        inst = self.instance(params, self.primary_inputs(inputs))
        trace = _certified(inputs, read, params)
        if curved:
            return {inst.path: derive.curve_text(trace, inst.module, params.curve or [])[0]}
        if not pieced:
            return {inst.path: derive.instance_text(trace, inst.module, params.capacity_blocks, params.lean_encoding,
                                                    params.prefix_cache)[0]}
        layout = derive.joint_layout if joined(params) else derive.piece_layout
        try:  # a forged piece_refs may split the trace nowhere, or into one piece
            cuts, points = layout(trace.refs, params.capacity_blocks, params.piece_refs)
        except InputError as err:
            raise Rejected(Rejection.mismatch("parameters.piece_refs", "a piece size at which the trace splits at cuts",
                                              f"{params.piece_refs} ({err.message})")) from None
        if len(points) - 1 != params.pieces:
            raise Rejected(Rejection.mismatch("parameters.pieces", f"{len(points) - 1} (the split of the trace in pieces "
                                              f"of at most {params.piece_refs} references)", str(params.pieces)))
        make = derive.joint_files if joined(params) else derive.piece_files
        files, _ = make(trace.refs, trace.sha256, inst.module, params.capacity_blocks, cuts, points)
        where = PurePosixPath(inst.path).parent
        return {(where / f"{m}.lean").as_posix(): text.encode() for m, text in files.items()}


CLAIM = Capacity()
