"""What the capacity claim derives from a trace: Belady's hit pairs in both cache models and their cut
lists, whether a prefix cache reaches the optimum with bypass, the Lean files, and the
engines' own figures. Prove and verify call the same functions; the claim (:mod:`pycert.families.capacity`)
imports this module only when it has a trace to read (numpy, numba)."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from pycert.analysis import cachesim, optcurve, requests
from pycert.analysis import capacity as recipe
from pycert.analysis.requests import PrefixVerdict, firsts
from pycert.core.errors import InputError, PycertError, Rejected, Rejection
from pycert.core.limits import MAX_PIECE_REFS, too_many_parts
from pycert.core.memo import kept
from pycert.families.capacity import piece_names
from pycert.lean.emit import capacity as emit
from pycert.lean.emit import curve, joints, pieces

if TYPE_CHECKING:  # the families name the type through pycert.families.traces, the one reader
    from pycert.families.traces import Trace


@dataclass(frozen=True)
class Model:
    """What one cache model gives at a capacity: Belady's hits (with bypass under bypass),
    its cut list, and its hit pairs as flags (starts, ends)."""

    admission: bool
    hits: int
    cuts: list[int]
    starts: np.ndarray
    ends: np.ndarray


def refs_key(refs: np.ndarray) -> tuple[str, tuple[int, ...], bytes]:
    """What a result computed from ``refs`` alone is kept under within a run (:func:`pycert.core.memo.kept`)."""
    return refs.dtype.str, refs.shape, hashlib.blake2b(np.ascontiguousarray(refs).tobytes(), digest_size=16).digest()


def distances(refs: np.ndarray, admission: bool) -> np.ndarray:
    """Belady's MIN stack distances (with bypass under ``admission``), kept within a run: every capacity of a
    curve reads its hits off the same ones (computing them again for each of 14 capacities was a third of
    a curve's Python time)."""
    return kept("stack-distances", (refs_key(refs), admission), lambda: recipe.stack_distances(refs, admission))


def model(refs: np.ndarray, capacity: int, admission: bool) -> Model:
    """Belady's MIN (with bypass under ``admission``) at ``capacity`` blocks, its cut list and its pairs (kept
    within a run: prove and verify ask for the same ones at each stage)."""
    def compute() -> Model:
        hit = recipe.belady_hit_flags(refs, capacity, admission, distances=distances(refs, admission))
        starts, ends = recipe.belady_pairs(refs, capacity, admission, hit=hit)
        return Model(admission=admission, hits=int(hit.sum()), cuts=recipe.cut_list(refs, capacity, admission, hit=hit),
                     starts=starts, ends=ends)
    return kept("capacity-model", (refs_key(refs), capacity, admission), compute)


def one_file(refs: np.ndarray, distinct: int | None = None) -> bool:
    """Whether a trace is checked at a capacity in one instance file rather than in pieces: at most
    :data:`~pycert.core.limits.MAX_PIECE_REFS` references that one Lean process sorts within its heap
    (:func:`pycert.lean.emit.capacity.fits_one`). Prove decides by it, and verify asks it of a one-file
    certificate before any cut list or witness is computed (63 s at 10^6 references otherwise)."""
    n = len(refs)
    if n > MAX_PIECE_REFS or not emit.fits_one(n, 2):  # the places alone: no need to count the blocks
        return False
    return emit.fits_one(n, len(np.unique(refs)) if distinct is None else distinct)


def instance_text(trace: Trace, module: str, capacity: int, encoding: str,
                  prefix: PrefixVerdict | None = None, as_module: bool = False,
                  workload: bool = False) -> tuple[bytes, emit.Plan]:
    """The Lean instance file of a trace at ``capacity`` blocks in ``encoding`` (the bound alone, the
    optimum without bypass, or both models both ways, with the prefix test where ``prefix``
    is ``attained``), and what it states: the one function prove and verify both call. A bound that
    Belady's pairs do not reach is refused before Lean runs: it cannot be stated as the optimum.
    ``as_module``: a Lean ``module`` another instance imports, and ``workload`` its capacity-free ceiling beside
    (:func:`pycert.lean.emit.capacity.emit_instance`)."""
    refs = trace.refs
    plain = model(refs, capacity, admission=False)
    witness = None if encoding == emit.ENCODING else (plain.starts, plain.ends)
    admission = first = None
    if encoding == emit.OPTIMA_ENCODING:
        admitted = model(refs, capacity, admission=True)
        admission = emit.Side(admitted.cuts, (admitted.starts, admitted.ends))
        first = firsts(trace) if prefix == "attained" else None
    text, plan = emit.emit_instance(refs, trace.sha256, module, capacity, plain.cuts, witness=witness,
                                    admission=admission, firsts=first, as_module=as_module, workload=workload)
    check_attained(module, plan)
    return text.encode(), plan


def check_attained(module: str, plan: emit.Plan) -> None:
    """Refuse a bound that the witness does not reach: it cannot be written as the optimum."""
    checks = [("", plan.max_hits, plan.witness_hits)]
    if plan.admission is not None:
        checks.append(("with bypass ", plan.admission.max_hits, plan.admission.witness_hits))
    for name, bound, reached in checks:
        if reached is not None and reached != bound:
            raise PycertError(f"{module}: the cut list {name}bounds the hits at {plan.capacity} blocks by {bound}, "
                              f"Belady's MIN hits {reached}: the cut list was not optimal (or the engine is wrong), and a "
                              "bound that is not attained is not written as the optimum")


def engines(refs: np.ndarray, capacity: int, admission: bool) -> int:
    """Belady's MIN hit count at ``capacity`` blocks (with bypass under ``admission``) from pycert's one-pass
    curve (stack distances under OPT priority, :mod:`pycert.analysis.optcurve`), cross-checked against a
    direct simulation (:mod:`pycert.analysis.cachesim`); two engines that disagree are refused."""
    whole = kept("opt-curve", (refs_key(refs), admission),  # every capacity in one pass: once per run and trace
                 lambda: optcurve.curve_from_distances(distances(refs, admission)))
    curve = whole.hits(capacity)
    simulated = int(cachesim.belady_bypass_flags(refs, capacity).sum()) if admission else cachesim.belady_hits(refs, capacity)
    if curve != simulated:
        what = "Belady's MIN with bypass" if admission else "Belady's MIN"
        raise Rejected(Rejection(
            subject=f"figures.{'bypass_hits' if admission else 'belady_hits'}", reason="engine-disagrees",
            expected=f"{simulated} (direct simulation)", found=f"{curve} (one-pass curve)",
            detail=f"pycert's two engines disagree on {what} at {capacity} blocks: the curve says {curve} hits, a direct "
                   f"simulation {simulated}"))
    return curve


def token_figures(trace: Trace, figures: dict[str, Fraction], prefix_ends: np.ndarray | None) -> dict[str, Fraction]:
    """The hit figures in tokens, where the trace gives prompt lengths: each block bound times the block
    size (a bound derived from the kernel-checked block figure), and the tokens the prefix cache reaching
    the optimum with bypass hits (its full hit blocks; a partial block is never reused)."""
    weights = requests.ref_tokens(trace)
    if weights is None or trace.block_tokens is None:
        return {}
    total = weights.total
    out = {"refs_tokens": Fraction(total)}
    for name in ("max_hits", "bypass_hits"):
        if name in figures:
            out[f"{name}_tokens"] = figures[name] * trace.block_tokens
    if "max_hits_tokens" in out:
        out["max_hit_rate_tokens"] = out["max_hits_tokens"] / total
    if "bypass_hits_tokens" in out:
        out["bypass_hit_rate_tokens"] = out["bypass_hits_tokens"] / total
    if prefix_ends is not None:
        out["prefix_cache_hits_tokens"] = Fraction(weights.hit(prefix_ends))
        out["prefix_cache_hit_rate_tokens"] = out["prefix_cache_hits_tokens"] / total
    return out


def piece_layout(refs: np.ndarray, capacity: int, piece_refs: int) -> tuple[list[int], list[int]]:
    """The recipe's cut list and the split points of the pieces (:func:`pycert.lean.emit.pieces.split_points`):
    what prove and verify both derive from the trace, the capacity and ``piece_refs``."""
    cuts = recipe.cut_list(refs, capacity)
    points = pieces.split_points(len(refs), cuts, piece_refs)
    pieces.check_join(len(refs), points)
    return cuts, few_enough(points, piece_refs)


def piece_makers(refs: np.ndarray, sha256: str, module: str, capacity: int, cuts: list[int],
                 points: list[int]) -> list[tuple[str, Callable[[], tuple[str, pieces.PiecePlan]], int]]:
    """Each piece of a trace split at ``points`` (:func:`piece_layout`): its module name, the call that
    emits it, and its length. prove runs the calls as Ray tasks and verify in turn, so both emit the
    same pieces from the same arguments."""
    return [(m, functools.partial(pieces.emit_piece, refs[a:b + 1], sha256, m, capacity, pieces.local_cuts(cuts, a, b)),
             b - a + 1) for m, a, b in zip(piece_names(module, len(points) - 1), points, points[1:])]


def piece_files(refs: np.ndarray, sha256: str, module: str, capacity: int, cuts: list[int],
                points: list[int]) -> tuple[dict[str, str], emit.Plan]:
    """Every module of a trace checked in pieces split at ``points`` (:func:`piece_layout`), by module
    name (the composition ``module`` last), and what the composition states: what verify regenerates and
    compares with the files prove wrote."""
    return _composed(piece_makers(refs, sha256, module, capacity, cuts, points), pieces.emit_glue, module, sha256,
                     len(np.unique(refs)))


def _composed(makers: Sequence[tuple[str, Callable[[], tuple[str, Any]], int]], glue: Callable[..., tuple[str, emit.Plan]],
              module: str, sha256: str, distinct: int) -> tuple[dict[str, str], emit.Plan]:
    """Every piece's module text by name, then the composition's (``glue`` of the pieces' plans), and what it states."""
    out, plans = {}, []
    for m, make, _ in makers:
        out[m], piece = make()
        plans.append(piece)
    out[module], plan = glue(module, sha256, [m for m, _, _ in makers], plans, distinct)
    return out, plan


def joint_layout(refs: np.ndarray, capacity: int, piece_refs: int) -> tuple[list[int], list[int]]:
    """The cut list with bypass and where the pieces of a trace checked both ways start
    (:func:`pycert.lean.emit.joints.split_after_cuts`): a piece's list holds the at most ``capacity`` blocks
    open where it starts and its references, ``piece_refs`` in all. What prove and verify both derive."""
    if piece_refs - capacity < 2:
        raise InputError(f"a piece of {piece_refs:,} references has no room beside the up to {capacity:,} blocks open "
                         "where it starts: give a larger --shard-refs or a smaller capacity")
    cuts = model(refs, capacity, admission=True).cuts
    points = joints.split_after_cuts(len(refs), cuts, piece_refs - capacity)
    if points[0] != 0 or points[-1] != len(refs) or any(b <= a for a, b in zip(points, points[1:])):
        raise PycertError(f"the pieces at {points[:8]}... do not join to the trace's {len(refs):,} references end to end")
    return cuts, few_enough(points, piece_refs)


def few_enough(points: list[int], piece_refs: int) -> list[int]:
    """``points``, refused where they make more pieces than :func:`~pycert.core.limits.most_parts` allows:
    prove and verify both ask, so a certificate of many tiny pieces is one verify refuses rather than a day
    of Lean processes under ``verify --kernel``."""
    if why := too_many_parts(len(points) - 1, points[-1], "pieces"):
        raise InputError(f"pieces of at most {piece_refs:,} references split the trace into {why}: give a larger "
                         "--shard-refs")
    return points


def joint_makers(refs: np.ndarray, sha256: str, module: str, capacity: int, cuts: list[int],
                 points: list[int]) -> list[tuple[str, Callable[[], tuple[str, joints.JointPlan]], int]]:
    """Each piece of a trace checked both ways (:func:`joint_layout`): its module name, the call that emits it
    (its list, cuts and witness computed here, from the whole trace's pairs with bypass), and its length."""
    admitted = model(refs, capacity, admission=True)
    data = joints.piece_data(refs, cuts, admitted.starts, admitted.ends, points)
    return [(m, functools.partial(joints.emit_joint_piece, d, sha256, m, capacity), len(d.refs))
            for m, d in zip(piece_names(module, len(points) - 1), data)]


def joint_files(refs: np.ndarray, sha256: str, module: str, capacity: int, cuts: list[int],
                points: list[int]) -> tuple[dict[str, str], emit.Plan]:
    """Every module of a trace checked in pieces both ways (:func:`joint_layout`), the composition ``module``
    last, and what it states: what verify regenerates and compares with the files prove wrote."""
    return _composed(joint_makers(refs, sha256, module, capacity, cuts, points), joints.emit_joint_glue, module, sha256,
                     len(np.unique(refs)))


def curve_points(trace: Trace, capacities: Sequence[int]) -> list[curve.Point]:
    """Both models at each capacity of a curve, and where the prefix test is written (where a prefix cache
    reaches the optimum with bypass: :func:`pycert.analysis.requests.prefix_verdict`)."""
    out = []
    for c in capacities:
        plain, admitted = model(trace.refs, c, admission=False), model(trace.refs, c, admission=True)
        out.append(curve.Point(capacity=c, plain=emit.Side(plain.cuts, (plain.starts, plain.ends)),
                               admission=emit.Side(admitted.cuts, (admitted.starts, admitted.ends)),
                               prefix=requests.prefix_verdict(trace, admitted.ends)[0] == "attained"))
    return out


def curve_text(trace: Trace, module: str, capacities: Sequence[int]) -> tuple[bytes, list[emit.Plan]]:
    """The Lean instance of a trace at every capacity of ``capacities`` (at most :data:`pycert.core.limits.MAX_CURVE`),
    and what it states at each: the one function prove and verify call, kept within a run (each
    certificate of the curve regenerates the same file). As :func:`instance_text`, a bound that Belady's
    pairs do not reach is refused before Lean runs."""
    def compute() -> tuple[bytes, list[emit.Plan]]:
        points = curve_points(trace, capacities)
        first = firsts(trace) if any(p.prefix for p in points) else None
        text, plans = curve.emit_curve(trace.refs, trace.sha256, module, points, firsts=first)
        for plan in plans:
            check_attained(module, plan)
        return text.encode(), plans
    return kept("capacity-curve", (trace.sha256, trace.n_refs, refs_key(trace.refs), module, tuple(capacities)), compute)
