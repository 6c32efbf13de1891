"""How many tokens a block holds, as a trace's own lengths say it.

A layout with ``input_length`` and ``hash_ids`` says its block size the way its writers made it: a
request of ``L`` tokens is ``ceil(L / B)`` blocks of ``B`` tokens, the last one partial (both released
Mooncake traces keep this on every line, with ``B = 512``). So each line bounds ``B``: ``n`` blocks for
``L > 0`` tokens need ``(n - 1)·B < L ≤ n·B``, and no block for no token fits any ``B``. The
:class:`LengthRule` keeps the tightest bounds and the lines that set them; the trace's block size is
the layout's documented one when the lengths admit it, else the one value they admit, else unknown.
A ``--block-tokens`` the lengths refute is an error naming the line that refutes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from pycert.core.errors import InputError


@dataclass
class LengthRule:
    """The block sizes every line so far admits: ``lo`` to ``hi`` (``None``: no upper bound), each with
    the line that set it as (line, tokens, blocks); ``broken`` is a line no block size fits."""

    lo: int = 1
    lo_at: tuple[int, int, int] | None = None
    hi: int | None = None
    hi_at: tuple[int, int, int] | None = None
    broken: tuple[int, int, int] | None = None

    def add(self, lineno: int, tokens: int, blocks: int) -> None:
        if blocks == 0 or tokens == 0:
            if blocks != tokens and self.broken is None:
                self.broken = (lineno, tokens, blocks)
            return
        lo = -(-tokens // blocks)
        if lo > self.lo:
            self.lo, self.lo_at = lo, (lineno, tokens, blocks)
        if blocks > 1:
            hi = -(-tokens // (blocks - 1)) - 1
            if self.hi is None or hi < self.hi:
                self.hi, self.hi_at = hi, (lineno, tokens, blocks)

    def admits(self, b: int) -> bool:
        return self.broken is None and self.lo <= b and (self.hi is None or b <= self.hi)

    def says(self, documented: int) -> int | None:
        """The block size the trace says: ``documented`` when its lengths admit it, else the one value
        they admit, else None."""
        if self.admits(documented):
            return documented
        return self.lo if self.hi == self.lo and self.admits(self.lo) else None

    def refutes(self, b: int) -> str:
        """Why ``b`` tokens a block contradicts the lengths (``b`` not admitted)."""
        if self.broken is not None:
            line, tokens, blocks = self.broken
            return f"line {line} has {_blocks(blocks)} for {tokens:,} tokens, which no block size gives"
        if b < self.lo:
            line, tokens, blocks = self.lo_at  # type: ignore[misc]
            return f"line {line} has {tokens:,} tokens in {_blocks(blocks)}, at least {self.lo:,} tokens a block"
        line, tokens, blocks = self.hi_at  # type: ignore[misc]
        return f"line {line} has {tokens:,} tokens in {_blocks(blocks)}, at most {self.hi:,} tokens a block"

    def describe(self, documented: int) -> str:
        """One line: what the lengths say of the block size."""
        if self.broken is not None:
            return f"not read from the lengths: {self.refutes(documented)}"
        if self.hi is not None and self.hi < self.lo:
            (lo_line, *_), (hi_line, *_) = self.lo_at, self.hi_at  # type: ignore[misc]
            return (f"not read from the lengths: line {lo_line:,} needs at least {self.lo:,} tokens a block, "
                    f"line {hi_line:,} at most {self.hi:,}; the layout says {documented:,}")
        span = f"{self.lo:,}" + ("" if self.hi == self.lo else f" to {self.hi:,}" if self.hi is not None else " or more")
        return f"input_length and hash_ids admit {span} tokens a block; the layout says {documented:,}"


def _blocks(n: int) -> str:
    return f"{n:,} block{'' if n == 1 else 's'}"


def resolve(rule: LengthRule | None, said: int | None, given: int | None, fixed: bool = False) -> int | None:
    """The block size to use: what the trace says (``said``) unless ``--block-tokens`` (``given``) is
    given, which must then agree with the trace's lengths (``rule``), or equal ``said`` when the layout
    fixes it (``fixed``: a prompts trace was blocked at ``said``)."""
    if given is None:
        return said
    if rule is not None and not rule.admits(given):
        trace_says = f"the trace says {said:,}" if said is not None else "its lengths fit no one block size"
        raise InputError(f"{given:,} tokens a block contradicts the trace ({trace_says}): {rule.refutes(given)}",
                         where="--block-tokens")
    if fixed and given != said:
        raise InputError(f"{given:,} tokens a block, but the prompts were blocked at {said:,}", where="--block-tokens")
    return given
