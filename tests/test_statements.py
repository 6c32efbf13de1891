"""Pinned statements: source signatures and the kernel type digest read from the compiled .olean."""

from __future__ import annotations

from pathlib import Path

import pytest

from pycert.audit.statement import type_digests
from pycert.lean.sources import theorem_signatures
from tests.conftest import REPO


def test_signature_is_the_statement_as_written_without_comments_or_proof() -> None:
    src = """module
namespace A
/-- doc: theorem fake : False -/
public theorem t {n : Nat} -- a comment
    (h : 0 < n) :   n ≠ 0 := by
  omega
public theorem s (x : Nat) : x = x
  | _ => rfl
public theorem w : "a := b" = "a := b" := rfl
theorem hidden : True := trivial
end A
"""
    assert theorem_signatures(src) == {
        "A.t": "theorem t {n : Nat} (h : 0 < n) : n ≠ 0",
        "A.s": "theorem s (x : Nat) : x = x",
        "A.w": 'theorem w : "a := b" = "a := b"',
    }


def test_a_weaker_statement_has_another_signature() -> None:
    strong = "theorem f (n : Nat) : n ≤ n * n := sorry\n"
    weak = "theorem f (n : Nat) : 0 ≤ n * n := Nat.zero_le _\n"
    assert theorem_signatures(strong)["f"] != theorem_signatures(weak)["f"]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_type_digests_are_stable_and_tell_statements_apart(wasm) -> None:
    """The digest of every named theorem is the one the committed certificates pin (so a rebuild gives
    the same digest), and two different statements give two digests. Only wasm oleans exist on this
    machine: the word-size independence (wasm 32-bit against native 64-bit) is by construction, not tested."""
    import json

    from pycert.lean import build

    res = build.build(library=REPO / "lean", backend="wasm")
    pinned = {t: s["type_sha256"] for p in (REPO / "certificates").glob("*.json")
              for t, s in json.loads(p.read_text())["statements"].items()
              if not t.startswith("Pycert.Instance.")}  # the instances' headlines: test_kernel_link's
    digests = type_digests(Path(res.olean_dir), [r.module for r in res.results], list(pinned))
    assert digests == pinned
    assert len(set(digests.values())) == len(digests)
