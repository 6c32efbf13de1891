"""``pycert engine replay``: the block-to-token map, the checks that tie a replay log to its trace, the
real engine (transformers continuous batching on the CPU: its block count, its whole-block counts, its
all-at-once eviction), the family and its verify, the sentence beside the optimum, and the command end
to end with its certificates, ``--replay`` and a planted defect (slow: the Lean kernel)."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from pycert.certify.manifest import write_certificates
from pycert.certify.verify import verify_certificate
from pycert.cli import main
from pycert.core.errors import InputError, Rejected
from pycert.data.traces import read_trace, trace_from_bytes
from pycert.families import capacity as capacity_family
from pycert.families.base import input_file
from pycert.families.capacity import CapacityParams
from pycert.families.engine import CLAIM, EngineParams, log_figures, names
from pycert.families.engine.beside import beside, reached
from pycert.families.engine.figures import log_rejections, oversized, requests_of, seen_prefixes
from pycert.leak import replay as replaylog
from pycert.leak.admission import EngineRequest
from pycert.lean.emit.capacity import ENCODING, OPTIMA_ENCODING, OPTIMUM_ENCODING, PIECES_ENCODING
from tests.certs import make_cert, trace_input
from tests.conftest import REPO

B, C = 16, 12


def mooncake(requests: list[list[int]]) -> bytes:
    return "".join(json.dumps({"timestamp": i, "input_length": 512 * len(r), "output_length": 2, "hash_ids": r}) + "\n"
                   for i, r in enumerate(requests)).encode()


# A small trace with real reuse: shared prefixes, repeats, a request that extends an earlier one, and a
# cycle of five requests twice over, 15 blocks that 12 cannot all keep (80 references, 37 blocks).
REQUESTS = [[1, 2, 3], [1, 2, 4], [5, 6], [1, 2, 3, 7], [8, 9, 10, 11], [5, 6], [12, 13, 14], [1, 2, 3], [15, 16, 17],
            [5, 6, 18], [1, 2, 4], [19, 20, 21, 22], [8, 9, 10, 11], [1, 2, 3, 7],
            *[[30, 31, 32], [33, 34, 35], [36, 37, 38], [39, 40, 41], [42, 43, 44]] * 2, [1, 2, 3], [5, 6]]


@pytest.fixture(scope="module")
def small_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("trace") / "small.jsonl"
    path.write_bytes(mooncake(REQUESTS))
    return path


# ---------------------------------------------------------------------------- pure parts


def test_block_tokens_are_fixed_by_the_seed_and_clear_of_reserved_ids() -> None:
    a = replaylog.block_tokens(7, 0, 64, 8192)
    assert a == replaylog.block_tokens(7, 0, 64, 8192) and len(a) == 64
    assert a != replaylog.block_tokens(7, 1, 64, 8192) and a != replaylog.block_tokens(8, 0, 64, 8192)
    assert all(replaylog.FIRST_ID <= t < 8192 for t in a)
    tokens = replaylog.TokenMap(0, 4, 8192)
    assert tokens.prompt([7, 8]) == (*tokens(7), *tokens(8), replaylog.TAIL)


def test_two_blocks_with_the_same_tokens_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replaylog, "block_stream", lambda block, seed, width: bytes(2 * width))
    tokens = replaylog.TokenMap(0, 4, 8192)
    tokens(1)
    with pytest.raises(InputError, match="blocks 1 and 2 get the same 4 tokens"):
        tokens(2)


def test_seen_prefixes_count_what_any_prefix_cache_can_serve() -> None:
    seen, chains = seen_prefixes(REQUESTS)
    assert seen[:4] == [0, 2, 0, 3] and seen[7] == 3 and seen[13] == 4
    assert chains == len({b for r in REQUESTS for b in r})  # prefix-closed: one chain a block
    # block 3 after another prefix is another block to a prefix cache: not prefix-closed
    seen, chains = seen_prefixes([[1, 3], [2, 3], [2, 3]])
    assert seen == [0, 0, 2] and chains == 4


def test_a_trace_the_engine_cannot_replay_is_refused_before_torch(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    with pytest.raises(InputError, match="no request boundaries"):
        requests_of(trace_from_bytes(b"1\n2\n1\n", "t.ids"))
    assert oversized(REQUESTS, 5) is None and oversized(REQUESTS, 4) == (3, 4)
    ids, trace = tmp_path / "t.ids", tmp_path / "small.jsonl"
    ids.write_text("1\n2\n")
    trace.write_bytes(mooncake(REQUESTS))
    for argv, where, why in (
            (["--trace", str(ids), "--num-blocks", "8", "--block-tokens", "16"], str(ids), "no request boundaries"),
            (["--trace", str(trace), "--num-blocks", "1024", "--block-tokens", "4096"], "--num-blocks",
             "at most 131,072"),
            (["--trace", str(trace), "--num-blocks", "4", "--block-tokens", "16"], f"{trace}:4",
             "request 3 (0-based) has 4 blocks: a cache of 4 cannot hold it"),
            (["--trace", str(tmp_path / "none.jsonl"), "--num-blocks", "8", "--block-tokens", "16"],
             str(tmp_path / "none.jsonl"), "no such trace file")):
        assert main(["engine", "replay", "--out", str(tmp_path / "out"), *argv, "--json"]) == 2
        err = json.loads(capsys.readouterr().out)
        assert err["where"] == where and why in err["error"], err
    assert not (tmp_path / "out").exists()
    # in a fresh process: refused without importing torch (8-10 s here)
    probe = ("import sys; from pycert.cli import main; "
             f"rc = main(['engine', 'replay', '--trace', {str(trace)!r}, '--num-blocks', '4', '--block-tokens', '16', "
             f"'--out', {str(tmp_path / 'out')!r}]); print(rc, 'torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["2", "False"], done


def test_the_sentence_names_the_caches_the_capacity_certificate_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """A headline with the optimum with bypass bounds every cache of C blocks in the model (it starts empty, holds
    blocks of one size, fetches a block only when it is referenced), and the sentence takes its figure and says so,
    with the limits of the cache reaching it (offline, no room for a running request's blocks); a headline
    without it bounds only the caches that store every missed block, and one that states the bound alone says
    "at most" (attainment computed, not kernel-checked)."""
    claim = capacity_family.CLAIM
    limits = "that starts empty, holds blocks of one size, fetches a block only when it is referenced (no prefetch) and"
    figure, caches = claim.widest_bound(CapacityParams(capacity_blocks=1024, lean_encoding=OPTIMA_ENCODING))
    assert figure == "bypass_hits" and reached(599, 2438, 1024, caches, True, (306_688, 1_248_256)) == (
        f"the engine reached 599 of the 2,438 hits of the optimum at 1,024 blocks: no cache of 1,024 blocks {limits} "
        "may bypass (skip storing a missed block) hits more on this trace, and one (offline, keeping no room for a "
        "running request's blocks, which a real engine needs) hits exactly 2,438 (in tokens: 306,688 of at most "
        "1,248,256)")
    for encoding in (OPTIMUM_ENCODING, ENCODING, PIECES_ENCODING):
        params = CapacityParams(capacity_blocks=1024, lean_encoding=encoding)
        figure, caches = claim.widest_bound(params)
        assert figure == "max_hits" and caches == f"{limits} stores every missed block"
    said = reached(638, 2438, 1024, f"{limits} stores every missed block", False)
    assert said == (f"the engine reached 638 hits, of at most 2,438 that any cache of 1,024 blocks {limits} stores every "
                    "missed block can hit on this trace (that one reaches 2,438, offline and keeping no room for a "
                    "running request's blocks, which a real engine needs, is computed, not kernel-checked)")
    # the wide wording of before: every cache that starts empty "can reach" the figure, whatever the headline
    assert "can reach" not in reached(1, 2, 1, caches, True) and "any cache of 1 block that starts empty can" not in said


# ---------------------------------------------------------------------------- the real engine


@pytest.fixture(scope="module")
def engine():  # noqa: ANN201
    from pycert.leak.engines.transformers import TINY, TransformersEngine

    e = TransformersEngine(page_size=B, num_blocks=C, max_batch_tokens=512, shape=TINY)
    yield e
    e.close()


def test_the_engine_has_the_blocks_asked_serves_whole_blocks_and_needs_the_extra_token(engine) -> None:  # noqa: ANN001
    assert (engine.num_blocks, engine.page_size, engine.safety_margin) == (C, B, 0.15)
    tokens = replaylog.TokenMap(0, B, engine.vocab)
    engine.empty_cache()
    plain = tokens.prompt([1, 2, 3])[:-1]
    # without the extra token the last block is never served: the engine always computes the last prompt token
    assert [engine.serve(EngineRequest(plain, None)).cached_tokens for _ in range(2)] == [0, 2 * B]
    engine.empty_cache()
    assert [engine.serve(EngineRequest(tokens.prompt([1, 2, 3]), None)).cached_tokens for _ in range(2)] == [0, 3 * B]
    # a request of C - 1 blocks runs beside its partial block; it leaves C - 1 blocks cached, fewer free than the
    # scheduler's margin, so the engine evicts them all before the repeat is looked up: served nothing, twice
    big = list(range(100, 100 + C - 1))
    before = engine.evicted_blocks
    assert [engine.serve(EngineRequest(tokens.prompt(big), None)).cached_tokens for _ in range(2)] == [0, 0]
    assert engine.evicted_blocks - before == 3 + (C - 1)


def test_the_engine_evicts_every_cached_block_at_once(engine) -> None:  # noqa: ANN001
    """Four requests of two blocks leave 8 of 12 blocks cached; the fifth holds 3 (two and its partial
    one) while it runs, leaving 1 free, under the scheduler's margin of 15%: the engine drops all 8 cached
    blocks, where LRU at 12 blocks would have dropped none."""
    tokens = replaylog.TokenMap(0, B, engine.vocab)
    engine.empty_cache()
    before = engine.evicted_blocks
    for r in ([1, 2], [3, 4], [5, 6], [7, 8]):
        engine.serve(EngineRequest(tokens.prompt(r), None))
    assert engine.evicted_blocks == before
    engine.serve(EngineRequest(tokens.prompt([9, 10]), None))
    assert engine.evicted_blocks - before == 8
    assert engine.serve(EngineRequest(tokens.prompt([1, 2]), None)).cached_tokens == 0
    assert engine.serve(EngineRequest(tokens.prompt([9, 10]), None)).cached_tokens == 2 * B


@pytest.fixture(scope="module")
def replayed(engine, small_trace: Path) -> replaylog.ReplayLog:  # noqa: ANN001
    engine.empty_cache()
    trace = read_trace(small_trace)
    header = replaylog.engine_header(engine, seed=0, num_blocks=C, block_tokens=B, trace=small_trace.name,
                                     trace_sha256=trace.sha256, requests=trace.n_requests, refs=trace.n_refs)
    return replaylog.replay(engine, requests_of(trace), header)


def test_a_replay_is_one_line_per_request_and_its_figures_hold(replayed: replaylog.ReplayLog, small_trace: Path) -> None:
    assert replaylog.parse(replaylog.render(replayed), "x") == replayed
    figures, rejections = log_figures(replayed, read_trace(small_trace))
    assert rejections == [], rejections
    refs = sum(map(len, REQUESTS))
    assert figures["refs"] == refs and figures["requests"] == len(REQUESTS)
    assert 0 < figures["engine_hits"] <= figures["belady_hits"] <= figures["bypass_hits"] <= figures["unbounded_hits"]
    assert figures["unbounded_hits"] == refs - 37 and figures["prefix_closed"] == 1
    assert figures["engine_cached_tokens"] == B * figures["engine_hits"]
    # every block of this trace is a full one of 512 tokens: the token figures are the block figures x 512
    assert [figures[f"{n}_tokens"] for n in ("refs", "engine_hits", "lru_hits", "unbounded_hits")] == [
        512 * figures[n] for n in ("refs", "engine_hits", "lru_hits", "unbounded_hits")]


def test_a_partial_last_block_the_engine_served_counts_no_tokens(engine, tmp_path: Path) -> None:  # noqa: ANN001
    """A prompt of 612 tokens is a full block and a partial one of 100 in the trace; the replay sends both as
    whole blocks and the engine serves both on the repeat, but vLLM never reuses a partial block and the
    token figures count it as none: 512 of the 1,224 prompt tokens."""
    path = tmp_path / "partial.jsonl"
    path.write_text("".join(json.dumps({"timestamp": i, "input_length": 612, "output_length": 2, "hash_ids": [1, 2]})
                            + "\n" for i in range(2)))
    trace = read_trace(path)
    engine.empty_cache()
    header = replaylog.engine_header(engine, seed=0, num_blocks=C, block_tokens=B, trace=path.name,
                                     trace_sha256=trace.sha256, requests=2, refs=4)
    figures, rejections = log_figures(replaylog.replay(engine, requests_of(trace), header), trace)
    assert rejections == []
    assert (figures["engine_hits"], figures["engine_cached_tokens"]) == (2, 2 * B)
    assert (figures["refs_tokens"], figures["engine_hits_tokens"], figures["unbounded_hits_tokens"]) == (1224, 512, 512)
    assert figures["engine_hit_rate_tokens"] == Fraction(512, 1224)


def test_a_trace_that_is_not_prefix_closed_shows_what_a_prefix_cache_can_take(engine, tmp_path: Path) -> None:  # noqa: ANN001
    """Block 3 after block 1 and after block 2: two blocks to the engine, one to LRU and the optimum."""
    path = tmp_path / "open.jsonl"
    path.write_bytes(mooncake([[1, 3], [2, 3], [1, 3], [2, 3]]))
    trace = read_trace(path)
    engine.empty_cache()
    header = replaylog.engine_header(engine, seed=0, num_blocks=C, block_tokens=B, trace=path.name,
                                     trace_sha256=trace.sha256, requests=4, refs=8)
    log = replaylog.replay(engine, requests_of(trace), header)
    figures, rejections = log_figures(log, read_trace(path))
    assert rejections == [] and figures["prefix_closed"] == 0
    assert (figures["engine_hits"], figures["prefix_unbounded_hits"], figures["unbounded_hits"]) == (4, 4, 5)
    assert "not prefix-closed" in CLAIM.sentence(EngineParams.of(header), figures, [input_file("trace", path, tmp_path)])


def _edited(log: replaylog.ReplayLog, i: int, **changes: object) -> replaylog.ReplayLog:
    lines = list(log.requests)
    lines[i] = lines[i].model_copy(update=changes)
    return log.model_copy(update={"requests": tuple(lines)})


def test_a_log_edited_upward_is_refused(replayed: replaylog.ReplayLog, small_trace: Path) -> None:
    requests = requests_of(read_trace(small_trace))
    seen, _ = seen_prefixes(requests)
    # request 2 was never computed before: one block more than the engine could have served
    [why] = log_figures(_edited(replayed, 2, cached_tokens=B), read_trace(small_trace))[1]
    assert why.reason == "never-computed" and "log line 4" in why.subject
    # every request given all it could have had: more than any cache of C blocks hits
    full = replayed.model_copy(update={"requests": tuple(r.model_copy(update={"cached_tokens": s * B})
                                                         for r, s in zip(replayed.requests, seen))})
    figures, [why] = log_figures(full, read_trace(small_trace))
    assert why.reason == "above-optimum" and why.expected == "at most 35" and why.found == str(sum(seen)) == "43"
    assert "Belady's MIN with bypass reaches there" in why.detail
    # half a block, another request's blocks, a header of another cache size
    small = read_trace(small_trace)
    assert log_figures(_edited(replayed, 1, cached_tokens=B // 2), small)[1][0].subject == "log line 3.cached_tokens"
    assert "request 1, 3 blocks" in log_figures(_edited(replayed, 1, blocks=2), small)[1][0].detail
    other = replayed.model_copy(update={"header": replayed.header.model_copy(update={"engine_blocks": C + 1})})
    assert log_rejections(other, requests, seen, read_trace(small_trace).sha256)[0].reason == "engine-size"


def _certificate(log: replaylog.ReplayLog, trace: Path, out: Path):  # noqa: ANN202
    """An engine certificate of ``log`` made as prove makes it, with fixture statements (no Lean)."""
    stem = names(trace.name, log.header.num_blocks, log.header.block_tokens, log.header.seed)
    (out / "inputs").mkdir(parents=True, exist_ok=True)
    (out / "inputs" / f"{stem}.jsonl").write_bytes(replaylog.render(log))
    inputs = [input_file("log", out / "inputs" / f"{stem}.jsonl", out), input_file("trace", trace, out)]
    return make_cert(stem, "engine", EngineParams.of(log.header).model_dump(), inputs, root=out,
                     external={trace.name: trace})


def test_verify_re_derives_the_figures_and_refuses_an_edited_log(replayed, small_trace: Path, tmp_path: Path) -> None:  # noqa: ANN001
    out = tmp_path / "certs"
    cert = _certificate(replayed, small_trace, out)
    write_certificates([cert], out)
    path = out / cert.filename
    given = {small_trace.name: small_trace}
    assert verify_certificate(path, inputs=given).ok
    log = out / cert.inputs[0].path
    lines = log.read_text().splitlines()
    rec = json.loads(lines[3])
    rec["cached_tokens"] += B
    lines[3] = json.dumps(rec, separators=(",", ":"))
    log.write_text("\n".join(lines) + "\n")
    result = verify_certificate(path, inputs=given)
    assert not result.ok and "sha256" in result.first_problem()
    # the same edit with the certificate's hash of the log forged too: the figures no longer derive
    forged = cert.model_copy(update={"inputs": [cert.inputs[0].model_copy(update={"sha256": _sha(log)}), cert.inputs[1]]})
    write_certificates([forged], out)
    result = verify_certificate(path, inputs=given)
    assert not result.ok and "were ever computed before with the same prefix" in result.first_problem()


def _sha(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_beside_refuses_an_engine_count_above_the_kernel_checked_optimum(replayed, small_trace: Path,  # noqa: ANN001
                                                                        tmp_path: Path) -> None:
    cert = _certificate(replayed, small_trace, tmp_path / "certs")
    side = beside(cert)
    assert side.sentence is None and "no verified capacity certificate" in side.why_no_sentence
    assert side.optimum_known.startswith("Belady's MIN with bypass computed by pycert") and side.optimum_tokens is None
    shutil.copy(small_trace, tmp_path / "small.jsonl")
    trace = [trace_input(tmp_path / "small.jsonl", tmp_path)]
    # today's layout: the optimum with bypass, in blocks and (512 a block) in tokens
    capacity = make_cert("capacity-small-c12", "capacity", {"capacity_blocks": C, "lean_encoding": OPTIMA_ENCODING,
                                                          "prefix_cache": "attained"},
                         trace, root=tmp_path)
    side = beside(cert, capacity)
    assert (side.optimum, side.optimum_tokens, side.engine_tokens) == (35, 35 * 512, 512 * side.engine_hits)
    bypassing = capacity_family.CLAIM.widest_bound(capacity.parameters)[1]
    assert side.sentence == reached(side.engine_hits, 35, C, bypassing, True, (512 * side.engine_hits, 35 * 512))
    assert [r[3] for r in side.rows()][2] == f"at most {35 * 512:,} ({100 * 35 / 80:.2f}%)"
    # a headline without bypass: the narrower model, named
    older = make_cert("capacity-small-c12", "capacity", {"capacity_blocks": C, "lean_encoding": OPTIMUM_ENCODING},
                      trace, root=tmp_path)
    assert ("fetches a block only when it is referenced (no prefetch) and stores every missed block hits more"
            in beside(cert, older).sentence)
    # a bound alone (the older pieced layout): "at most", attainment computed
    bound = make_cert("capacity-small-c12", "capacity", {"capacity_blocks": C, "lean_encoding": ENCODING},
                      trace, root=tmp_path)
    assert re.search(r"the engine reached \d+ hits, of at most \d+ that any cache", beside(cert, bound).sentence)
    assert "is computed, not kernel-checked" in beside(cert, bound).sentence
    # the trace read otherwise (other references): refused, naming both readings
    other = capacity.model_copy(update={"figures": [f.model_copy(update={"numerator": f.numerator + 1})
                                                    if f.name == "refs" else f for f in capacity.figures]})
    with pytest.raises(Rejected, match="figures.refs: expected .* the engine's replay .* read"):
        beside(cert, other)
    prompts = capacity.model_copy(update={"parameters": capacity.parameters.model_copy(
        update={"trace_format": "prompts", "block_tokens": 32})})
    with pytest.raises(Rejected, match="parameters.block_tokens: expected 16"):
        beside(cert, prompts)
    # a capacity certificate whose optimum is below the engine's count: one of them is wrong
    low = capacity.model_copy(update={"figures": [f.model_copy(update={"numerator": side.engine_hits - 1})
                                                  if f.name == "bypass_hits" else f for f in capacity.figures]})
    with pytest.raises(Rejected, match="above the .* that the kernel proved for every such cache"):
        beside(cert, low)
    # one above it but other than what the engine certificate computes: pycert's engines and the kernel disagree
    high = capacity.model_copy(update={"figures": [f.model_copy(update={"numerator": 36})
                                                   if f.name == "bypass_hits" else f for f in capacity.figures]})
    with pytest.raises(Rejected, match="bypass_hits"):
        beside(cert, high)
    assert Fraction(side.engine_hits, side.refs) < 1


# ---------------------------------------------------------------------------- the command, with Lean


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_replay_certifies_verifies_offloads_reports_and_replays(capsys: pytest.CaptureFixture[str], small_trace: Path,
                                                                tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out, trace = tmp_path / "certs", tmp_path / "small.jsonl"
    shutil.copy(small_trace, trace)
    rc = main(["engine", "replay", "--trace", str(trace), "--num-blocks", str(C), "--block-tokens", str(B),
               "--out", str(out), "--json"])
    res = json.loads(capsys.readouterr().out)
    assert rc == 0 and res["holds"], res
    side = res["beside"]
    assert side["optimum_known"] == "kernel-checked in capacity-small-c12"
    assert side["unbounded_known"] == "kernel-checked in ceiling-small"
    assert side["sentence"] == reached(res["engine_hits"], side["optimum"], C, capacity_family.BOUNDS[
        capacity_family.PREFIX_OPTIMA][1], True, (side["engine_tokens"], side["optimum_tokens"]))
    assert sorted(p.name for p in out.glob("*.json")) == ["capacity-small-c12.json", "ceiling-small.json",
                                                          "engine-small-c12-b16-seed0.json"]
    assert main(["verify", *map(str, out.glob("*.json"))]) == 0
    capsys.readouterr()
    assert main(["trace", "offload", str(trace), "--capacity-tokens", str(512 * C), "--control-k", "1",
                 "--certs", str(out), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    [line] = rep["engines"]
    assert line["sentence"] == side["sentence"] and rep["evidence"]["gpu_only_belady_hit_rate"] == "kernel-checked"
    assert line["engine_hit_rate_tokens"]["decimal"] == line["engine_hit_rate"]["decimal"]  # every block full here
    assert main(["trace", "offload", str(trace), "--capacity-tokens", str(512 * C), "--control-k", "1",
                 "--certs", str(out)]) == 0
    text = capsys.readouterr().out
    assert side["sentence"] in text and "engine_hit_rate_tokens (replayed at 16 tokens a block)" in text
    assert main(["report", "--certs", str(out), "--out", str(tmp_path / "r.html")]) == 0
    assert html.escape(side["sentence"][1:]) in (tmp_path / "r.html").read_text()  # as the page escapes it
    capsys.readouterr()
    cert = out / "engine-small-c12-b16-seed0.json"
    assert main(["engine", "replay", "--replay", str(cert), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["replay_of"] == str(cert) and again["rejections"] == [] and again["engine_hits"] == res["engine_hits"]
    # a certificate verify rejects is refused before the engine runs
    log = out / "inputs" / "engine-small-c12-b16-seed0.jsonl"
    log.write_bytes(log.read_bytes().replace(b'"cached_tokens":0', b'"cached_tokens":16', 1))
    assert main(["engine", "replay", "--replay", str(cert)]) == 1
    assert "does not verify, so it is not replayed" in capsys.readouterr().err
    # a planted defect in the tap: every request served all it could have had; stopped, nothing certified
    seen = seen_prefixes(REQUESTS)[0]
    real = replaylog.replay

    def inflated(engine, requests, header, progress=lambda _m: None):  # noqa: ANN001, ANN202
        log = real(engine, requests, header, progress)
        return log.model_copy(update={"requests": tuple(r.model_copy(update={"cached_tokens": s * B})
                                                        for r, s in zip(log.requests, seen))})

    monkeypatch.setattr(replaylog, "replay", inflated)
    bad = tmp_path / "bad"
    rc = main(["engine", "replay", "--trace", str(trace), "--num-blocks", str(C), "--block-tokens", str(B),
               "--out", str(bad)])
    text = capsys.readouterr().out
    assert rc == 1 and "above the" in text and "a defect of the tap, the replay or the proof" in text
    assert not list(bad.glob("engine-*.json")) and (bad / "runs" / "engine-small-c12-b16-seed0.jsonl").is_file()
    assert not (bad / "inputs").exists() or not list((bad / "inputs").glob("engine-*"))


COMMITTED = REPO / "certificates" / "engine-synthetic-seed0-c128-b16-seed0.json"


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_prove_engine_rewrites_the_committed_certificate(wasm, tmp_path: Path) -> None:  # noqa: ANN001
    """``pycert prove engine`` (and ``all``) certifies the committed log again, with its trace in ``inputs/``."""
    from pycert.families.engine.produce import PRODUCER
    from pycert.prove import prove

    out = tmp_path / "certificates"
    (out / "inputs").mkdir(parents=True)
    for name in ("engine-synthetic-seed0-c128-b16-seed0.jsonl", "synthetic-seed0.jsonl"):
        shutil.copy(REPO / "certificates" / "inputs" / name, out / "inputs" / name)
    res = prove([(PRODUCER, PRODUCER.options())], backend="wasm", out_dir=out)
    assert res.ok, res.stages
    made, committed = json.loads((out / COMMITTED.name).read_text()), json.loads(COMMITTED.read_text())
    made.pop("backend"), committed.pop("backend")
    assert made == committed
