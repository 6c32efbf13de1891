module

prelude
public import Pycert.AdmissionOptimum
import Init.Omega

/-!
# What a per-tenant salt costs at a capacity

A per-tenant salt (vLLM's `cache_salt`: the salt enters the hash of a request's first block, and every
later block's hash chains it) makes every block of a salted request a block of its tenant alone: a
salted cache keeps a separate copy of a block for each tenant that uses it. On a trace `r` that is the
trace `rk` in which each reference's block id is keyed by its request's tenant.

Here `r` and `rk` are two traces of `n` references, and the optima of `Pycert.Admission` are stated on
both: `y` at `C` blocks with bypass on `r` (the shared cache), `x` on `rk` (the salted one).
Then some cache of `C` blocks hits `y` times on `r` and every cache of `C` blocks on `rk` hits at least
`y - x` times fewer (`salt_gap`).

What this file does not say: how `rk` is made from `r` (pycert keys it outside the kernel, and
verify makes it again from the trace and the tenant map); anything about a cache that stores one copy
of a block for several tenants and keeps per-block ownership state (`Pycert.Isolation` prices that
state), which is not a cache on `rk` and may lose fewer hits. The caches start empty, hold blocks of
size one, prefetch nothing and keep no room for a running request's blocks.
-/

namespace Pycert.IsolationCost
open Pycert.Admission Pycert.PrefixCache

/-- **The cost of a per-tenant salt at `C` blocks.** On the trace `r` of `n` references, `yd` and `y`
are the optima at `C` blocks for caches that store every missed block and for caches with
bypass (`Optima`); on the trace `rk` of as many references, `xd` and `x`; and `x ≤ y`. It does not
relate `rk` to `r`: that `rk` is `r` keyed by tenant is how pycert made it, not part of the statement. -/
@[expose] public def SaltCost (r rk : List Nat) (n C yd y xd x : Nat) : Prop :=
  Optima r n C yd y ∧ Optima rk n C xd x ∧ x ≤ y

/-- **The same, with the shared optimum reached by a prefix cache.** `SaltCost`, and on `r` a prefix
cache over the requests that `first` starts reaches `y` too (`PrefixOptima`). -/
@[expose] public def PrefixSaltCost (r : List Nat) (first : Nat → Bool) (rk : List Nat) (n C yd y xd x : Nat) : Prop :=
  PrefixOptima r first n C yd y y ∧ Optima rk n C xd x ∧ x ≤ y

/-- **The gap.** Under `SaltCost`, some cache of `C` blocks with bypass hits exactly `y`
times on `r`, and every cache of `C` blocks with bypass on `rk` hits at least `y - x` times
fewer than it. It says nothing of how `rk` was made from `r`. -/
public theorem salt_gap {r rk : List Nat} {n C yd y xd x : Nat} (h : SaltCost r rk n C yd y xd x) :
    ∃ K, Run r C K ∧ hits r K = y ∧ ∀ K', Run rk C K' → hits rk K' + (y - x) ≤ hits r K := by
  obtain ⟨⟨_, _, K, hK, e⟩, ⟨_, ⟨_, hb⟩, _⟩, hxy⟩ := h
  exact ⟨K, hK, e, fun K' hK' => by have := hb K' hK'; omega⟩

/-- **The gap against a prefix cache.** Under `PrefixSaltCost`, some prefix cache of `C` blocks over the
requests of `r` hits exactly `y` times, and every cache of `C` blocks with bypass on `rk`
(prefix caches included) hits at least `y - x` times fewer than it. -/
public theorem prefix_salt_gap {r : List Nat} {first : Nat → Bool} {rk : List Nat} {n C yd y xd x : Nat}
    (h : PrefixSaltCost r first rk n C yd y xd x) :
    ∃ K, Run r C K ∧ prefixHits r first K = y ∧ ∀ K', Run rk C K' → hits rk K' + (y - x) ≤ prefixHits r first K := by
  obtain ⟨⟨_, _, _, K, hK, e⟩, ⟨_, ⟨_, hb⟩, _⟩, hxy⟩ := h
  exact ⟨K, hK, e, fun K' hK' => by have := hb K' hK'; omega⟩

end Pycert.IsolationCost
