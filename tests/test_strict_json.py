"""CSV and JSON hygiene: a key named twice in one JSON object is found with its line (every reader of a stranger's
JSON refuses it), and every CSV cell pycert writes follows OWASP's rule against CSV injection."""

from __future__ import annotations

import csv
import io
import json

import pytest

from pycert.core.console import csv_text, spreadsheet_cell
from pycert.core.strict_json import DuplicateKey, duplicate, loads


@pytest.mark.parametrize("text, found", [
    ('{"a": 1, "b": 2}', None),
    ('{"k": {"a": 1}, "j": {"a": 2}}', None),  # the same key in two objects is no duplicate
    ('{"a": 1,\n "a": 2}', ("a", 2)),
    ('[{}, [], {"a": {}}, {"a": [1, {"y": 1,\n\n "y": [2]}], "b": null}]', ("y", 3)),
    ('{"a": 1, "b": {"c": [1, 2, {"d": "x"}]},\n "b": 3}', ("b", 2)),
    ('{"a": "\\"a\\":", "b": 1}', None),  # a key's text inside a string value
    ("not json", None),
])
def test_a_key_named_twice_is_found_with_its_line(text: str, found: tuple[str, int] | None) -> None:
    assert duplicate(text) == found
    if found:
        with pytest.raises(DuplicateKey):
            loads(text)
    elif text.startswith(("{", "[")):
        assert loads(text) == json.loads(text)


def test_a_document_as_deep_as_the_limit() -> None:
    """Every reader bounds the nesting first (:data:`~pycert.core.limits.MAX_JSON_DEPTH`)."""
    text = '{"x": [' * 15 + '{"a": 1, "a": 2}' + "]}" * 15
    assert duplicate(text) == ("a", 1)


@pytest.mark.parametrize("cell, shown", [
    ("=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")"), ("+1+cmd|' /C calc'!A0", "'+1+cmd|' /C calc'!A0"),
    ("-2+3", "'-2+3"), ("@SUM(A1)", "'@SUM(A1)"), ("\t=1", "'\t=1"), ("\r=1", "'\r=1"),
    ("-0.5", "-0.5"), ("+3", "+3"), ("-1e-05", "-1e-05"), ("trace.jsonl", "trace.jsonl"), (-3, -3), (0.25, 0.25),
])
def test_csv_cells_a_spreadsheet_would_evaluate_get_a_quote(cell: object, shown: object) -> None:
    assert spreadsheet_cell(cell) == shown
    [row] = list(csv.reader(io.StringIO(csv_text(["name"], [[cell]]), newline="")))[1:]
    assert row == [str(shown)]
