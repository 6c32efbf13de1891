"""Exact binomial bounds for an observed rate: pure integer arithmetic, no floating point.

The residual cross-tenant rate after the salt is bounded by the exact one-sided Clopper-Pearson
upper limit: for ``x`` hits in ``n`` independent trials at confidence ``c``, the rate ``p`` at which
seeing ``x`` or fewer hits has probability ``1 - c``. For ``x = 0`` that is ``1 - (1 - c)^(1/n)``:
0 of 12 at 95% gives 0.2209. The "rule of three", ``3/n`` (0.25 for n = 12), is the textbook
approximation of the same limit for ``x = 0`` (``-ln 0.05 = 2.996``); pycert reports it beside the
exact figure and never uses it as the bound.

The limit is irrational in general, so it is given as the smallest multiple of ``10^-PLACES`` at or
above it: the smallest ``k`` with ``P(X <= x; n, k / 10^PLACES) <= 1 - c``, found by bisection with
every probability compared exactly as integers. A reader can re-derive it with any exact arithmetic.
"""

from __future__ import annotations

from fractions import Fraction
from math import comb

PLACES = 6
SCALE = 10**PLACES
MAX_TRIALS = 100_000
"""Past this the exact sums grow to millions of digits; no run of the engine gets near it."""


def _tail_at_most(x: int, n: int, k: int, alpha: Fraction) -> bool:
    """``P(X <= x; n, k / SCALE) <= alpha``, decided exactly: both sides times ``SCALE^n``."""
    mass = sum(comb(n, i) * k**i * (SCALE - k) ** (n - i) for i in range(x + 1))
    return mass * alpha.denominator <= alpha.numerator * SCALE**n


def clopper_pearson_upper(x: int, n: int, confidence: Fraction) -> Fraction:
    """The exact one-sided Clopper-Pearson upper limit on the rate, rounded up to ``10^-PLACES``."""
    if not 0 <= x <= n or not 0 < n <= MAX_TRIALS:
        raise ValueError(f"need 0 <= x <= n and 0 < n <= {MAX_TRIALS}, got x = {x}, n = {n}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    if x == n:
        return Fraction(1)
    alpha = 1 - confidence
    lo, hi = 0, SCALE  # the tail at 0 is 1 > alpha; at 1 it is 0 <= alpha
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _tail_at_most(x, n, mid, alpha):
            hi = mid
        else:
            lo = mid
    return Fraction(hi, SCALE)


def rule_of_three(n: int) -> Fraction:
    """``3/n``: the rule-of-three approximation of the 95% limit for zero hits in ``n`` trials."""
    return Fraction(3, n)


def trials_needed(level: Fraction, confidence: Fraction) -> int:
    """The fewest trials whose 0-hit limit is at most ``level`` (how many prompts make a zero say more)."""
    n = 1
    while clopper_pearson_upper(0, n, confidence) > level:
        n *= 2
    lo = n // 2
    while n - lo > 1:
        mid = (lo + n) // 2
        if clopper_pearson_upper(0, mid, confidence) > level:
            lo = mid
        else:
            n = mid
    return n
