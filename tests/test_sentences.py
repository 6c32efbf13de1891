"""Every sentence no wider than its theorem: the model's limits in every claim about caches, "at most" where
attainment is not kernel-checked, the salt's keying and its tenant rule told apart, one meaning for each
headroom, and the README's word on ``verify --kernel``. Each test fails if the wide wording of before comes
back (a buyer quotes sentences, not theorems)."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import pytest

from pycert.certify import cards
from pycert.cli import main
from pycert.families.capacity import BOUNDS
from pycert.families.capacity import text as capacity_text
from pycert.families.engine import CLAIM as ENGINE
from pycert.families.engine import EngineParams
from pycert.families.isolation_cost import text as salt_text
from pycert.families.models import ADMISSION

REPO = Path(__file__).resolve().parent.parent
LIMITS = ("start empty", "hold blocks of one size", "fetch a block only when it is referenced (no prefetch)")
ONE = ("starts empty", "holds blocks of one size", "fetches a block only when it is referenced (no prefetch)")
ROOM = "keeping no room for a running request's blocks"
PREDICATES = (capacity_text.BOUNDED, capacity_text.OPTIMUM, capacity_text.OPTIMA, capacity_text.PREFIX_OPTIMA,
              capacity_text.OPTIMUM_A)
FIGURES = {"refs": Fraction(100), "capacity_blocks": Fraction(8), "max_hits": Fraction(40), "max_hit_rate": Fraction(2, 5),
           "bypass_hits": Fraction(42), "bypass_hit_rate": Fraction(21, 50), "requests": Fraction(10),
           "refs_tokens": Fraction(51200), "bypass_hits_tokens": Fraction(21504),
           "prefix_cache_hits_tokens": Fraction(21000)}
WIDE = ("Every cache of that size that starts empty is one of these", "cache of caches", "with or without admission",
        "can reach on this trace", "any cache of 8 blocks that starts empty")


def capacity_texts(predicate: str) -> list[str]:
    """Everything a capacity certificate stating ``predicate`` says in words: its sentence, limits and evidence."""
    limits = (capacity_text.joint_limits(3) if predicate == capacity_text.OPTIMUM_A
              else capacity_text.OPTIMA_LIMITS if predicate in (capacity_text.OPTIMA, capacity_text.PREFIX_OPTIMA)
              else capacity_text.LIMITS)
    evidence = [capacity_text.evidence_of(name, predicate)[1] for name in (*capacity_text.OPTIMA_EVIDENCE,
                                                                           *capacity_text.EVIDENCE)]
    return [capacity_text.sentence("t.jsonl", predicate, FIGURES), *limits, *evidence]


@pytest.mark.parametrize("predicate", PREDICATES)
def test_every_capacity_sentence_names_the_models_limits(predicate: str) -> None:
    said = capacity_text.sentence("t.jsonl", predicate, FIGURES)
    assert all(limit in said for limit in (ONE if predicate in (capacity_text.BOUNDED, capacity_text.OPTIMUM)
                                           else LIMITS)), said
    if predicate != capacity_text.BOUNDED:  # the cache reaching the optimum is offline and keeps no room
        assert "offline" in said and ROOM in said, said
    else:  # the bound alone: that it is reached is computed
        assert "is computed by pycert (two engines agreeing), not kernel-checked" in said
    for text in capacity_texts(predicate):
        assert not any(w in text for w in WIDE), text


def test_the_pieced_sentence_does_not_say_every_cache_is_one_of_these() -> None:
    said = capacity_text.sentence("t.jsonl", capacity_text.OPTIMUM_A, FIGURES)
    assert "Every cache of that size" not in said and "run_of_policy" in said
    joint = " ".join(capacity_text.joint_limits(3))
    assert "no cache of capacity_blocks blocks that may bypass hits more" in joint and "cache of caches" not in joint


def test_the_prefix_cache_evidence_names_the_cache_that_may_bypass() -> None:
    state, how = capacity_text.evidence_of("prefix_cache_hits", capacity_text.PREFIX_OPTIMA)
    assert state == "kernel-checked"
    assert "= it for one prefix cache that may bypass" in how and "need not reach it" in how
    assert "with or without admission control" not in how


def test_every_bound_a_comparison_quotes_carries_the_limits() -> None:
    for figure, caches in BOUNDS.values():
        assert caches.startswith("that " + ", ".join(ONE)), caches
        assert caches.endswith("stores every missed block" if figure == "max_hits" else "may bypass (skip storing a "
                                                                                       "missed block)"), caches


def test_the_engine_certificate_names_the_optimum_with_its_limits() -> None:
    params = EngineParams(engine="e", engine_version="1", model="m", device="cpu", seed=0, num_blocks=8, block_tokens=16,
                          scheduler="s", safety_margin="0.1", generated=1)
    f = {"requests": Fraction(2), "refs": Fraction(10), "engine_hits": Fraction(1), "engine_cached_tokens": Fraction(16),
         "lru_hits": Fraction(1), "belady_hits": Fraction(2), "bypass_hits": Fraction(3), "unbounded_hits": Fraction(4),
         "prefix_closed": Fraction(1), "prefix_unbounded_hits": Fraction(4)}
    said = ENGINE.sentence(params, f, [])
    assert "the optimum of any cache of 8 blocks that starts empty" not in said
    assert f"(the optimum at 8 blocks of {ADMISSION})" in said
    limits = " ".join(ENGINE.limits)
    assert "bounds every cache of num_blocks blocks that " + ", ".join(ONE) in limits
    assert "keep no room for a running request's blocks" in limits


def test_the_salts_sentence_tells_the_keying_from_the_tenant_rule() -> None:
    figs = {"refs": Fraction(8), "capacity_blocks": Fraction(2), "shared_hits": Fraction(4), "salted_hits": Fraction(2),
            "gap": Fraction(2), "gap_share": Fraction(1, 2), "requests": Fraction(4), "shared_demand_hits": Fraction(3),
            "salted_demand_hits": Fraction(2)}
    said = salt_text.sentence("t.jsonl", salt_text.SALT_COST, figs, "2 tenants")
    assert "The kernel checks that the keyed trace is the trace keyed by the tenants the certificate carries" in said
    assert "that those tenants are the rule's is pycert's reading of the trace" in said
    assert "the kernel does not relate the two traces" not in said and ROOM in said
    limits = " ".join(salt_text.limits("prefix"))
    assert "it does not check that one is the other keyed" not in limits and "not that they are the rule's" in limits
    cert = SimpleNamespace(id="isolation-cost-x", parameters=SimpleNamespace(tenants=8, tenant_rule="prefix",
                                                                              prefix_blocks=2),
                           figures=[SimpleNamespace(name=n, numerator=v, denominator=1, evidence="kernel-checked")
                                    for n, v in (("capacity_blocks", 128), ("shared_hits", 100), ("salted_hits", 90))])
    card = cards.salt_sentence(cert)  # type: ignore[arg-type]
    assert "applied by pycert: the kernel checks the keying by tenant, not the rule" in card
    assert "with admission control" not in card and "with bypass" in card


def test_the_cards_sentence_bounds_only_caches_that_fetch_on_demand() -> None:
    src = (REPO / "pycert" / "certify" / "cards.py").read_text()
    assert "loads every block it misses" not in src and "leave missed blocks out" not in src
    assert "caches(STORE, plural=False)" in src


def test_tier_headroom_has_one_meaning_said_in_help_and_docs(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["trace", "offload", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "tier_headroom_pp, what no GPU-only cache of that capacity can win, bypassing or not" in help_text
    assert "bypass_headroom_pp" in help_text and "The report page's three headroom columns are these" in help_text
    docs = (REPO / "docs" / "traces.md").read_text()
    assert "| `tier_headroom_pp` | 100 x (ceiling - gpu_only_bypass_hit_rate)" in docs
    assert "what no GPU-only cache that stores every miss can win (the two add up" not in docs
    src = (REPO / "pycert" / "certify" / "cards.py").read_text()
    assert "may win part of it" not in src  # the report's column with another meaning, gone


def test_an_older_offload_report_reads_with_todays_tier_headroom() -> None:
    """A report of an older pycert said tier_headroom_pp for the ceiling less OPT(G); read today, it means the
    ceiling less the optimum with bypass, with bypass_headroom_pp beside it: one meaning, whatever wrote it."""
    from pycert.analysis.offload import OffloadArm
    from pycert.core.exact import Ratio

    def r(x: Fraction | int) -> dict:
        return Ratio.of(Fraction(x)).model_dump()
    old = {"granularity": 1, "block_tokens": 512, "refs": 100, "distinct": 50, "capacity_blocks": 8, "host_blocks": None,
           "working_set_over_capacity": r(Fraction(50, 8)), "cold_miss_floor": r(Fraction(1, 2)),
           "max_achievable_hit_rate": r(Fraction(1, 2)), "gpu_only_hit_rate": r(Fraction(1, 10)),
           "gpu_only_belady_hit_rate": r(Fraction(1, 5)), "gpu_only_admission_hit_rate": r(Fraction(1, 4)),
           "host_backed_hit_rate": r(Fraction(1, 2)), "host_load_frac": r(Fraction(2, 5)), "headroom_pp": r(40),
           "gpu_share_of_achievable": r(Fraction(1, 5)), "policy_headroom_pp": r(10), "tier_headroom_pp": r(30)}
    arm = OffloadArm.model_validate(old)
    assert (arm.tier_headroom_pp.value, arm.bypass_headroom_pp.value) == (25, 5)
    assert arm.policy_headroom_pp.value + arm.bypass_headroom_pp.value + arm.tier_headroom_pp.value == arm.headroom_pp.value


def test_the_readme_says_how_to_check_every_file_again() -> None:
    readme = (REPO / "README.md").read_text()
    assert "on a fresh copy" not in readme
    assert "`verify --kernel --fresh` starts from an empty build cache, so Lean checks every file" in " ".join(
        readme.split())
    assert "answered from the build cache" in " ".join(readme.split())
