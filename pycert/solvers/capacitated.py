"""The capacitated family: seeded single-cache cases whose capacity is below their distinct count, so
the optimum is strictly above the wall (CP-SAT, HiGHS, Belady and the replay must agree on each)."""

from __future__ import annotations

import random
from functools import cached_property

from pydantic import BaseModel, ConfigDict, Field

from pycert.solvers.pooled import peak_live


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class CapacitatedCase(_Frozen):
    """One capacitated single-cache case: the pool is smaller than the distinct count."""

    name: str
    refs: list[int] = Field(min_length=1)
    capacity: int = Field(ge=1)

    @cached_property
    def distinct(self) -> int:
        return len(set(self.refs))


class CapacitatedParams(_Frozen):
    seed: int = 7
    sizes: list[int] = Field(default_factory=lambda: [32, 64, 128, 256], min_length=1,
                             description="references per case (the benchmark doubles them further)")
    refs_per_block: int = Field(4, ge=1, description="blocks = refs / refs_per_block")
    capacity_fraction: float = Field(0.5, gt=0.0, lt=1.0, description="pool capacity as a fraction of the blocks")
    skew: float = Field(0.8, ge=0.0, description="Zipf exponent of block popularity")


def capacitated_cases(p: CapacitatedParams | None = None) -> list[CapacitatedCase]:
    """Seeded small cases with capacity strictly below the distinct count (so OPT exceeds the wall).

    Blocks are drawn with Zipf popularity. A draw is redrawn from the same stream until more blocks
    are live at some step than the capacity holds (:func:`pycert.solvers.pooled.peak_live`): then every
    schedule must evict a block it needs again, so OPT is strictly above the distinct count.
    """

    p = p or CapacitatedParams()
    rng = random.Random(p.seed)
    cases = []
    for n in p.sizes:
        blocks = max(2, n // p.refs_per_block)
        capacity = max(1, int(blocks * p.capacity_fraction))
        weights = [1.0 / (b + 1) ** p.skew for b in range(blocks)]
        refs = rng.choices(range(blocks), weights=weights, k=n)
        while peak_live(tuple(refs)) <= capacity:
            refs = rng.choices(range(blocks), weights=weights, k=n)
        cases.append(CapacitatedCase(name=f"n{n}-b{blocks}-c{capacity}", refs=refs, capacity=capacity))
    return cases
