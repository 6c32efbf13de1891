"""The attack corpus (``tests/attacks/``): every hostile directory gets the verdict its case names, within
its time and memory bounds (``pycert verify`` under 10 s and 1 GiB), and no output a terminal would
obey (a control character) or a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.attacks import corpus


@pytest.mark.parametrize("name", corpus.cases())
def test_attack_case(name: str, tmp_path: Path) -> None:
    case = corpus.build(name, tmp_path)
    for k, run in enumerate(case.runs):
        if (why := corpus.available(run)) is not None:
            pytest.skip(why)
        got = corpus.execute(name, k, run, tmp_path)
        assert not (bad := corpus.failures(run, got)), f"{name} run {k}: {'; '.join(bad)}\n{got.output[-3000:]}"


def test_every_case_parses_and_names_its_class() -> None:
    names = corpus.cases()
    assert len(names) >= 15, names
    for name in names:
        assert corpus.load(name).about.strip(), name
