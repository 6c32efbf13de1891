"""A fleet behind its router (``pycert prove fleet``): the union bound's hypothesis weakened (the kernel), the
composition claiming a host's optimum or the pooled optimum one above its instance's (the kernel), two hosts'
sub-traces swapped while a fleet is proved (the kernel accepts, its statements being about the lists it was
given: verify, which makes every sub-trace again from the trace and the host list, must refuse it), the
routing list edited beside a certificate and in its record, and an engine figure edited."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any
from unittest import mock

from pycert.analysis import fleet as routing
from pycert.certify.manifest import MANIFEST_NAME, render_manifest
from pycert.certify.verify import verify_certificate
from pycert.core.files import file_sha256
from pycert.data.traces import trace_from_bytes
from pycert.families import producer
from pycert.families.fleet import derive, host_list_path, names
from pycert.families.fleet.produce import FleetOptions
from pycert.lean.emit import fleet as emit
from pycert.mutation.lean_batch import LibraryEdit, Snippet
from pycert.mutation.operators.base import KERNEL_REJECTS, Operator, Planned, Verdict, decl_line, strip_header
from pycert.prove import prove

TARGET = "pycert/lean/emit/fleet.py"
HOSTS, CAPACITY = 2, 2
"""The fleet of every mutant: two hosts of two blocks, round-robin, on :func:`_trace`."""
NAME = "fleet.jsonl"


def _trace() -> bytes:
    """24 requests of three blocks each (so that round-robin gives both hosts as many references): a shared
    first block, then one of six conversations, then a block of the turn."""
    rng = random.Random(45)
    lines = []
    for r in range(24):
        conv = rng.randrange(6)
        ids = [0, 100 + conv, 1000 * conv + rng.randrange(3)]
        lines.append(json.dumps({"timestamp": r, "input_length": 512 * len(ids), "output_length": 1, "hash_ids": ids}))
    return ("\n".join(lines) + "\n").encode()


def _flat(texts: list[str]) -> str:
    """Modules flattened into one batch snippet: no ``module`` header, no import."""
    return "\n\n".join("\n".join(line for line in strip_header(t).splitlines()
                                 if line != "module" and not line.startswith("public import ")) for t in texts)


def _composition_lie(name: str, what: str) -> str:
    """The pooled and hosts' instances and the composition, flattened, the composition stating one more hit than
    ``what`` (``pooled``, or ``host``: host 0's) proves."""
    trace = trace_from_bytes(_trace(), NAME)
    s = derive.split(trace, routing.parse_routing("round-robin"), HOSTS, None)
    texts, stated = [], []
    for k, (t, c) in enumerate([(s.trace, HOSTS * CAPACITY), *((sub, CAPACITY) for sub in s.subs)]):
        text, plan = derive.one_instance(t, f"{name}_{k}", c, k == 0)  # one namespace per module in the batch file
        texts.append(text)
        stated.append(emit.Part(module=f"{name}_{k}", kind="optima", refs=plan.refs,
                                hits=plan.admission.witness_hits if plan.admission else 0))
    pooled, hosts = stated[0], stated[1:]
    if what == "pooled":
        pooled = pooled.model_copy(update={"hits": pooled.hits + 1})
    else:
        hosts = [hosts[0].model_copy(update={"hits": hosts[0].hits + 1}), *hosts[1:]]
    glue, _ = emit.emit_fleet(name, "0" * 64, s.per_ref, HOSTS, CAPACITY, pooled, hosts, len(set(s.trace.refs.tolist())))
    return _flat([*texts, glue])


def _forge(cert: Path, edit: Callable[[dict], None]) -> None:
    """Edit a certificate and write its directory's manifest again over it, as a forger would."""
    doc = json.loads(cert.read_text())
    edit(doc)
    cert.write_text(json.dumps(doc, indent=2) + "\n")
    where = cert.parent
    (where / MANIFEST_NAME).write_text(render_manifest({p.name: file_sha256(p) for p in sorted(where.glob("*.json"))}))


def _proved(ctx: Any, engine: str | None = None, swap: bool = False, capacity: int = CAPACITY) -> Path:
    """A fleet certificate of :func:`_trace` proved into the mutant's scratch copy (with the defect of ``swap``:
    hosts 0 and 1 get each other's sub-traces); its path."""
    trace = ctx.repo / NAME
    trace.write_bytes(_trace())
    out = ctx.repo / "fleet"
    opts = FleetOptions(trace=[trace], capacity_blocks=[capacity], hosts=[HOSTS], routing=["round-robin"], engine=engine,
                        wanted=True)
    real = routing.sub_traces

    def swapped(t: Any, hosts_of: Any, hosts: int) -> list[Any]:
        subs = real(t, hosts_of, hosts)
        return [subs[1], subs[0], *subs[2:]]

    with mock.patch.object(routing, "sub_traces", swapped if swap else real):
        res = prove([(producer("fleet"), opts)], backend=ctx.backend_name, out_dir=out)
    if not res.ok:
        raise RuntimeError("prove refused it before verify could: " + "; ".join(
            s.detail for s in res.stages if s.status != "ok")[:300])
    return out / f"{names(PurePosixPath(NAME), 'round-robin', HOSTS, capacity)[0]}.json"


def _rejected(cert: Path, needle: str) -> Verdict:
    res = verify_certificate(cert)
    said = [f.render() for f in res.failures if needle in f.render()]
    return ("killed", said[0][:300]) if res.status == "rejected" and said else \
        ("survived", f"verify: {res.status} {res.first_problem()}"[:300])


def _swapped_caught(ctx: Any) -> Verdict:
    try:
        cert = _proved(ctx, swap=True)
    except RuntimeError as err:
        return "survived", str(err)
    return _rejected(cert, "Host0.lean")


def _routing_edited_caught(ctx: Any) -> Verdict:
    cert = _proved(ctx)
    listed = cert.parent / host_list_path(cert.stem)
    hosts = listed.read_bytes().decode().splitlines()
    hosts[0] = str(1 - int(hosts[0]))  # the first request sent to the other host
    edited = ("\n".join(hosts) + "\n").encode()
    listed.write_bytes(edited)
    _forge(cert, lambda doc: next(i for i in doc["inputs"] if i["role"] == "hosts").update(
        sha256=hashlib.sha256(edited).hexdigest()))
    return _rejected(cert, "made again from the trace and the routing")


def _engine_edited_caught(ctx: Any) -> Verdict:
    cert = _proved(ctx, engine="transformers", capacity=4)  # the engine runs a request of 3 blocks beside its tail

    def one_more(doc: dict) -> None:
        f = next(f for f in doc["figures"] if f["name"] == "engine_hits")
        f["numerator"] += 1
        f["decimal"] = str(f["numerator"])

    _forge(cert, one_more)
    return _rejected(cert, "figures.engine_hits")


class Fleet(Operator):
    """Plant defects in a fleet certificate: in the library's union bound and in the composition (the kernel must
    reject the declaration), and in the sub-traces, the routing list and the engine's figure (verify must refuse
    what the kernel, checking the lists it was given, accepted, or what no kernel sees)."""

    name = "fleet"

    def plan(self, ctx: Any) -> list[Planned]:
        self.add("fleet-union-weak-hyp", "lean-kernel", "the union bound assumes a bound on caches of H·C - 1 blocks "
                 "(hypothesis weakened): the fleet's hits claimed under a smaller pooled cache's bound",
                 "kernel error in fleet_le", "lean/Pycert/Fleet.lean", decl_line(ctx.root / "lean", "Pycert/Fleet.lean", "fleet_le"),
                 edit=LibraryEdit("fleet-union-weak-hyp", "Pycert/Fleet.lean", "fleet_le",
                                  "(hF : Fleet r H C g K) (hb : BoundedA r n (H * C) p) : fleetHits r g K ≤ p :=",
                                  "(hF : Fleet r H C g K) (hb : BoundedA r n (H * C - 1) p) : fleetHits r g K ≤ p :=",
                                  KERNEL_REJECTS))
        for what in ("pooled", "host"):
            mid = f"fleet-{what}-plus-one"
            self.add(mid, "lean-kernel", f"the composition states the {'pooled' if what == 'pooled' else 'host 0'}'s "
                     "optimum one above what its instance proves", "kernel error in headline", TARGET,
                     instance=Snippet(mid, _composition_lie(f"Mut_fleet_{what}", what), "headline", KERNEL_REJECTS))
        self.add("fleet-hosts-swapped", "verify", "hosts 0 and 1 of a fleet get each other's sub-traces while it is "
                 "proved (the kernel checks each host's optimum on the list it is given)",
                 "verify refuses host 0's instance", "pycert/analysis/fleet.py", run=_swapped_caught)
        self.add("fleet-routing-edited", "verify", "a fleet certificate's host list edited (the first request sent to "
                 "the other host) and its recorded sha256 re-forged", "verify makes the host list again and refuses it",
                 "pycert/families/fleet/derive.py", run=_routing_edited_caught)
        self.add("fleet-engine-figure-edited", "verify", "a fleet certificate's engine_hits edited (one more hit than the "
                 "hosts' replay logs record) and its manifest line re-forged", "verify recomputes engine_hits",
                 "pycert/families/fleet/derive.py", run=_engine_edited_caught)
        return self.plans
