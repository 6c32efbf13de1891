"""docs/export.md runs as written: each ``sh`` block of the page, in order, in a directory holding the files
it names in the shapes the page shows (``tests/traces/export/``: a vLLM log of both request-log forms, two
SGLang hosts' JSON request logs, an Envoy JSON access log), and what it writes is the trace the logs hold,
checked against a reading of the logs made here without the page's commands."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pycert.data.traces import read_trace
from tests.conftest import REPO

EXPORT = Path(__file__).resolve().parent / "traces" / "export"
PAGE = REPO / "docs" / "export.md"


def blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)


def same_blocks(a: object, b: object) -> bool:
    """Whether two reference lists are one up to the names of their blocks (ids are dense in the order first read)."""
    def shape(refs: object) -> list[int]:
        seen: dict[int, int] = {}
        return [seen.setdefault(r, len(seen)) for r in list(refs)]  # type: ignore[call-overload]
    return shape(a) == shape(b)


def logged_prompts() -> dict[str, list[int]]:
    """Request id -> the token ids the vLLM log holds for it, read here with a parser of its own."""
    out = {}
    for line in (EXPORT / "vllm.log").read_text().splitlines():
        if "prompt_token_ids: [" in line:
            rid = re.search(r"\] (?:Received r|R)equest (\S+?)(?: details)?: ", line).group(1)
            out[rid] = json.loads(line[line.rindex("prompt_token_ids: ") + 18:].split("]")[0] + "]")
    return out


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("jq") is None or shutil.which("sed") is None:
        pytest.skip("jq and sed are what the page uses")
    work = tmp_path_factory.mktemp("export")
    shutil.copytree(EXPORT, work, dirs_exist_ok=True)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    assert len(blocks()) == 3
    for block in blocks():
        done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block], cwd=work, env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, f"{block}\n{done.stdout}\n{done.stderr}"
        assert "warning" not in done.stderr, done.stderr  # each block orders what it reads
    return work


def test_vllm_request_log_becomes_its_prompts_in_order(ran: Path) -> None:
    rows = [json.loads(line) for line in (ran / "vllm-requests.jsonl").read_text().splitlines()]
    prompts = logged_prompts()
    assert [r["request_id"] for r in rows] == [f"chatcmpl-r{k}" for k in range(1, 9)] == list(prompts)
    assert [r["prompt_token_ids"] for r in rows] == list(prompts.values())  # both log forms, the trap text skipped
    t = read_trace(ran / "vllm-requests.jsonl", block_tokens=16)
    assert t.format == "requests" and t.cut and t.prompt_tokens.tolist() == [len(p) for p in prompts.values()]
    assert t.n_refs == sum(len(p) // 16 for p in prompts.values())


def test_sglang_logs_of_two_hosts_become_one_trace_in_timestamp_order(ran: Path) -> None:
    t = read_trace(ran / "sglang-trace.jsonl", block_tokens=16, sort=True)
    assert t.host_names == ("gpu-a", "gpu-b") and t.disorder is None
    assert [t.session_names[s] for s in t.sessions] == [f"r{k}" for k in range(1, 9)]  # the rid, in arrival order
    unsorted = read_trace(ran / "sglang-trace.jsonl", block_tokens=16)
    assert unsorted.disorder is not None and "earlier than line 4's" in unsorted.disorder
    assert same_blocks(t.refs, read_trace(ran / "vllm-requests.jsonl", block_tokens=16).refs)


def test_the_gateway_join_gives_each_request_its_tenant_session_and_host(ran: Path) -> None:
    t = read_trace(ran / "trace.jsonl", block_tokens=16)
    gateway = {g["request_id"]: g for g in map(json.loads, (EXPORT / "gateway.jsonl").read_text().splitlines())}
    want = [gateway[f"r{k}"] for k in range(1, 9)]  # the engine's order, not the gateway's
    assert [t.tenant_names[i] for i in t.tenants] == [g["tenant"] for g in want]
    assert [t.session_names[i] for i in t.sessions] == [g["session"] for g in want]
    assert [t.host_names[i] for i in t.hosts] == [g["upstream_host"] for g in want]
    assert t.disorder is None and t.refs.tolist() == read_trace(ran / "vllm-requests.jsonl", block_tokens=16).refs.tolist()


def test_a_request_the_gateway_did_not_log_is_refused_not_dropped(ran: Path, tmp_path: Path) -> None:
    from pycert.core.errors import InputError

    short = tmp_path / "gateway.jsonl"
    short.write_text("".join(line + "\n" for line in (EXPORT / "gateway.jsonl").read_text().splitlines()
                             if '"r5"' not in line))
    shutil.copy(ran / "vllm-requests.jsonl", tmp_path)
    join = next(b for b in blocks() if "--slurpfile gw" in b).split("\npycert")[0]
    subprocess.run(["bash", "-e", "-c", join], cwd=tmp_path, check=True, capture_output=True, timeout=60)
    with pytest.raises(InputError, match=r"trace.jsonl:5: field 'timestamp' must be .*, got null"):
        read_trace(tmp_path / "trace.jsonl", block_tokens=16)
