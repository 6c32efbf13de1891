"""The report page's first screen (issue 47 item 6): per traffic, one table by cache size, prompt tokens first,
each value styled by how it is known; ``pycert report --csv`` writes the same table; one card per traffic when
two layouts read the same requests. The browser's view of it is in tests/test_report_browser.py."""

from __future__ import annotations

import csv
import html
import json
import re
from fractions import Fraction
from pathlib import Path

import pytest

from pycert.certify.card import KINDS, pct
from pycert.certify.decision import CSV_HEADERS
from pycert.certify.manifest import write_certificates
from pycert.cli import main
from pycert.data import synthetic
from pycert.lean.emit.packed_trace import ENCODING
from tests.certs import make_cert, trace_input
from tests.test_isolation_cost import params_for
from tests.test_report_engine import CAPACITY, ENGINE, SALT, _synthetic_only


def _figures(path: Path) -> dict[str, int]:
    return {f["name"]: f["numerator"] for f in json.loads(path.read_text())["figures"] if f["denominator"] == 1}


def _cells(page: str, anchor: str) -> list[tuple[str, str, str]]:
    """Each value cell of a decision table: (its class, what it shows, what a click shows)."""
    section = re.search(rf'<section class="decision" id="{anchor}">.*?</section>', page, re.S)
    assert section is not None, anchor
    return [(k, html.unescape(shown), html.unescape(said)) for k, shown, said in re.findall(
        r'<td class="([^"]*)"[^>]*><details class="exact"><summary>([^<]*)</summary><span>([^<]*)</span>',
        section.group(0))]


def test_the_page_opens_with_the_decision_by_cache_size(tmp_path: Path) -> None:
    """The committed certificates of the embedded trace: before any card, a legend and one table whose row at
    128 blocks gives, in prompt tokens and then in block references, what LRU and the engine get, the best any
    cache of that size can (the optimum with bypass, kernel-checked in blocks, a derived bound in tokens), the
    ceiling, and what a salt costs; each cell styled by how it is known, its counts a click away."""
    certs = _synthetic_only(tmp_path / "certs")
    out = tmp_path / "r.html"
    assert main(["report", "--certs", str(certs), "--out", str(out)]) == 0
    page = out.read_text()
    first = page.index('<section class="decision" id="traffic-1">')
    assert first < page.index('<section class="card"') and page.index('<ul class="legend"') < first
    assert all(f'<span class="ev ev-{k}">{k}</span>' in page for k in KINDS)  # the legend names every kind
    e, c, s = _figures(certs / f"{ENGINE}.json"), _figures(certs / f"{CAPACITY}.json"), _figures(certs / f"{SALT}.json")
    refs, tokens = c["refs"], c["refs_tokens"]
    cells = _cells(page, "traffic-1")
    assert [k for k, _, _ in cells] == ["ev-computed", "ev-observed", "ev-derived", "ev-computed",  # prompt tokens
                                        "ev-computed", "ev-observed", "ev-proven", "ev-proven",  # block references
                                        "ev-proven"]  # the salt's cost
    lru_t, engine_t, best_t, ceiling_t, lru_b, engine_b, best_b, ceiling_b, salt = cells
    assert engine_b[1:] == (f"{100 * e['engine_hits'] / refs:.2f}%", f"{e['engine_hits']:,} hits of {refs:,} block "
                            f"references; transformers continuous batching's own count, in {ENGINE}")
    assert engine_t[2].startswith(f"{e['engine_hits_tokens']:,} of {tokens:,} prompt tokens")
    assert best_b[2].startswith(f"{c['bypass_hits']:,} hits of {refs:,} block references; the optimum at 128 blocks "
                                f"with bypass, kernel-checked both ways in {CAPACITY}")
    assert best_t[1].startswith("≤ ") and best_t[2].startswith(f"at most {c['bypass_hits_tokens']:,} of {tokens:,}")
    assert lru_b[2].startswith(f"{e['lru_hits']:,} hits of {refs:,}") and lru_t[2].endswith("as in vLLM)")
    assert ceiling_b[2].startswith(f"{e['unbounded_hits']:,} hits of {refs:,}") and "kernel-checked" in ceiling_b[2]
    assert ceiling_t[2].startswith(f"{e['unbounded_hits_tokens']:,} of {tokens:,} prompt tokens")
    gap = s["shared_hits"] - s["salted_hits"]
    assert salt[1].startswith(f"{gap:,} hits") and f"kernel-checked in {SALT}" in salt[2]
    assert not re.search(r"= \d+/\d+", page), "a reduced fraction where a count is meant"


def test_report_csv_is_the_same_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``pycert report --csv``: one row per cell of the page's tables, in page order, each with its percent as a
    decimal, its count and total in their unit, the exact fraction apart, and how it is known; no page written."""
    certs = _synthetic_only(tmp_path / "certs")
    out = tmp_path / "r.html"
    assert main(["report", "--certs", str(certs), "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["report", "--csv", "--certs", str(certs), "--out", str(tmp_path / "other.html")]) == 0
    assert not (tmp_path / "other.html").exists()
    rows = list(csv.DictReader(capsys.readouterr().out.splitlines()))
    assert list(rows[0]) == list(CSV_HEADERS)
    page_cells = _cells(out.read_text(), "traffic-1")
    assert len(rows) == len(page_cells)
    for row, (kind, shown, said) in zip(rows, page_cells):
        count, of = int(row["count"]), int(row["of"])
        assert Fraction(row["exact"]) == Fraction(count, of) and row["percent"] == f"{100 * count / of:.6f}"
        salt = row["column"] == "a per-tenant salt costs"
        assert kind == f"ev-{row['evidence']}"
        share = pct(Fraction(count, of))
        assert shown.removeprefix("≤ ") == (f"{count:,} hits ({share})" if salt else share)
        assert row["bound"] == ("at most" if shown.startswith("≤") else "")
        assert row["cache_blocks"] == "128" and row["cache_tokens"] == str(128 * 512)
    assert [r["unit"] for r in rows[:4]] == ["prompt tokens"] * 4
    with pytest.raises(SystemExit) as exc:  # one output at a time: a usage error, named
        main(["report", "--csv", "--json", "--certs", str(certs)])
    assert exc.value.code == 2 and json.loads(capsys.readouterr().out)["where"] == "--csv"


def _one_trace_two_layouts(root: Path) -> Path:
    """A Mooncake trace certified read as Mooncake (its ceiling) and as AIPerf (its optimum at 8 blocks and a
    salt's cost): both layouts read it to the same block references."""
    trace = synthetic.write_trace(root / "t.jsonl", seed=1, requests=30)
    certs = [make_cert("ceiling-t", "ceiling", {"lean_encoding": ENCODING, "trace_format": "mooncake"},
                       [trace_input(trace, root)], root=root),
             make_cert("capacity-t-c8", "capacity", {"capacity_blocks": 8, "lean_encoding": "packed-sorted-curve/1",
                                                     "curve": [8], "prefix_cache": "attained",
                                                     "trace_format": "aiperf"}, [trace_input(trace, root)], root=root),
             make_cert("isolation-cost-t-c8", "isolation-cost",
                       params_for(trace, 8, rule="prefix", tenants=2, prefix_blocks=1) | {"trace_format": "aiperf"},
                       [trace_input(trace, root)], root=root)]
    write_certificates(certs, root)
    return root


def test_two_layouts_of_the_same_requests_are_one_card(tmp_path: Path) -> None:
    """The same file read in two layouts to the same references: one table and one card, saying so, the ceiling
    of one reading beside the other's optimum and salt's cost; without curves nothing tells, and each card says
    that instead of claiming the references differ."""
    root = _one_trace_two_layouts(tmp_path / "certs")
    out = tmp_path / "r.html"
    assert main(["report", "--certs", str(root), "--out", str(out)]) == 0
    page = out.read_text()
    assert page.count('<section class="decision"') == 1 and page.count('<section class="card" id="trace-') == 1
    assert ("One traffic: t.jsonl (aiperf) and t.jsonl (mooncake) read the same file to the same 481 block "
            "references, so their certificates share this card.") in page
    kinds = [k for k, _, _ in _cells(page, "traffic-1")]
    assert kinds == ["ev-computed", "ev-derived", "ev-computed", "ev-computed", "ev-proven", "ev-proven", "ev-proven"]
    assert main(["report", "--no-curves", "--certs", str(root), "--out", str(out)]) == 0
    page = out.read_text()
    assert page.count('<section class="decision"') == 2
    assert "nothing here tells whether they are the same block references" in page
    assert "other block references" not in page


def test_a_file_read_to_other_references_is_another_card(tmp_path: Path) -> None:
    """A prompts trace at 16 and at 64 tokens a block: other block references, so two cards, each saying that the
    same file read another way is the other, and neither lending the other a figure."""
    from pycert.lean.emit import capacity

    root = tmp_path / "certs"
    root.mkdir()
    trace = root / "t.jsonl"
    trace.write_text("".join(json.dumps({"prompt_token_ids": list(range(7 * k, 7 * k + 150))}) + "\n" for k in range(6)))
    params = [{"capacity_blocks": c, "trace_format": "prompts", "block_tokens": bt, "lean_encoding": capacity.ENCODING}
              for c, bt in ((4, 16), (2, 64))]
    write_certificates([make_cert(f"capacity-t-c{p['capacity_blocks']}", "capacity", p, [trace_input(trace, root)],
                                  root=root) for p in params], root)
    out = tmp_path / "r.html"
    assert main(["report", "--certs", str(root), "--out", str(out)]) == 0
    page = out.read_text()
    assert page.count('<section class="decision"') == 2
    assert "The same file read another way, t.jsonl (prompts, 64 tokens a block), is another card: other block " \
           "references." in page
    first, second = page[page.index('id="traffic-1"'):page.index('id="traffic-2"')], page[page.index('id="traffic-2"'):]
    second = second[:second.index("</section>")]
    assert "64 tokens a block" in first and "2 blocks" in first and "4 blocks" not in first
    assert "16 tokens a block" in second and "4 blocks" in second and "2 blocks" not in second
