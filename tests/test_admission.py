"""The optimum with bypass and the prefix caches that reach it (issue 37): Belady's MIN with
bypass from two engines against the exhaustive optimum of the Lean model (``Pycert.Admission.Run``: after
each reference, any set of at most C blocks among those held and the one referenced), the cut recipe's
tightness for it, the witness's hypotheses, prefix caches against their exhaustive optimum on
prefix-closed traces, token weights, and certificates on the kernel (a small Mooncake trace, and the
same trace with each request's blocks shuffled, which claims no prefix cache)."""

from __future__ import annotations

import functools
import itertools
import json
import random
import re
import shutil
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pycert import prove
from pycert.analysis.cachesim import belady_bypass_flags, stack_distances
from pycert.analysis.capacity import belady_hit_flags, belady_pairs, bound_pairs, cut_list, witness_ok
from pycert.analysis.offload import offload_report
from pycert.analysis.optcurve import admission_hit_curve
from pycert.analysis.requests import firsts, not_prefix_closed, prefix_breaks, prefix_verdict, ref_tokens
from pycert.certify import report
from pycert.certify.card import pct
from pycert.certify.evidence import with_evidence
from pycert.certify.inputs import Locator
from pycert.certify.verify import verify_certificate
from pycert.core.errors import Rejected
from pycert.data import synthetic
from pycert.data.traces import read_trace
from pycert.cli import main
from pycert.families import producer
from pycert.families.capacity import CLAIM
from pycert.families.capacity.produce import CapacityOptions
from tests.test_cachesim import optimal_hits
from tests.test_capacity import forge


def admitted_optimum(refs: list[int], capacity: int) -> int:
    """Exhaustive search over every run of the Lean model: after each reference, any subset of at most
    ``capacity`` blocks of what was held and the block just referenced."""
    @functools.cache
    def best(i: int, held: frozenset[int]) -> int:
        if i == len(refs):
            return 0
        choices = sorted(held | {refs[i]})
        return (refs[i] in held) + max(best(i + 1, frozenset(keep)) for k in range(min(capacity, len(choices)) + 1)
                                       for keep in itertools.combinations(choices, k))
    return best(0, frozenset())


def prefix_optimum(refs: list[int], first: list[bool], capacity: int) -> int:
    """Exhaustive search over every prefix cache of the model: hits only while every earlier reference of
    the request hit (``Pycert.PrefixCache.PHit``)."""
    @functools.cache
    def best(i: int, held: frozenset[int], intact: bool) -> int:
        if i == len(refs):
            return 0
        hit = refs[i] in held and (first[i] or intact)
        choices = sorted(held | {refs[i]})
        return hit + max(best(i + 1, frozenset(keep), hit) for k in range(min(capacity, len(choices)) + 1)
                         for keep in itertools.combinations(choices, k))
    return best(0, frozenset(), True)


small = st.lists(st.integers(0, 4), min_size=1, max_size=10)


@settings(max_examples=200, deadline=None)
@given(refs=small, capacity=st.integers(1, 3), cuts=st.lists(st.integers(0, 9), max_size=5))
def test_with_admission_the_bound_is_sound_for_any_cut_list_and_the_recipe_tight(refs: list[int], capacity: int,
                                                                                  cuts: list[int]) -> None:
    opt = admitted_optimum(refs, capacity)
    assert bound_pairs(refs, capacity, [y for y in cuts if y < len(refs)], admission=True) >= opt
    recipe = cut_list(refs, capacity, admission=True)
    assert recipe == sorted(set(recipe)) and bound_pairs(refs, capacity, recipe, admission=True) == opt
    assert int(belady_bypass_flags(refs, capacity).sum()) == admission_hit_curve(refs).hits(capacity) == opt
    assert opt >= optimal_hits(refs, capacity)  # every cache that stores every missed block is one of these


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 400), v=st.integers(1, 40), capacity=st.integers(1, 30))
def test_the_two_bypass_engines_hit_the_same_references(seed: int, n: int, v: int, capacity: int) -> None:
    """MIN with bypass simulated, and the stack distances of MIN on the trace with a fresh block after every
    reference, mark the same hits, and those pairs are a witness (at most C live at every step) that one
    more reuse pair breaks."""
    rng = random.Random(seed)
    refs = np.array([rng.randrange(v) for _ in range(n)], dtype=np.int64)
    hit = belady_bypass_flags(refs, capacity)
    assert np.array_equal(hit, belady_hit_flags(refs, capacity, admission=True))
    starts, ends = belady_pairs(refs, capacity, admission=True)
    assert witness_ok(refs, capacity, starts, admission=True)
    missed = [i for i in range(n) if not starts[i] and refs[i] in refs[i + 1:]]
    if missed:
        more = starts.copy()
        more[missed[seed % len(missed)]] = True
        assert not witness_ok(refs, capacity, more, admission=True)


def prefix_closed_trace(rng: random.Random, requests: int, nodes: int) -> tuple[list[int], list[bool]]:
    """Requests that are paths from the root of a random tree of ``nodes`` blocks."""
    parent = [-1] + [rng.randrange(k) if rng.random() < 0.8 else -1 for k in range(1, nodes)]
    refs, first = [], []
    for _ in range(requests):
        path, x = [], rng.randrange(nodes)
        while x >= 0:
            path.append(x)
            x = parent[x]
        path = path[::-1][:rng.randint(1, 4)]
        refs += path
        first += [True] + [False] * (len(path) - 1)
    return refs, first


@settings(max_examples=120, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), requests=st.integers(1, 5), nodes=st.integers(1, 6), capacity=st.integers(1, 3))
def test_on_prefix_closed_traces_a_prefix_cache_reaches_the_optimum(seed: int, requests: int, nodes: int,
                                                                   capacity: int) -> None:
    refs, first = prefix_closed_trace(random.Random(seed), requests, nodes)
    hit = belady_bypass_flags(refs, capacity)
    assert not_prefix_closed(np.array(refs), np.array(first)) is None
    assert len(prefix_breaks(hit, np.array(first))) == 0
    assert prefix_optimum(refs, first, capacity) == int(hit.sum()) == admitted_optimum(refs, capacity)


def test_the_issues_example() -> None:
    """Requests [1, 2, 3] twice at 2 blocks: without bypass the optimum (2) keeps block 3 after evicting
    its parent 2, which no prefix cache can use; with bypass block 3 is left out and a prefix cache hits 2."""
    refs, first = [1, 2, 3, 1, 2, 3], [True, False, False, True, False, False]
    assert optimal_hits(refs, 2) == 2 and len(prefix_breaks(belady_hit_flags(refs, 2), np.array(first))) == 1
    assert belady_bypass_flags(refs, 2).tolist() == [False] * 3 + [True, True, False]
    assert prefix_optimum(refs, first, 2) == 2 == admitted_optimum(refs, 2)


def mooncake(path: Path, lines: int, shuffle: bool = False) -> Path:
    """The first ``lines`` requests of the seeded synthetic trace, each request's blocks shuffled if asked."""
    rows = [json.loads(line) for line in synthetic.to_jsonl(synthetic.generate(0)).decode().splitlines()[:lines]]
    rng = random.Random(3)
    for row in rows:
        if shuffle:
            rng.shuffle(row["hash_ids"])
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_verdicts_and_tokens(tmp_path: Path) -> None:
    trace = read_trace(mooncake(tmp_path / "t.jsonl", 40))
    hit = belady_hit_flags(trace.refs, 16, admission=True)
    assert prefix_verdict(trace, hit)[0] == "attained"
    shuffled = read_trace(mooncake(tmp_path / "s.jsonl", 40, shuffle=True))
    verdict, why = prefix_verdict(shuffled, belady_hit_flags(shuffled.refs, 16, admission=True))
    assert verdict == "not-prefix-closed" and "does not fix its prefix" in why
    tokens, full, _ = ref_tokens(trace)
    assert tokens.sum() == trace.prompt_tokens.sum() and tokens.max() == 512
    last = trace.requests[1:] - 1
    assert np.array_equal(~full[last], trace.prompt_tokens % 512 != 0) and full[firsts(trace) & ~np.isin(
        np.arange(trace.n_refs), last)].all()


@pytest.fixture(scope="module")
def proved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("admission")
    traces = [mooncake(d / "req.jsonl", 40), mooncake(d / "shuffled.jsonl", 40, shuffle=True)]
    res = prove.prove([(producer("capacity"), CapacityOptions(trace=traces, capacity_blocks=[16], required=True))],
                      backend="wasm", out_dir=d / "certs")
    assert res.ok, [s for s in res.stages if s.status != "ok"]
    return d


def test_a_prefix_cache_is_claimed_and_kernel_checked(proved: Path) -> None:
    cert = proved / "certs" / "capacity-req-c16.json"
    doc = json.loads(cert.read_text())
    trace = read_trace(proved / "req.jsonl")
    figures = {f["name"]: f for f in doc["figures"]}
    ha = admission_hit_curve(trace.refs).hits(16)
    assert figures["prefix_cache_hits"]["numerator"] == figures["bypass_hits"]["numerator"] == ha
    assert figures["prefix_cache_hits"]["evidence"] == "kernel-checked"
    assert doc["parameters"]["prefix_cache"] == "attained"
    assert "reached by a prefix cache over the trace's requests" in doc["claim"]
    stated = doc["statements"][doc["theorems"][-1]]["statement"]
    assert " : Pycert.Admission.PrefixOptima " in stated and stated.endswith(f" {ha} {ha}"), stated
    tokens, full, _ = ref_tokens(trace)
    hit = belady_hit_flags(trace.refs, 16, admission=True)
    assert figures["prefix_cache_hits_tokens"]["numerator"] == int(tokens[hit & full].sum())
    assert figures["bypass_hits_tokens"]["numerator"] == 512 * ha
    assert verify_certificate(cert).status == "ok"


def test_a_shuffled_trace_claims_no_prefix_cache(proved: Path, tmp_path: Path) -> None:
    shutil.copy(proved / "shuffled.jsonl", tmp_path)
    cert = Path(shutil.copytree(proved / "certs", tmp_path / "certs")) / "capacity-shuffled-c16.json"
    doc = json.loads(cert.read_text())
    assert doc["parameters"]["prefix_cache"] == "not-prefix-closed"
    assert "prefix cache" not in doc["claim"] and "prefix_cache_hits" not in {f["name"] for f in doc["figures"]}
    assert any("not prefix-closed" in limit for limit in doc["does_not_prove"])
    assert " : Pycert.Admission.Optima " in doc["statements"][doc["theorems"][-1]]["statement"]
    assert verify_certificate(cert).status == "ok"
    parsed = CLAIM.certificate.model_validate_json(cert.read_text())
    kernel = {f.name: int(f.numerator) for f in parsed.figures if f.name in ("refs", "capacity_blocks", "max_hits",
                                                                                "bypass_hits")}
    with pytest.raises(Rejected, match="parameters.prefix_cache: expected 'not-prefix-closed'"):
        CLAIM.figures(parsed.parameters.model_copy(update={"prefix_cache": "attained"}), kernel, parsed.inputs,
                      Locator(root=tmp_path / "certs", external={}))
    forge(cert, lambda d: d["parameters"].update(prefix_cache="attained"))
    res = verify_certificate(cert)
    # a curve's file states the prefix test per capacity: the capacity's headline read from the file
    # regenerated from the trace is not the one the forged parameters call for
    assert res.status == "rejected" and any("regenerated from the trace" in f.subject or "headline" in f.subject
                                            for f in res.failures), res.failures


def test_stats_offload_and_the_page_speak_both_units(proved: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`trace stats` says whether a trace is prefix-closed and gives its ceiling in tokens; the offload report
    gives the optimum with bypass (kernel-checked by the certificate at its capacity) and every hit
    rate in tokens too, saying which unit vLLM and SGLang report; the report page does the same."""
    for name, closed in (("req.jsonl", True), ("shuffled.jsonl", False)):
        assert main(["trace", "stats", str(proved / name), "--json"]) == 0
        stats = json.loads(capsys.readouterr().out)
        assert stats["prefix_closed"] is closed
        trace = read_trace(proved / name)
        tokens, full, _ = ref_tokens(trace)
        prev = np.array([np.flatnonzero(trace.refs[:j] == trace.refs[j]).size > 0 for j in range(trace.n_refs)])
        assert Fraction(stats["ceiling_tokens"]["numerator"], stats["ceiling_tokens"]["denominator"]) == Fraction(
            int(tokens[prev & full].sum()), int(tokens.sum()))
    trace = read_trace(proved / "req.jsonl")
    rep = with_evidence(offload_report(trace, 16 * 512, control_k=None), proved / "req.jsonl", proved / "certs")
    p = rep.primary
    assert p.gpu_only_bypass_hit_rate.value == Fraction(admission_hit_curve(trace.refs).hits(16), trace.n_refs)
    assert rep.evidence["gpu_only_bypass_hit_rate"] == "kernel-checked"
    assert rep.evidence["gpu_only_bypass_hit_rate_tokens"] == "computed"
    tokens, full, _ = ref_tokens(trace)
    hit = belady_hit_flags(trace.refs, 16, admission=True)
    assert p.gpu_only_bypass_hit_rate_tokens.value == Fraction(int(tokens[hit & full].sum()), int(tokens.sum()))
    assert p.refs_tokens == int(trace.prompt_tokens.sum())
    assert main(["trace", "offload", str(proved / "req.jsonl"), "--capacity-tokens", str(16 * 512)]) == 0
    assert "report prefix-cache hit rates in tokens" in capsys.readouterr().out
    page = proved / "page.html"
    report.write_report(proved / "certs", page)
    text = page.read_text()
    cards = dict(re.findall(r'<section class="card" id="trace-\d+"><h2>Trace ([^<]*)</h2>(.*?)</section>', text, re.S))
    for name, prefix in (("req.jsonl", True), ("shuffled.jsonl", False)):
        card, trace = cards[name], read_trace(proved / name)
        cert = json.loads((proved / "certs" / f"capacity-{name.split('.')[0]}-c16.json").read_text())
        figs = {f["name"]: f["numerator"] for f in cert["figures"]}
        n, ha, refs_tokens = trace.n_refs, admission_hit_curve(trace.refs).hits(16), int(trace.prompt_tokens.sum())
        assert figs["bypass_hits"] == ha and figs["refs_tokens"] == refs_tokens
        who = "a prefix cache" if prefix else "one such cache"
        assert f"hits at most {pct(Fraction(ha, n))}, which {who} reaches" in card
        blocks, tokens = re.findall(r"<caption>[^<]*</caption>(.*?)</table>", card, re.S)
        cells = re.findall(r"<summary>([^<]*)</summary><span>([^<]*)</span>", blocks)
        assert cells[2][0] == pct(Fraction(ha, n)) and f"kernel-checked both ways in {cert['id']}" in cells[2][1]
        assert ("a prefix cache reaches it" in cells[2][1]) is prefix
        assert cells[4][0] == f"{100 * (ha - figs['max_hits']) / n:.2f}"  # what bypass adds
        # in tokens: LRU simulated here, the optimum's bound derived from the kernel-checked block figure
        lru = stack_distances(trace.refs)
        t, full, _ = ref_tokens(trace)
        hit_tokens, all_tokens = int(t[(lru >= 1) & (lru <= 16) & full].sum()), int(t.sum())
        lru_tokens = Fraction(hit_tokens, all_tokens)
        cells = re.findall(r"<summary>([^<]*)</summary><span>([^<]*)</span>", tokens)
        # the count and its total, as people read them: never the reduced fraction
        assert cells[0][0] == pct(lru_tokens) and f"{hit_tokens:,} of {all_tokens:,} prompt tokens" in cells[0][1]
        bound = Fraction(512 * ha, refs_tokens)
        assert cells[2][0] == pct(bound) and cells[2][1].startswith(
            f"{512 * ha:,} of {refs_tokens:,} prompt tokens; block_tokens × the kernel-checked optimum, an upper bound")
    assert "The same in prompt tokens, the unit vLLM and SGLang report" in text


def test_a_prompts_trace_has_token_figures_over_its_whole_prompts(tmp_path: Path) -> None:
    """A prompts trace's references are its full blocks; a prompt's tail shorter than a block is in the
    prompt tokens (the rates' denominator) and in no reference. Such a trace had no token figures at all:
    its last reference held a whole block where a Mooncake line's holds the remainder."""
    from pycert.analysis.requests import reuse_tokens

    system = list(range(100, 132))  # two 16-token blocks every prompt shares
    prompts = [system + [1, 2, 3], system + list(range(7, 30)), system[:16], [5] * 15]
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps({"prompt_token_ids": p}) + "\n" for p in prompts))
    trace = read_trace(path)
    w = ref_tokens(trace)
    assert w is not None and w.total == sum(map(len, prompts)) == 35 + 55 + 16 + 15
    assert trace.n_refs == 2 + 3 + 1 + 0 and list(w.tokens) == [16] * 6 and w.full.all()
    # reused: the second prompt's two shared blocks, the third's one: 3 blocks of 16 tokens
    assert reuse_tokens(trace) == Fraction(3 * 16, 121)
    assert offload_report(trace, 64, control_k=None).primary.refs_tokens == 121
