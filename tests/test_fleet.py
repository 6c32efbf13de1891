"""A fleet behind its router (``pycert prove fleet``): the routings, the sub-traces, the union bound and the routed
optimum on traces known by hand and on random ones, the certificate's figures and sentence made without Lean,
tampering (the host list, a host's instance, a figure, the routing), bad input in one line, and the kernel end
to end (slow: a small trace, one host empty; and a pooled trace in pieces)."""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from pycert import prove
from pycert.analysis import fleet as routing
from pycert.analysis.optcurve import admission_hit_curve
from pycert.certify.manifest import write_certificates
from pycert.certify.verify import verify_certificate
from pycert.core.errors import InputError, Rejected
from pycert.data.traces import read_trace
from pycert.families import producer
from pycert.families.fleet import derive as fleet_derive
from pycert.families.fleet.produce import FleetOptions
from pycert.leak.engines.paged import LABELS
from tests.certs import make_fleet_cert
from tests.conftest import vllm_python
from tests.test_capacity import forge
from tests.test_cli_contract import cli

# Two conversations behind a shared first block (a system prompt), each turn extending the one before it:
# 0 1 2 | 0 5 6 | 0 1 2 3 | 0 5 6 7 | 0 1 2 3 4 | 0 5 6 7 8. Round-robin over 2 hosts deals each conversation to
# one host; over 3 hosts it splits them.
HAND = [[0, 1, 2], [0, 5, 6], [0, 1, 2, 3], [0, 5, 6, 7], [0, 1, 2, 3, 4], [0, 5, 6, 7, 8]]


def write_trace(path: Path, requests: list[list[int]], **fields: list[object]) -> Path:
    lines = []
    for k, ids in enumerate(requests):
        line: dict[str, object] = {"timestamp": k, "input_length": 512 * len(ids), "output_length": 1, "hash_ids": ids}
        line |= {name: values[k] for name, values in fields.items()}
        lines.append(json.dumps(line))
    path.write_text("\n".join(lines) + "\n")
    return path


def opt(refs: np.ndarray | list[int], c: int) -> int:
    return admission_hit_curve(np.asarray(refs, dtype=np.uint64)).hits(c) if len(refs) else 0


# ---------------------------------------------------------------------------- routings and sub-traces


def test_the_routings_are_deterministic_and_documented(tmp_path: Path) -> None:
    t = read_trace(write_trace(tmp_path / "hand.jsonl", HAND))
    rr = routing.route(t, routing.parse_routing("round-robin"), 3)
    assert rr.tolist() == [0, 1, 2, 0, 1, 2]
    # prefix:2 sends every turn of a conversation to one host (its first two blocks name it)
    pre = routing.route(t, routing.parse_routing("prefix:2"), 8)
    assert pre[0] == pre[2] == pre[4] and pre[1] == pre[3] == pre[5]
    assert pre[0] == routing.jump_hash(routing.key64(b"0,1"), 8)
    # prefix:1: every request starts with block 0, so one host takes them all
    assert len(set(routing.route(t, routing.parse_routing("prefix:1"), 8).tolist())) == 1
    assert routing.host_list(rr) == b"0\n1\n2\n0\n1\n2\n"


def test_jump_hashing_moves_keys_only_to_a_new_host() -> None:
    keys = [routing.key64(str(k).encode()) for k in range(2000)]
    for h in (1, 2, 7, 16):
        before = [routing.jump_hash(k, h) for k in keys]
        after = [routing.jump_hash(k, h + 1) for k in keys]
        assert all(a == b or a == h for a, b in zip(after, before))
        assert all(0 <= b < h for b in before)
        moved = sum(a != b for a, b in zip(after, before))
        assert 0.5 / (h + 1) < moved / len(keys) < 2 / (h + 1)  # about 1 / (H + 1) of them


def test_field_and_hash_routings_read_the_trace_s_own_field(tmp_path: Path) -> None:
    path = write_trace(tmp_path / "f.jsonl", HAND, host=[1, 0, 1, 0, 1, 0], session=["a", "b", "a", "b", "a", "b"])
    t = read_trace(path)
    hosts = routing.route(t, routing.parse_routing("field:host"), 2, fleet_derive.values(path, routing.parse_routing("field:host")))
    assert hosts.tolist() == [1, 0, 1, 0, 1, 0]
    hashed = routing.route(t, routing.parse_routing("hash:session"), 4,
                           fleet_derive.values(path, routing.parse_routing("hash:session")))
    assert hashed[0] == hashed[2] == hashed[4] == routing.jump_hash(routing.key64(b'"a"'), 4)
    named = write_trace(tmp_path / "n.jsonl", HAND, host=["x", "y", "x", "z", "x", "y"])
    assert routing.by_field(fleet_derive.values(named, routing.parse_routing("field:host")), 3, "host").tolist() == \
        [0, 1, 0, 2, 0, 1]
    with pytest.raises(InputError, match="more than 2 hosts"):
        routing.by_field(["x", "y", "z"], 2, "host")
    with pytest.raises(InputError, match="names host 5"):
        routing.by_field([5], 2, "host")
    holes = write_trace(tmp_path / "h.jsonl", HAND[:2], host=[0, 1])
    lines = holes.read_text().splitlines()
    holes.write_text(lines[0] + "\n" + json.dumps({"timestamp": 1, "input_length": 1024, "output_length": 1,
                                                   "hash_ids": [0, 5]}) + "\n")
    with pytest.raises(InputError, match="no field 'host'") as err:
        fleet_derive.values(holes, routing.parse_routing("field:host"))
    assert err.value.where == f"{holes}:2"


def test_the_cache_aware_router_follows_the_longest_prefix_and_balances_ties(tmp_path: Path) -> None:
    t = read_trace(write_trace(tmp_path / "hand.jsonl", HAND))
    # every request shares block 0: a match of 1 of 3 blocks is below 0.5, so the first two go by load, and each
    # later turn follows its conversation (2 or 3 of 4 blocks, then 3 or 4 of 5)
    assert routing.cache_aware(t, 2, Fraction(1, 2)).tolist() == [0, 1, 0, 1, 0, 1]
    # over three hosts the third turn of conversation 1 still follows its own (a match of 3 of 4 blocks)
    assert routing.cache_aware(t, 3, Fraction(1, 2)).tolist() == [0, 1, 0, 1, 0, 1]
    # a threshold no match reaches: least loaded every time, as round-robin deals them
    assert routing.cache_aware(t, 3, Fraction(1)).tolist() == [0, 1, 2, 0, 1, 2]


def test_the_sub_traces_are_the_requests_routed_to_each_host_in_order(tmp_path: Path) -> None:
    t = read_trace(write_trace(tmp_path / "hand.jsonl", HAND))
    hosts = np.array([2, 0, 2, 2, 0, 0])
    subs = routing.sub_traces(t, hosts, 3)
    assert [s.refs.tolist() for s in subs] == [[0, 5, 6, 0, 1, 2, 3, 4, 0, 5, 6, 7, 8], [], [0, 1, 2, 0, 1, 2, 3, 0, 5, 6, 7]]
    assert [s.requests.tolist() for s in subs] == [[0, 3, 8, 13], [0], [0, 3, 7, 11]]
    assert subs[0].prompt_tokens.tolist() == [512 * 3, 512 * 5, 512 * 5]
    assert routing.per_reference(t, hosts).tolist() == [2] * 3 + [0] * 3 + [2] * 4 + [2] * 4 + [0] * 5 + [0] * 5


@pytest.mark.parametrize("seed", range(12))
def test_the_union_bound_and_the_routed_sum_on_random_traces(seed: int) -> None:
    """What the Lean theorems say, on Belady's MIN with bypass: the hosts' optima at C sum to at most the pooled
    optimum at H · C (fleet_le), which is at most the trace's reuse; one host is the pooled cache itself."""
    rng = random.Random(seed)
    requests = [[rng.randrange(12) for _ in range(rng.randrange(1, 6))] for _ in range(rng.randrange(3, 30))]
    refs = [b for r in requests for b in r]
    bounds = np.concatenate([[0], np.cumsum([len(r) for r in requests])])
    from pycert.data.traces import Trace

    t = Trace(refs=np.asarray(refs, dtype=np.uint64), requests=bounds.astype(np.int64), format="mooncake",
              sha256="0" * 64, name="random")
    h, c = rng.randrange(1, 5), rng.randrange(1, 4)
    hosts_of = np.asarray([rng.randrange(h) for _ in requests])
    routed = sum(opt(s.refs, c) for s in routing.sub_traces(t, hosts_of, h))
    pooled = opt(refs, h * c)
    assert routed <= pooled <= len(refs) - len(set(refs))
    assert opt(refs, c) == sum(opt(s.refs, c) for s in routing.sub_traces(t, np.zeros(len(requests), dtype=int), 1))


# ---------------------------------------------------------------------------- certificates made without Lean


def certified(tmp_path: Path, hosts: int = 2, capacity: int = 2, route: str = "round-robin") -> Path:
    trace = write_trace(tmp_path / "hand.jsonl", HAND)
    cert, files = make_fleet_cert(trace, tmp_path, hosts, capacity, route)
    write_certificates([cert], tmp_path / "certs")
    return tmp_path / "certs" / cert.filename


def figures_of(doc: dict) -> dict[str, Fraction]:
    return {f["name"]: Fraction(f["numerator"], f["denominator"]) for f in doc["figures"]}


@pytest.mark.parametrize("hosts, capacity, route", [(2, 2, "round-robin"), (3, 2, "round-robin"), (2, 2, "prefix:2"),
                                                     (4, 1, "cache-aware")])
def test_the_waterfall_on_a_trace_known_by_hand(tmp_path: Path, hosts: int, capacity: int, route: str) -> None:
    trace = write_trace(tmp_path / "hand.jsonl", HAND)
    cert, _ = make_fleet_cert(trace, tmp_path, hosts, capacity, route)
    figs = figures_of(json.loads(cert.to_json()))
    t = read_trace(trace)
    s = fleet_derive.split(t, routing.parse_routing(route), hosts, None)
    refs = t.refs
    assert figs["workload_hits"] == len(refs) - len(np.unique(refs)) == 15
    assert figs["pooled_hits"] == opt(refs, hosts * capacity)
    assert figs["routed_hits"] == sum(opt(sub.refs, capacity) for sub in s.subs)
    assert [figs[f"host_refs_{k}"] for k in range(hosts)] == [sub.n_refs for sub in s.subs]
    assert figs["capacity_loss"] == figs["workload_hits"] - figs["pooled_hits"]
    assert figs["routing_loss"] == figs["pooled_hits"] - figs["routed_hits"] >= 0
    assert figs["routed_hits_tokens"] == 512 * figs["routed_hits"]
    evidence = {f.name: f.evidence for f in cert.figures}
    assert evidence["pooled_hits"] == evidence["routed_hits"] == evidence["workload_hits"] == "kernel-checked"
    assert evidence["routing_loss"] == "computed"
    assert f"a routing loss of {int(figs['routing_loss']):,}" in cert.claim and "That premise is not kernel-checked" in cert.claim
    assert any("not part of what the kernel checked" in line for line in cert.does_not_prove)
    stated = cert.statements[cert.theorems[-1]].signature
    assert stated.split(" : ", 1)[1].startswith("Pycert.Fleet.CertifiedCeiling ")
    assert "Pycert.Fleet.fleet_le" in cert.theorems and "Pycert.Fleet.routed_of_optima" in cert.theorems


def test_round_robin_over_two_hosts_keeps_each_conversation_whole(tmp_path: Path) -> None:
    # host 0 sees 0 1 2 | 0 1 2 3 | 0 1 2 3 4: with 2 blocks each, a host hits block 0 and one more per turn
    cert, _ = make_fleet_cert(write_trace(tmp_path / "hand.jsonl", HAND), tmp_path, 2, 2)
    figs = figures_of(json.loads(cert.to_json()))
    assert (figs["host_hits_0"], figs["host_hits_1"]) == (opt([0, 1, 2, 0, 1, 2, 3, 0, 1, 2, 3, 4], 2),) * 2
    assert figs["routed_hits"] == 2 * figs["host_hits_0"] <= figs["pooled_hits"]


def test_a_certificate_made_without_lean_verifies(tmp_path: Path) -> None:
    cert = certified(tmp_path)
    res = verify_certificate(cert, root=tmp_path)
    assert res.ok, res.first_problem()


# ---------------------------------------------------------------------------- tampering


def figure(doc: dict, name: str) -> dict:
    return next(f for f in doc["figures"] if f["name"] == name)


@pytest.mark.parametrize("name", ["routed_hits", "pooled_hits", "host_hits_1", "routing_loss", "workload_hits"])
def test_a_forged_figure_is_rejected_naming_it(tmp_path: Path, name: str) -> None:
    cert = certified(tmp_path)
    was = figure(json.loads(cert.read_text()), name)["numerator"]
    forge(cert, lambda doc: figure(doc, name).update(numerator=was + 1, decimal=str(was + 1)))
    said = [f.render() for f in verify_certificate(cert, root=tmp_path).failures]
    assert any(f"figures.{name}" in line for line in said), said


def test_an_edited_host_list_is_rejected(tmp_path: Path) -> None:
    cert = certified(tmp_path)
    doc = json.loads(cert.read_text())
    beside = tmp_path / next(i for i in doc["inputs"] if i["role"] == "hosts")["path"]
    beside.parent.mkdir(parents=True, exist_ok=True)
    beside.write_bytes(b"0\n1\n0\n1\n0\n1\n")
    assert verify_certificate(cert, root=tmp_path).ok
    beside.write_bytes(b"0\n1\n0\n1\n0\n1\n0\n")  # a host list longer than the trace
    res = verify_certificate(cert, root=tmp_path)
    assert res.status == "rejected" and "copy beside the certificate" in res.first_problem()
    beside.write_bytes(b"0\n1\n0\n1\n0\n1\n")

    def other_list(d: dict) -> None:  # a forger who edits the list's recorded hash too
        i = next(i for i in d["inputs"] if i["role"] == "hosts")
        i["sha256"] = hashlib.sha256(b"1\n0\n1\n0\n1\n0\n").hexdigest()

    forge(cert, other_list)
    res = verify_certificate(cert, root=tmp_path)
    assert res.status == "rejected" and "made again from the trace and the routing" in res.first_problem()


def test_a_host_s_instance_swapped_with_another_s_is_rejected(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "hand.jsonl", HAND)
    cert, files = make_fleet_cert(trace, tmp_path, 3, 2)
    write_certificates([cert], tmp_path / "certs")
    path = tmp_path / "certs" / cert.filename
    h0, h1 = (next(i for i in cert.inputs if i.path.endswith(f"Host{k}.lean")) for k in (0, 1))

    def swap(doc: dict) -> None:  # the two hosts' files exchanged, hashes and all
        for i in doc["inputs"]:
            if i["path"] == h0.path:
                i["sha256"] = h1.sha256
            elif i["path"] == h1.path:
                i["sha256"] = h0.sha256

    forge(path, swap)
    res = verify_certificate(path, root=tmp_path)
    assert res.status == "rejected" and any("Host0.lean" in f.render() for f in res.failures), res.first_problem()


@pytest.mark.parametrize("edit, subject", [
    (lambda d: d["parameters"].update(hosts_sha256="0" * 64), "parameters.hosts_sha256"),
    (lambda d: d["parameters"].update(host_pieces=[1, 1, 1]), "parameters"),
    (lambda d: d["parameters"].update(threshold="1/2"), "parameters"),
])
def test_edited_parameters_are_rejected(tmp_path: Path, edit, subject: str) -> None:  # noqa: ANN001
    cert = certified(tmp_path)
    forge(cert, edit)
    res = verify_certificate(cert, root=tmp_path)
    assert res.status != "ok" and subject in (res.first_problem() or ""), res.first_problem()


def test_another_routing_under_the_same_names_is_rejected(tmp_path: Path) -> None:
    cert = certified(tmp_path)

    def rerouted(doc: dict) -> None:  # prefix:1 sends both conversations to one host: another host list
        doc["parameters"]["routing"] = "prefix:1"
        for i in doc["inputs"]:
            i["path"] = i["path"].replace("RoundRobin", "Prefix1").replace("round-robin", "prefix-1")
        doc["id"] = doc["id"].replace("round-robin", "prefix-1")

    forge(cert, rerouted)
    moved = cert.with_name(cert.name.replace("round-robin", "prefix-1"))
    cert.rename(moved)
    res = verify_certificate(moved, root=tmp_path)
    assert res.status != "ok"


# ---------------------------------------------------------------------------- bad input


@pytest.fixture
def hand(tmp_path: Path) -> Path:
    return write_trace(tmp_path / "hand.jsonl", HAND, host=[0, 1, 0, 1, 0, 1])


@pytest.mark.parametrize("argv, needles", [
    (["--hosts", "0", "--capacity-blocks", "2", "--routing", "round-robin"], ("--hosts",)),
    (["--hosts", "65", "--capacity-blocks", "2", "--routing", "round-robin"], ("--hosts",)),
    (["--hosts", "2", "--capacity-blocks", "0", "--routing", "round-robin"], ("--capacity-blocks",)),
    (["--hosts", "2", "--capacity-blocks", str(10 ** 24), "--routing", "round-robin"], ("--capacity-blocks",)),
    (["--hosts", "2", "--capacity-blocks", "2", "--routing", "prefix:" + "9" * 14], ("--routing",)),
    (["--hosts", "2", "--capacity-blocks", "2", "--routing", "nearest"], ("--routing", "round-robin, field:NAME")),
    (["--hosts", "2", "--capacity-blocks", "2", "--routing", "field:a b"], ("--routing",)),
    (["--hosts", "2", "--capacity-blocks", "2", "--routing", "round-robin", "--threshold", "0.3"], ("cache-aware",)),
    (["--hosts", "2", "--capacity-blocks", "2", "--routing", "cache-aware", "--threshold", "2"], ("--threshold",)),
    (["--hosts", "2", "--capacity-blocks", "2"], ("--routing",)),
    (["--hosts", "8", "--capacity-blocks", "2", "--routing", "round-robin"], ("distinct blocks",)),
    (["--hosts", "2", "--capacity-blocks", "2", "--routing", "field:tenant"], ("no field 'tenant'", "hand.jsonl:1")),
    (["--hosts", "1", "--capacity-blocks", "2", "--routing", "field:host"], ("more than", "names host 1")),
])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(capsys: pytest.CaptureFixture[str], tmp_path: Path, hand: Path,
                                                         argv: list[str], needles: tuple[str, ...]) -> None:
    out = tmp_path / "out"
    args = ["prove", "fleet", "--trace", str(hand), "--out", str(out), *argv, "--json"]
    rc, stdout, err = cli(capsys, *args)  # under --json the error is the only line on stderr
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert any(n in err for n in needles), err
    assert json.loads(stdout)["exit"] == 2 if stdout else True
    assert not out.exists() or not any(out.rglob("*.json")), list(out.rglob("*"))


def test_a_routing_field_missing_on_one_line_is_refused_by_its_line(capsys: pytest.CaptureFixture[str],
                                                                    tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "gaps.jsonl", HAND, tenant=["a", "b", "a", "b", "a", "b"])
    lines = trace.read_text().splitlines()
    lines[4] = json.dumps({k: v for k, v in json.loads(lines[4]).items() if k != "tenant"})
    trace.write_text("\n".join(lines) + "\n")
    for route in ("hash:tenant", "field:tenant"):
        rc, stdout, err = cli(capsys, "prove", "fleet", "--trace", str(trace), "--out", str(tmp_path / "out"), "--hosts",
                              "2", "--capacity-blocks", "2", "--routing", route, "--json")
        assert rc == 2 and err.count("\n") == 1 and f"{trace.name}:5" in err and "no field 'tenant'" in err, err
        assert json.loads(stdout)["exit"] == 2 and not (tmp_path / "out").exists()


def test_a_routing_field_of_ten_megabytes_is_refused_by_its_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "big.jsonl", HAND, session=["a"] * 6)
    lines = trace.read_text().splitlines()
    lines[3] = json.dumps({**json.loads(lines[3]), "session": "x" * (10 << 20)})
    trace.write_text("\n".join(lines) + "\n")
    for path, needles in ((trace, (f"{trace}:4", "longer than the limit")), (
            write_trace(tmp_path / "small.jsonl", HAND, session=["a"] * 5 + ["y" * 5000]), ("small.jsonl:6", "at most 4,096"))):
        rc, stdout, err = cli(capsys, "prove", "fleet", "--trace", str(path), "--out", str(tmp_path / "out"), "--hosts", "2",
                              "--capacity-blocks", "2", "--routing", "hash:session", "--json")
        assert rc == 2 and err.count("\n") == 1 and all(n in err for n in needles), err
        assert json.loads(stdout)["exit"] == 2


def test_a_fleets_modules_are_dealt_to_at_most_one_task_a_core_heaviest_first() -> None:
    from pycert.lean.cluster import groups

    pooled, hosts = 288_500, [37_369, 37_299, 36_748, 35_990, 36_287, 33_969, 35_621, 35_217]
    dealt = groups([pooled, *hosts], 2)
    assert sorted(i for g in dealt for i in g) == list(range(9))
    assert dealt == [[0], [1, 2, 3, 5, 4, 7, 8, 6]]  # heaviest first; the pooled instance alone, the hosts in one warm Lean
    assert groups([5, 1, 1], 8) == [[0], [1], [2]]  # as many cores as modules: a task each
    assert groups([3, 3, 2, 2, 2], 2) == [[0, 2, 4], [1, 3]]
    assert groups([], 2) == [] and groups([1], 0) == [[0]]
    many = groups([288_500, *[18_000] * 16, *[36_000] * 8], 2, most=8)  # a task's progress comes when it ends
    assert len(many) == 4 and max(map(len, many)) <= 8 and many[0] == [0]
    assert sorted(i for g in many for i in g) == list(range(25))


# ---------------------------------------------------------------------------- the kernel, end to end


@pytest.mark.slow
def test_the_kernel_certifies_a_fleet_end_to_end(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "hand.jsonl", HAND, host=[0, 2, 0, 2, 0, 2])
    opts = FleetOptions(trace=[trace], capacity_blocks=[2], hosts=[3], routing=["field:host"], wanted=True)
    res = prove.prove([(producer("fleet"), opts)], backend="wasm", out_dir=tmp_path / "certs")
    assert res.ok, [s for s in res.stages if s.status != "ok"]
    cert = tmp_path / "certs" / "fleet-hand-field-host-h3-c2.json"
    doc = json.loads(cert.read_text())
    figs = figures_of(doc)
    assert figs["host_refs_1"] == figs["host_hits_1"] == 0  # host 1 receives nothing: no module, optimumA_nil
    assert figs["routed_hits"] == figs["host_hits_0"] + figs["host_hits_2"]
    assert doc["parameters"]["host_pieces"] == [1, 0, 1]
    statement = doc["statements"][doc["theorems"][-1]]["statement"]
    assert "Pycert.Fleet.CertifiedCeiling" in statement and "[]" in statement
    assert sorted(p.name for p in (tmp_path / "certs" / "lean" / "derived").iterdir()) == [
        "FleetHandFieldHostH3C2.lean", "FleetHandFieldHostH3C2Host0.lean", "FleetHandFieldHostH3C2Host2.lean",
        "FleetHandPool6.lean"]
    assert verify_certificate(cert).ok
    assert verify_certificate(cert, kernel=True, backend="wasm").ok
    kept = tmp_path / "certs" / "lean" / "derived" / "FleetHandFieldHostH3C2Host2.lean"
    shutil.copy(kept, tmp_path / "keep.lean")
    kept.write_text("-- edited\n")
    assert verify_certificate(cert).status == "rejected"


@pytest.mark.slow
def test_a_pooled_trace_in_pieces_states_no_ceiling(tmp_path: Path) -> None:
    rng = random.Random(3)
    requests = [[0, *(rng.randrange(1, 30) for _ in range(rng.randrange(1, 5)))] for _ in range(40)]
    trace = write_trace(tmp_path / "pieces.jsonl", requests)
    n = sum(map(len, requests))
    opts = FleetOptions(trace=[trace], capacity_blocks=[2], hosts=[2], routing=["round-robin"], piece_refs=n // 2 + 4,
                        wanted=True)
    res = prove.prove([(producer("fleet"), opts)], backend="wasm", out_dir=tmp_path / "certs")
    assert res.ok, [s for s in res.stages if s.status != "ok"]
    cert = tmp_path / "certs" / "fleet-pieces-round-robin-h2-c2.json"
    doc = json.loads(cert.read_text())
    assert doc["parameters"]["pooled_pieces"] >= 2 and "workload_hits" not in figures_of(doc)
    assert doc["statements"][doc["theorems"][-1]]["statement"].startswith(doc["theorems"][-1] + " : Pycert.Fleet.Certified ")
    assert figures_of(doc)["pooled_hits"] == opt([b for r in requests for b in r], 4)
    assert verify_certificate(cert).ok


def test_the_report_has_a_fleet_card_with_its_waterfall(tmp_path: Path) -> None:
    from pycert.certify.report import write_report

    trace = write_trace(tmp_path / "hand.jsonl", HAND)
    other = write_trace(tmp_path / "other.jsonl", HAND[:5])
    certs = [make_fleet_cert(trace, tmp_path, h, 2, route)[0] for h in (1, 2, 3) for route in ("round-robin", "prefix:2")]
    write_certificates([*certs, make_fleet_cert(other, tmp_path, 2, 2)[0]], tmp_path / "certs")
    page, shown, not_verified = write_report(tmp_path / "certs", tmp_path / "report.html", root=tmp_path)
    html = page.read_text()
    assert shown == 7 and not not_verified
    assert "Trace hand.jsonl: a fleet behind its router" in html and "where the hits went" in html.lower()
    # each trace's fleet card right under the trace's own card
    sections = re.findall(r'<section class="card" id="(trace-[0-9]+|fleet-[0-9]+)"><h2>Trace ([^<:]+)', html)
    assert [kind.split("-")[0] for kind, _ in sections] == ["trace", "fleet", "trace", "fleet"], sections
    assert sections[0][1] == sections[1][1] and sections[2][1] == sections[3][1] != sections[0][1]
    assert html.count("routing loss") >= 1 and "prefix:2" in html and "round-robin" in html
    assert "Where the hits went at 3 hosts of 2 blocks" in html  # the most hosts among the sizes with both routings
    # a fleet certificate that does not verify is named on the card, and lends it nothing
    (tmp_path / "hand.jsonl").write_text((tmp_path / "hand.jsonl").read_text() + json.dumps(
        {"timestamp": 9, "input_length": 512, "output_length": 1, "hash_ids": [9]}) + "\n")
    with pytest.raises(Rejected):  # the trace changed: every certificate of it is rejected, and a page shows none
        write_report(tmp_path / "certs", tmp_path / "report2.html", root=tmp_path)


def test_a_pooled_trace_in_pieces_made_without_lean_verifies(tmp_path: Path) -> None:
    rng = random.Random(3)
    requests = [[0, *(rng.randrange(1, 30) for _ in range(rng.randrange(1, 5)))] for _ in range(40)]
    trace = write_trace(tmp_path / "pieces.jsonl", requests)
    cert, _ = make_fleet_cert(trace, tmp_path, 2, 2, piece_refs=sum(map(len, requests)) // 2 + 4)
    assert cert.parameters.pooled_pieces > 1 and max(cert.parameters.host_pieces) > 1  # type: ignore[attr-defined]
    assert len(cert.theorems) == len(set(cert.theorems)) and "Pycert.Joints.both_glue" in cert.theorems
    write_certificates([cert], tmp_path / "certs")
    res = verify_certificate(tmp_path / "certs" / cert.filename, root=tmp_path)
    assert res.ok, res.first_problem()


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["transformers", "vllm"])
def test_the_engine_s_hits_per_host_are_certified_beside_the_optima(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    engine: str) -> None:
    if engine == "transformers":
        pytest.importorskip("transformers")
    elif (python := vllm_python()) is None:
        pytest.skip("no Python with vLLM: make setup makes .venv-vllm, or set PYCERT_VLLM_PYTHON")
    else:
        monkeypatch.setenv("PYCERT_VLLM_PYTHON", python)
    rng = random.Random(7)
    requests = [[0, *(rng.randrange(1, 25) for _ in range(rng.randrange(1, 4)))] for _ in range(16)]
    trace = write_trace(tmp_path / "eng.jsonl", requests)
    opts = FleetOptions(trace=[trace], capacity_blocks=[5], hosts=[2], routing=["prefix:1", "round-robin"],
                        engine=engine, wanted=True)
    res = prove.prove([(producer("fleet"), opts)], backend="wasm", out_dir=tmp_path / "certs")
    assert res.ok, [s for s in res.stages if s.status != "ok"]
    for name in ("fleet-eng-prefix-1-h2-c5.json", "fleet-eng-round-robin-h2-c5.json"):
        cert = tmp_path / "certs" / name
        doc = json.loads(cert.read_text())
        figs = figures_of(doc)
        assert figs["engine_hits"] == sum(figs[f"engine_hits_{k}"] for k in range(2)) <= figs["routed_hits"]
        assert figs["eviction_loss"] == figs["routed_hits"] - figs["engine_hits"]
        assert {f["name"]: f["evidence"] for f in doc["figures"]}["engine_hits"] == "observed"
        assert doc["parameters"]["engine"]["engine"] == LABELS[engine]
        assert "eviction loss" in doc["claim"] and verify_certificate(cert).ok
    # prefix:1 sends every request to one host (they all start with block 0): host 1's log is not named
    doc = json.loads((tmp_path / "certs" / "fleet-eng-prefix-1-h2-c5.json").read_text())
    assert sum(i["role"] == "log" for i in doc["inputs"]) == 1
    # the engine's log edited upward, its hash made current: verify recomputes the figure and refuses
    log = tmp_path / "certs" / next(i["path"] for i in doc["inputs"] if i["role"] == "log")
    lines = log.read_text().splitlines()
    last = json.loads(lines[-1])
    lines[-1] = json.dumps({**last, "cached_tokens": last["engine_tokens"] - 1}, separators=(",", ":"))
    log.write_text("\n".join(lines) + "\n")
    forge(tmp_path / "certs" / "fleet-eng-prefix-1-h2-c5.json", lambda d: next(
        i for i in d["inputs"] if i["role"] == "log").update(sha256=hashlib.sha256(log.read_bytes()).hexdigest()))
    assert verify_certificate(tmp_path / "certs" / "fleet-eng-prefix-1-h2-c5.json").status == "rejected"


def test_a_certificate_naming_too_many_pieces_is_refused_before_anything_is_listed(tmp_path: Path) -> None:
    cert = certified(tmp_path)
    forge(cert, lambda d: d["parameters"].update(host_pieces=[65536, 65536]))
    res = verify_certificate(cert, root=tmp_path)
    assert res.status != "ok" and "pieces in all" in (res.first_problem() or ""), res.first_problem()


def test_a_fleet_certificate_of_another_trace_of_the_same_name_is_not_replaced(capsys: pytest.CaptureFixture[str],
                                                                                tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "hand.jsonl", HAND)
    cert, _ = make_fleet_cert(trace, tmp_path, 2, 2)
    write_certificates([cert], tmp_path / "out")
    other = write_trace(tmp_path / "Hand.jsonl", HAND[:5])  # the same slug, another file
    rc, _, err = cli(capsys, "prove", "fleet", "--trace", str(other), "--hosts", "2", "--capacity-blocks", "2",
                     "--routing", "round-robin", "--out", str(tmp_path / "out"), "--json")
    assert rc == 2 and "certifies trace hand.jsonl" in err, err
