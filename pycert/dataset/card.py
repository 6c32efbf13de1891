"""The dataset's README card: what each column means, the two facts the rows carry (the two closed forms
against the measured cut, the Mooncake rows against the published figures), what the rows do not show,
and the licence and attribution of the Mooncake-derived rows. Every number on it is computed from the
rows (:func:`summary`), so ``--check`` regenerates the card and compares it byte for byte."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from pydantic import BaseModel

from pycert.dataset.table import CERTIFICATES, COLUMNS, CSV_NAME, Row
from pycert.families.first_touch_ramp import SOURCE as RAMP
from pycert.families.first_touch_trace import SOURCE as TRACE
from pycert.leak.first_touch import FtHeader

FLOOR = Fraction(3, 10)
PUBLISHED_MEAN = "0.668"
PUBLISHED_BELOW = "6 of 29"

MEANING = {
    "workload_id": "`synthetic-NNN` (the ramp, in order) or `mooncake-NNN` (the trace's workloads, in order)",
    "source": "`synthetic_ramp` or `mooncake_fast25_trace`",
    "prompt_tokens": "tokens in the prompt, n",
    "apc_prefill_computed": "tokens prefilled with no pooling: the engine's count from an emptied cache (synthetic); "
                            "all n, a cold instance (Mooncake)",
    "pooled_prefill_computed": "tokens prefilled with the store pre-warmed: by the engine after another client's request "
                               "for the same prompt (synthetic); n less the leading whole 512-token blocks the "
                               "conversation's first request left, kernel-checked (Mooncake)",
    "cached_tokens": "prompt_tokens - pooled_prefill_computed: tokens served from the store",
    "first_touch_cut": "1 - pooled_prefill_computed / apc_prefill_computed, exact, 20 significant digits",
    "closed_form_cut": "the seed's closed form, kept as published: 256·⌊n/256⌋/n (c·⌊n/c⌋/n at the engine's page "
                       "size c, a store that serves every whole chunk), kernel-checked for this n "
                       "(`Pycert.FirstTouch.RampAt`); empty on Mooncake rows",
    "engine_closed_form_cut": "the closed form the engine follows, 256·⌊(n−1)/256⌋/n (it computes a prompt's last token "
                              "again, so it serves the whole chunks of the first n − 1 tokens), kernel-checked for this "
                              "n (`Pycert.FirstTouch.RampAt`); empty on Mooncake rows",
    "zero_tenant_leak": "`true` when a second tenant sending the same prompt under the keyed salt was served no token "
                        "from cache after the first tenant's request (observed on the engine, one request)",
    "certificate": f"the certificate the row came from, under `{CERTIFICATES}/`: every cell is one of its figures",
}


class Summary(BaseModel):
    synthetic: int
    equal: int
    """Ramp rows whose measured cut is the seed's closed form."""
    differ_at: list[int]
    differ_on_multiples: bool
    """Every differing n is a multiple of the page size, and every multiple on the ramp differs."""
    engine_equal: int
    """Ramp rows whose measured cut is the engine's closed form."""
    mooncake: int
    mean_cut: str
    below_floor: int
    leaks: int


def summary(rows: Sequence[Row], c: int) -> Summary:
    ramp = [r for r in rows if r.source == RAMP]
    trace = [r for r in rows if r.source == TRACE]
    differ = [int(r.prompt_tokens) for r in ramp if r.first_touch_cut != r.closed_form_cut]
    multiples = [int(r.prompt_tokens) for r in ramp if int(r.prompt_tokens) % c == 0]
    cuts = [Fraction(r.first_touch_cut) for r in trace]
    mean = sum(cuts, Fraction(0)) / len(cuts) if cuts else Fraction(0)
    return Summary(synthetic=len(ramp), equal=len(ramp) - len(differ), differ_at=differ,
                   differ_on_multiples=sorted(differ) == sorted(multiples),
                   engine_equal=sum(r.first_touch_cut == r.engine_closed_form_cut for r in ramp), mooncake=len(trace),
                   mean_cut=f"{float(mean):.3f}", below_floor=sum(x < FLOOR for x in cuts),
                   leaks=sum(r.zero_tenant_leak == "false" for r in rows))


def card(rows: Sequence[Row], header: FtHeader) -> bytes:
    """The README card."""
    c = header.page_size or 0
    s = summary(rows, c)
    one_liner = ("python3 -c \"import csv; r = [x for x in csv.DictReader(open('first_touch.csv')) "
                 "if x['source'] == 'synthetic_ramp']; print(sum(x['first_touch_cut'] == x['engine_closed_form_cut'] "
                 "for x in r), sum(x['first_touch_cut'] == x['closed_form_cut'] for x in r), 'of', len(r))\"")
    differ = ", ".join(map(str, s.differ_at)) or "none"
    why = (f"each of them a multiple of {c}, and every multiple of {c} on the ramp among them, where the engine serves "
           "one chunk less because it computes the prompt's last token again (`Pycert.FirstTouch.lastServed_add`)"
           if s.differ_at and s.differ_on_multiples else "see the rows")
    lines = [
        "# The first-touch dataset", "",
        f"{len(rows)} rows of first-touch prefill accounting: {s.synthetic} synthetic rows measured on a real engine "
        f"({header.engine}, {header.engine_version}, a {header.model} on {header.device}, pages of {c} tokens, seed "
        f"{header.seed}) and {s.mooncake} rows read off the Mooncake FAST'25 trace "
        + (f"`{header.trace}` (sha256 `{header.trace_sha256}`)" if header.trace else "(none)")
        + ". Made by `pycert dataset first-touch --trace TRACE --out DIR`; `pycert dataset first-touch --check DIR "
        "--trace TRACE` re-derives every row and certificate and exits 0 only if all agree.", "",
        f"`{CSV_NAME}` holds the rows (and `first_touch.parquet` the same table where pyarrow was installed); "
        f"`{CERTIFICATES}/` the certificate of each row, with the engine's per-request log "
        "(`inputs/first-touch-engine.jsonl`) and the Lean module stating every synthetic row's closed form (the "
        "Mooncake rows' module holds block ids and is regenerated from the trace by `pycert verify`).", "",
        "## Columns", "", "| column | meaning |", "|---|---|",
        *(f"| `{col}` | {MEANING[col]} |" for col in COLUMNS), "",
        "## The closed forms beside the measurement", "",
        f"A synthetic row's prompt length comes from a ramp around each multiple of {c}: one token short, on it, one "
        "past, half a block past. The rows where the measured cut equals the engine's closed form, then the seed's, in "
        "one line:", "",
        "```sh", one_liner, "```", "",
        f"prints `{s.engine_equal} {s.equal} of {s.synthetic}`. The seed's closed_form_cut, kept as published, differs "
        f"from engine_closed_form_cut (and from the measured cut) at n = {differ}: {why}. Both closed forms are "
        "theorems about a store that serves whole chunks; neither is a measurement of an engine.",
        "",
        "## The Mooncake rows against the published figures", "",
        f"Mean first_touch_cut over the {s.mooncake} Mooncake rows: {s.mean_cut}; rows below 0.30: {s.below_floor} of "
        f"{s.mooncake}. The published rows have a mean of {PUBLISHED_MEAN} with {PUBLISHED_BELOW} below 0.30, and "
        "their derivation is not published, so the difference may come from any of: which requests make a workload "
        "(here a conversation's second request, conversations read as requests sharing their first two blocks, spread "
        "evenly over the trace), what the pooled store holds (here the conversation's first request; a store holding "
        "every earlier block of the trace serves the same on these rows, computed), how partial blocks count (here a "
        "partial last block is computed), and the no-pooling baseline (here a cold instance, which computes the "
        "common first block that a warm instance's own cache would hold).", "",
        "## What it does not show", "",
        "- The synthetic rows are one engine, one small random-weight model on a CPU, one seeded prompt per length, one "
        "request at a time; the pool is one engine's cache shared by two clients, not a store across processes, and "
        "the cost of moving blocks is not measured.",
        "- The Mooncake rows are the trace's accounting (kernel-checked counts of block ids), not measured prefill; "
        "which requests form a workload is pycert's reading of the trace (computed).",
        f"- zero_tenant_leak is one request per row ({s.leaks} of {len(rows)} rows saw cross-tenant reuse): an "
        "observation, not a bound on a leak rate (`pycert leak run` bounds it over many prompts). The salt is a "
        "namespace separator, not encryption.",
        "- A cut above a floor of 0.30 tests nothing: every prompt of at least 512 tokens clears it in closed form "
        "(`Pycert.FirstTouch.lmcache_floor_vacuous`).", "",
        "## Licence and attribution", "",
        "The synthetic rows and the certificates are pycert's output (Apache-2.0). The Mooncake rows are derived "
        "from the Mooncake FAST'25 trace release, Copyright (c) kvcache-ai, licensed under the Apache License, "
        "Version 2.0 (https://github.com/kvcache-ai/Mooncake, FAST25-release/traces); the rows hold counts only, no "
        "block ids. Attribution travels with any data derived from them.",
    ]
    return ("\n".join(lines) + "\n").encode()
