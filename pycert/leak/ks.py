"""The two-sample Kolmogorov-Smirnov test, exact, in integer arithmetic (no SciPy).

For samples of sizes ``m`` and ``n`` the statistic is ``D = max_v |F(v) - G(v)|`` over every value ``v``
of either sample, ``F`` and ``G`` their empirical distribution functions. Scaled by ``m * n`` it is an
integer, ``k = max |m_v * n - n_v * m|`` (``m_v``, ``n_v``: how many of each sample are at most ``v``),
so it is computed and compared exactly.

The two-sided p-value is ``P(D >= k / (m n))`` when both samples come from one continuous distribution:
every one of the ``C(m + n, m)`` interleavings of the two samples is then equally likely, and the
p-value is one less the share of lattice paths from ``(0, 0)`` to ``(m, n)`` that keep ``|i n - j m| < k``
at every point (the classical counting of Hodges, 1958), counted here exactly as integers and rounded
**up** to ``10^-PLACES``. Ties between the samples (times recorded to the microsecond) only make the
true p-value smaller, so the figure is conservative for a detection. This is SciPy's
``ks_2samp(method="exact")`` computed another way; it was written here rather than adding SciPy as a
dependency, so that a stranger can re-derive every figure with any exact arithmetic.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from fractions import Fraction
from math import comb

from pycert.leak.stats import PLACES, SCALE

MAX_SAMPLES = 5_000
"""Per sample: the path count is an ``m x n`` table of integers of up to ``m + n`` bits."""


def statistic(xs: Sequence[float], ys: Sequence[float]) -> int:
    """``m * n * D`` for samples ``xs`` (size ``m``) and ``ys`` (size ``n``)."""
    m, n = len(xs), len(ys)
    merged = sorted([(v, 0) for v in xs] + [(v, 1) for v in ys])
    i = j = best = 0
    for idx, (v, side) in enumerate(merged):
        if side == 0:
            i += 1
        else:
            j += 1
        if idx + 1 == len(merged) or merged[idx + 1][0] != v:  # compare only after every copy of v
            best = max(best, abs(i * n - j * m))
    return best


def inside_paths(m: int, n: int, k: int) -> int:
    """Lattice paths from (0, 0) to (m, n), steps (1, 0) and (0, 1), with ``|i n - j m| < k`` throughout."""
    row = [0] * (n + 1)
    for i in range(m + 1):
        for j in range(n + 1):
            if abs(i * n - j * m) >= k:
                row[j] = 0
            elif i == 0 and j == 0:
                row[j] = 1
            else:
                row[j] = (row[j] if i else 0) + (row[j - 1] if j else 0)
    return row[n]


def p_value(m: int, n: int, k: int) -> Fraction:
    """``P(m n D >= k)`` under the null, exact, rounded up to ``10^-PLACES``."""
    _sizes(m, n)
    total = comb(m + n, m)
    outside = total - inside_paths(m, n, k)
    return Fraction(-(-outside * SCALE // total), SCALE)


def critical(m: int, n: int, alpha: Fraction) -> int:
    """The smallest ``k`` with ``P(m n D >= k) <= alpha``: the test at level ``alpha`` detects ``k`` or more."""
    _sizes(m, n)
    total = comb(m + n, m)
    lo, hi = 0, m * n + 1  # P(>= 0) = 1 > alpha; P(>= m n + 1) = 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if (total - inside_paths(m, n, mid)) <= alpha * total:
            hi = mid
        else:
            lo = mid
    return hi


def power(xs: Sequence[float], ys: Sequence[float], m: int, n: int, k_crit: int, sims: int, seed: int) -> Fraction:
    """The share of ``sims`` simulated tests that detect at ``k_crit``, each drawing ``m`` values from ``xs``
    and ``n`` from ``ys`` with replacement (``random.Random(seed).choices``): the test's power against the
    difference between the distributions ``xs`` and ``ys`` were measured from."""
    rng = random.Random(seed)
    hits = sum(statistic(rng.choices(xs, k=m), rng.choices(ys, k=n)) >= k_crit for _ in range(sims))
    return Fraction(hits, sims)


def _sizes(m: int, n: int) -> None:
    if not (0 < m <= MAX_SAMPLES and 0 < n <= MAX_SAMPLES):
        raise ValueError(f"sample sizes must lie in 1..{MAX_SAMPLES}, got {m} and {n}")


__all__ = ["PLACES", "critical", "p_value", "power", "statistic"]
