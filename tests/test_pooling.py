"""Pooling: the committed instance, bad input, the replay, the statuses, Belady equality, the matching."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from pycert.analysis.cachesim import belady_hits
from pycert.cli.pooling import _status
from pycert.core.errors import InputError
from pycert.solvers.capacitated import CapacitatedParams, capacitated_cases
from pycert.solvers.graphs import matching_applies, matching_optimum, sharing
from pycert.solvers.highs import solve_highs
from pycert.solvers.instance import (
    COMMITTED,
    GeneratorParams,
    Host,
    Instance,
    Request,
    generate,
)
from pycert.solvers.instance_io import (
    dump_instance,
    json_line,
    load_instance,
    parse_instance,
)
from pycert.solvers.model import SolveResult, SolverParams, solve_cpsat
from pycert.solvers.optima import PagingOutcome, solve_paging
from pycert.solvers.per_instance import (
    committed_model,
    free_routing_model,
    routing_from,
)
from pycert.solvers.pooled import Cache, paging_model, peak_live, schedules
from pycert.solvers.replay import keep_everything, replay_routing, replay_schedule

REPO = Path(__file__).resolve().parent.parent
PARAMS = SolverParams(seed=0, workers=2, time_limit_s=30.0)


@pytest.fixture(scope="module")
def committed() -> Instance:
    return load_instance(COMMITTED)


# ---------------------------------------------------------------------------- the committed instance


def test_committed_shape_and_walls(committed: Instance) -> None:
    assert len(committed.hosts) == 16
    assert len(committed.trace) == 512
    assert len(set(committed.trace)) == 32
    share = sharing(committed, committed.routing)
    per_host = [len(set(committed.host_trace(h.id))) for h in committed.hosts]
    assert share.per_instance_wall == sum(per_host) == 338
    assert all(d <= h.capacity for d, h in zip(per_host, committed.hosts))
    assert peak_live(tuple(committed.trace)) <= committed.pool_capacity


def test_committed_regenerates_from_its_seed(committed: Instance) -> None:
    prov = committed.provenance
    assert prov is not None
    again = generate(prov.seed, prov.params, name=committed.name)
    assert again == committed
    assert dump_instance(again) == COMMITTED.read_text()


def test_committed_figures_exact(committed: Instance) -> None:
    pooled = solve_paging("pooled", [Cache("pool", tuple(committed.trace), committed.pool_capacity)], PARAMS)
    assert pooled.cpsat.status == pooled.highs.status == "OPTIMAL"
    assert pooled.cpsat.objective == pooled.cpsat.bound == pooled.highs.objective == 32
    assert pooled.agree and (512 - 32) / 512 == 0.9375
    pm = committed_model(committed)
    per = solve_paging("per-instance", pm.caches, PARAMS, pm=pm)
    assert per.agree and per.optimum == 338
    assert round(100 * (512 - 338) / 512) == 34


def test_one_block_less_pool_misses_more(committed: Instance) -> None:
    """The pool is exactly big enough: one block less and every schedule misses beyond the wall."""
    cap = peak_live(tuple(committed.trace)) - 1
    out = solve_paging("pooled-1", [Cache("pool", tuple(committed.trace), cap)], PARAMS)
    assert out.agree and out.optimum > 32


# ---------------------------------------------------------------------------- bad input


def _write(tmp_path: Path, mutate) -> Path:
    data = json.loads(COMMITTED.read_text())
    mutate(data)
    inst_text = json.dumps(data, indent=1)
    p = tmp_path / "bad.json"
    p.write_text(inst_text)
    return p


def _line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


@pytest.mark.parametrize(("mutate", "message", "needle"), [
    (lambda d: d.update(pool_capacity=0), "pool_capacity", '"pool_capacity": 0'),
    (lambda d: d["hosts"][3].update(capacity=0), "hosts.3.capacity", None),
    (lambda d: d["routing"].update({"5": 99}), "unknown host 99", '"5": 99'),
    (lambda d: d["requests"][2].update(blocks=[]), "requests.2.blocks", None),
    (lambda d: d["routing"].pop("7"), "request 7 is not routed", None),
    (lambda d: d["routing"].update({"0": 1, "1": 1, "2": 1}), "load_limit", None),
    (lambda d: d["hosts"][1].update(id=0), "duplicate host id 0", None),
    (lambda d: d["requests"][0]["blocks"].append(-4), "block ids must be >= 0", None),
])
def test_bad_instances_are_input_errors_with_lines(tmp_path: Path, mutate, message: str, needle: str | None) -> None:
    p = _write(tmp_path, mutate)
    with pytest.raises(InputError) as exc:
        load_instance(p)
    assert message in str(exc.value)
    assert exc.value.where and exc.value.where.startswith(f"{p}:")
    if needle:
        assert exc.value.where == f"{p}:{_line_of(p, needle)}"


def test_malformed_and_missing(tmp_path: Path) -> None:
    p = tmp_path / "x.json"
    p.write_text('{\n "name": "x",\n "hosts": [\n}\n')
    with pytest.raises(InputError, match="malformed JSON") as exc:
        load_instance(p)
    assert exc.value.where == f"{p}:4"
    with pytest.raises(InputError, match="no such instance file"):
        load_instance(tmp_path / "absent.json")


def test_json_line_walks_objects_and_lists() -> None:
    text = '{\n "a": 1,\n "b": [\n  {"c": 2},\n  {"c": 3,\n   "d": [4,\n 5]}\n ]\n}'
    assert json_line(text, ("a",)) == 2
    assert json_line(text, ("b", 1)) == 5
    assert json_line(text, ("b", 1, "d", 1)) == 7
    assert json_line(text, ("b", 2)) is None
    assert json_line(text, ("zz",)) is None


def test_generator_rejects_impossible_params() -> None:
    with pytest.raises(InputError, match="cannot reach"):
        generate(0, GeneratorParams(search_steps=50))
    with pytest.raises(InputError, match="pooled misses cannot be"):
        generate(2, GeneratorParams(pool_capacity=8))


def test_cli_bad_instance_is_one_line_exit_2(tmp_path: Path) -> None:
    p = _write(tmp_path, lambda d: d["routing"].update({"5": 99}))
    run = subprocess.run([sys.executable, "-m", "pycert", "pooling", "check", str(p)], capture_output=True, text=True,
                         cwd=REPO)
    assert run.returncode == 2
    assert run.stderr.strip().count("\n") == 0 and "unknown host 99" in run.stderr


def test_cli_check_json(committed: Instance) -> None:
    run = subprocess.run([sys.executable, "-m", "pycert", "pooling", "check", "--json"], capture_output=True,
                         text=True, cwd=REPO)
    assert run.returncode == 0, run.stderr
    rep = json.loads(run.stdout)
    assert rep["per_instance_wall"] == 338 and rep["distinct"] == 32 and rep["regenerates"] is True


# ---------------------------------------------------------------------------- replay


def test_replay_counts_and_catches_every_rule() -> None:
    refs = [1, 2, 1, 3, 2, 1]
    good = replay_schedule("c", refs, 2, [frozenset(s) for s in ({1}, {1, 2}, {1, 2}, {1, 3}, {1, 2}, {1, 2})])
    assert good.ok and good.misses == 4 and good.fetches == 4 and good.max_occupancy == 2
    missing = replay_schedule("c", refs, 2, [frozenset(s) for s in ({1}, {1, 2}, {2}, {1, 3}, {2, 3}, {1, 2})])
    assert any("referenced block 1 is not in the cache" in v.render() for v in missing.violations)
    over = replay_schedule("c", refs, 2, [frozenset(s) for s in ({1}, {1, 2}, {1, 2}, {1, 2, 3}, {1, 2, 3}, {1, 2, 3})])
    assert any("capacity 2" in v.render() and v.reason == "over-capacity" for v in over.violations)
    prefetch = replay_schedule("c", refs, 3, [frozenset(s) for s in ({1, 3}, {1, 2, 3}, {1, 2, 3}, {1, 2, 3}, {1, 2, 3}, {1, 2, 3})])
    assert any("enter without being referenced" in v.render() for v in prefetch.violations)
    assert keep_everything(refs)[-1] == {1, 2, 3}
    assert replay_schedule("c", refs, 3, keep_everything(refs)).misses == 3


def test_replay_of_solver_schedules_and_routing(committed: Instance) -> None:
    case = capacitated_cases(CapacitatedParams(seed=3, sizes=[48]))[0]
    pm = paging_model([Cache("c", tuple(case.refs), case.capacity)])
    res = solve_cpsat(pm.model, PARAMS)
    sched = schedules(pm, res.values)[0]
    rep = replay_schedule("c", case.refs, case.capacity, sched)
    assert rep.ok and rep.misses == res.objective
    # a corrupted schedule (the cache forgets the referenced block once) is caught
    t = next(t for t in range(1, len(sched)) if case.refs[t] in sched[t - 1])
    broken = list(sched)
    broken[t] = broken[t] - {case.refs[t]}
    assert not replay_schedule("c", case.refs, case.capacity, broken).ok
    bad = dict(committed.routing)
    bad[0] = 99
    assert not replay_routing(committed, bad).ok
    assert replay_routing(committed, committed.routing).misses == 338


# ---------------------------------------------------------------------------- statuses


def _hard_routing_instance() -> Instance:
    rng = random.Random(11)
    reqs = [Request(id=i, blocks=rng.sample(range(60), 6)) for i in range(60)]
    hosts = [Host(id=h, capacity=60, load_limit=36) for h in range(12)]
    return Instance(name="hard", pool_capacity=60, hosts=hosts, requests=reqs, routing={i: i % 12 for i in range(60)})


def test_time_limited_cpsat_is_feasible_with_gap_never_optimal() -> None:
    rm = free_routing_model(_hard_routing_instance())
    res = solve_cpsat(rm.model, SolverParams(seed=1, workers=1, time_limit_s=2.0))
    assert res.status == "FEASIBLE", res.status
    assert res.objective is not None and res.bound is not None and res.bound < res.objective
    assert res.gap is not None and res.gap > 0
    assert _status(res).startswith("FEASIBLE gap ")
    assert res.parameters == SolverParams(seed=1, workers=1, time_limit_s=2.0)


def test_time_limited_highs_is_never_optimal() -> None:
    """HiGHS may stop with a solution (FEASIBLE, with its gap) or, on a loaded machine, before one."""
    rm = free_routing_model(_hard_routing_instance())
    res = solve_highs(rm.model, SolverParams(seed=1, workers=1, time_limit_s=2.0))
    assert res.status in ("FEASIBLE", "UNKNOWN"), res.status
    if res.status == "FEASIBLE":
        assert res.bound is not None and res.bound < res.objective and res.gap > 0
        assert _status(res).startswith("FEASIBLE gap ")
    else:
        assert res.objective is None and res.gap is None and not res.values


def test_a_feasible_result_never_counts_as_agreement() -> None:
    def result(status: str) -> SolveResult:
        return SolveResult(model="m", solver="s", version="v", status=status, objective=5, bound=4.0, gap=0.2,
                           wall_s=0.1, parameters=PARAMS, variables=1, constraints=1)
    out = PagingOutcome(name="x", refs=10, distinct=3, capacity=2, cpsat=result("FEASIBLE"), highs=result("OPTIMAL"),
                        replay_misses=5, replay_ok=True, belady_misses=5)
    assert not out.agree and out.optimum is None
    assert [r.reason for r in out.disagreements()] == ["not-optimal", "bound-below-objective"]


def test_infeasible_routing_is_reported() -> None:
    inst = Instance(name="tight", pool_capacity=4, hosts=[Host(id=0, capacity=4, load_limit=3), Host(id=1, capacity=4, load_limit=3)],
                    requests=[Request(id=i, blocks=[i, i + 1]) for i in range(3)], routing={0: 0, 1: 1, 2: 0})
    # the committed routing is itself over the limit, so validation refuses the instance
    with pytest.raises(InputError, match="load_limit"):
        parse_instance(dump_instance(inst))
    rm = free_routing_model(inst)
    assert solve_cpsat(rm.model, PARAMS).status == "INFEASIBLE"
    assert solve_highs(rm.model, PARAMS).status == "INFEASIBLE"


# ---------------------------------------------------------------------------- Belady equality (capacitated family)


def test_cpsat_equals_belady_on_a_seeded_family() -> None:
    """Belady's MIN is optimal for one cache of unit blocks: CP-SAT, HiGHS and replay must all equal it."""
    checked = 0
    for seed in range(12):
        for case in capacitated_cases(CapacitatedParams(seed=seed, sizes=[12, 20, 40], refs_per_block=3)):
            assert case.capacity < case.distinct
            out = solve_paging(case.name, [Cache(case.name, tuple(case.refs), case.capacity)], PARAMS)
            belady = len(case.refs) - belady_hits(case.refs, case.capacity)
            assert out.cpsat.status == out.highs.status == "OPTIMAL"
            assert out.cpsat.objective == out.highs.objective == out.replay_misses == belady, case
            assert out.replay_ok and belady > case.distinct  # OPT exceeds the wall
            checked += 1
    assert checked == 36


def test_default_family_exceeds_the_wall() -> None:
    for case in capacitated_cases():
        assert case.capacity < case.distinct and peak_live(tuple(case.refs)) > case.capacity


# ---------------------------------------------------------------------------- free routing and graphs


def test_free_routing_matches_networkx_and_beats_no_one(committed: Instance) -> None:
    rm = free_routing_model(committed)
    cp = solve_cpsat(rm.model, PARAMS)
    hi = solve_highs(rm.model, PARAMS)
    match = matching_optimum(committed)
    assert cp.status == hi.status == "OPTIMAL"
    assert match is not None and cp.objective == hi.objective == match.objective
    assert cp.bound > 32  # no routing lets per-instance caching reach the pooled optimum
    rep = replay_routing(committed, routing_from(rm, cp.values))
    assert rep.ok and rep.misses == cp.objective
    assert replay_routing(committed, match.routing).misses == match.objective


def test_matching_equals_cpsat_on_small_random_instances() -> None:
    for seed in range(4):
        rng = random.Random(seed)
        reqs = [Request(id=i, blocks=rng.sample(range(12), rng.randint(2, 5))) for i in range(7)]
        hosts = [Host(id=h, capacity=12, load_limit=9) for h in range(4)]
        inst = Instance(name="m", pool_capacity=12, hosts=hosts, requests=reqs, routing={i: i // 2 for i in range(7)})
        if not matching_applies(inst):
            continue
        match = matching_optimum(inst)
        cp = solve_cpsat(free_routing_model(inst).model, PARAMS)
        assert match is not None and cp.status == "OPTIMAL" and cp.objective == match.objective


def test_sharing_excess_is_zero_iff_no_block_on_two_hosts() -> None:
    hosts = [Host(id=h, capacity=8, load_limit=8) for h in range(2)]
    disjoint = Instance(name="d", pool_capacity=8, hosts=hosts,
                        requests=[Request(id=0, blocks=[0, 1]), Request(id=1, blocks=[2, 3])], routing={0: 0, 1: 1})
    shared = disjoint.model_copy(update={"requests": [Request(id=0, blocks=[0, 1]), Request(id=1, blocks=[1, 3])]})
    assert sharing(disjoint, disjoint.routing).excess == 0
    s = sharing(shared, shared.routing)
    assert s.excess == 1 and s.shared_blocks == 1 and s.max_hosts_per_block == 2
