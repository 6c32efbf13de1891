"""``pycert leak serve``, ``gateway`` and ``audit``: the wire format, the keys file, the exact KS test,
the audit's plan and figures, the server on the real engine, the gateway, and all three end to end
over real sockets on loopback (subprocesses, ports chosen free by the kernel)."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from fractions import Fraction
from math import comb
from pathlib import Path

import pytest

from pycert.certify.verify import verify_certificate
from pycert.core.errors import InputError
from pycert.leak import audit_figures, ks
from pycert.leak.admission import SALT_TOKENS, Admission, keyed_salt, salt_tokens
from pycert.leak.audit_plan import AuditHeader, AuditLog, line_of, plan
from pycert.leak.gateway import Gateway, parse_keys, read_keys
from pycert.leak.httpd import Server
from pycert.leak.wire import MAX_EVENTS, parse_request, read_stream, request_body
from tests.conftest import REPO

KEYS = "# two tenants\nalice aaaaaaaaaaaaaaaaaaaaaaaa\n\nbob   bbbbbbbbbbbbbbbbbbbbbbbb\n"
A_KEY, B_KEY = "a" * 24, "b" * 24

# ---------------------------------------------------------------------------- the wire format


def test_a_request_is_refused_as_vllm_refuses_it() -> None:
    ok = parse_request(json.dumps(request_body("m", [1, 2, 3], 2, "cache_salt", "s")).encode())
    assert ok.prompt == [1, 2, 3] and ok.cache_salt == "s" and ok.include_usage and ok.stream
    assert parse_request(b'{"model": "m", "prompt": [5]}').max_tokens == 16  # vLLM's default
    for body, where, needle in ((b'{"model":"m","prompt":[1],"cache_salt":""}', "cache_salt",
                                 "Parameter 'cache_salt' must be a non-empty string if provided."),
                                (b'{"model":"m","prompt":"hello"}', "prompt", "token ids"),
                                (b'{"model":"m","prompt":[1],"max_tokens":257}', "max_tokens", "256"),
                                (b'{"model":"m","prompt":[-1]}', "prompt", "non-negative"),
                                (b'{"prompt":[1]}', "model", "required")):
        with pytest.raises(InputError, match=needle) as err:
            parse_request(body)
        assert err.value.where == where


def test_a_stream_error_event_is_an_error_not_a_silent_miss() -> None:
    with pytest.raises(InputError, match="boom"):
        read_stream([b'data: {"error": {"message": "boom", "code": 500}}\n', b"data: [DONE]\n"])


# ---------------------------------------------------------------------------- the keys file


def test_keys_bind_tenants_and_bad_lines_name_file_and_line(tmp_path: Path) -> None:
    keys = parse_keys(KEYS, "k")
    assert keys.tenants == ["alice", "bob"] and keys.tenant(A_KEY) == "alice" and keys.tenant("a" * 23) is None
    for text, line, needle in (("alice " + "a" * 20 + " extra\n", 1, "two fields"),
                               ("# c\nalice short\n", 2, "at least 16"),
                               (f"alice {A_KEY}\nbob {A_KEY}\n", 2, "also on line 1"),
                               ("al/ice " + "a" * 20 + "\n", 1, "tenant"),
                               ("# nothing\n", None, "no TENANT KEY line")):
        path = tmp_path / "keys"
        path.write_text(text)
        with pytest.raises(InputError, match=needle) as err:
            read_keys(path)
        assert err.value.where == (f"{path}:{line}" if line else str(path))
    with pytest.raises(InputError, match="no such file"):
        read_keys(tmp_path / "none")


# ---------------------------------------------------------------------------- the exact KS test


@pytest.mark.parametrize(("m", "n"), [(3, 4), (5, 5), (2, 7), (6, 4)])
def test_the_ks_p_value_is_the_share_of_every_split(m: int, n: int) -> None:
    """Against brute force: every way of splitting m + n distinct values into the two samples."""
    values = list(range(m + n))
    stats = [ks.statistic(xs, [v for v in values if v not in xs]) for xs in itertools.combinations(values, m)]
    for k in range(m * n + 2):
        exact = Fraction(sum(s >= k for s in stats), comb(m + n, m))
        assert exact <= ks.p_value(m, n, k) < exact + Fraction(1, 10**6)
    crit = ks.critical(m, n, Fraction(1, 10))
    assert ks.p_value(m, n, crit) <= Fraction(1, 10) < ks.p_value(m, n, crit - 1)


def test_the_statistic_with_ties_and_published_critical_values() -> None:
    assert ks.statistic([1, 2, 3], [1, 2, 3]) == 0
    assert ks.statistic([1, 1, 2], [1, 2, 2]) == 3  # D = 1/3 over 3 x 3: counted after every copy of a value
    # the asymptotic two-sided critical value at 0.01 is 1.628 * sqrt((m + n) / (m n)): 0.1456 for 250 and 250
    assert abs(float(Fraction(ks.critical(250, 250, Fraction(1, 100)), 250 * 250)) - 0.1456) < 0.005
    with pytest.raises(ValueError):
        ks.p_value(0, 3, 1)


def test_power_is_high_for_a_shift_and_near_alpha_for_none() -> None:
    xs, ys = [i / 100 for i in range(100)], [0.5 + i / 100 for i in range(100)]
    crit = ks.critical(50, 50, Fraction(1, 100))
    assert ks.power(xs, ys, 50, 50, crit, 200, seed=1) > Fraction(9, 10)
    assert ks.power(xs, xs, 50, 50, crit, 200, seed=1) < Fraction(1, 10)


# ---------------------------------------------------------------------------- the audit's plan and figures


def _header(**kw: object) -> AuditHeader:
    base = {"model": "m", "server": "s", "tenants": ("alice", "bob"), "seed": 3, "samples": 30, "prefix_samples": 10,
            "prefixes": (64, 256), "min_tokens": 300, "max_tokens": 400, "vocab": 8192, "power_sims": 100}
    return AuditHeader(**{**base, **kw})


def test_the_plan_is_seeded_shuffled_and_every_prompt_fresh() -> None:
    h = _header()
    steps = plan(h)
    assert steps == plan(h) and steps != plan(_header(seed=4))
    assert len(steps) == 2 * (3 * 30 + 2 * 10)
    order = [s.arm for s in steps[1::2]]
    assert order != sorted(order) and order[:30] != ["own"] * 30
    with pytest.raises(ValueError, match="below the shortest prompt"):
        _header(prefixes=(64, 300))
    primes = [s.tokens for s in steps[::2]]
    assert len(set(primes)) == len(primes)
    for prime, probe in zip(steps[::2], steps[1::2], strict=True):
        assert prime.tenant == "alice" and probe.tenant == ("bob" if probe.arm in ("cross", "fresh") else "alice")
        assert probe.tokens[:probe.shared] == prime.tokens[:probe.shared]
        assert len(probe.tokens) == len(prime.tokens)  # no arm differs from fresh by its length
        if probe.arm == "fresh" or probe.arm.startswith("prefix-"):
            assert probe.tokens[probe.shared:probe.shared + 8] != prime.tokens[probe.shared:probe.shared + 8]


def _log(h: AuditHeader, ttft: dict[str, float], cached: dict[str, int | None]) -> AuditLog:
    """A log of the plan with each arm's probes at ``ttft[arm]`` seconds plus a spread, primes at 0.3 s."""
    lines = []
    for i, s in enumerate(plan(h)):
        arm = "prefix" if s.arm.startswith("prefix") else s.arm
        t = 0.3 if s.role == "prime" else ttft[arm] + (i % 17) / 1000
        c = cached["prime"] if s.role == "prime" else cached[arm]
        lines.append(line_of(s, t, c, len(s.tokens)))
    return AuditLog(header=h, requests=tuple(lines))


def test_the_verdicts_leak_no_leak_and_not_checked() -> None:
    h = _header()
    clean = _log(h, {"own": 0.05, "cross": 0.3, "fresh": 0.3, "prefix": 0.3}, dict.fromkeys(
        ("prime", "own", "cross", "fresh", "prefix"), None))
    f = audit_figures.figures(clean)
    assert audit_figures.structure_rejections(clean) == [] and audit_figures.unchecked(f) == []
    assert f["timing_signal"] == 1 and f["cross_detected"] == 0 and f["power"] == 1 and f["counter_reported"] == 0
    assert f["smallest_prefix_detected"] == 0
    leaky = _log(h, {"own": 0.05, "cross": 0.05, "fresh": 0.3, "prefix": 0.05},
                 {"prime": 0, "own": 256, "cross": 256, "fresh": 0, "prefix": 0})
    f = audit_figures.figures(leaky)
    assert f["cross_detected"] == 1 and f["cross_cached_hits"] == 30 and f["smallest_prefix_detected"] == 64
    silent = _log(h, {"own": 0.3, "cross": 0.3, "fresh": 0.3, "prefix": 0.3}, dict.fromkeys(
        ("prime", "own", "cross", "fresh", "prefix"), None))
    assert "no signal" in audit_figures.unchecked(audit_figures.figures(silent))[0]
    broken = _log(h, {"own": 0.05, "cross": 0.3, "fresh": 0.3, "prefix": 0.3},
                  {"prime": 0, "own": 256, "cross": 0, "fresh": 256, "prefix": 0})
    assert "control failed" in audit_figures.unchecked(audit_figures.figures(broken))[0]


def test_a_log_that_is_not_its_plan_is_refused() -> None:
    h = _header(prefix_samples=0, prefixes=())
    log = _log(h, {"own": 0.05, "cross": 0.3, "fresh": 0.3, "prefix": 0.3}, dict.fromkeys(
        ("prime", "own", "cross", "fresh", "prefix"), None))
    swapped = list(log.requests)
    swapped[1], swapped[3] = swapped[3], swapped[1]
    bad = audit_figures.structure_rejections(AuditLog(header=h, requests=tuple(swapped)))
    assert bad and bad[0].subject.startswith("log line")
    edited = list(log.requests)
    edited[5] = edited[5].model_copy(update={"prompt_sha256": "0" * 64})
    assert audit_figures.structure_rejections(AuditLog(header=h, requests=tuple(edited)))[0].subject.endswith(
        "prompt_sha256")


# ---------------------------------------------------------------------------- the gateway (a recording upstream)


class Recorder:
    """An upstream that records what reaches it and answers a two-token stream with a usage chunk."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []
        self.server = Server(0, {("POST", "/v1/completions"): self.complete,
                                 ("GET", "/v1/models"): lambda h: h.send_json(200, {"data": [{"id": "m"}]})},
                             log=lambda _m: None)
        self.server.run_in_thread()

    def complete(self, h) -> None:  # noqa: ANN001
        body = json.loads(h.body())
        self.bodies.append(body)
        h.start_stream()
        h.send_event({"choices": [{"text": "x"}]})
        n = len(body["prompt"])
        h.send_event({"choices": [], "usage": {"prompt_tokens": n, "completion_tokens": 1, "total_tokens": n + 1,
                                               "prompt_tokens_details": {"cached_tokens": n - 1}}})
        h.send_event("[DONE]")


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    r = Recorder()
    yield r
    r.server.shutdown()
    r.server.server_close()


def _post(url: str, body: dict, key: str | None) -> tuple[int, list[bytes]]:
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    req = urllib.request.Request(url + "/v1/completions", data=json.dumps(body).encode(), headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, list(resp)
    except urllib.error.HTTPError as exc:
        return exc.code, [exc.read()]


def _gateway(upstream: str, **kw: object) -> Server:
    g = Server(0, Gateway(upstream, parse_keys(KEYS, "k"), Admission(b"s" * 32), **kw).routes(), log=lambda _m: None)
    g.run_in_thread()
    return g


def test_the_gateway_refuses_unknown_keys_and_salts_the_rest(recorder: Recorder) -> None:
    g = _gateway(recorder.server.url)
    try:
        body = request_body("m", [20, 21, 22], 2, "cache_salt", "chosen-by-the-client")
        for key in (None, "c" * 24, A_KEY[:-1]):
            code, answer = _post(g.url, body, key)
            assert code == 401 and b"Bearer" in answer[0]
        assert recorder.bodies == []  # nothing forwarded
        assert _post(g.url, body, A_KEY)[0] == 200 and _post(g.url, body, B_KEY)[0] == 200
        a, b = recorder.bodies
        assert a["cache_salt"] == keyed_salt(b"s" * 32, "alice").hex() != b["cache_salt"]
        assert a["prompt"] == [20, 21, 22]
        code, answer = _post(g.url.replace("/v1", "") + "/reset_prefix_cache", {}, A_KEY)
        assert code == 404 and len(recorder.bodies) == 2
    finally:
        g.shutdown()
        g.server_close()


def test_the_gateway_can_prepend_salt_tokens_and_gives_back_the_clients_counts(recorder: Recorder) -> None:
    with pytest.raises(InputError, match="--vocab"):
        Gateway(recorder.server.url, parse_keys(KEYS, "k"), Admission(b"s" * 32), salt_in="tokens")
    g = _gateway(recorder.server.url, salt_in="tokens", vocab=1000)
    try:
        code, lines = _post(g.url, request_body("m", [20, 21, 22], 2), A_KEY)
        assert code == 200
        [sent] = recorder.bodies
        assert sent["prompt"] == salt_tokens(keyed_salt(b"s" * 32, "alice"), 1000) + [20, 21, 22]
        assert "cache_salt" not in sent
        first, use = read_stream(lines)
        assert first is not None and use["prompt_tokens"] == 3 and use["prompt_tokens_details"]["cached_tokens"] == 3 - 1
        assert len(sent["prompt"]) == 3 + SALT_TOKENS
    finally:
        g.shutdown()
        g.server_close()


def test_an_upstream_that_is_down_is_a_502(tmp_path: Path) -> None:
    g = _gateway("http://127.0.0.1:9")
    try:
        code, answer = _post(g.url, request_body("m", [20], 2), A_KEY)
        assert code == 502 and b"cannot be reached" in answer[0]
    finally:
        g.shutdown()
        g.server_close()


# ---------------------------------------------------------------------------- the server, on the real engine


def _usage(lines: list[bytes]) -> dict:
    return read_stream(lines)[1]



@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    from pycert.leak.engines.transformers import TransformersEngine
    from pycert.leak.serve import App

    engine = TransformersEngine()
    server = Server(0, App(engine, "small").routes(), log=lambda _m: None)
    server.run_in_thread()
    yield server.url
    server.shutdown()
    server.server_close()
    engine.close()


def test_the_server_speaks_vllms_fields(served: str) -> None:
    models = json.loads(urllib.request.urlopen(served + "/v1/models", timeout=60).read())
    assert models["data"][0]["id"] == "small" and models["data"][0]["max_model_len"] == 4096
    urllib.request.urlopen(urllib.request.Request(served + "/reset_prefix_cache", data=b"{}"), timeout=60)
    prompt = list(range(100, 700))
    answers = []
    for salt in (None, None, "tenant-a", "tenant-a", "tenant-b"):
        code, lines = _post(served, request_body("small", prompt, 2, "cache_salt", salt), None)
        events = [json.loads(x[5:]) for x in lines if x.startswith(b"data: {")]
        assert code == 200 and lines[-2] == b"data: [DONE]\n"
        assert [e["choices"][0]["text"].startswith("token_id:") for e in events[:-1]] == [True, True]
        assert events[-1]["choices"] == [] and events[-1]["usage"]["prompt_tokens"] == 600
        answers.append(events[-1]["usage"]["prompt_tokens_details"]["cached_tokens"])
    # whole 256-token blocks, the last prompt token recomputed; the salt's 8 tokens lead the prompt
    assert answers == [0, 512, 0, 504, 0]
    code, lines = _post(served, {**request_body("small", prompt, 2), "stream_options": None}, None)
    assert code == 200 and all(b'"usage":null' in x for x in lines if x.startswith(b"data: {"))
    plain = json.loads(urllib.request.urlopen(urllib.request.Request(
        served + "/v1/completions", data=json.dumps({"model": "small", "prompt": prompt, "max_tokens": 3}).encode()),
        timeout=60).read())
    assert plain["usage"]["completion_tokens"] == 3 and plain["usage"]["prompt_tokens_details"]["cached_tokens"] == 512
    urllib.request.urlopen(urllib.request.Request(served + "/reset_prefix_cache", data=b"{}"), timeout=60)
    code, lines = _post(served, request_body("small", prompt, 2), None)
    assert _usage(lines)["prompt_tokens_details"]["cached_tokens"] == 0


def test_the_server_refuses_what_it_cannot_serve(served: str) -> None:
    for body, code, needle in (({"model": "other", "prompt": [20]}, 404, b"does not exist"),
                               ({"model": "small", "prompt": [9000]}, 400, b"out of vocabulary"),
                               ({"model": "small", "prompt": [20] * 4090, "max_tokens": 16}, 400, b"maximum context"),
                               ({"model": "small", "prompt": [20], "cache_salt": ""}, 400, b"cache_salt")):
        got, answer = _post(served, body, None)
        assert got == code and needle in answer[0], answer
    try:
        urllib.request.urlopen(served + "/nowhere", timeout=60)
    except urllib.error.HTTPError as exc:
        assert exc.code == 404 and json.loads(exc.read())["error"]["code"] == 404


def test_concurrent_requests_each_get_their_own_answer(served: str) -> None:
    prompts = [list(range(200 + i, 500 + i)) for i in range(6)]
    got: dict[int, int] = {}

    def one(i: int) -> None:
        code, lines = _post(served, request_body("small", prompts[i], 2), None)
        got[i] = _usage(lines)["prompt_tokens"]

    threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert got == {i: 300 for i in range(6)}


# ---------------------------------------------------------------------------- all three, end to end


def _start(argv: list[str], log: Path) -> tuple[subprocess.Popen, str]:
    """A ``pycert`` server in its own process; its URL from the one line it prints when it listens."""
    proc = subprocess.Popen([sys.executable, "-m", "pycert", *argv, "--json"], stdout=subprocess.PIPE,
                            stderr=log.open("wb"), cwd=REPO,
                            env={**os.environ, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"})  # docs/leak-http.md
    line = proc.stdout.readline()  # type: ignore[union-attr]
    assert line, log.read_text()
    return proc, json.loads(line)["url"]


def _stop(proc: subprocess.Popen) -> int:
    proc.send_signal(signal.SIGTERM)
    return proc.wait(120)


def _audit(endpoint: str, keys: Path, out: Path) -> tuple[int, dict]:
    res = subprocess.run([sys.executable, "-m", "pycert", "leak", "audit", "--endpoint", endpoint, "--keys",
                          str(keys), "--samples", "12", "--prefix-samples", "3", "--prefixes", "64,256",
                          "--power-sims", "50", "--out", str(out), "--json"], capture_output=True, cwd=REPO, timeout=1200)
    return res.returncode, json.loads(res.stdout)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_serve_gateway_and_audit_end_to_end(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.write_text(KEYS)
    server, url = _start(["leak", "serve", "--port", "0"], tmp_path / "serve.err")
    try:
        gateway, gw = _start(["leak", "gateway", "--upstream", url, "--port", "0", "--keys", str(keys)],
                             tmp_path / "gateway.err")
        try:
            rc, res = _audit(gw, keys, tmp_path / "salted")
            assert rc == 0 and res["status"] == "no cross-tenant reuse detected", res
            assert res["cross_tenant_reuse"]["cached_hits"] == 0 and res["own_reuse"]["cached_hits"] == 12
            assert res["smallest_prefix_detected"] == 256 and res["counter_reported"]
            assert verify_certificate(Path(res["certificate"])).ok
        finally:
            assert _stop(gateway) == 143
        rc, res = _audit(url, keys, tmp_path / "bare")  # straight to the server: no salt, the leak
        assert rc == 1 and res["cross_tenant_reuse"]["detected"] and res["cross_tenant_reuse"]["cached_hits"] == 12
        assert verify_certificate(Path(res["certificate"])).ok
    finally:
        assert _stop(server) == 143
    rc, res = _audit(url, keys, tmp_path / "down")  # the server is gone: not checked, nothing written
    assert rc == 4 and res["exit"] == 4 and "cannot reach" in res["error"] and not (tmp_path / "down").exists()


def test_a_taken_port_is_refused_before_the_engine_loads(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import socket

    from pycert.cli import main

    keys = tmp_path / "keys"
    keys.write_text(KEYS)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for argv in (["leak", "serve", "--port", str(port)],
                     ["leak", "gateway", "--upstream", "http://127.0.0.1:9", "--keys", str(keys), "--port", str(port)]):
            assert main([*argv, "--json"]) == 2
            err = json.loads(capsys.readouterr().out)
            assert err["where"] == f"127.0.0.1:{port}" and "cannot listen" in err["error"], err


def test_an_audit_log_longer_than_its_plan_is_refused_before_its_lines_are_read(tmp_path: Path) -> None:
    from pycert.leak import log as leaklog

    h = _header(samples=2, prefix_samples=0, prefixes=())
    log = _log(h, {"own": 0.05, "cross": 0.3, "fresh": 0.3, "prefix": 0.3}, dict.fromkeys(
        ("prime", "own", "cross", "fresh", "prefix"), None))
    data = leaklog.render_lines(log.header, [*log.requests, log.requests[0]])
    with pytest.raises(InputError, match="13 request lines where the header plans 12"):
        leaklog.parse_lines(data, "a.jsonl", AuditHeader, type(log.requests[0]), "an audit log")


def test_a_servers_answers_are_read_bounded() -> None:
    """A server under audit is data: a body past 1 MiB, an event line past 1 MiB and a stream without end
    are refused with one line, after reading at most one limit's worth (a 3 GB /v1/models body was a
    MemoryError traceback)."""
    import io

    from pycert.leak.wire import MAX_EVENTS, MAX_RESPONSE_BYTES, body, events, read_stream

    assert body(io.BytesIO(b'{"data": []}'), "u") == b'{"data": []}'
    huge = io.BytesIO(b" " * (MAX_RESPONSE_BYTES + 10))
    with pytest.raises(InputError, match="longer than 1,048,576 bytes"):
        body(huge, "u")
    assert huge.tell() == MAX_RESPONSE_BYTES + 1
    with pytest.raises(InputError, match="stream event longer"):
        read_stream(events(io.BytesIO(b"x" * (MAX_RESPONSE_BYTES + 1))))
    with pytest.raises(InputError, match="more than 4,096 lines"):
        read_stream(events(io.BytesIO(b": keep-alive\n" * (MAX_EVENTS + 1))))
    assert read_stream(events(io.BytesIO(b"data: [DONE]\n"))) == (None, None)


class Hostile:
    """An upstream that answers ``/v1/models`` with ``models`` (raw bytes) and streams ``line`` without end."""

    def __init__(self, models: bytes, line: bytes) -> None:
        self.models, self.line = models, line
        self.server = Server(0, {("POST", "/v1/completions"): self.complete, ("GET", "/v1/models"): self.list},
                             log=lambda _m: None)
        self.server.run_in_thread()

    def list(self, h) -> None:  # noqa: ANN001
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.end_headers()
        h.close_connection = True
        for _ in range(64):  # 64 MiB unless the reader stops first
            h.wfile.write(self.models)

    def complete(self, h) -> None:  # noqa: ANN001
        h.body()
        h.start_stream()
        for _ in range(MAX_EVENTS + 10):
            h.wfile.write(self.line)


@pytest.mark.parametrize("models, want", [(b"[" * (1 << 20), b"longer than"), (b"not json" * 4, b"not JSON")])
def test_the_gateway_reads_an_upstreams_answers_no_further_than_its_bound(models: bytes, want: bytes) -> None:
    up = Hostile(models, b"data: {\"choices\": [{\"text\": \"x\"}]}\n\n")
    g = _gateway(up.server.url)
    try:
        req = urllib.request.Request(g.url + "/v1/models", headers={"Authorization": f"Bearer {A_KEY}"})
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=60)
        assert err.value.code == 502 and want in err.value.read()
        code, lines = _post(g.url, request_body("m", [20], 2), A_KEY)
        assert code == 200  # the stream had begun: its end is an error event, then [DONE]
        events = [line for line in lines if line.strip()]
        assert b"more than 4,096 lines" in events[-2] and events[-1] == b"data: [DONE]\n"
        assert len(events) <= MAX_EVENTS + 2
    finally:
        g.shutdown()
        g.server_close()
        up.server.shutdown()
        up.server.server_close()
