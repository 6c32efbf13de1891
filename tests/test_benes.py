"""Beneš routing: the controls realise the permutation asked for, and the Python route mirrors the
Lean definition (``Pycert.Route``), including for control words no routing would produce."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pycert.lean.emit import benes


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.integers(1, 8).flatmap(lambda m: st.permutations(range(1 << m))))
def test_controls_realise_the_permutation(perm: list[int]) -> None:
    net = benes.controls(perm)
    m = len(perm).bit_length() - 1
    assert [k for k, _ in net] == [*range(m - 1, -1, -1), *range(1, m)]
    assert [benes.route(net, j) for j in range(len(perm))] == perm
    assert benes.route_all(net, len(perm)).tolist() == perm


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 2**64)), max_size=9))
def test_any_network_is_a_bijection(net: list[tuple[int, int]]) -> None:
    """What ``Pycert.Route.route_inj`` proves, seen on the mirror: whatever the control words."""
    n = 1 << 7
    places = [benes.route(net, j) for j in range(n)]
    assert sorted(places) == list(range(n))
    assert benes.route_all(net, n).tolist() == places


def test_a_large_random_permutation() -> None:
    perm = list(range(1 << 14))
    random.Random(7).shuffle(perm)
    assert benes.route_all(benes.controls(perm), len(perm)).tolist() == perm


@pytest.mark.parametrize("perm", [[], [0], [0, 0], [1, 2], [0, 1, 2]])
def test_not_a_permutation_of_a_power_of_two(perm: list[int]) -> None:
    with pytest.raises(ValueError):
        benes.controls(perm)
