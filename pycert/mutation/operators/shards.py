"""Shards: a shard's length or distinct count off by one, a reference moved between shards, an
overlapping id range, a shard dropped (the kernel), and a schedule entry changed (the emitter's round
trip and verify's regeneration: the kernel never tests the schedule, which only orders references)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from pycert.core.errors import PycertError
from pycert.lean.emit import packed_trace as pt
from pycert.lean.emit import shards as sh
from pycert.mutation.lean_batch import Snippet
from pycert.mutation.operators.base import KERNEL_REJECTS, Operator, Planned, Verdict, hash_ids

TARGET = "pycert/lean/emit/shards.py"
SHARDS = 3


def flatten(text: str) -> str:
    """A module of a sharded instance as batch-file text: no module header or imports, nothing public
    (a batch file is not a module, so every declaration is visible to the ones after it)."""
    keep = [line for line in text.splitlines()
            if line not in ("module",) and not line.startswith(("public import ", "import ", "-- "))]
    return "\n".join(keep).replace("public noncomputable def", "noncomputable def").replace(
        "public theorem", "theorem").replace("public def", "def").strip()


def sharded_instance(refs: list[int], sha: str, name: str, *, shard: Any = None, bands: dict[int, tuple[int, int]] | None = None,
                     drop: int | None = None, claims: dict[int, tuple[int, int]] | None = None) -> str:
    """A small sharded instance as one batch snippet: every shard, the schedule and the composition.
    ``shard(i, refs_i)`` may change what shard ``i`` packs, ``bands`` the band a shard states,
    ``drop`` leaves a shard out of the composition, ``claims`` replaces a shard's stated figures."""

    ids = np.array(refs, dtype=np.uint64)
    lay = sh.layout(ids, sha, name, SHARDS)
    parts = [p.tolist() for p in sh.shard_refs(ids, lay)]
    texts, figures = [], []
    for i, part in enumerate(parts):
        lo, hi = (bands or {}).get(i, (lay.cuts[i], lay.cuts[i + 1]))
        packed = shard(i, part) if shard else part
        inst = pt.plan(packed, sha, lay.shard_name(i))
        text = sh.render_shard(inst, lo, hi)
        n, d = len(packed), len(set(packed))
        if claims and i in claims:
            n2, d2 = claims[i]
            text = text.replace(f"public theorem shard : trace.length = {n} ∧ Pycert.distinct trace = {d} ∧",
                                f"public theorem shard : trace.length = {n2} ∧ Pycert.distinct trace = {d2} ∧")
            n, d = n2, d2
        texts.append(flatten(text))
        figures.append((n, d))
    texts.append(flatten(sh.emit_sched(lay.sched_part(0), lay.shards, lay.sched_name(0), 0)))
    whole = lay
    if drop is not None:
        whole = replace(lay, cuts=lay.cuts[:drop + 1] + lay.cuts[drop + 2:], owner=lay.owner[lay.owner != drop])
        figures = figures[:drop] + figures[drop + 1:]
        texts = texts[:drop] + texts[drop + 1:]
    composition = sh.emit_whole(whole, figures)
    if drop is not None:  # the dropped shard's module names move down one: point them at the shards kept
        for j in range(drop, SHARDS - 1):
            composition = composition.replace(f"{whole.shard_name(j)}.", f"{lay.shard_name(j + 1)}.")
    texts.append(flatten(composition))
    return "\n\n".join(texts)


class ShardDefects(Operator):
    """Defects of a trace checked in shards: the kernel must refuse each one in the shard or in the
    composition; a changed schedule entry, which the kernel does not test, must be refused by the
    emitter's round trip and by verify's regeneration of the schedule module."""

    name = "shards"

    def plan(self, ctx: Any) -> list[Planned]:
        refs, sha = ctx.window()
        ids = hash_ids(refs)
    
        lay = sh.layout(np.array(ids, dtype=np.uint64), sha, "Mut", SHARDS)
        parts = [p.tolist() for p in sh.shard_refs(np.array(ids, dtype=np.uint64), lay)]
        last = SHARDS - 1
        n, d = len(parts[last]), len(set(parts[last]))
        moved = parts[last - 1][0]
        cases = [
            ("shard-length", f"shard {last} claims {n + 1} references (it has {n})", "shard",
             dict(claims={last: (n + 1, d)})),
            ("shard-distinct", f"shard {last} claims {d - 1} distinct ids (it has {d})", "shard",
             dict(claims={last: (n, d - 1)})),
            ("shard-moved-ref", f"a reference of shard {last - 1} (id {moved}) packed into shard {last} as well",
             "checked", dict(shard=lambda i, p: p + [moved] if i == last else p)),
            ("shard-overlap", f"shard {last - 1}'s id range raised to overlap shard {last}'s",
             "parts", dict(bands={last - 1: (lay.cuts[last - 1], lay.cuts[last] + 1)})),
            ("shard-dropped", f"shard {last - 1} left out of the composition", "parts", dict(drop=last - 1)),
        ]
        for mid, desc, decl, kw in cases:
            name = "Mut_" + mid.replace("-", "_")
            self.add(mid, "lean-kernel", desc, f"kernel error in {decl}", TARGET,
                     instance=Snippet(mid, sharded_instance(ids, sha, name, **kw), decl, KERNEL_REJECTS))
        self.add("shard-sched-entry", "emitter", "one schedule entry names another shard",
                 "the emitter's round trip refuses, and the regenerated schedule module differs", TARGET,
                 run=lambda c: _sched_entry(ids, sha))
        return self.plans


def _sched_entry(ids: list[int], sha: str) -> Verdict:
    """The schedule with one entry changed: the shards merged by it are no longer the trace (prove's
    round trip refuses), and its schedule module is not the one verify regenerates from the trace."""

    trace = np.array(ids, dtype=np.uint64)
    lay = sh.layout(trace, sha, "Mut", SHARDS)
    parts = sh.shard_refs(trace, lay)
    owner = lay.owner.copy()
    j = int(np.flatnonzero(owner != owner[0])[0])
    owner[0], owner[j] = owner[j], owner[0]
    bad = replace(lay, owner=owner)
    try:
        sh.check_merge(trace, bad, parts)
    except PycertError as exc:
        if "not the trace" not in str(exc):
            return "survived", f"refused, but not for the expected reason: {exc}"
    else:
        return "survived", "the emitter's round trip accepted a changed schedule"
    if sh.emit_sched(bad.sched_part(0), lay.shards, lay.sched_name(0), 0) == \
            sh.emit_sched(lay.sched_part(0), lay.shards, lay.sched_name(0), 0):
        return "survived", "the changed schedule emits the same module"
    return "killed", f"entries 0 and {j} swapped: the merge is not the trace, and the schedule module differs"
