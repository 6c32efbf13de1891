"""The report page's trace card puts an engine's own hits beside the certified optimum: in blocks and in
the trace's tokens, marked as measured, not kernel-checked, from the committed engine certificate and
its capacity companion (no Lean: the page verifies them offline)."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

import pytest

from pycert.certify import report
from pycert.certify.card import pct
from pycert.certify.manifest import MANIFEST_NAME
from pycert.cli import main
from tests.conftest import REPO

ENGINE = "engine-synthetic-seed0-c128-b16-seed0"
CAPACITY = "capacity-synthetic-seed0-c128"


def _synthetic_only(into: Path, drop: Sequence[str] = ()) -> Path:
    """The committed certificates of the embedded synthetic trace (its trace and the engine's log are in
    ``inputs/``), the others and ``drop`` removed, from the manifest too."""
    shutil.copytree(REPO / "certificates", into, ignore=shutil.ignore_patterns("derived", "runs"))
    for cert in into.glob("*.json"):
        if "synthetic-seed0" not in cert.stem or cert.stem in drop:
            cert.unlink()
    manifest = into / MANIFEST_NAME
    kept = [line for line in manifest.read_text().splitlines() if (into / line.split(maxsplit=1)[1]).is_file()]
    manifest.write_text("".join(f"{line}\n" for line in kept))
    return into


def _figures(path: Path) -> dict[str, int]:
    return {f["name"]: f["numerator"] for f in json.loads(path.read_text())["figures"] if f["denominator"] == 1}


def _engine_row(page: str) -> list[tuple[str, str]]:
    table = re.search(r'<table class="capacities"><caption>A real engine.*?</table>', page, re.S)
    assert table is not None, "no engine table on the page"
    [row] = re.findall(r"<tr><td>.*?</tr>", table.group(0))
    return re.findall(r"<summary>([^<]*)</summary><span>([^<]*)</span>", row)


def test_the_trace_card_shows_the_engine_beside_the_kernel_checked_optimum(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    certs = _synthetic_only(tmp_path / "certs")
    marked: dict[str, list[tuple[int, int]]] = {}
    real = report.curve_png

    def spy(*args: object, observed: Sequence[tuple[int, int]] = (), **kw: object) -> report.Curve:
        marked[str(args[2])] = list(observed)
        return real(*args, observed=observed, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(report, "curve_png", spy)
    out = tmp_path / "r.html"
    assert main(["report", "--certs", str(certs), "--out", str(out)]) == 0
    page = out.read_text()
    e, c = _figures(certs / f"{ENGINE}.json"), _figures(certs / f"{CAPACITY}.json")
    refs, tokens = e["refs"], e["refs_tokens"]
    assert marked == {"inputs/synthetic-seed0.jsonl": [(128, e["engine_hits"])]}  # one plot, the engine marked on it

    engine, engine_hits, engine_tokens, lru, optimum, optimum_tokens, share = _engine_row(page)
    assert engine[0] == "transformers continuous batching" and engine[1].endswith(ENGINE)
    hits = e["engine_hits"]
    assert engine_hits[0] == f"{hits:,} ({pct(Fraction(hits, refs))})"
    assert engine_tokens[0] == f"{e['engine_hits_tokens']:,} ({pct(Fraction(e['engine_hits_tokens'], tokens))})"
    for cell in (engine_hits, engine_tokens):
        assert "observed" in cell[1] and "measured, not kernel-checked" in cell[1] and cell[1].endswith(ENGINE)
    assert lru[0] == f"{e['lru_hits']:,} ({pct(Fraction(e['lru_hits'], refs))})" and "computed by pycert" in lru[1]
    # the optimum is the capacity certificate's kernel-checked one (with bypass), not the engine's own
    assert optimum[0] == f"{c['bypass_hits']:,} ({pct(Fraction(c['bypass_hits'], refs))})"
    assert optimum[1].endswith(f"kernel-checked in {CAPACITY}")
    assert optimum_tokens[0].startswith(f"at most {c['bypass_hits_tokens']:,} (")
    assert share[0] == pct(Fraction(hits, c["bypass_hits"]))
    assert f"Measured, not kernel-checked: the engine reached {hits:,} of the {c['bypass_hits']:,} hits of the " \
           "optimum at 128 blocks: no cache of 128 blocks that starts empty" in page


def test_without_its_capacity_certificate_the_optimum_is_computed_and_no_sentence_is_made(tmp_path: Path) -> None:
    certs = _synthetic_only(tmp_path / "certs", drop=[CAPACITY])
    out = tmp_path / "r.html"
    assert main(["report", "--certs", str(certs), "--out", str(out), "--no-curves"]) == 0
    page, e = out.read_text(), _figures(certs / f"{ENGINE}.json")
    *_, optimum, optimum_tokens, share = _engine_row(page)
    assert optimum[0].startswith(f"{e['bypass_hits']:,} (") and "computed by pycert" in optimum[1]
    assert "kernel-checked" not in optimum[1] + share[1]
    assert optimum_tokens == ("n/a", "no bound in tokens: no verified capacity certificate of synthetic-seed0.jsonl "
                                     "at 128 blocks")
    assert "No sentence: no verified capacity certificate of synthetic-seed0.jsonl at 128 blocks." in page
    assert "Measured, not kernel-checked: the engine reached" not in page


def test_a_trace_in_pieces_both_ways_is_named_attained_beside_the_engine(tmp_path: Path) -> None:
    """A capacity certificate of a trace in pieces both ways states ``OptimumA`` (the witness checked piece by
    piece): the engine row calls its optimum kernel-checked, not "an upper bound; attained as computed", and the
    card's sentence says that the cache reaching it reads the trace ahead, as it does for the one-file layout."""
    from pycert.certify.manifest import render_manifest
    from pycert.core.files import file_sha256
    from tests.certs import make_cert, trace_input

    certs = _synthetic_only(tmp_path / "certs", drop=[CAPACITY])
    (certs / "lean" / "CapacitySyntheticSeed0C128.lean").unlink()  # the one-file layout's instance
    joints = make_cert(CAPACITY, "capacity", {"capacity_blocks": 128, "trace_format": "mooncake", "pieces": 3,
                                              "piece_refs": 2200, "lean_encoding": "packed-sorted-joints/1"},
                       [trace_input(certs / "inputs" / "synthetic-seed0.jsonl", certs)], root=certs)
    (certs / joints.filename).write_text(joints.to_json())
    (certs / MANIFEST_NAME).write_text(render_manifest({p.name: file_sha256(p) for p in certs.glob("*.json")}))
    out = tmp_path / "r.html"
    assert main(["report", "--certs", str(certs), "--out", str(out), "--no-curves"]) == 0
    page = out.read_text()
    *_, optimum, _, _ = _engine_row(page)
    assert optimum[1].endswith(f"kernel-checked in {CAPACITY}"), optimum[1]
    assert "which one such cache reaches (the caches reaching these optima read the trace ahead" in page
    assert f"{CAPACITY} gives no max_hits_tokens" not in page  # not for want of prompt lengths: one model


SALT = "isolation-cost-synthetic-seed0-prefix2-t8-c128"


def test_an_isolation_cost_certificate_is_on_its_trace_card(tmp_path: Path) -> None:
    """A trace whose only verified certificate is an isolation-cost one: its card names it, says what the salt
    costs (both optima and the gap, kernel-checked), and does not say that no certificate of the trace verified."""
    certs = _synthetic_only(tmp_path / "certs", drop=[ENGINE, CAPACITY, "ceiling-synthetic-seed0",
                                                      "fleet-synthetic-seed0-prefix-2-h4-c64",
                                                      "fleet-synthetic-seed0-round-robin-h4-c64"])
    assert sorted(p.stem for p in certs.glob("*.json")) == [SALT]
    out = tmp_path / "r.html"
    assert main(["report", "--certs", str(certs), "--out", str(out), "--no-curves"]) == 0
    page, f = out.read_text(), _figures(certs / f"{SALT}.json")
    card = re.search(r'<section class="card" id="trace-1">.*?</section>', page, re.S)
    assert card is not None
    text = card.group(0)
    assert "No certificate of this trace verified" not in text
    assert "No ceiling or capacity certificate of this trace verified" in text
    shared, salted = f["shared_hits"], f["salted_hits"]
    assert (f"Kernel-checked in {SALT}: at 128 blocks, with 8 tenants (--tenant-rule prefix:2, applied by pycert: the "
            "kernel checks the keying by tenant, not the rule), the best shared cache with bypass hits "
            f"{shared:,} times and no salted one more than {salted:,} (each starting empty, holding blocks of one size "
            "and fetching a block only when it is referenced): a per-tenant salt costs at least "
            f"{shared - salted:,} hits") in text
    assert f'<a href="#cert-{SALT}">{SALT}</a>' in text
