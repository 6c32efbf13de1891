"""First-touch cut (``lean/Pycert/FirstTouch.lean``): a store pre-warmed in chunks of c tokens serves
c·(n div c) of an n-token prompt; the cut exceeds 1/2 for every prompt of at least 2c tokens.

This module is the claim; :mod:`pycert.families.first_touch.produce` makes the certificate."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Literal

from pydantic import Field

from pycert.core.limits import MAX_PARAM
from pycert.core.schema import Certificate, InputFile, Params
from pycert.families.base import Claim, Reader


class FirstTouchParams(Params):
    c: int = Field(ge=1, le=MAX_PARAM, description="tokens per pre-warmed chunk")
    n: int = Field(ge=1, le=MAX_PARAM, description="tokens in the prompt")


class FirstTouchCertificate(Certificate):
    """A certificate of the first-touch family."""

    family: Literal["first-touch"]
    parameters: FirstTouchParams


def first_touch_figures(c: int, n: int) -> dict[str, Fraction]:
    """The share of ``n`` tokens that fall in whole chunks of ``c``: cut = c*(n//c)/n."""
    return {"cut": Fraction(c * (n // c), n)}


class FirstTouch(Claim):
    name = "first-touch"
    params = FirstTouchParams
    certificate = FirstTouchCertificate
    lean_module = "Pycert.FirstTouch"
    theorem_names = ("Pycert.FirstTouch.cut_eq", "Pycert.FirstTouch.cut_gt_half", "Pycert.FirstTouch.lmcache_floor_vacuous")
    limits = (
        "The cut assumes a store pre-warmed with every whole chunk of the prompt; cold stores serve less.",
        "It is arithmetic about token counts, not a latency or throughput measurement.",
        "A floor of 0.30 on the cut cannot fail for prompts of at least 2c tokens: such a gate tests nothing.",
    )
    evidence_of = {"cut": ("computed", "exact arithmetic c*(n div c)/n: the cut Pycert.FirstTouch.cut_eq defines")}
    def sentence(self, params: FirstTouchParams, figures: Mapping[str, Fraction], inputs: Sequence[InputFile]) -> str:
        c, n = params.c, params.n
        return (f"A store pre-warmed in chunks of {c} tokens serves {c * (n // c)} of a {n}-token prompt "
                f"(cut {float(figures['cut']):.4f}), and for every prompt of at least {2 * c} tokens the cut "
                f"exceeds 1/2, so a 0.30 floor cannot fail.")

    def figures(self, params: FirstTouchParams, inputs: Sequence[InputFile], read: Reader) -> dict[str, Fraction]:
        return first_touch_figures(params.c, params.n)


CLAIM = FirstTouch()
