"""Isolation floor (``lean/Pycert/Isolation.lean``): zero-leak sharing across T tenants and n blocks
needs T·n bits of isolation state, n·log2 T when each block has one owner.

This module is the claim; :mod:`pycert.families.isolation.produce` makes the certificate."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Literal

from pydantic import Field, model_validator

from pycert.core.schema import MAX_FIGURE_BITS, Certificate, InputFile, Params
from pycert.families.base import Claim, Reader


class IsolationParams(Params):
    T: int = Field(ge=1, le=MAX_FIGURE_BITS, description="tenants")
    n: int = Field(ge=1, le=MAX_FIGURE_BITS, description="blocks")

    @model_validator(mode="after")
    def _storable(self) -> IsolationParams:
        # 2^(T*n) has T*n+1 bits: compare the exponent, never build the number
        if self.T * self.n >= MAX_FIGURE_BITS:
            raise ValueError(f"T*n = {self.T * self.n} would give a {self.T * self.n + 1}-bit figure; at most "
                             f"{MAX_FIGURE_BITS} bits can be stored exactly")
        return self


class IsolationCertificate(Certificate):
    """A certificate of the isolation family."""

    family: Literal["isolation"]
    parameters: IsolationParams


def isolation_figures(tenants: int, n: int) -> dict[str, Fraction]:
    """Arbitrary shared-read rights over ``n`` blocks for ``T`` tenants: 2^(T*n) states, T*n bits;
    a single owner per block: T^n states, ceil(n*log2 T) bits (exactly n*log2 T when T is a power of 2).
    """
    single_owner_states = tenants**n
    return {
        "states_floor": Fraction(2 ** (tenants * n)),
        "bits_floor": Fraction(tenants * n),
        "single_owner_states": Fraction(single_owner_states),
        "single_owner_bits": Fraction((single_owner_states - 1).bit_length()),
    }


class Isolation(Claim):
    name = "isolation"
    params = IsolationParams
    certificate = IsolationCertificate
    lean_module = "Pycert.Isolation"
    theorem_names = (
        "Pycert.Isolation.floor",
        "Pycert.Isolation.floor_log2",
        "Pycert.Isolation.leak_or_refusal",
        "Pycert.Isolation.owner_floor",
        "Pycert.Isolation.owner_floor_log2",
    )
    limits = (
        "The T*n floor assumes arbitrary shared-read rights: any tenant may be entitled to any block.",
        "It counts distinguishable states of the isolation metadata, not bytes of any real implementation.",
        "A manager that may leak or refuse reuse is not bound by it (that is the dichotomy below the floor).",
        "The single-owner figure n*log2 T uses the floor of log2 T; it is exact only for T a power of two.",
    )
    evidence_of = {
        "states_floor": ("computed", "exact arithmetic 2^(T*n): the bound Pycert.Isolation.floor proves for every T, n"),
        "bits_floor": ("computed", "exact arithmetic T*n: the bound Pycert.Isolation.floor_log2 proves for every T, n"),
        "single_owner_states": ("computed", "exact arithmetic T^n: the bound Pycert.Isolation.owner_floor proves"),
        "single_owner_bits": ("computed", "exact arithmetic: the bit length of T^n - 1"),
    }
    def sentence(self, params: IsolationParams, figures: Mapping[str, Fraction], inputs: Sequence[InputFile]) -> str:
        T, n = params.T, params.n
        return (f"Any cache manager that shares cached prompts across {T} tenants and {n} blocks with zero leakage "
                f"and full reuse needs at least {T * n} bits of isolation state ({n * (T.bit_length() - 1)} bits "
                f"when each block has one owner).")

    def figures(self, params: IsolationParams, inputs: Sequence[InputFile], read: Reader) -> dict[str, Fraction]:
        return isolation_figures(params.T, params.n)


CLAIM = Isolation()
