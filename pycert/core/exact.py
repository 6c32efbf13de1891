"""Exact figures: a rational in lowest terms and a decimal rendering of it, written one way everywhere.

:class:`Exact` holds the logic (from a :class:`~fractions.Fraction`, back to one, lowest terms);
its subclasses only choose the decimal they carry and any fields of their own. There are two: the
trace engine's :class:`Ratio` (a float beside the exact pair) and the certificates' ``Figure``
(:mod:`pycert.core.schema`: a name, a 20-digit decimal string, a unit). The base declares no
fields because each subclass's JSON field order is part of a published format.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Self

from pydantic import BaseModel, Field, model_validator


class Exact(BaseModel):
    """``numerator / denominator`` in lowest terms, and its ``decimal`` (declared by each subclass)."""

    @classmethod
    def render_decimal(cls, value: Fraction) -> Any:
        """The decimal a subclass carries beside the exact pair."""
        raise NotImplementedError

    @classmethod
    def of(cls, value: Fraction | int, **fields: Any) -> Self:
        f = Fraction(value)
        return cls(numerator=f.numerator, denominator=f.denominator, decimal=cls.render_decimal(f), **fields)

    @property
    def value(self) -> Fraction:
        return Fraction(self.numerator, self.denominator)  # type: ignore[attr-defined]

    def label(self) -> str:
        return "value"

    @model_validator(mode="after")
    def _lowest_terms(self) -> Self:
        n, d = self.numerator, self.denominator  # type: ignore[attr-defined]
        if d <= 0 or Fraction(n, d).denominator != d:
            raise ValueError(f"{self.label()} is not in lowest terms")
        return self


class Ratio(Exact):
    """An exact rational figure of the trace engine: the pair in lowest terms, and its float value."""

    numerator: int
    denominator: int = Field(gt=0)
    decimal: float

    @classmethod
    def render_decimal(cls, value: Fraction) -> float:
        return float(value)
