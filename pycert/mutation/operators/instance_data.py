"""Instance data: references dropped, duplicated, reordered or recoded in the packed data, a repeated id, a moved request."""

from __future__ import annotations

from typing import Any

from pycert.lean.emit import packed_trace as lean_trace
from pycert.mutation.lean_batch import Snippet
from pycert.mutation.operators.base import (
    CEILING_CERT,
    KERNEL_REJECTS,
    TRACE_INPUT,
    Operator,
    Planned,
    Verdict,
    ceiling_instance,
    hash_ids,
    pooling_instance,
)
from pycert.solvers.instance import per_host_distinct


class InstanceData(Operator):
    """Drop, duplicate or reorder a trace reference without updating the counts; move a request to
    another host in the pooling instance. The kernel recounts from the data and must disagree."""

    name = "instance-data"

    def plan(self, ctx: Any) -> list[Planned]:
        refs, sha = ctx.window()
        n, d = len(refs), len(set(refs))
        target = "pycert/lean/emit/packed_trace.py"
        first = {b: refs.index(b) for b in refs}
        repeats = [i for i, b in enumerate(refs) if first[b] < i]  # edits here keep ids dense in first-use order
        rep = repeats[0]
        tail = refs.index(d - 1) + 1  # past every first use: a new block may enter here
        swap = next(i for i in repeats if i + 1 in repeats and refs[i] != refs[i + 1])
        cases = [
            ("data-drop-repeat", f"drop reference {rep} (a repeated block)", refs[:rep] + refs[rep + 1:], "refs_eq", None),
            ("data-new-block", f"reference {tail} replaced by a block never seen before", refs[:tail] + [d] + refs[tail + 1:],
             "distinct_eq", None),
            ("data-duplicate", f"duplicate reference {rep}", refs[:rep + 1] + refs[rep:], "refs_eq", None),
            ("data-reorder", f"swap references {swap} and {swap + 1}",
             refs[:swap] + [refs[swap + 1], refs[swap]] + refs[swap + 2:], "refs_eq",
             "the instance claims |r|, distinct r and the hit ceiling, all invariant under reordering; "
             "a reordered input file is caught by its sha256 instead (data-reorder-input)"),
        ]
        for mid, desc, mutated, decl, eq in cases:
            name = "Mut_" + mid.replace("-", "_")
            self.add(mid, "lean-kernel", desc, f"kernel error in {decl}", target, equivalent=eq,
                     instance=Snippet(mid, ceiling_instance(mutated, sha, name, claims=(n, d)), decl, KERNEL_REJECTS))

        fresh = next(i for i in range(1, n) if first[refs[i]] == i)
        packed = [
            ("data-packed-ref", f"reference {rep} recoded as a fresh block in the packed data, counter and table kept",
             lambda p: p.model_copy(update={"x": lean_trace.set_field(p.x, p.w + 1, rep, len(set(refs[:rep])))})),
            ("data-packed-fresh", f"first use at reference {fresh} recoded as an earlier block in the packed data",
             lambda p: p.model_copy(update={"x": lean_trace.set_field(p.x, p.w + 1, fresh, 0)})),
            ("data-table-dup", "the id table repeats an entry (entry 1 := entry 0)",
             lambda p: p.model_copy(update={"t": lean_trace.set_field(p.t, p.wt + 1, 1, p.t & ((1 << (p.wt + 1)) - 1))})),
        ]
        for mid, desc, edit in packed:
            name = "Mut_" + mid.replace("-", "_")
            self.add(mid, "lean-kernel", desc, "kernel error in checked", target,
                     instance=Snippet(mid, ceiling_instance(refs, sha, name, packed=edit), "checked", KERNEL_REJECTS))
        hashed = hash_ids(refs)
        self.add("data-hashed-table-dup", "lean-kernel",
                 "64-bit ids in any order: the sorted table repeats an entry (entry 1 := entry 0)",
                 "kernel error in checked", target, instance=Snippet("data-hashed-table-dup", ceiling_instance(
                     hashed, sha, "Mut_data_hashed_table_dup",
                     packed=lambda p: p.model_copy(update={"t": lean_trace.set_field(
                         p.t, p.wt + 1, 1, p.t & ((1 << (p.wt + 1)) - 1))})),
                     "checked", KERNEL_REJECTS))
        self.add("data-reorder-input", "verify", "swap two lines of the certificate's trace file",
                 "verify failure on inputs (sha256)", TRACE_INPUT, run=_reorder_input)
        inst = ctx.instance()
        moved = _move_request(inst)
        self.add("data-move-host", "lean-kernel", f"route request {moved[1]} to host {moved[2]} (counts unchanged)",
                 "kernel error in sumDistinct_eq", "certificates/inputs/committed.json",
                 instance=Snippet("data-move-host", pooling_instance(moved[0], "data_move_host", edits=(
                     (f"sumDistinct 16 trace = {moved[3]} :=", "sumDistinct 16 trace = 338 :="),), keep={"sumDistinct_eq"}),
                     "sumDistinct_eq", KERNEL_REJECTS))
        return self.plans


def _move_request(inst: Any) -> tuple[Any, int, int, int]:
    """The committed instance with the first request whose move changes Σ_h distinct moved."""

    reqs = [r.blocks for r in inst.requests]
    hosts = [inst.routing[r.id] for r in inst.requests]
    base = sum(per_host_distinct(reqs, hosts, len(inst.hosts)))
    for i, r in enumerate(inst.requests):
        for h in inst.host_ids:
            trial = hosts[:i] + [h] + hosts[i + 1:]
            total = sum(per_host_distinct(reqs, trial, len(inst.hosts)))
            if total != base:
                routing = dict(inst.routing) | {r.id: h}
                return inst.model_copy(update={"routing": routing}), r.id, h, total
    raise ValueError("no single move changes the per-host distinct sum")


def _reorder_input(ctx: Any) -> Verdict:
    path = ctx.repo / TRACE_INPUT
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1], lines[2] = lines[2], lines[1]
    path.write_bytes(b"".join(lines))
    return ctx.verify_expect(CEILING_CERT, r"^inputs")
