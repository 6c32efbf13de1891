"""``pycert leak``: the admission layer, the exact bound, the log, the leak family and its verify, and
the real engine (transformers continuous batching on the CPU, the small random model) through the
five arms, the command, its certificate and its replay."""

from __future__ import annotations

import hashlib
import hmac
import json
import shutil
import sys
from decimal import ROUND_CEILING, Decimal, localcontext
from fractions import Fraction
from pathlib import Path

import pytest

from pycert.certify.manifest import MANIFEST_NAME, render_manifest
from pycert.certify.verify import verify_certificate
from pycert.cli import main
from pycert.core.errors import InputError
from pycert.core.files import file_sha256
from pycert.families.leak import log_figures
from pycert.families.leak.produce import PRODUCER
from pycert.leak import log as leaklog
from pycert.leak.admission import Admission, AdmissionRefused, EngineRequest, TenantRequest, keyed_salt, unkeyed_salt
from pycert.leak.engines.openai import cached_tokens, read_stream, request_body
from pycert.leak.observation import ARMS, arm_figures, closure_rejections, structure_rejections
from pycert.leak.stats import SCALE, clopper_pearson_upper, rule_of_three, trials_needed
from tests.conftest import REPO

[CERT] = sorted((REPO / "certificates").glob("leak-transformers-cpu-k*-seed0.json"))  # the one committed run
LOG = REPO / "certificates" / "inputs" / f"{CERT.stem}.jsonl"
K = int(CERT.stem.split("-k")[1].split("-")[0])
"""Prompts an arm in the committed run."""
SECRET = b"s" * 32


# ---------------------------------------------------------------------------- the bound


def _zero_hit_limit(n: int, confidence: Fraction) -> Fraction:
    """1 - (1 - c)^(1/n) in 50-digit decimal arithmetic, rounded up to 10^-6: an independent derivation."""
    with localcontext() as ctx:
        ctx.prec = 50
        alpha = 1 - Decimal(confidence.numerator) / Decimal(confidence.denominator)
        exact = 1 - alpha ** (Decimal(1) / Decimal(n))
        return Fraction(exact.quantize(Decimal(1) / SCALE, rounding=ROUND_CEILING))


def test_zero_of_twelve_is_0_2209_and_the_rule_of_three_is_a_quarter() -> None:
    assert clopper_pearson_upper(0, 12, Fraction(95, 100)) == Fraction(220923, 10**6)
    assert rule_of_three(12) == Fraction(1, 4)


@pytest.mark.parametrize("n", [1, 2, 5, 12, 59, 60, 300, 1000])
def test_the_zero_hit_bound_is_the_closed_form_rounded_up(n: int) -> None:
    for c in (Fraction(95, 100), Fraction(99, 100), Fraction(9, 10)):
        assert clopper_pearson_upper(0, n, c) == _zero_hit_limit(n, c)


def test_bounds_with_hits_against_published_beta_quantiles() -> None:
    # Beta(x+1, n-x) quantiles at 0.95, as statistical tables give them: 1 of 12 -> 0.3387, 3 of 100 -> 0.0757
    assert abs(clopper_pearson_upper(1, 12, Fraction(95, 100)) - Fraction(3387, 10**4)) < Fraction(1, 10**4)
    assert abs(clopper_pearson_upper(3, 100, Fraction(95, 100)) - Fraction(757, 10**4)) < Fraction(1, 10**4)
    assert clopper_pearson_upper(12, 12, Fraction(95, 100)) == 1
    bounds = [clopper_pearson_upper(x, 40, Fraction(95, 100)) for x in range(41)]
    assert bounds == sorted(bounds) and len(set(bounds)) == 41


def test_trials_needed_and_bad_arguments() -> None:
    assert trials_needed(Fraction(5, 100), Fraction(95, 100)) == 59
    with pytest.raises(ValueError):
        clopper_pearson_upper(3, 2, Fraction(95, 100))
    with pytest.raises(ValueError):
        clopper_pearson_upper(0, 10, Fraction(1))


# ---------------------------------------------------------------------------- admission


def test_admission_refuses_a_request_without_a_tenant() -> None:
    adm = Admission(SECRET)
    for tenant in (None, ""):
        with pytest.raises(AdmissionRefused, match="names no tenant"):
            adm.admit(TenantRequest(tenant, [1, 2, 3]))


def test_the_keyed_salt_is_the_hmac_and_differs_by_tenant_and_by_secret() -> None:
    req = Admission(SECRET).admit(TenantRequest("tenant-a", [5, 6]))
    assert req == EngineRequest((5, 6), hmac.new(SECRET, b"tenant-a", hashlib.sha256).digest())
    assert keyed_salt(SECRET, "tenant-a") != keyed_salt(SECRET, "tenant-b")
    assert keyed_salt(SECRET, "tenant-a") != keyed_salt(b"t" * 32, "tenant-a")
    assert keyed_salt(SECRET, "tenant-a") != unkeyed_salt("tenant-a") == hashlib.sha256(b"tenant-a").digest()
    with pytest.raises(InputError, match="at least 16"):
        Admission(b"short")


# ---------------------------------------------------------------------------- the log and its figures


def test_the_committed_log_reads_back_to_its_bytes_and_its_figures() -> None:
    log = leaklog.read(LOG)
    assert leaklog.render(log) == LOG.read_bytes()
    assert structure_rejections(log) == []
    figures = arm_figures(log)
    assert closure_rejections(log, figures) == []
    cert = json.loads(CERT.read_text())
    assert {f["name"]: Fraction(f["numerator"], f["denominator"]) for f in cert["figures"]} == figures
    assert figures["keyed_cross_hits"] == figures["attacker_keyed_hits"] == figures["prime_cached_tokens"] == 0
    assert figures["unsalted_cross_hits"] == figures["keyed_own_hits"] == figures["attacker_unkeyed_hits"] == K
    bound = clopper_pearson_upper(0, K, Fraction(95, 100))
    assert figures["residual_rate_upper"] == bound and figures["underpowered"] == (bound > Fraction(5, 100))


def _lines() -> list[str]:
    return LOG.read_text().splitlines()


def test_a_malformed_log_is_an_input_error_naming_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "leak-bad.jsonl"
    lines = _lines()
    for i, broken, needle in ((3, "{not json", "not JSON"), (4, lines[3].replace('"cached_tokens":', '"cached":'),
                                                             "extra|cached_tokens"),
                              (1, lines[0].replace('"0.95"', '"1.5"'), "confidence")):
        edited = list(lines)
        edited[i - 1] = broken
        bad.write_text("\n".join(edited) + "\n")
        with pytest.raises(InputError, match=needle) as err:
            leaklog.read(bad)
        assert err.value.where == f"{bad}:{i}"


def _edited(edit) -> leaklog.Log:  # noqa: ANN001
    lines = _lines()
    records = [json.loads(x) for x in lines[1:]]
    edit(records)
    return leaklog.parse("\n".join([lines[0], *(json.dumps(r) for r in records)]).encode(), "edited")


def test_a_log_that_is_not_the_five_arms_is_refused() -> None:
    swapped = _edited(lambda rs: rs.__setitem__(slice(0, 2), [rs[1], rs[0]]))
    assert structure_rejections(swapped)[0].subject == "log line 2"
    short = _edited(lambda rs: rs.pop())
    assert f"{10 * K} requests" in structure_rejections(short)[0].detail


def test_a_leak_under_the_salt_or_an_unsalted_keyed_request_breaks_the_closure() -> None:
    def leak(rs: list[dict]) -> None:
        probe = next(r for r in rs if r["arm"] == "keyed-cross" and r["role"] == "probe")
        probe["cached_tokens"] = 256

    figures, rejections = log_figures(_edited(leak))
    assert figures["keyed_cross_hits"] == 1
    assert figures["residual_rate_upper"] == clopper_pearson_upper(1, K, Fraction(95, 100))
    assert [r.subject for r in rejections] == ["arm keyed-cross"]

    def unsalted(rs: list[dict]) -> None:
        next(r for r in rs if r["salt"] == "keyed")["salt_id"] = None

    assert [r.reason for r in log_figures(_edited(unsalted))[1]] == ["unsalted"]



@pytest.mark.parametrize("edit, found", [
    (lambda r: r["salt_id"] if r["salt"] != "forged-unkeyed" else "0" * 16, "0000000000000000"),
    (lambda r: "1" * 16 if (r["arm"], r["role"]) == ("keyed-own", "probe") and r["prompt"] == 3 else r["salt_id"],
     "1111111111111111"),
], ids=["forged-salt-not-sha256-of-a", "own-keyed-salt-changes"])
def test_salt_ids_that_contradict_the_claim_are_rejected(edit, found: str) -> None:  # noqa: ANN001
    from pycert.leak.observation import structure_rejections

    log = _edited(lambda rs: [r.update(salt_id=edit(r)) for r in rs])
    [r] = structure_rejections(log)
    assert r.subject.endswith(".salt_id") and r.found == found, r


# ---------------------------------------------------------------------------- the certificate


def test_the_committed_certificate_verifies() -> None:
    res = verify_certificate(CERT)
    assert res.ok, res.failures
    cert = json.loads(CERT.read_text())
    assert cert["theorems"] == ["Pycert.Isolation.leak_or_refusal", "Pycert.Isolation.owner_floor"]
    assert {f["evidence"] for f in cert["figures"] if f["name"].endswith(("_hits", "_tokens", "_requests"))} == {"observed"}
    bound = clopper_pearson_upper(0, K, Fraction(95, 100))
    assert f"{float(bound):.6f}" in cert["claim"] and ("underpowered above 0.05" in cert["claim"]) == (bound > 0.05)
    assert any("not a proof" in line for line in cert["does_not_prove"])
    assert any("not encryption" in line for line in cert["does_not_prove"])


def _copy_certs(tmp_path: Path) -> Path:
    out = tmp_path / "certs"
    (out / "inputs").mkdir(parents=True)
    shutil.copy(CERT, out / CERT.name)
    shutil.copy(LOG, out / "inputs" / LOG.name)
    return out


def _forge(out: Path, lines: list[str]) -> Path:
    """Write the log, put its sha256 in the certificate and re-forge the manifest: only recomputation objects."""
    log = out / "inputs" / LOG.name
    log.write_text("\n".join(lines) + "\n")
    cert = out / CERT.name
    doc = json.loads(cert.read_text())
    doc["inputs"][0]["sha256"] = file_sha256(log)
    cert.write_text(json.dumps(doc, indent=2) + "\n")
    (out / MANIFEST_NAME).write_text(render_manifest({cert.name: file_sha256(cert)}))
    return cert


def test_verify_rejects_an_altered_count_and_a_log_that_shows_a_leak(tmp_path: Path) -> None:
    out = _copy_certs(tmp_path)
    lines = _lines()
    i = next(k for k, x in enumerate(lines) if '"arm":"keyed-own"' in x and '"role":"probe"' in x)
    lines[i] = lines[i].replace('"cached_tokens":512', '"cached_tokens":256')
    res = verify_certificate(_forge(out, lines))
    assert res.status == "rejected"
    assert "figures.keyed_own_cached_tokens" in {f.subject for f in res.failures}
    lines = _lines()
    j = next(k for k, x in enumerate(lines) if '"arm":"keyed-cross"' in x and '"role":"probe"' in x)
    lines[j] = lines[j].replace('"cached_tokens":0', '"cached_tokens":512')
    res = verify_certificate(_forge(out, lines))
    assert res.status == "rejected" and res.failures[0].subject == "arm keyed-cross"


def test_verify_rejects_parameters_the_log_does_not_say(tmp_path: Path) -> None:
    out = _copy_certs(tmp_path)
    cert = out / CERT.name
    doc = json.loads(cert.read_text())
    doc["parameters"]["device"] = "cuda"
    cert.write_text(json.dumps(doc, indent=2) + "\n")
    (out / MANIFEST_NAME).write_text(render_manifest({cert.name: file_sha256(cert)}))
    res = verify_certificate(cert)
    assert res.status == "rejected" and res.failures[0].subject == "parameters.device"


def test_prepare_certifies_every_recorded_log_and_nothing_without_one(tmp_path: Path) -> None:
    from pycert.families.base import Setting

    assert PRODUCER.prepare(Setting(out_dir=tmp_path)) == []
    [p] = PRODUCER.prepare(Setting(out_dir=_copy_certs(tmp_path)))
    assert p.id == CERT.stem and p.rejection is None and p.inputs[0].path == f"inputs/{LOG.name}"


# ---------------------------------------------------------------------------- the HTTP adapter's wire format


def test_the_endpoint_request_carries_the_salt_in_vllms_field() -> None:
    salted = request_body("m", EngineRequest((1, 2, 3), b"\x01\xff"))
    assert salted["prompt"] == [1, 2, 3] and salted["cache_salt"] == "01ff" and salted["stream"] is True
    assert salted["stream_options"] == {"include_usage": True}
    assert "cache_salt" not in request_body("m", EngineRequest((1,), None))
    assert request_body("m", EngineRequest((1,), b"\x02"), salt_field="extra_key")["extra_key"] == "02"


def test_the_endpoint_stream_gives_the_first_token_time_and_the_cached_count() -> None:
    ticks = iter([7.0, 8.0])
    stream = [b": keep-alive\n", b'data: {"choices":[{"text":""}]}\n', b'data: {"choices":[{"text":"a"}]}\n',
              b'data: {"choices":[{"text":"b"}]}\n',
              b'data: {"choices":[],"usage":{"prompt_tokens":600,"completion_tokens":2,'
              b'"prompt_tokens_details":{"cached_tokens":512}}}\n', b"data: [DONE]\n"]
    first, usage = read_stream(stream, clock=lambda: next(ticks))
    assert first == 7.0 and cached_tokens(usage, "x") == (512, 600)
    with pytest.raises(InputError, match="enable-prompt-tokens-details"):
        cached_tokens({"prompt_tokens": 600}, "x")


# ---------------------------------------------------------------------------- the command, without the engine


def _rc(argv: list[str]) -> int:
    """The exit code of ``pycert ARGV``, whether argparse raised it or the command returned it."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code)


def test_usage_errors_are_one_line_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    out = str(tmp_path / "o")
    for argv, needle in ((["--endpoint", "http://127.0.0.1:9"], "--served-model"),
                         (["--min-tokens", "900"], "exceeds --max-tokens"),
                         (["--model", str(tmp_path / "none")], "not a directory"),
                         (["--underpowered-above", "0.0"], "strictly between 0 and 1"),
                         (["--replay", str(REPO / "certificates" / "isolation-t8-n1024.json")], "takes a leak certificate"),
                         (["--secret-file", str(tmp_path / "none")], "no such file")):
        assert _rc(["leak", "run", "--out", out, *argv]) == 2
        err = capsys.readouterr().err
        assert needle in err and err.count("\n") == 1, err
    monkeypatch.setitem(sys.modules, "pycert.leak.engines.transformers", None)
    assert _rc(["leak", "run", "--json", "--out", out]) == 2
    captured = capsys.readouterr()
    assert "[leak]'" in captured.err and "pip install" in captured.err and json.loads(captured.out)["exit"] == 2
    assert not (tmp_path / "o").exists()


# ---------------------------------------------------------------------------- the real engine


@pytest.fixture(scope="module")
def engine():  # noqa: ANN201
    from pycert.leak.engines.transformers import TransformersEngine

    e = TransformersEngine()
    yield e
    e.close()


def test_the_engine_serves_a_repeat_from_cache_and_nothing_after_empty_cache(engine) -> None:  # noqa: ANN001
    from pycert.leak.run import Plan, make_prompts

    [prompt] = make_prompts(Plan(prompts=1, seed=7, min_tokens=600, max_tokens=600), engine.vocab)
    engine.empty_cache()
    first = engine.serve(EngineRequest(tuple(prompt), None))
    again = engine.serve(EngineRequest(tuple(prompt), None))
    salted = engine.serve(EngineRequest(tuple(prompt), b"tenant salt"))
    engine.empty_cache()
    after = engine.serve(EngineRequest(tuple(prompt), None))
    # the engine shares whole 256-token blocks and always recomputes the last prompt token
    assert (first.cached_tokens, again.cached_tokens, salted.cached_tokens, after.cached_tokens) == (0, 512, 0, 0)
    assert first.engine_tokens == 600 and salted.engine_tokens == 608 and first.generated == 2
    assert 0 < first.ttft_s < 60


def test_a_local_checkpoint_serves_like_the_random_model(tmp_path: Path) -> None:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from pycert.leak.engines.transformers import SMALL, TransformersEngine

    with pytest.raises(InputError, match="no config.json"):
        TransformersEngine(model_dir=tmp_path)
    Qwen2ForCausalLM(Qwen2Config(**{**SMALL, "num_hidden_layers": 1})).save_pretrained(tmp_path / "ckpt")
    e = TransformersEngine(model_dir=tmp_path / "ckpt")
    try:
        prompt = tuple(range(100, 400))
        assert [e.serve(EngineRequest(prompt, None)).cached_tokens for _ in range(2)] == [0, 256]
    finally:
        e.close()
    assert e.model.startswith("local checkpoint ckpt (config.json sha256 ")


def test_the_five_arms_on_the_real_engine(engine) -> None:  # noqa: ANN001
    from pycert.leak.run import Plan, make_prompts, run_arms

    plan = Plan(prompts=2, seed=3)
    log = run_arms(engine, plan, Admission(SECRET))
    assert structure_rejections(log) == []
    figures, rejections = log_figures(log)
    assert rejections == []
    lengths = [len(p) for p in make_prompts(plan, engine.vocab)]
    whole = sum((n - 1) // 256 * 256 for n in lengths)
    salted = sum((n + 8 - 1) // 256 * 256 for n in lengths)
    assert figures["unsalted_cross_cached_tokens"] == whole
    assert figures["keyed_own_cached_tokens"] == figures["attacker_unkeyed_cached_tokens"] == salted
    assert figures["keyed_cross_cached_tokens"] == figures["attacker_keyed_cached_tokens"] == 0
    by_arm = {a.name: {r.role: r for r in log.requests if r.arm == a.name and r.prompt == 0} for a in ARMS}
    assert by_arm["keyed-cross"]["prime"].salt_id != by_arm["keyed-cross"]["probe"].salt_id
    assert by_arm["attacker-unkeyed"]["prime"].salt_id == by_arm["attacker-unkeyed"]["probe"].salt_id
    assert by_arm["attacker-keyed"]["prime"].salt_id != by_arm["attacker-keyed"]["probe"].salt_id
    assert by_arm["unsalted-cross"]["probe"].salt_id is None


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_leak_run_certifies_verifies_and_replays(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "certs"
    rc = main(["leak", "run", "--prompts", "2", "--seed", "5", "--out", str(out), "--json"])
    res = json.loads(capsys.readouterr().out)
    assert rc == 0 and res["holds"], res
    cert = out / "leak-transformers-cpu-k2-seed5.json"
    assert res["certificate"] == str(cert) and verify_certificate(cert).ok
    assert [a["hits"] for a in res["arms"]] == [2, 0, 2, 2, 0]
    assert res["bound"] == "0.776394" and res["underpowered"]
    rc = main(["leak", "run", "--replay", str(cert), "--json"])
    again = json.loads(capsys.readouterr().out)
    assert rc == 0 and again["replay_of"] == str(cert) and again["rejections"] == []
    # a log whose count no longer matches what the engine does: replay names the request
    log = out / "inputs" / "leak-transformers-cpu-k2-seed5.jsonl"
    lines = log.read_text().splitlines()
    i = next(k for k, x in enumerate(lines) if '"arm":"keyed-own"' in x and '"role":"probe"' in x)
    rec = json.loads(lines[i])
    rec["cached_tokens"] //= 2
    lines[i] = json.dumps(rec)
    log.write_text("\n".join(lines) + "\n")
    rc = main(["leak", "run", "--replay", str(cert)])  # checked as verify checks it, before the engine runs
    assert rc == 1 and "does not verify, so it was not replayed: inputs" in capsys.readouterr().err


def test_replay_names_each_request_the_engine_answers_otherwise() -> None:
    from pycert.leak.run import replay_differences

    recorded = leaklog.read(LOG)
    i = next(k for k, r in enumerate(recorded.requests) if r.arm == "keyed-own" and r.role == "probe")
    again = recorded.requests[i].model_copy(update={"cached_tokens": 256})
    diffs = replay_differences(recorded, recorded.model_copy(update={"requests": (*recorded.requests[:i], again,
                                                                                  *recorded.requests[i + 1:])}))
    assert [d.subject for d in diffs] == [f"log line {i + 2} (keyed-own, prompt 0, probe).cached_tokens"]


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_prove_leak_rewrites_the_committed_certificate(wasm, tmp_path: Path) -> None:  # noqa: ANN001
    from pycert.prove import prove

    out = tmp_path / "certificates"
    (out / "inputs").mkdir(parents=True)
    shutil.copy(LOG, out / "inputs" / LOG.name)
    res = prove([(PRODUCER, PRODUCER.options())], backend="wasm", out_dir=out)
    assert res.ok, res.stages
    made, committed = json.loads((out / CERT.name).read_text()), json.loads(CERT.read_text())
    made.pop("backend"), committed.pop("backend")
    assert made == committed


@pytest.mark.slow
def test_kernel_lists_only_the_checks_that_apply_to_an_observation(wasm) -> None:  # noqa: ANN001
    """A leak certificate has no Lean instance: --kernel rebuilds and audits the library theorems it names,
    and says nothing of figures read off a kernel type."""
    res = verify_certificate(CERT, kernel=True, backend="wasm")
    assert res.ok, res.failures
    assert "kernel (the library)" in res.checked and "figures off the kernel" not in res.checked, res.checked


def test_a_log_with_more_request_lines_than_its_header_allows_is_refused_before_they_are_parsed() -> None:
    lines = LOG.read_bytes().splitlines(keepends=True)
    with pytest.raises(InputError, match=r"5,980 request lines where the header plans 2,990"):
        leaklog.parse(b"".join([lines[0], *(lines[1:] * 2)]), "log.jsonl")


def test_replay_refuses_a_certificate_that_does_not_verify_before_the_engine_starts(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pycert.cli import leak as leak_cli

    def no_engine(*_a: object, **_k: object) -> None:
        raise AssertionError("the engine was started for a certificate that does not verify")

    monkeypatch.setattr(leak_cli, "open_engine", no_engine)
    out = _copy_certs(tmp_path)
    cert = out / CERT.name
    doc = json.loads(cert.read_text())
    doc["claim"] = doc["claim"].replace("with a keyed", "with a strong keyed")
    cert.write_text(json.dumps(doc, indent=2) + "\n")
    (out / MANIFEST_NAME).write_text(render_manifest({cert.name: file_sha256(cert)}))
    assert _rc(["leak", "run", "--replay", str(cert), "--json"]) == 1
    err = json.loads(capsys.readouterr().out)
    assert err["exit"] == 1 and "does not verify, so it was not replayed: claim" in err["error"]
    (out / "inputs" / LOG.name).write_text(LOG.read_text().replace('"cached_tokens":512', '"cached_tokens":256', 1))
    assert _rc(["leak", "run", "--replay", str(cert)]) == 1  # the log's sha256 no longer the certificate's
    assert "not replayed" in capsys.readouterr().err
