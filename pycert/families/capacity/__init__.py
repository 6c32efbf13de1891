"""The ceiling at a capacity (``lean/Pycert/Capacity.lean``): no demand-fetch cache of ``C`` blocks hits
more than ``H`` times on a trace, kernel-checked on the whole trace (``lean/Pycert/SortedTrace.lean``
and its emitter :mod:`pycert.lean.emit.capacity`), with ``H`` Belady's hit count at ``C``.

The library proves, for every policy of capacity ``C``, every trace and every cut list ``Y``,
hits ≤ (C - 1)·|Y| + the reuses with no cut in between (``hits_le_free``). Python computes a cut list
that makes the bound Belady's MIN hit count (:func:`pycert.analysis.capacity.cut_list`, untrusted: any
list gives a sound bound); the kernel checks it on every reference and states ``H``; pycert then
cross-checks ``H`` against Belady's MIN from two engines and refuses a bound that is not attained.
With Belady's hit pairs as a witness (``lean/Pycert/Realise.lean``, ``lean/Pycert/SortedOptimum.lean``)
the kernel also checks that some cache of ``C`` blocks hits exactly ``H`` times: ``H`` is the optimum,
both ways. Which headline a certificate states is a function of its parameters (:func:`witnessed`):
the one-file instance with the witness states ``Pycert.Capacity.Optimum``; a trace in pieces, and the
one-file layout without the witness, ``Bounded``.

This module is the claim; :mod:`pycert.families.capacity.produce` makes the certificates.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from pycert.core.errors import InputError, PycertError, Rejected, Rejection
from pycert.core.limits import MAX_PARAM, MAX_PIECE_REFS, MAX_SHARDS
from pycert.core.schema import Certificate, EvidenceState, InputFile, SolverInfo
from pycert.families.base import Claim, Instance, Reader, input_path, part_of
from pycert.families.ceiling import (
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

if TYPE_CHECKING:
    import numpy as np

    from pycert.lean.emit.capacity import Plan
    from pycert.lean.emit.pieces import PiecePlan


class CapacityParams(TraceReading):
    capacity_blocks: int = Field(ge=1, le=MAX_PARAM)
    """``C``: the cache holds at most this many blocks."""
    lean_encoding: str
    """The layout of the emitted instance file (:data:`pycert.lean.emit.capacity.OPTIMUM_ENCODING`, with
    the witness; ``ENCODING``, without; ``PIECES_ENCODING`` for a trace checked in pieces)."""
    pieces: int = Field(1, ge=1, le=MAX_SHARDS)
    """How many pieces the trace is checked in (1: one instance file)."""
    piece_refs: int | None = Field(None, ge=2, le=MAX_PIECE_REFS)
    """The piece-size limit the split was computed with (no piece holds more): with the trace and the
    capacity it fixes the split (None: one instance file)."""


class CapacityCertificate(Certificate):
    """A certificate of the capacity family."""

    family: Literal["capacity"]
    parameters: CapacityParams


def names(trace: PurePosixPath, capacity: int) -> tuple[str, str]:
    """The certificate id and the Lean instance module a trace makes at ``capacity`` blocks."""
    name = slug(trace.stem)
    return f"capacity-{name}-c{capacity}", f"Capacity{lean_ident(name)}C{capacity}"


OPTIMUM = "Pycert.Capacity.Optimum"
BOUNDED = "Pycert.Capacity.Bounded"
WITNESS_THEOREMS = ("Pycert.Capacity.realise", "Pycert.Capacity.optimum_of", "Pycert.SortedOptimum.linked_of_sortOK",
                    "Pycert.SortedOptimum.optimum_of_checks")
"""The library theorems a certificate with the witness rests on as well."""


def witnessed(params: CapacityParams) -> bool:
    """Whether a certificate's instance carries Belady's hit pairs and states ``Optimum`` (else ``Bounded``)."""
    from pycert.lean.emit.capacity import OPTIMUM_ENCODING  # numpy: see instance_text

    return params.lean_encoding == OPTIMUM_ENCODING


def instance_text(refs: np.ndarray, sha256: str, module: str, capacity: int,
                  witness: bool = True) -> tuple[bytes, Plan]:
    """The Lean instance file of a trace at ``capacity`` blocks, with the cut list of the recipe and (with
    ``witness``) Belady's hit pairs, and what it states: the one function prove and verify both call. A
    bound that Belady's pairs do not reach is refused before Lean runs: it cannot be stated as the optimum."""
    # numba and numpy: only for a claim that has a trace
    from pycert.analysis.capacity import belady_pairs, cut_list
    from pycert.lean.emit import capacity as emit

    pairs = belady_pairs(refs, capacity) if witness else None
    text, plan = emit.emit_instance(refs, sha256, module, capacity, cut_list(refs, capacity), witness=pairs)
    if plan.witness_hits is not None and plan.witness_hits != plan.max_hits:
        raise PycertError(f"{module}: the cut list bounds the hits at {capacity} blocks by {plan.max_hits}, Belady's MIN "
                          f"hits {plan.witness_hits}: the cut list was not optimal (or the engine is wrong), and a bound "
                          "that is not attained is not written as the optimum")
    return text.encode(), plan


def piece_names(module: str, count: int) -> list[str]:
    """The modules of a trace's pieces, beside its composition ``module``."""
    return [f"{module}Piece{k:0{len(str(count - 1))}d}" for k in range(count)]


def piece_layout(refs: np.ndarray, capacity: int, piece_refs: int) -> tuple[list[int], list[int]]:
    """The recipe's cut list and the split points of the pieces (:func:`pycert.lean.emit.pieces.split_points`):
    what prove and verify both derive from the trace, the capacity and ``piece_refs``."""
    from pycert.analysis.capacity import cut_list  # see instance_text
    from pycert.lean.emit import pieces

    cuts = cut_list(refs, capacity)
    points = pieces.split_points(len(refs), cuts, piece_refs)
    pieces.check_join(len(refs), points)
    return cuts, points


def piece_makers(refs: np.ndarray, sha256: str, module: str, capacity: int, cuts: list[int],
                 points: list[int]) -> list[tuple[str, Callable[[], tuple[str, PiecePlan]], int]]:
    """Each piece of a trace split at ``points`` (:func:`piece_layout`): its module name, the call that
    emits it, and its length. prove runs the calls as Ray tasks and verify in turn, so both emit the
    same pieces from the same arguments."""
    from pycert.lean.emit import pieces  # see instance_text

    return [(m, functools.partial(pieces.emit_piece, refs[a:b + 1], sha256, m, capacity, pieces.local_cuts(cuts, a, b)),
             b - a + 1) for m, a, b in zip(piece_names(module, len(points) - 1), points, points[1:])]


def piece_files(refs: np.ndarray, sha256: str, module: str, capacity: int, cuts: list[int],
                points: list[int]) -> tuple[dict[str, str], Plan]:
    """Every module of a trace checked in pieces split at ``points`` (:func:`piece_layout`), by module
    name (the composition ``module`` last), and what the composition states: what verify regenerates and
    compares with the files prove wrote."""
    import numpy as np  # see instance_text

    from pycert.lean.emit import pieces

    out, plans = {}, []
    for m, make, _ in (makers := piece_makers(refs, sha256, module, capacity, cuts, points)):
        out[m], piece = make()
        plans.append(piece)
    out[module], plan = pieces.emit_glue(module, sha256, [m for m, _, _ in makers], plans, len(np.unique(refs)))
    return out, plan


def belady(refs: np.ndarray, capacity: int) -> int:
    """Belady's MIN hit count at ``capacity`` blocks from pycert's one-pass OPT curve (stack distances
    under OPT priority, :mod:`pycert.analysis.optcurve`), cross-checked against a direct simulation of
    MIN (:func:`pycert.analysis.cachesim.belady_hits`); two engines that disagree are refused."""
    from pycert.analysis.cachesim import belady_hits  # numba: see instance_text
    from pycert.analysis.optcurve import opt_hit_curve

    curve, simulated = opt_hit_curve(refs).hits(capacity), belady_hits(refs, capacity)
    if curve != simulated:
        raise Rejected(Rejection(
            subject="figures.belady_hits", reason="engine-disagrees", expected=f"{simulated} (direct MIN simulation)",
            found=f"{curve} (one-pass OPT curve)",
            detail=f"pycert's two Belady engines disagree at {capacity} blocks: the OPT curve says {curve} hits, a "
                   f"direct MIN simulation {simulated}"))
    return curve


UPPER_ONLY = ("The kernel proves the upper bound only; that Belady's MIN reaches it is computed by pycert (two engines "
              "agreeing), not kernel-checked, so max_hits is proved to be a ceiling and computed to be the optimum.")
BOTH_WAYS = ("The kernel proves max_hits both ways: no policy of the model hits more, and some policy of capacity_blocks "
             "hits exactly max_hits (Belady's hit pairs, checked on every reference as a witness). That policy reads the "
             "whole trace (it is offline, like Belady's MIN); that MIN itself is the policy reaching it is Belady's "
             "theorem and pycert's two engines, not the kernel's.")


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
    piece_theorems = ("Pycert.Capacity.piece_glue", "Pycert.Capacity.bounded_of_piece",
                      "Pycert.SortedTrace.piece_of_checks")
    headline_predicate = OPTIMUM
    headline_figures = ("refs", "capacity_blocks", "max_hits")
    limits = (
        "The bound is per trace and per capacity: it says nothing about other traffic or other cache sizes.",
        "It bounds demand-fetch caches that insert every missed block (no bypass), start empty and hold blocks of "
        "one size; a cache that bypasses, prefetches, starts warm or weighs blocks by size is outside the model.",
        UPPER_ONLY,
        "It is an oracle bound, not a connector measurement: no real cache was run.",
        BLOCK_IDENTITY,
        "Outside the kernel, Python reads the trace file's bytes (sha256 above) into the list of block ids and writes "
        "that list into the instance's vectors, then decodes what it wrote and refuses any difference. The kernel "
        "checks every reference of the list the instance decodes to; a reader bug would make the theorem about "
        "another list.",
    )
    evidence_of = {
        "refs": ("kernel-checked", "Lean kernel: a literal of {headline} (trace.length), every reference decoded"),
        "capacity_blocks": ("kernel-checked", "Lean kernel: a literal of {headline} (every policy P with P.cap = some C)"),
        "max_hits": ("kernel-checked", "Lean kernel: a literal of {headline} (hits P trace ≤ it for every policy P of "
                     "capacity C), from a cut list checked on every reference"),
        "ceiling": ("computed", "exact arithmetic max_hits / refs of two kernel-checked figures"),
        "belady_hits": ("computed-cross-checked", "Belady's MIN at capacity_blocks: pycert's one-pass OPT curve "
                        "(pycert.analysis.optcurve), equal to a direct MIN simulation (pycert.analysis.cachesim."
                        "belady_hits) and to max_hits; libCacheSim's Belady agrees in pycert's tests"),
        "cuts": ("computed", "length of the cut list the recipe computed (pycert.analysis.capacity.cut_list); "
                 "the kernel checked the bound for that list, whatever it is"),
    }
    evidence_witnessed = {
        "max_hits": ("kernel-checked", "Lean kernel: a literal of {headline} (Optimum: hits P trace ≤ it for every "
                     "policy P of capacity C, from a cut list checked on every reference, and = it for one policy, from "
                     "Belady's hit pairs checked on every reference)"),
        "belady_hits": ("kernel-checked", "Lean kernel: the optimum at capacity_blocks is max_hits, a literal of "
                        "{headline} (both ways); Belady's MIN reaches the optimum, and pycert's one-pass OPT curve "
                        "(pycert.analysis.optcurve) and a direct MIN simulation (pycert.analysis.cachesim.belady_hits) "
                        "both count max_hits"),
    }

    def predicate(self, params: CapacityParams) -> str:  # type: ignore[override]
        return OPTIMUM if witnessed(params) else BOUNDED

    def predicates(self) -> tuple[str, ...]:
        return (OPTIMUM, BOUNDED)

    def library_theorems(self, params: CapacityParams) -> tuple[str, ...]:
        return (self.theorem_names + (self.piece_theorems if params.pieces > 1 else ())
                + (WITNESS_THEOREMS if witnessed(params) else ()))

    def does_not_prove(self, params: CapacityParams, figures: Mapping[str, Fraction],
                       inputs: Sequence[InputFile]) -> tuple[str, ...]:
        limits = tuple(BOTH_WAYS if line == UPPER_ONLY and witnessed(params) else block_identity(params)
                       if line == BLOCK_IDENTITY else line for line in self.limits)
        return limits + ((piece_limit(params.pieces),) if params.pieces > 1 else ())

    def evidence(self, name: str, solver: SolverInfo | None,
                 params: CapacityParams | None = None) -> tuple[EvidenceState, str]:  # type: ignore[override]
        if params is not None and witnessed(params) and name in self.evidence_witnessed:
            return self.evidence_witnessed[name]
        return super().evidence(name, solver, params)

    def sentence(self, params: CapacityParams, figures: Mapping[str, Fraction], inputs: Sequence[InputFile]) -> str:
        trace = next((PurePosixPath(i.path).name for i in inputs if i.role == "trace"), "(none)")
        refs, c, h = int(figures["refs"]), int(figures["capacity_blocks"]), int(figures["max_hits"])
        blocks = f"{c} block{'s' if c != 1 else ''}"
        return (f"On trace {trace} ({reading(params)}{refs} block references), no demand-fetch cache of {blocks} hits more than {h} "
                f"times: a hit-rate ceiling of {float(figures['ceiling']):.6f} at {blocks}, attained by Belady's MIN"
                + (f"; some cache of {blocks} hits exactly {h} times, so {h} is the optimum." if witnessed(params)
                   else " as pycert computes it (two engines agreeing; the kernel proves the ceiling only)."))

    def instance(self, params: CapacityParams, primary: Sequence[InputFile]) -> Instance:
        """``lean/Capacity<Name>C<C>.lean``, or ``lean/derived/`` for a trace from outside the certificate
        directory (full-resolution data derived from it, which verify regenerates)."""
        [trace] = primary
        module = names(PurePosixPath(trace.path), params.capacity_blocks)[1]
        return Instance(path=((LEAN_DERIVED if trace.external else LEAN_OUT) / f"{module}.lean").as_posix(),
                        derived_from="trace")

    def figures(self, params: CapacityParams, kernel: Mapping[str, int], inputs: Sequence[InputFile],
                read: Reader) -> dict[str, Fraction]:
        """The kernel's three literals, the ceiling, and Belady's MIN at ``C`` from the trace, which must
        equal the kernel's bound: a bound above it is loose (the cut list was not optimal) and is not
        certified as the ceiling at ``C``; one below it means the engine is wrong (the bound is proved)."""
        from pycert.analysis.capacity import cut_list  # numba: see instance_text

        refs, c, h = kernel["refs"], kernel["capacity_blocks"], kernel["max_hits"]
        if c != params.capacity_blocks:
            raise Rejected(Rejection.mismatch("headline (capacity_blocks)", str(params.capacity_blocks), str(c)))
        if refs == 0:
            raise Rejected(Rejection.mismatch("inputs[trace]", "a trace with at least one block reference", "an empty trace"))
        trace = read_certified(input_path(inputs, "trace", read), params)
        if refs != trace.n_refs:  # the headline's N against the file's, end to end
            raise Rejected(Rejection.mismatch("figures.refs", f"{trace.n_refs} (the references of the trace file)", str(refs)))
        opt = belady(trace.refs, c)
        if h > opt:
            loose = f"{h - opt} hit{'s' if h - opt > 1 else ''}"
            raise Rejected(Rejection(
                subject="figures.max_hits", reason="loose-bound", expected=str(opt), found=str(h),
                detail=f"the kernel proved at most {h} hits at {c} blocks but Belady's MIN hits {opt}: the cut list was "
                       f"not optimal (the bound is loose by {loose}), so it is not certified as the ceiling at {c}"))
        if h < opt:
            raise Rejected(Rejection(
                subject="figures.belady_hits", reason="engine-disagrees", expected=f"at most {h}", found=str(opt),
                detail=f"Belady's MIN engine reports {opt} hits at {c} blocks, more than the {h} the kernel proved "
                       "possible for every policy: a defect in the engine"))
        return {"refs": Fraction(refs), "capacity_blocks": Fraction(c), "max_hits": Fraction(h),
                "ceiling": Fraction(h, refs), "belady_hits": Fraction(opt),
                "cuts": Fraction(len(cut_list(trace.refs, c)))}

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
        from pycert.lean.emit.capacity import ENCODING, OPTIMUM_ENCODING, PIECES_ENCODING  # numpy: see instance_text

        pieced = params.pieces > 1
        expected = (PIECES_ENCODING,) if pieced else (OPTIMUM_ENCODING, ENCODING)
        if params.lean_encoding not in expected:
            raise Rejected(Rejection.mismatch("parameters.lean_encoding", " or ".join(map(repr, expected)),
                                              repr(params.lean_encoding)))
        if pieced != (params.piece_refs is not None):
            raise Rejected(Rejection.mismatch("parameters.piece_refs", "the piece size the split was computed with, "
                                              "exactly when the trace is in pieces", repr(params.piece_refs)))
        inst = self.instance(params, self.primary_inputs(inputs))
        trace = read_certified(input_path(inputs, "trace", read), params)
        if not pieced:
            return {inst.path: instance_text(trace.refs, trace.sha256, inst.module, params.capacity_blocks,
                                             witnessed(params))[0]}
        try:  # a forged piece_refs may split the trace nowhere, or into one piece
            cuts, points = piece_layout(trace.refs, params.capacity_blocks, params.piece_refs)
        except InputError as err:
            raise Rejected(Rejection.mismatch("parameters.piece_refs", "a piece size at which the trace splits at cuts",
                                              f"{params.piece_refs} ({err.message})")) from None
        if len(points) - 1 != params.pieces:
            raise Rejected(Rejection.mismatch("parameters.pieces", f"{len(points) - 1} (the split of the trace in pieces "
                                              f"of at most {params.piece_refs} references)", str(params.pieces)))
        files, _ = piece_files(trace.refs, trace.sha256, inst.module, params.capacity_blocks, cuts, points)
        where = PurePosixPath(inst.path).parent
        return {(where / f"{m}.lean").as_posix(): text.encode() for m, text in files.items()}


def piece_limit(count: int) -> str:
    return (f"The trace is checked in {count} pieces split at cuts of the cut list, each a sorted instance in a Lean "
            "module of its own that states its first and last reference, and the composition module proves the bound "
            "from the pieces' headlines (Pycert.Capacity.piece_glue): consecutive pieces share one reference, which "
            "the kernel checks is the same id. Python computes where to split, and verify recomputes it from the trace, "
            "the capacity and piece_refs and regenerates every file; any split at cuts gives the same bound.")


CLAIM = Capacity()
