module

prelude
public import Pycert.AdmissionOptimum
public import Pycert.KeyedTrace
import Init.Omega

/-!
# What a per-tenant salt costs at a capacity

A per-tenant salt (vLLM's `cache_salt`: the salt enters the hash of a request's first block, and every
later block's hash chains it) makes every block of a salted request a block of its tenant alone: a
salted cache keeps a separate copy of a block for each tenant that uses it. On a trace `r` that is a
trace `rk` **keyed by tenant** (`Keyed`): as long as `r`, two references are to the same block of `rk`
exactly when they are to the same block of `r` and have the same tenant `ten`, and the tenant changes
only where a request starts (`first`).

Here the optima of `Pycert.Admission` are stated on both traces: `y` at `C` blocks with bypass on `r`
(the shared cache), `x` on `rk` (the salted one), and `rk` is `r` keyed by `ten`. Then some
cache of `C` blocks hits `y` times on `r` and every cache of `C` blocks on `rk` hits at least `y - x` times
fewer (`salt_gap`). `keyed_of` gives `Keyed` from a decoded trace's facts (`Pycert.SortedTrace.decode_facts`)
and a keyed instance's (`Pycert.KeyedTrace.keyed_facts`) over the same block numbers.

What this file does not say: which tenant a request belongs to (`ten` is data: pycert applies a tenant
rule, and verify applies it again); anything about a cache that stores one copy of a block for several
tenants and keeps per-block ownership state (`Pycert.Isolation` prices that state), which is not a cache
on `rk` and may lose fewer hits. The caches start empty, hold blocks of size one, prefetch nothing and keep
no room for a running request's blocks.
-/

namespace Pycert.IsolationCost
open Pycert.Admission Pycert.PrefixCache

/-- **`rk` is `r` keyed by tenant.** The two traces have the same length; two references are to the same
block of `rk` exactly when they are to the same block of `r` and `ten` gives them the same tenant; and the
tenant changes only at a reference that starts a request (`first`). It says nothing of how `ten` was
chosen. -/
@[expose] public def Keyed (r : List Nat) (first : Nat → Bool) (ten : Nat → Nat) (rk : List Nat) : Prop :=
  rk.length = r.length ∧
    (∀ i j, i < r.length → j < r.length → (nth rk i = nth rk j ↔ nth r i = nth r j ∧ ten i = ten j)) ∧
    ∀ j, j + 1 < r.length → first (j + 1) = false → ten (j + 1) = ten j

/-- **The cost of a per-tenant salt at `C` blocks.** On the trace `r` of `n` references, `yd` and `y`
are the optima at `C` blocks for caches that store every missed block and for caches with bypass
(`Optima`); `rk` is `r` keyed by the tenants `ten` (`Keyed`), and on it the optima are `xd` and
`x`; and `x ≤ y`. It says nothing of how `ten` was chosen. -/
@[expose] public def SaltCost (r : List Nat) (first : Nat → Bool) (ten : Nat → Nat) (rk : List Nat)
    (n C yd y xd x : Nat) : Prop :=
  Optima r n C yd y ∧ Optima rk n C xd x ∧ x ≤ y ∧ Keyed r first ten rk

/-- **The same, with the shared optimum reached by a prefix cache.** `SaltCost`, and on `r` a prefix
cache over the requests that `first` starts reaches `y` too (`PrefixOptima`). -/
@[expose] public def PrefixSaltCost (r : List Nat) (first : Nat → Bool) (ten : Nat → Nat) (rk : List Nat)
    (n C yd y xd x : Nat) : Prop :=
  PrefixOptima r first n C yd y y ∧ Optima rk n C xd x ∧ x ≤ y ∧ Keyed r first ten rk

/-- **`Keyed` from the two instances' facts.** If the decoded trace `r` has `n` references, block numbers
`X` below `D ≤ 2 ^ wx`, and two references to the same id exactly when they have the same block number;
and the keyed trace `rk` has `n` references, two to the same keyed block exactly when the low `wx` bits of
their block numbers in `X'` agree and so do their tenants, the tenant changing only where a request
starts; and `X = X'` (the same vector, in fields of `B = B'`): then `rk` is `r` keyed by the tenants. -/
public theorem keyed_of {r rk : List Nat} {first : Nat → Bool} {ten : Nat → Nat} {n B B' D wx X X' : Nat}
    (hr : r.length = n ∧ (∀ t, t < n → Packed.fld B X t < D) ∧
      ∀ i j, i < n → j < n → (nth r i = nth r j ↔ Packed.fld B X i = Packed.fld B X j))
    (hk : rk.length = n ∧
      (∀ i j, i < n → j < n → (nth rk i = nth rk j ↔
        Packed.fld B' X' i % 2 ^ wx = Packed.fld B' X' j % 2 ^ wx ∧ ten i = ten j)) ∧
      ∀ j, j + 1 < n → first (j + 1) = false → ten (j + 1) = ten j)
    (hB : B = B') (hx : X = X') (hD : D ≤ 2 ^ wx) : Keyed r first ten rk := by
  obtain ⟨hlen, hlt, heq⟩ := hr
  obtain ⟨hklen, hkeq, hreq⟩ := hk
  subst hB hx
  refine ⟨by rw [hklen, hlen], fun i j hi hj => ?_, fun j hj => hreq j (by rw [← hlen]; exact hj)⟩
  rw [hlen] at hi hj
  rw [hkeq i j hi hj, heq i j hi hj, Nat.mod_eq_of_lt (Nat.lt_of_lt_of_le (hlt i hi) hD),
    Nat.mod_eq_of_lt (Nat.lt_of_lt_of_le (hlt j hj) hD)]

/-- **The gap.** Under `SaltCost`, some cache of `C` blocks with bypass hits exactly `y`
times on `r`, and every cache of `C` blocks with bypass on the keyed trace `rk` hits at least
`y - x` times fewer than it. -/
public theorem salt_gap {r rk : List Nat} {first : Nat → Bool} {ten : Nat → Nat} {n C yd y xd x : Nat}
    (h : SaltCost r first ten rk n C yd y xd x) :
    ∃ K, Run r C K ∧ hits r K = y ∧ ∀ K', Run rk C K' → hits rk K' + (y - x) ≤ hits r K := by
  obtain ⟨⟨_, _, K, hK, e⟩, ⟨_, ⟨_, hb⟩, _⟩, hxy, _⟩ := h
  exact ⟨K, hK, e, fun K' hK' => by have := hb K' hK'; omega⟩

/-- **The gap against a prefix cache.** Under `PrefixSaltCost`, some prefix cache of `C` blocks over the
requests of `r` hits exactly `y` times, and every cache of `C` blocks with bypass on `rk`
(prefix caches included) hits at least `y - x` times fewer than it. -/
public theorem prefix_salt_gap {r : List Nat} {first : Nat → Bool} {ten : Nat → Nat} {rk : List Nat}
    {n C yd y xd x : Nat} (h : PrefixSaltCost r first ten rk n C yd y xd x) :
    ∃ K, Run r C K ∧ prefixHits r first K = y ∧ ∀ K', Run rk C K' → hits rk K' + (y - x) ≤ prefixHits r first K := by
  obtain ⟨⟨_, _, _, K, hK, e⟩, ⟨_, ⟨_, hb⟩, _⟩, hxy, _⟩ := h
  exact ⟨K, hK, e, fun K' hK' => by have := hb K' hK'; omega⟩

end Pycert.IsolationCost
