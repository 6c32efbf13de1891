"""Traces in shards: the split and the Python mirrors of the Lean definitions, and a small trace of
64-bit ids forced into three shards, proved end to end on a real local Ray cluster and verified."""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pycert.certify.verify import verify_certificate
from pycert.core.errors import InputError
from pycert.lean import cluster
from pycert.lean.emit import packed_trace as pt
from pycert.lean.emit import shards as sh
from tests.conftest import REPO

SHA = "0" * 64
ids64 = st.integers(min_value=0, max_value=(1 << 64) - 1)


def hashed(n: int, distinct: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    pool = [rng.getrandbits(64) for _ in range(distinct)]
    return [rng.choice(pool[: 1 + i * distinct // n]) for i in range(n)]


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.lists(st.one_of(ids64, st.integers(0, 30)), min_size=1, max_size=300), st.integers(1, 6))
def test_shards_partition_the_trace_and_merge_back(refs: list[int], k: int) -> None:
    ids = np.array(refs, dtype=np.uint64)
    lay = sh.layout(ids, SHA, "T", k)
    assert lay.cuts[0] == 0 and lay.cuts[-1] == sh.TOP and list(lay.cuts) == sorted(set(lay.cuts))
    assert 1 <= lay.shards <= k
    parts = sh.shard_refs(ids, lay)
    for i, part in enumerate(parts):
        assert len(part) and all(lay.cuts[i] <= x < lay.cuts[i + 1] for x in part.tolist())
    assert sum(len(set(p.tolist())) for p in parts) == len(set(refs))
    assert sh.merge(lay.owner, parts).tolist() == refs
    for i, part in enumerate(parts):
        inst = sh.plan_shard(part, SHA, f"S{i}", lay.cuts[i], lay.cuts[i + 1])
        assert sh.decode_shard(inst, lay.cuts[i]) == part.tolist()


def test_merge_mirrors_lean_on_any_schedule() -> None:
    """A schedule naming a used-up or absent shard takes nothing; what it leaves unused follows, shard by shard."""
    assert sh.merge([1, 0, 0, 5, 1, 0], [[10, 11], [20]]).tolist() == [20, 10, 11]
    assert sh.merge([], [[1], [2, 3]]).tolist() == [1, 2, 3]


def test_a_shard_decodes_past_its_table_into_its_own_class() -> None:
    """A wrong network cannot make a shard hold another shard's id: past the table `slook` gives
    `lo + top * (i + 1)`, congruent to the shard's own `lo`."""
    assert sh.slook(7, [8, 9], 1) == 9
    assert sh.slook(7, [8, 9], 2) == 7 + sh.TOP * 3


def test_pack_small_round_trips() -> None:
    rng = np.random.default_rng(1)
    for width in (1, 3, 7, 20):
        v = rng.integers(0, 1 << width, size=3000, dtype=np.uint64)
        packed = sh.pack_small(v, width)
        assert packed == pt.pack(v.tolist(), width)
        assert np.array_equal(sh.unpack_small(packed, width, len(v)), v)


def test_shard_count_follows_the_literal_budget() -> None:
    assert sh.shard_count(5339, 1234) == 1
    assert sh.shard_count(10, 5, shard_refs=3) == 4
    n, d = 7_999_395, 2_074_145
    k = sh.shard_count(n, d)
    assert k > 1 and sh.literal_bits(-(-n // k), -(-d // k)) <= sh.BUDGET_BITS
    assert sh.literal_bits(-(-n // (k - 1)), -(-d // (k - 1))) > sh.BUDGET_BITS


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_64_bit_trace_in_three_shards_is_proved_on_ray(wasm, tmp_path: Path) -> None:
    """`pycert prove ceiling --trace T --shard-refs N` splits T into three shards, checks them as Ray
    tasks on a local cluster it starts, composes them in one Lean module whose headline carries N and
    D, and verify regenerates every file from the trace."""
    refs = hashed(3000, 700, seed=int.from_bytes(np.random.default_rng().bytes(4), "little"))
    trace = tmp_path / "big64.txt"
    trace.write_text("".join(f"{x}\n" for x in refs))
    out = tmp_path / "certs"
    proc = subprocess.run([sys.executable, "-m", "pycert", "prove", "ceiling", "--trace", str(trace), "--out", str(out),
                           "--shard-refs", "1000", "--backend", "wasm"], capture_output=True, text=True, cwd=REPO,
                          timeout=1700)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "a local Ray cluster" in proc.stderr and "CeilingBig64Shard2: ok" in proc.stderr, proc.stderr
    cert = json.loads((out / "ceiling-big64.json").read_text())
    assert cert["parameters"] == {"lean_encoding": sh.ENCODING, "shards": 3, "trace_format": "ids", "block_tokens": None,
                                  "trace_order": "file"}
    n, d = len(refs), len(set(refs))
    assert {f["name"]: f["numerator"] for f in cert["figures"]}["refs"] == n
    lean = sorted(Path(i["path"]).name for i in cert["inputs"] if i["role"] == "lean")
    assert lean == ["CeilingBig64.lean", "CeilingBig64Sched0.lean", "CeilingBig64Shard0.lean",
                    "CeilingBig64Shard1.lean", "CeilingBig64Shard2.lean"]
    whole = (out / "lean" / "derived" / "CeilingBig64.lean").read_text()
    assert f"public theorem headline : Pycert.Ceiling.Bounded trace {n} {d} {n - d} :=" in whole
    assert "Pycert.Shards.merge_figures" in cert["theorems"]
    res = verify_certificate(out / "ceiling-big64.json", inputs={"big64.txt": trace})
    assert res.ok, res.failures
    # --kernel rebuilds every regenerated module (shards, schedule, composition) and reads the figures
    # off the composition's rebuilt headline
    res = verify_certificate(out / "ceiling-big64.json", inputs={"big64.txt": trace}, kernel=True, backend="wasm")
    assert res.ok and "figures off the kernel" in res.checked, res.failures
    shard = out / "lean" / "derived" / "CeilingBig64Shard1.lean"
    kept = shard.read_text()
    shard.write_text(kept.replace("theorem shard", "theorem shard ", 1))
    bad = verify_certificate(out / "ceiling-big64.json", inputs={"big64.txt": trace})
    assert bad.status == "rejected" and any("CeilingBig64Shard1.lean" in f.subject for f in bad.failures), bad.failures
    shard.write_text(kept)
    # One schedule entry changed: the kernel would accept it (it never tests the schedule), verify does not.
    lay = sh.layout(np.array(refs, dtype=np.uint64), cert["inputs"][0]["sha256"], "CeilingBig64", 3)
    owner = lay.owner.copy()
    j = int(np.flatnonzero(owner != owner[0])[0])
    owner[0], owner[j] = owner[j], owner[0]
    sched = out / "lean" / "derived" / "CeilingBig64Sched0.lean"
    assert sched.read_text() == sh.emit_sched(lay.owner, 3, "CeilingBig64Sched0", 0)
    sched.write_text(sh.emit_sched(owner, 3, "CeilingBig64Sched0", 0))
    bad = verify_certificate(out / "ceiling-big64.json", inputs={"big64.txt": trace})
    assert bad.status == "rejected" and any("CeilingBig64Sched0.lean" in f.subject for f in bad.failures), bad.failures


def test_a_task_lost_on_every_try_is_reported_by_module() -> None:
    """On a real local Ray cluster: a task whose worker dies is retried, then reported as its module's
    verdict (a failure of resources, naming the module and the tries), never raised; an input error
    from a task is the user's one-line error."""
    def _dies() -> tuple[str, None]:  # defined here, so that Ray sends it by value to workers that cannot import tests
        os._exit(1)

    def _refuses() -> tuple[str, None]:
        raise InputError("no such shard", where="Shard9")

    lost, = cluster.check_all([cluster.Work("CeilingXShard7", _dies, size="12 references")], backend="wasm",
                              timeout=60)
    r = lost.result
    assert (r.status, r.cause, r.module) == ("resources", "killed", "CeilingXShard7"), r
    assert f"lost on every one of {cluster.RETRIES + 1} tries" in r.detail and "12 references" in r.detail
    with pytest.raises(InputError, match="Shard9: no such shard"):
        cluster.check_all([cluster.Work("CeilingXShard9", _refuses)], backend="wasm", timeout=60)


def test_a_local_cluster_starts_without_noise_on_stderr() -> None:
    """Ray's notice that it turned token authentication on (its default for a new local cluster) is not
    pycert's output: pycert asks for that mode itself, so Ray starts silent; the mode stays token."""
    script = ("import os\nfrom pycert.core.errors import InputError\nfrom pycert.lean import cluster\n"
              "def refuse():\n    raise InputError('no Lean here', where='Shard1')\n"
              "try:\n    cluster.check_all([cluster.Work('CeilingXShard1', refuse)], backend='wasm', timeout=60)\n"
              "except InputError as err:\n    print(err, os.environ['RAY_AUTH_MODE'])\n")
    env = {k: v for k, v in os.environ.items() if k != "RAY_AUTH_MODE"}
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=180, env=env, cwd=REPO)
    assert run.returncode == 0 and run.stdout == "Shard1: no Lean here token\n", (run.stdout, run.stderr)
    assert run.stderr == "", run.stderr


def test_an_unreachable_ray_address_is_refused_at_once(tmp_path: Path) -> None:
    """A stranger's session: an address nothing listens on made Ray retry for minutes."""
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens on it
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(InputError, match="cannot reach the Ray cluster") as err:
        cluster.reachable(f"127.0.0.1:{port}", timeout=5)
    assert err.value.where == f"--ray-address 127.0.0.1:{port}"
    cluster.reachable("auto")  # no host and port: left to Ray


def test_no_split_makes_more_parts_than_a_trace_of_its_length_is_checked_in(tmp_path: Path) -> None:
    """Each shard or piece is a Lean process of its own under ``verify --kernel``: a 8,000-reference trace in pieces
    of 3 (4,000 of them, all hashes right, made in seconds without Lean) would have run for hours. prove and
    verify both refuse a split into more than ``most_parts`` parts."""
    from pycert.cli import main
    from pycert.core.limits import most_parts
    from pycert.families.capacity import derive

    assert most_parts(8_000) == 16 and most_parts(10**8) == 24_415
    refs = np.tile(np.array([0, 1], dtype=np.uint64), 4_000)
    for layout in (derive.joint_layout, derive.piece_layout):
        with pytest.raises(InputError, match="into 4,000 pieces, and at most 16 are checked"):
            layout(refs, 1, 3)
    assert len(derive.joint_layout(refs, 1, 1_000)[1]) - 1 <= 16
    trace = tmp_path / "t.txt"
    trace.write_text("0\n1\n" * 4_000)
    for family in ("ceiling", "capacity"):
        args = ["--capacity-blocks", "1"] if family == "capacity" else []
        assert main(["prove", family, "--trace", str(trace), *args, "--shard-refs", "3",
                     "--out", str(tmp_path / "c")]) == 2
    assert not (tmp_path / "c").exists()
