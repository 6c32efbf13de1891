"""A Ray cluster without a shared disk: two nodes started on this machine, each with its own pycert
cache and temporary directory, on loopback addresses and ports no one else uses; a sharded ceiling and a
capacity certificate in pieces proved through them end to end (every compiled module travels through
Ray's object store), verified; and the local cluster pycert starts itself listens on the loopback only."""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pycert.certify.verify import verify_certificate
from pycert.core.resources import cache_dir
from pycert.lean.toolchain import WASM_DIRNAME
from tests.conftest import REPO
from tests.test_capacity import write_ids

RAY = Path(sys.executable).parent / "ray"
HEAD, OTHER = "127.0.0.2", "127.0.0.3"
"""Loopback addresses of their own (all of 127.0.0.0/8 is the loopback): Ray resolves 127.0.0.1 to the
machine's outward address unless clusters are off, and then a second node may not join."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def node_env(root: Path, ray_env: dict[str, str]) -> dict[str, str]:
    """A node's own pycert cache (the toolchain hard-linked in, no build cache) and temporary directory."""
    cache = root / "cache"
    shutil.copytree(cache_dir() / WASM_DIRNAME, cache / WASM_DIRNAME, copy_function=os.link)
    (root / "tmp").mkdir()
    # a local cluster started earlier in this process (pycert.lean.cluster.connect) set Ray's switch that
    # refuses a multi-node cluster: these nodes must not inherit it
    inherited = {k: v for k, v in os.environ.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
    return {**inherited, **ray_env, "PYCERT_CACHE": str(cache), "TMPDIR": str(root / "tmp"),
            "PYCERT_LEAN_SLOTS": "1", "PYCERT_BUILD_CACHE": ""}


@contextlib.contextmanager
def two_nodes(base: Path) -> Iterator[tuple[str, dict[str, str], dict[str, Path]]]:
    """A head node and one more, each with one core and a custom resource naming it; stopped on exit by
    signalling exactly the processes whose command line names this cluster's Ray directory."""
    ray_dir = Path(tempfile.mkdtemp(prefix="pycert-ray-", dir="/tmp"))  # Ray's socket paths must stay short
    token = ray_dir / "token"
    token.write_text(secrets.token_hex(32))
    ray_env = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)}
    port = free_port()
    caches = {}
    try:
        for name, ip, first in (("a", HEAD, ["--head", f"--port={port}", "--include-dashboard=false",
                                             f"--dashboard-port={free_port()}", f"--temp-dir={ray_dir}"]),
                                ("b", OTHER, [f"--address={HEAD}:{port}"])):
            env = node_env(base / f"node-{name}", ray_env)
            caches[name] = Path(env["PYCERT_CACHE"])
            done = subprocess.run(
                [str(RAY), "start", *first, f"--node-ip-address={ip}", "--num-cpus=1", "--disable-usage-stats",
                 f"--resources={json.dumps({f'pycert_node_{name}': 1})}",
                 f"--dashboard-agent-listen-port={free_port()}", f"--runtime-env-agent-port={free_port()}",
                 f"--metrics-export-port={free_port()}"], env=env, capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, done.stderr[-3000:]
        yield f"{HEAD}:{port}", ray_env, caches
    finally:
        stop(ray_dir)


def stop(ray_dir: Path) -> None:
    mark = f"RAY_AUTH_TOKEN_PATH={ray_dir / 'token'}".encode()

    def ours() -> list[int]:
        """The cluster's processes: by command line, or by environment (Ray's agents rename themselves
        ``ray::DashboardAgent`` and the like, and their command line no longer names the directory)."""
        found = {int(p) for p in subprocess.run(["pgrep", "-f", str(ray_dir)], capture_output=True,
                                                text=True).stdout.split()}
        for environ in Path("/proc").glob("[0-9]*/environ"):
            with contextlib.suppress(OSError):
                if mark in environ.read_bytes().split(b"\0"):
                    found.add(int(environ.parent.name))
        return sorted(found - {os.getpid()})

    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        for pid in ours():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while ours() and time.monotonic() < deadline:
            time.sleep(0.5)
    assert not ours(), "a Ray process of the test's cluster outlived it"
    shutil.rmtree(ray_dir, ignore_errors=True)


def node_resources(address: str, env: dict[str, str]) -> dict[str, set[str]]:
    """Node id -> the custom resources it offers, as the cluster itself reports them."""
    script = ("import json, ray\n"
              f"ray.init(address={address!r}, log_to_driver=False, configure_logging=False)\n"
              "print(json.dumps({n['NodeID']: sorted(k for k in n['Resources'] if k.startswith('pycert_node_'))"
              " for n in ray.nodes() if n['Alive']}))\n")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return {k: set(v) for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_two_nodes_without_a_shared_disk(wasm, tmp_path: Path) -> None:
    trace = write_ids(tmp_path / "ids.txt", 1200, 40, seed=int.from_bytes(os.urandom(4), "little"))
    out = tmp_path / "certs"
    with two_nodes(tmp_path) as (address, ray_env, caches):
        driver = {**os.environ, **ray_env, "TMPDIR": str(tmp_path)}
        proc = subprocess.run([sys.executable, "-m", "pycert", "prove", "ceiling", "--trace", str(trace),
                               "--capacity-blocks", "4", "--shard-refs", "500", "--ray-address", address,
                               "--out", str(out), "--backend", "wasm"],
                              capture_output=True, text=True, cwd=REPO, env=driver, timeout=1700)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
        nodes = node_resources(address, driver)
    ran = dict(re.findall(r"(Ceiling\w+|Capacity\w+): ok \([^)]*\)[^\n]* on node ([0-9a-f]{12})", proc.stderr))
    assert {"CeilingIdsShard0", "CeilingIdsShard2", "CapacityIdsC4Piece0", "CapacityIdsC4Piece2"} <= set(ran), proc.stderr
    offered = {next(iter(nodes[n])) for n in nodes for short in ran.values() if n.startswith(short)}
    assert offered == {"pycert_node_a", "pycert_node_b"}, (ran, nodes)
    for name, cache in caches.items():  # each node built modules in its own cache, the library handed to it
        built = [json.loads(p.read_text())["module"] for p in (cache / "build").glob("*/result.json")]
        assert "Pycert.SortedOptimum" in built and any(m.startswith(("CeilingIds", "CapacityIds")) for m in built), name
    inputs = {"ids.txt": trace}
    for cert in ("ceiling-ids.json", "capacity-ids-c4.json"):
        res = verify_certificate(out / cert, inputs=inputs)
        assert res.ok, res.failures
    doc = json.loads((out / "ceiling-ids.json").read_text())
    assert doc["parameters"]["shards"] == 3


def _driver(script: str) -> subprocess.CompletedProcess[str]:
    """``script`` as a fresh Ray driver (a process that has not imported Ray, without the caller's RAY_ settings)."""
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=300,
                          env={k: v for k, v in os.environ.items() if not k.startswith("RAY_")})


def test_the_local_cluster_listens_on_the_loopback_only() -> None:
    """Every socket the cluster pycert starts listens on (GCS, raylet, workers, runtime-env agent) is on
    127.0.0.1, and there is no dashboard."""
    script = (
        "import subprocess\nfrom pycert.lean import cluster\n"
        "print('joined:', cluster.connect(None))\n"
        "import os, ray\n"
        "@ray.remote\ndef f(): return os.getpid()\n"
        "ray.get([f.remote() for _ in range(2)])\n"
        "print('node ip:', ray.util.get_node_ip_address())\n"
        "session = ray._private.worker._global_node.get_session_dir_path()\n"
        "pids = set(subprocess.run(['pgrep', '-f', session], capture_output=True, text=True).stdout.split())\n"
        "pids |= {str(os.getpid())}\n"
        "for line in subprocess.run(['ss', '-ltnpH'], capture_output=True, text=True).stdout.splitlines():\n"
        "    if any(f'pid={p},' in line for p in pids): print('listen', line.split()[3])\n"
    )
    done = _driver(script)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "on 127.0.0.1" in done.stdout and "node ip: 127.0.0.1" in done.stdout, done.stdout
    listening = [ln.split()[1] for ln in done.stdout.splitlines() if ln.startswith("listen")]
    assert len(listening) >= 3, done.stdout  # GCS, raylet, a worker at least
    assert all(re.fullmatch(r"(\[::ffff:)?127\.0\.0\.1\]?:\d+", a) for a in listening), listening


@pytest.mark.parametrize("status, verdict", [("failed", "rejected"), ("crashed", "unchecked"),
                                             ("resources", "unchecked"), ("interrupted", "unchecked")])
def test_only_the_kernels_refusal_of_a_part_rejects_its_claim(status: str, verdict: str) -> None:
    """A Ray task whose Lean died (a crash, a kill, a timeout) says nothing about its file: the claim is left
    unchecked (exit 3), not reported as the kernel's rejection (exit 1)."""
    from pycert.families import FAMILIES
    from pycert.families.base import Prepared
    from pycert.lean.diagnostics import CheckResult

    claim = FAMILIES["ceiling"]
    p = Prepared(claim=claim, id="c", parameters=claim.params(lean_encoding="packed-shards/1"), headline="")
    part = CheckResult(module="CShard0", file="CShard0.lean", ok=False, status=status, exit_code=1, seconds=1.0,
                       detail="Lean exited 1")
    assert not p.judge_parts([part])
    assert (p.rejection is not None, p.unchecked is not None) == (verdict == "rejected", verdict == "unchecked")


def test_a_task_that_cannot_make_its_module_ends_the_run_in_one_line() -> None:
    """A task's pycert error (here every piece's) is raised once on the driver, the tasks still running are
    cancelled, and Ray prints none of the others as an "Unhandled error" traceback."""
    script = (
        "import time\nfrom pycert.core.errors import InputError\nfrom pycert.lean.cluster import Work, check_all\n"
        "def bad(k):\n    time.sleep(0.5 * k)\n    raise InputError(f'piece {k} cannot be made')\n"
        "works = [Work(module=f'RayBad{k}', make=lambda k=k: bad(k)) for k in range(4)]\n"
        "try:\n    check_all(works, backend='wasm', timeout=60)\n"
        "except InputError as err:\n    print('raised:', err.message)\n"
    )
    done = _driver(script)
    assert done.returncode == 0 and "raised: piece 0 cannot be made" in done.stdout, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "Unhandled error" not in done.stderr, done.stderr[-3000:]
