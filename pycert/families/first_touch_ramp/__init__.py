"""A synthetic row of the first-touch dataset (``pycert dataset first-touch``): one prompt length of the
ramp (:mod:`pycert.analysis.first_touch`), measured on a real engine with no pooling and with the store
pre-warmed (:mod:`pycert.leak.first_touch`), beside two closed forms, both kernel-checked
(``Pycert.FirstTouch.RampAt``): the seed's ``c·⌊n/c⌋/n`` (a store that serves every whole chunk), and the
one the engine follows, ``c·⌊(n-1)/c⌋/n`` (it computes a prompt's last token again). Every row of a ramp states its headline in one Lean module,
``lean/FirstTouchRampC<c>B<blocks>.lean``, in a namespace of its own.

This module is the claim; :mod:`pycert.families.first_touch_ramp.produce` makes the certificates.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Literal

from pydantic import Field

from pycert.analysis.first_touch import closed_form_served, last_token_served, ramp, ramp_prompt
from pycert.core.errors import Rejected, Rejection
from pycert.core.schema import Certificate, InputFile
from pycert.families.base import Claim, Instance, Reader
from pycert.families.first_touch import CLAIM as CUT
from pycert.families.first_touch.dataset import (
    CUT_EVIDENCE,
    TENANT_EVIDENCE,
    TENANT_LIMITS,
    RowParams,
    counts,
    module_text,
    prefill_figures,
    read_log,
    tenant_figures,
)
from pycert.leak.first_touch import MAX_RAMP_BLOCKS

SOURCE = "synthetic_ramp"


class RampParams(RowParams):
    c: int = Field(ge=2, le=4096, description="tokens per block: the engine's page size and the chunk of the closed form")
    blocks: int = Field(ge=1, le=MAX_RAMP_BLOCKS, description="the ramp's chunks, four prompt lengths each")

    def planned(self) -> int:
        return 4 * self.blocks


class RampCertificate(Certificate):
    """A certificate of a synthetic row of the first-touch dataset."""

    family: Literal["first-touch-ramp"]
    parameters: RampParams


def workload_id(row: int) -> str:
    return f"synthetic-{row:03d}"


def module_name(c: int, blocks: int) -> str:
    return f"FirstTouchRampC{c}B{blocks}"


def ramp_headline(c: int, n: int) -> str:
    """A row's headline: both closed forms at ``c`` and ``n``, as literals the kernel checks (``decide``)."""
    served, last = closed_form_served(c, n), last_token_served(c, n)
    return f"""/-- **Headline.** A store pre-warmed in chunks of {c} tokens serves {served} of a {n}-token prompt, and for
every prompt of at least {2 * c} tokens the cut exceeds one half and meets a 0.30 floor; an engine that
computes the prompt's last token again serves {last} of it (`Pycert.FirstTouch.RampAt`). -/
public theorem headline : Pycert.FirstTouch.RampAt {c} {n} {served} {last} :=
  Pycert.FirstTouch.rampAt (by decide) (by decide) (by decide)
"""


def ramp_module(c: int, blocks: int) -> bytes:
    """Every row's headline, ``RampAt c n (c·⌊n/c⌋) (c·⌊(n-1)/c⌋)``, in one module: what prove writes and verify
    writes again."""
    rows = [(f"Synthetic{k:03d}", ramp_headline(c, n)) for k, n in enumerate(ramp(c, blocks), 1)]
    return module_text(module_name(c, blocks), f"the parameters c = {c}, blocks = {blocks}", ["Pycert.FirstTouch"], rows)


class FirstTouchRamp(Claim):
    name = "first-touch-ramp"
    params = RampParams
    certificate = RampCertificate
    lean_module = CUT.lean_module
    theorem_names = (*CUT.theorem_names, "Pycert.FirstTouch.lastServed_add", "Pycert.FirstTouch.rampAt")
    primary = ("log",)
    headline_predicate = "Pycert.FirstTouch.RampAt"
    headline_figures = ("c", "n", "served", "last_served")
    limits = (
        "An observation, not a proof, for the engine's counts: one engine, model, device and seed, one seeded random "
        "prompt of each length, sent one request at a time; another engine may count otherwise.",
        "The pool is one engine whose paged cache stands for the pooled store: the pre-warm is an earlier request of "
        "another client for the same prompt, not another process; a store across processes (LMCache, Mooncake Store) "
        "and the cost of moving its blocks are not measured.",
        "The no-pooling and pooled arms run unsalted in one namespace, so that blocks start at the prompt's first "
        "token (this engine takes a salt as prepended tokens, which would move every block boundary).",
        "The kernel checks both closed forms at this n (Pycert.FirstTouch.RampAt), not the engine: the seed's "
        "c·⌊n/c⌋ and the engine's c·⌊(n-1)/c⌋ (the engine computes a prompt's last token again), one chunk apart "
        "exactly where c divides n (Pycert.FirstTouch.lastServed_add). That the measured cut equals either is not "
        "proved; the rows where it does not are in the data.",
        *TENANT_LIMITS,
    )
    evidence_of = {
        "c": ("kernel-checked", "Lean kernel: a literal of {headline}"),
        "served": ("kernel-checked", "Lean kernel: a literal of {headline} (cut c n = (served, n))"),
        "closed_form_cut": ("kernel-checked", "Lean kernel: {headline} states cut c n = (served, n); this is served / n"),
        "last_served": ("kernel-checked", "Lean kernel: a literal of {headline} (lastServed c n = last_served: the whole "
                                          "chunks of the first n - 1 tokens)"),
        "engine_closed_form_cut": ("kernel-checked", "Lean kernel: {headline} states lastServed c n = last_served; this "
                                                     "is last_served / n"),
        "prompt_tokens": ("kernel-checked", "Lean kernel: the literal n of {headline}, the ramp's length at this row"),
        "cold_cached_tokens": ("observed", "the engine's own cached-token count for the prompt on an emptied cache "
                                           "(the per-request log)"),
        "apc_prefill_computed": ("observed", "prompt_tokens less the engine's own cached-token count on an emptied "
                                             "cache (the per-request log)"),
        "pooled_prefill_computed": ("observed", "prompt_tokens less the engine's own cached-token count after another "
                                                "client's request for the same prompt (the per-request log)"),
        "cached_tokens": ("observed", "the engine's own cached-token count after another client's request for the same "
                                      "prompt (the per-request log)"),
        **CUT_EVIDENCE,
        **TENANT_EVIDENCE,
    }

    def instance(self, params: RampParams, primary: Sequence[InputFile]) -> Instance:
        return Instance(path=f"lean/{module_name(params.c, params.blocks)}.lean", derived_from="parameters",
                        section=f"Synthetic{params.row:03d}")

    def regenerate(self, params: RampParams, inputs: Sequence[InputFile], read: Reader) -> bytes:
        return ramp_module(params.c, params.blocks)

    def figures(self, params: RampParams, kernel: Mapping[str, int], inputs: Sequence[InputFile],
                read: Reader) -> dict[str, Fraction]:
        n = ramp(params.c, params.blocks)[params.row - 1]
        if (kernel["c"], kernel["n"]) != (params.c, n):
            raise Rejected(Rejection.mismatch("headline (c, n)", f"{params.c}, {n}", f"{kernel['c']}, {kernel['n']}"))
        log = read_log(params, inputs, read)
        if (log.header.page_size, log.header.ramp_blocks) != (params.c, params.blocks):
            raise Rejected(Rejection.mismatch("parameters (c, blocks)", f"{log.header.page_size}, "
                                              f"{log.header.ramp_blocks} (the log's page size and ramp)",
                                              f"{params.c}, {params.blocks}"))
        prompt = ramp_prompt(params.seed, n, params.vocab)
        got = counts(log, workload_id(params.row), prompt, prompt, cut=True)
        assert got.cold is not None and got.pooled is not None  # the cut arms ran: counts() checked the sequence
        return {"c": Fraction(params.c), "served": Fraction(kernel["served"]),
                "closed_form_cut": Fraction(kernel["served"], n), "last_served": Fraction(kernel["last_served"]),
                "engine_closed_form_cut": Fraction(kernel["last_served"], n), "cold_cached_tokens": Fraction(got.cold),
                **prefill_figures(n, n - got.cold, n - got.pooled), **tenant_figures(got)}

    def sentence(self, params: RampParams, figures: Mapping[str, Fraction], inputs: Sequence[InputFile]) -> str:
        p, f = params, figures
        n = int(f["prompt_tokens"])
        return (f"On {p.engine} ({p.engine_version}) with a {p.model} on {p.device}, pages of {p.c} tokens, a seeded "
                f"{n}-token prompt (ramp row {p.row} of {4 * p.blocks}, seed {p.seed}): from an emptied cache the engine "
                f"computed {f['apc_prefill_computed']} tokens; after another client's request for the same prompt it "
                f"served {f['cached_tokens']} from cache and computed {f['pooled_prefill_computed']}, an observed cut of "
                f"{float(f['first_touch_cut']):.6f}; the seed's closed form {p.c}·⌊n/{p.c}⌋/n is {f['served']}/{n} = "
                f"{float(f['closed_form_cut']):.6f} and the engine's, {p.c}·⌊(n-1)/{p.c}⌋/n (the last token computed "
                f"again), {f['last_served']}/{n} = {float(f['engine_closed_form_cut']):.6f} (kernel-checked: "
                f"Pycert.FirstTouch.RampAt {p.c} {n} {f['served']} {f['last_served']}); "
                f"under the keyed salt a second tenant sending the same prompt was served {f['cross_tenant_cached_tokens']} "
                f"tokens from cache and the first tenant's own repeat {f['own_cached_tokens']}.")


def engine_figures(params: RampParams) -> dict[str, Fraction]:
    """The headline's figures by Python's arithmetic, compared with the kernel's at prove."""
    n = ramp(params.c, params.blocks)[params.row - 1]
    return {"c": Fraction(params.c), "served": Fraction(closed_form_served(params.c, n)),
            "last_served": Fraction(last_token_served(params.c, n))}


CLAIM = FirstTouchRamp()
