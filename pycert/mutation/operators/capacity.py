"""The ceiling at a capacity (issue 25): a bound one below what the cut list gives, a reuse pair hidden,
a cut count that does not count, the closed windows made half-open (one off at each cut), the library's
``C - 1`` per cut weakened or strengthened, a cut dropped, moved or out of order, and a Belady engine
one hit off; in the optimum's witness, a hit pair dropped, a pair added that overflows the capacity,
and the realisability lemma's ``C - 1`` weakened to ``C``; for a trace in pieces, pieces that do not
share their joint reference, a composition claiming fewer free reuses than its pieces, the joint's cut
left uncounted by the library, and a split away from the cut list; with bypass (issue 37), the
bound charging C + 1 per cut in the library, the model without bypass's bound (C - 1 per cut) stated
for caches with bypass on a trace where bypass helps, a prefix cache claimed for a witness
whose hit follows a miss in its request, a request boundary moved, and tokens counted for a partial
block. Each must be rejected for its reason: by the kernel, by prove's cross-check against Belady's MIN,
or by verify's recomputation."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any
from unittest import mock

import numpy as np

import pycert.analysis.capacity as recipe
import pycert.analysis.optcurve as optcurve
from pycert.analysis import requests
from pycert.certify.verify import verify_certificate
from pycert.core import resources
from pycert.core.errors import PycertError
from pycert.data.traces import read_trace
from pycert.families import producer
from pycert.families.capacity.produce import CapacityOptions
from pycert.lean.emit import capacity as emit
from pycert.mutation.lean_batch import LibraryEdit, Snippet
from pycert.mutation.operators.base import (
    KERNEL_REJECTS,
    TRACE_INPUT,
    Operator,
    Planned,
    Verdict,
    hash_ids,
    strip_header,
    sub_once,
)
from pycert.mutation.operators.pieced import (
    joint_moved,
    joint_snippet,
    open_dropped,
    open_swapped,
    piece_snippet,
    split_moved,
)
from pycert.prove import prove

TARGET = "pycert/lean/emit/capacity.py"
TRACE_FILE = resources.data_root() / TRACE_INPUT
CAPACITY = 2
"""Blocks of the instance mutants (on :func:`_trace`)."""
PROVE_CAPACITY = 16
"""Blocks of the prove mutants, on the whole committed synthetic trace."""
PIECE_REFS = 3_000
"""References per piece of the prove mutant that splits the committed synthetic trace (5,339 references)."""


def _instance(refs: list[int], name: str, planes: Callable[[dict], None] | None = None,
              edits: Callable[[str, emit.Plan], list[tuple[str, str]]] | None = None,
              witness: Callable[[np.ndarray, np.ndarray, np.ndarray], None] | None = None) -> str:
    """The emitted capacity instance of ``refs`` at :data:`CAPACITY`, with its planes edited by ``planes``
    (a dict of the emitter's numpy planes, before they are written) or its text by ``edits``; with
    ``witness``, the instance with Belady's hit pairs, edited in place by ``witness(refs, starts, ends)``."""
    arr = np.asarray(refs, dtype=np.uint64)
    cuts = recipe.cut_list(arr, CAPACITY)
    pairs = None
    if witness is not None:
        pairs = recipe.belady_pairs(arr, CAPACITY)
        witness(arr, *pairs)
    if planes is None:
        text, plan = emit.emit_instance(refs, "0" * 64, name, CAPACITY, cuts, witness=pairs)
    else:
        with _planes_edited(planes):
            text, plan = emit.emit_instance(refs, "0" * 64, name, CAPACITY, cuts, witness=pairs)
    text = strip_header(text)
    for old, new in (edits(text, plan) if edits else []):
        text = sub_once(text, old, new)
    return text


def _planes_edited(edit: Callable[[dict], None]) -> Any:
    """The emitter's ``flag_plane`` wrapped: ``edit`` sees and may change ``same``, ``c``, ``a`` and the
    flags it returns, in place, so that every literal written is consistent with the edit."""
    real = emit.flag_plane

    def wrapped(same: np.ndarray, sigma: np.ndarray, c: np.ndarray | None, a: np.ndarray) -> np.ndarray:
        planes = {"same": same, "sigma": sigma, "c": c, "a": a}
        edit(planes)
        return planes.get("flags", real(planes["same"], sigma, planes["c"], planes["a"]))
    wrapped.__wrapped__ = real  # type: ignore[attr-defined]
    return mock.patch.object(emit, "flag_plane", wrapped)


def _hide_pair(p: dict) -> None:
    """Clear the first place of ``same`` that the flags count: a free reuse pair hidden (F and H drop)."""
    flags = emit.flag_plane.__wrapped__(p["same"], p["sigma"], p["c"], p["a"])  # type: ignore[attr-defined]
    p["same"][np.flatnonzero(flags)[0]] = False


def _half_open(p: dict) -> None:
    """Flags of half-open windows: a pair whose earlier reference sits on a cut counted as straddling it."""
    a_s, same = p["a"][p["sigma"]], p["same"]
    flags = np.zeros(len(same), dtype=bool)
    flags[1:] = same[1:] & (a_s[1:] == a_s[:-1])
    p["flags"] = flags


def _nexts(arr: np.ndarray) -> np.ndarray:
    """Each reference's next reference to its block (``len(arr)``: none)."""
    nxt = np.full(len(arr), len(arr), dtype=np.int64)
    last: dict[int, int] = {}
    for t in range(len(arr) - 1, -1, -1):
        nxt[t] = last.get(int(arr[t]), len(arr))
        last[int(arr[t])] = t
    return nxt


def _drop_pair(arr: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> None:
    """Belady's first hit pair left out of the witness: one start and its end fewer."""
    i = int(np.flatnonzero(starts)[0])
    starts[i], ends[_nexts(arr)[i]] = False, False


def _add_pair(arr: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> None:
    """A reuse pair Belady misses added to the witness: Belady's count is the optimum, so some step then
    has ``C`` pairs open (the recipe's tests check that it is)."""
    nxt = _nexts(arr)
    i = next(i for i in range(len(arr)) if not starts[i] and i + 2 <= nxt[i] < len(arr))
    starts[i], ends[nxt[i]] = True, True


def _count_off(p: dict) -> None:
    """The running cut count one too high at the first cut, the cut plane kept."""
    first = int(np.flatnonzero(p["c"])[0])
    p["a"][first] += 1


def _recipe(wrap: Callable[[list[int], Any], list[int]]) -> Any:
    """The cut-list recipe with ``wrap`` applied to its answer, in both cache models."""
    real = recipe.cut_list

    def wrapped(refs: Any, capacity: int, admission: bool = False, hit: Any = None) -> list[int]:
        return wrap(real(refs, capacity, admission, hit), (refs, capacity, admission))
    return mock.patch.object(recipe, "cut_list", wrapped)


def _moved(cuts: list[int], args: Any) -> list[int]:
    """The first single-step move of a cut that loosens the bound (some moves keep it tight)."""
    refs, capacity, admission = args
    best = recipe.bound_pairs(refs, capacity, cuts, admission)
    for k, y in enumerate(cuts):
        for z in (y + 1, y - 1):
            trial = sorted({*cuts[:k], z, *cuts[k + 1:]})
            if (0 <= z < len(refs) and len(trial) == len(cuts)
                    and recipe.bound_pairs(refs, capacity, trial, admission) > best):
                return trial
    raise ValueError("no single move of a cut loosens the bound")


class _OffByOne:
    def __init__(self, curve: Any) -> None:
        self.curve = curve

    def hits(self, c: int) -> int:
        return self.curve.hits(c) + 1


def _belady_plus_one() -> Any:
    real = optcurve.curve_from_distances  # the one-pass curve the figures are read off (families.capacity.derive.engines)
    return mock.patch.object(optcurve, "curve_from_distances", lambda d: _OffByOne(real(d)))


def _prove_expect(defect: Callable[[], Any], pattern: str, piece_refs: int | None = None) -> Callable[[Any], Verdict]:
    """prove capacity on the committed synthetic trace at :data:`PROVE_CAPACITY` blocks (in pieces of at most
    ``piece_refs`` references, checked on Ray, if given) with ``defect`` in place: nothing may be written,
    and the rejection must say ``pattern``."""
    def run(ctx: Any) -> Verdict:
        chosen = producer("capacity")
        opts = CapacityOptions(trace=[ctx.repo / TRACE_INPUT], capacity_blocks=[PROVE_CAPACITY], required=True,
                               piece_refs=piece_refs)
        try:
            with defect():
                res = prove([(chosen, opts)], backend=ctx.backend_name, out_dir=ctx.repo / "proved")
        except PycertError as err:
            return ("killed", str(err)[:300]) if pattern in str(err) else ("survived", f"refused otherwise: {err}")
        bad = [s for s in res.stages if s.status == "rejected"]
        if res.ok or not bad:
            return "survived", "prove: ok"
        if res.written:
            return "survived", f"prove still wrote {res.written}"
        said = [f"{s.name}: {s.detail}" for s in bad] + [r.claim for r in res.rows if r.status == "rejected"]
        hit = next((t for t in said if pattern in t), None)
        return ("killed", hit[:300]) if hit else ("survived", f"rejected, but not saying {pattern!r}: {said[0][:200]}")
    return run


def _both_models(refs: list[int], name: str, capacity: int, first: np.ndarray | None = None,
                 plain_cuts: bool = False, plain_pairs: bool = False) -> str:
    """The emitted instance of both cache models (with the prefix test over ``first``), the model with
    bypass given the other model's cut list (``plain_cuts``) or its hit pairs (``plain_pairs``)."""
    arr = np.asarray(refs, dtype=np.uint64)
    cuts, pairs = recipe.cut_list(arr, capacity), recipe.belady_pairs(arr, capacity)
    side = emit.Side(cuts if plain_cuts else recipe.cut_list(arr, capacity, admission=True),
                     pairs if plain_pairs else recipe.belady_pairs(arr, capacity, admission=True))
    text, _ = emit.emit_instance(refs, "0" * 64, name, capacity, cuts, witness=pairs, admission=side, firsts=first)
    return strip_header(text)


def _requests_trace() -> tuple[list[int], np.ndarray]:
    """The committed synthetic trace's first 40 requests (ids hashed to 64 bits) and their first references."""
    trace = read_trace(TRACE_FILE)
    n = int(trace.requests[40])
    return hash_ids(trace.refs[:n].tolist()), requests.firsts(trace)[:n]


def _boundary_moved(refs: list[int], first: np.ndarray, capacity: int) -> np.ndarray:
    """The first request boundary whose move one reference later leaves a hit of the witness after a miss
    in its (new) request: the request's first reference hits and the one before it, now its predecessor,
    misses."""
    hit = recipe.belady_hit_flags(np.asarray(refs, dtype=np.uint64), capacity, admission=True)
    a = next(a for a in np.flatnonzero(first) if a > 0 and hit[a] and not hit[a - 1] and a + 1 < len(refs)
             and not first[a + 1])
    moved = first.copy()
    moved[a], moved[a + 1] = False, True
    return moved


PARTIAL_TRACE = "".join(json.dumps({"timestamp": 0, "input_length": n, "output_length": 1, "hash_ids": ids}) + "\n"
                        for ids, n in (([1, 2, 3], 1300), ([4, 5], 1024), ([1, 2, 3], 1300), ([6], 100), ([1, 2, 3], 1300)))
"""Three requests of two full blocks and a partial one (276 tokens), which Belady's MIN with bypass hits."""


def _partial_blocks_reused() -> Any:
    """Every block counted full: a request's partial last block weighed at its tokens and reused."""
    real = requests.ref_tokens

    def counted(trace: Any) -> Any:
        weights = real(trace)
        return None if weights is None else weights._replace(full=np.ones_like(weights.full))
    return mock.patch.object(requests, "ref_tokens", counted)


def _tokens_caught(ctx: Any) -> Verdict:
    """prove capacity with partial blocks counted, at 4 blocks, on :data:`PARTIAL_TRACE`; verify, with the real
    count, must refuse the token figure."""
    trace = ctx.repo / "partial.jsonl"
    trace.write_text(PARTIAL_TRACE)
    opts = CapacityOptions(trace=[trace], capacity_blocks=[4], required=True)
    with _partial_blocks_reused():
        res = prove([(producer("capacity"), opts)], backend=ctx.backend_name, out_dir=ctx.repo / "tokens")
    if not res.ok:
        return "survived", "prove refused it before verify could: " + "; ".join(s.detail for s in res.stages
                                                                               if s.status != "ok")[:200]
    bad = verify_certificate(ctx.repo / "tokens" / "capacity-partial-c4.json")
    said = [f.render() for f in bad.failures if "prefix_cache_hits_tokens" in f.render()]
    return ("killed", said[0][:300]) if bad.status == "rejected" and said else ("survived", f"verify: {bad.status}")


def _trace() -> list[int]:
    """A small seeded trace with many reuses and cuts at :data:`CAPACITY` blocks, ids hashed to 64 bits (the
    committed trace's first references are mostly first uses: too few cuts for these defects to show)."""
    rng = random.Random(25)
    return hash_ids([rng.randrange(12) for _ in range(160)])


class Capacity(Operator):
    """Plant defects in the ceiling at a capacity: in the emitted instance (the kernel must reject the
    declaration that checks the edited data), in the library's per-cut charge (the kernel must reject the
    theorem), and in the cut-list recipe or the Belady engine (prove's cross-check must refuse to write)."""

    name = "capacity"

    def plan(self, ctx: Any) -> list[Planned]:
        refs = _trace()
        self._in_the_instance(refs)
        self._in_the_library()
        self._in_the_recipe()
        self._in_pieces(refs)
        self._in_the_engines()
        self._with_bypass(refs)
        return self.plans

    def _in_the_instance(self, refs: list[int]) -> None:
        """Defects in the emitted instance's data: the kernel must reject the declaration that checks it."""
        add = self.add
        add("cap-max-hits-1", "lean-kernel", f"the headline claims one hit fewer than (C - 1)·m + F at {CAPACITY} blocks",
            "kernel error in headline", TARGET, instance=Snippet("cap-max-hits-1", _instance(
                refs, "Mut_cap_max_hits", edits=lambda text, p: [(
                    f"Bounded trace {p.refs} {CAPACITY} {p.max_hits} :=",
                    f"Bounded trace {p.refs} {CAPACITY} {p.max_hits - 1} :=")]), "headline", KERNEL_REJECTS))
        add("cap-hidden-pair", "lean-kernel", "a reuse pair cleared from the sorted plane `same` (F and H recomputed "
            "lower)", "kernel error in sort_ok", TARGET, instance=Snippet("cap-hidden-pair", _instance(
                refs, "Mut_cap_hidden_pair", planes=_hide_pair), "sort_ok", KERNEL_REJECTS))
        add("cap-count-off", "lean-kernel", "the running cut count A one too high at the first cut (the cut plane kept)",
            "kernel error in cuts_ok", TARGET, instance=Snippet("cap-count-off", _instance(
                refs, "Mut_cap_count_off", planes=_count_off), "cuts_ok", KERNEL_REJECTS))
        add("cap-window-half-open", "lean-kernel", "windows one off at each cut: a pair starting on a cut counted as "
            "straddling it (F and H recomputed)", "kernel error in flags_ok", TARGET,
            instance=Snippet("cap-window-half-open", _instance(refs, "Mut_cap_half_open", planes=_half_open),
                             "flags_ok", KERNEL_REJECTS))
        add("cap-witness-pair-dropped", "lean-kernel", "Belady's first hit pair left out of the witness (the headline "
            "states the pairs' count, one below the bound)", "kernel error in headline", TARGET,
            instance=Snippet("cap-witness-pair-dropped", _instance(refs, "Mut_cap_pair_dropped", witness=_drop_pair),
                             "headline", KERNEL_REJECTS))
        add("cap-witness-overflow", "lean-kernel", "a reuse pair Belady misses added to the witness (the headline "
            "states one more hit): C pairs open at some step", "kernel error in cover_ok", TARGET,
            instance=Snippet("cap-witness-overflow", _instance(refs, "Mut_cap_overflow", witness=_add_pair),
                             "cover_ok", KERNEL_REJECTS))

    def _in_the_library(self) -> None:
        """The library's per-cut charge and realisability weakened or strengthened, proofs kept: the kernel must
        reject the theorem."""
        add = self.add
        add("stmt-realise-cap", "lean-kernel", "realisability with C pairs open at a step instead of C - 1 (the "
            "cache must also hold the block just referenced)", "kernel error in realise", "lean/Pycert/Realise.lean",
            edit=LibraryEdit("stmt-realise-cap", "Pycert/Realise.lean", "realise",
                             "count (fun i => S i ∧ Open r i t) r.length ≤ C - 1) :\n    ∃ P : Policy",
                             "count (fun i => S i ∧ Open r i t) r.length ≤ C) :\n    ∃ P : Policy", KERNEL_REJECTS))
        add("stmt-capacity-per-cut-weak", "lean-kernel", "the capacity bound charges C per cut instead of C - 1 "
            "(statement weakened, proof kept)", "kernel error in hits_le_free", "lean/Pycert/Capacity.lean",
            edit=LibraryEdit("stmt-capacity-per-cut-weak", "Pycert/Capacity.lean", "hits_le_free",
                             "hits P r ≤ (C - 1) * Y.length + count (Free r Y) r.length := by",
                             "hits P r ≤ C * Y.length + count (Free r Y) r.length := by", KERNEL_REJECTS))
        add("stmt-straddle-strong", "lean-kernel", "at most C - 2 hits straddle a step (one fewer than a cache of C "
            "can keep)", "kernel error in straddle_le", "lean/Pycert/Capacity.lean",
            edit=LibraryEdit("stmt-straddle-strong", "Pycert/Capacity.lean", "straddle_le",
                             "count (fun j => Hit P r j ∧ Straddles r t j) r.length ≤ C - 1 := by",
                             "count (fun j => Hit P r j ∧ Straddles r t j) r.length ≤ C - 2 := by",
                             KERNEL_REJECTS))

    def _in_the_recipe(self) -> None:
        """A sound but loose or disordered cut list from the recipe: prove must refuse to state it as the
        optimum."""
        add = self.add
        add("cap-cut-dropped", "prove", "the recipe drops its last cut (a sound bound, loose: claimed as the "
            "ceiling at C)", "prove refuses: the cut list was not optimal", "pycert/analysis/capacity.py",
            run=_prove_expect(lambda: _recipe(lambda cuts, _a: cuts[:-1]), "not optimal"))
        add("cap-cut-moved", "prove", "the recipe moves one cut by one step (sound, loose)",
            "prove refuses: the cut list was not optimal", "pycert/analysis/capacity.py",
            run=_prove_expect(lambda: _recipe(_moved), "not optimal"))
        add("cap-cuts-unsorted", "prove", "the recipe returns its cut list reversed",
            "prove refuses before the kernel: not strictly increasing", "pycert/analysis/capacity.py",
            run=_prove_expect(lambda: _recipe(lambda cuts, _a: cuts[::-1]), "strictly increasing"))

    def _in_pieces(self, refs: list[int]) -> None:
        """A trace in pieces: joints that do not meet, a composition that miscounts, a split off the cut
        list."""
        add = self.add
        add("cap-piece-joint", "lean-kernel", "two pieces that do not overlap: the composition says piece 1 starts "
            "with piece 0's last reference, and piece 1 starts one later", "kernel error in glued1", TARGET,
            instance=Snippet("cap-piece-joint", piece_snippet(refs, "Mut_cap_joint", CAPACITY, joint_moved, gap=1), "glued1",
                             KERNEL_REJECTS))
        add("cap-piece-free-low", "lean-kernel", "the composition claims one free reuse fewer than its pieces state",
            "kernel error in glued1", TARGET, instance=Snippet("cap-piece-free-low", piece_snippet(
                refs, "Mut_cap_free_low", CAPACITY, lambda plans: setattr(plans[1], "free", plans[1].free - 1)), "glued1",
                KERNEL_REJECTS))
        add("stmt-piece-joint-uncounted", "lean-kernel", "gluing two pieces adds their cuts but not the cut at the "
            "joint (statement strengthened, proof kept)", "kernel error in piece_glue", "lean/Pycert/Pieces.lean",
            edit=LibraryEdit("stmt-piece-joint-uncounted", "Pycert/Pieces.lean", "piece_glue",
                             "(hn : n₁ + n₂ - 1 = n) (hm : m₁ + m₂ + 1 = m)", "(hn : n₁ + n₂ - 1 = n) (hm : m₁ + m₂ = m)",
                             KERNEL_REJECTS))
        add("cap-split-off-cut", "prove", "the trace split into pieces one reference away from a cut (sound, loose)",
            "prove refuses: the cut list was not optimal", TARGET,
            run=_prove_expect(split_moved, "not optimal", piece_refs=PIECE_REFS))
        add("cap-joint-open-dropped", "lean-kernel", "a trace in pieces both ways whose piece 1 leaves out a pair piece 0 "
            "leaves open at the joint (its end has no start)", "kernel error in witness_okA", TARGET,
            instance=Snippet("cap-joint-open-dropped", joint_snippet(refs, "Mut_capopen_dropped", 4, open_dropped, glue=False),
                             "witness_okA", KERNEL_REJECTS))
        add("cap-joint-open-moved", "lean-kernel", "piece 1 starts with the blocks piece 0 leaves open in another order "
            "(a piece fine on its own), the composition told they agree", "kernel error in glued1", TARGET,
            instance=Snippet("cap-joint-open-moved", joint_snippet(refs, "Mut_cap_open_moved", 4, open_swapped), "glued1",
                             KERNEL_REJECTS))

    def _in_the_engines(self) -> None:
        """A Belady engine one hit off: prove's cross-check of its two engines must refuse."""
        add = self.add
        add("cap-belady+1", "prove", "the one-pass OPT curve reports one Belady hit too many",
            "prove refuses: the two Belady engines disagree", "pycert/analysis/optcurve.py",
            run=_prove_expect(_belady_plus_one, "engines disagree"))

    def _with_bypass(self, refs: list[int]) -> None:
        """With bypass and a prefix cache: the bound, realisability, the other model's bound, the prefix test and
        the tokens."""
        add = self.add
        add("cap-adm-per-cut-weak", "lean-kernel", "the bound with bypass charges C + 1 per cut (statement "
            "weakened, proof kept)", "kernel error in hits_le_freeA", "lean/Pycert/Admission.lean",
            edit=LibraryEdit("cap-adm-per-cut-weak", "Pycert/Admission.lean", "hits_le_freeA",
                             "hits r K ≤ C * Y.length + count (FreeA r Y) r.length :=",
                             "hits r K ≤ (C + 1) * Y.length + count (FreeA r Y) r.length :=", KERNEL_REJECTS))
        add("cap-adm-realise-cap", "lean-kernel", "realisability with bypass from C + 1 live pairs at a step",
            "kernel error in realiseA", "lean/Pycert/AdmissionOptimum.lean",
            edit=LibraryEdit("cap-adm-realise-cap", "Pycert/AdmissionOptimum.lean", "realiseA",
                             "count (fun i => S i ∧ Live r i t) r.length ≤ C) :\n    ∃ K",
                             "count (fun i => S i ∧ Live r i t) r.length ≤ C + 1) :\n    ∃ K", KERNEL_REJECTS))
        add("cap-adm-plain-bound", "lean-kernel", f"the bound of caches that store every missed block (C - 1 per cut, its cut "
            f"list and Belady's pairs without bypass) stated for caches with bypass at {CAPACITY} blocks, "
            "where bypass helps: not an upper bound", "kernel error in optimumA", TARGET,
            instance=Snippet("cap-adm-plain-bound", _both_models(refs, "Mut_cap_adm_plain", CAPACITY, plain_cuts=True,
                                                                 plain_pairs=True), "optimumA", KERNEL_REJECTS))
        issue = hash_ids([1, 2, 3, 1, 2, 3])
        add("cap-prefix-after-miss", "lean-kernel", "a prefix cache claimed for Belady's pairs without bypass on "
            "requests [1, 2, 3] twice at 2 blocks (block 3 hits after block 2 missed)", "kernel error in prefix_ok",
            TARGET, instance=Snippet("cap-prefix-after-miss", _both_models(
                issue, "Mut_cap_prefix_miss", 2, np.array([True, False, False] * 2), plain_pairs=True), "prefix_ok",
                KERNEL_REJECTS))
        req_refs, first = _requests_trace()
        add("cap-boundary-moved", "lean-kernel", "a request boundary moved one reference later, where a request's "
            "first block hits and the block before it missed", "kernel error in prefix_ok", TARGET,
            instance=Snippet("cap-boundary-moved", _both_models(req_refs, "Mut_cap_boundary", PROVE_CAPACITY,
                                                                _boundary_moved(req_refs, first, PROVE_CAPACITY)),
                             "prefix_ok", KERNEL_REJECTS))
        add("cap-tokens-partial", "prove", "tokens counted for a request's partial last block, which vLLM never "
            "reuses", "verify refuses prefix_cache_hits_tokens", "pycert/analysis/requests.py", run=_tokens_caught)
