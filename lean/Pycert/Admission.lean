module

prelude
public import Pycert.CacheSteps
public import Pycert.Capacity
import Init.Omega

/-!
# Caches with bypass, and the bound at a capacity for them

`Pycert.Cache` inserts every missed block. A cache with bypass may skip storing it: on a miss
it may leave the cache as it was (LMCache's and SGLang HiCache's admission policies; an engine that
does not cache a block). Here such a cache is given by what it holds (`Run`): `K t` after the first
`t` references, empty at the start, at most `C` blocks, and after each reference only blocks it held
before or the block just referenced. Every demand-fetch policy of `Pycert.Cache` is one
(`run_of_policy`), and so is every prefix cache (`Pycert.PrefixCache`).

The cut argument of `Pycert.Capacity` carries over with `C` in place of `C - 1`: a hit at `j` on a
block last referenced at `i` needs the block in the cache after every step from `i` to `j - 1`, so at
most `C` hits span any step (`spans_le`), the reference at that step included (it no longer takes a
slot of its own). Charging each hit that spans a cut to that cut (`hits_le_freeA`):

    hits ≤ C · |Y| + #{j : j reuses a block with no cut of Y at or after the previous reference and before j}.

What this file does not model: a cache that starts non-empty, blocks of different sizes, prefetching
(a block enters only at its own reference), and the room a running request's blocks need in the cache
while it is computed (nothing here makes a request's blocks resident together).
-/

namespace Pycert.Admission
open Pycert.Ceiling Pycert.Capacity

/-- **A cache of `C` blocks with bypass** along the trace `r`, given by its contents:
`K t` is what it holds after the first `t` references. It starts empty, and after each reference of
`r` it holds at most `C` blocks, each held before that reference or the block just referenced. So a
missed block may be admitted or not (the cache left as it was), and any block may be evicted at any
step; what decides is arbitrary and may read the whole trace (it may be offline). Blocks have size
one; nothing makes a running request's blocks resident together. -/
@[expose] public def Run (r : List Nat) (C : Nat) (K : Nat → List Nat) : Prop :=
  K 0 = [] ∧ ∀ t, t < r.length → (K (t + 1)).length ≤ C ∧ ∀ y, y ∈ K (t + 1) → y ∈ K t ∨ y = nth r t

/-- The hits of the cache that holds `K t` after `t` references: the references of `r` whose block is
cached when they come. -/
@[expose] public noncomputable def hits (r : List Nat) (K : Nat → List Nat) : Nat :=
  count (fun j => nth r j ∈ K j) r.length

/-- **Every demand-fetch policy of capacity `C` is a cache with bypass** (one that stores
every missed block), with the same hits. -/
public theorem run_of_policy {P : Policy} {C : Nat} (hP : P.cap = some C) (r : List Nat) :
    Run r C (cacheAt P r) ∧ Ceiling.hits P r = hits r (cacheAt P r) :=
  ⟨⟨rfl, fun t _ => ⟨length_cacheAt hP r (t + 1), fun _ h => mem_cacheAt_succ h⟩⟩, hits_eq_count P r⟩

/-- A block held after `t` steps was referenced before `t`. -/
theorem referenced_of_run {r : List Nat} {C : Nat} {K : Nat → List Nat} (hK : Run r C K) :
    ∀ {t y : Nat}, t ≤ r.length → y ∈ K t → ∃ i, i < t ∧ nth r i = y
  | 0, _, _, h => by rw [hK.1] at h; exact absurd h (not_mem_nil _)
  | t + 1, y, ht, h => by
    rcases (hK.2 t (by omega)).2 y h with h | e
    · obtain ⟨i, hi, e⟩ := referenced_of_run hK (by omega) h
      exact ⟨i, by omega, e⟩
    · exact ⟨t, by omega, e.symm⟩

/-- **Residency.** If reference `j` hits and no reference strictly between `i` and `j` is to its
block, the block was held after every step `t` with `i < t ≤ j`. -/
theorem resident_run {r : List Nat} {C : Nat} {K : Nat → List Nat} (hK : Run r C K) {i j : Nat}
    (hj : j ≤ r.length) (hit : nth r j ∈ K j) (gap : ∀ u, i < u → u < j → nth r u ≠ nth r j) :
    ∀ t, i < t → t ≤ j → nth r j ∈ K t := by
  have key : ∀ k t, t + k = j → i < t → nth r j ∈ K t := by
    intro k
    induction k with
    | zero => intro t ht _; rw [Nat.add_zero] at ht; subst ht; exact hit
    | succ k ih =>
      intro t ht hi
      rcases (hK.2 t (by omega)).2 _ (ih (t + 1) (by omega) (by omega)) with h | e
      · exact h
      · exact absurd e.symm (gap t hi (by omega))
  intro t hi ht
  exact key (j - t) t (by omega) hi

/-- Reference `j`'s block was referenced last at some `i ≤ t`, and `j > t`: a hit at `j` needs the
block held after step `t`. -/
@[expose] public def Spans (r : List Nat) (t j : Nat) : Prop :=
  ∃ i, i ≤ t ∧ t < j ∧ nth r i = nth r j ∧ ∀ u, i < u → u < j → nth r u ≠ nth r j

/-- Reference `j` reuses the block of some reference `i < j` with no cut of `Y` in `i ≤ y < j`. -/
@[expose] public def FreeA (r Y : List Nat) (j : Nat) : Prop :=
  ∃ i, i < j ∧ nth r i = nth r j ∧ ∀ y, y ∈ Y → ¬ (i ≤ y ∧ y < j)

/-- **At most `C` hits span a step.** For every cache of `C` blocks with bypass and every
step `t`, at most `C` hits `j > t` are on blocks last referenced at or before `t`: each such block is
held after step `t`, and no two of them are the same block. -/
public theorem spans_le {r : List Nat} {C : Nat} {K : Nat → List Nat} (hK : Run r C K) (t : Nat) :
    count (fun j => nth r j ∈ K j ∧ Spans r t j) r.length ≤ C := by
  by_cases ht : t < r.length
  · have := count_le_length (fun j => nth r j ∈ K j ∧ Spans r t j) (nth r) r.length (K (t + 1))
      (fun j hj ⟨hit, i, hi, htj, _, gap⟩ => resident_run hK (by omega) hit gap (t + 1) (by omega) (by omega))
      (fun j₁ j₂ _ _ ⟨_, i₁, _, h₁, _, gap₁⟩ ⟨_, i₂, _, h₂, _, gap₂⟩ e => by
        rcases Nat.lt_trichotomy j₁ j₂ with l | q | g
        · exact absurd e (gap₂ j₁ (by omega) l)
        · exact q
        · exact absurd e.symm (gap₁ j₂ (by omega) g))
    exact Nat.le_trans this (hK.2 t ht).1
  · rw [count_eq_zero fun j hj ⟨_, _, _, htj, _⟩ => ht (by omega)]
    exact Nat.zero_le _

/-- Every hit is free or spans a cut. -/
theorem free_or_spans {r : List Nat} {C : Nat} {K : Nat → List Nat} (hK : Run r C K) (Y : List Nat) {j : Nat}
    (hj : j < r.length) (hit : nth r j ∈ K j) : FreeA r Y j ∨ ∃ y, y ∈ Y ∧ (nth r j ∈ K j ∧ Spans r y j) := by
  obtain ⟨i, hi, hq, gap⟩ :=
    exists_latest (fun i => nth r i = nth r j) j (referenced_of_run hK (Nat.le_of_lt hj) hit)
  by_cases hf : ∀ y, y ∈ Y → ¬ (i ≤ y ∧ y < j)
  · exact Or.inl ⟨i, hi, hq, hf⟩
  · exact Or.inr (Classical.byContradiction fun hn => hf fun y hy hb => hn ⟨y, hy, hit, i, hb.1, hb.2, hq, gap⟩)

/-- **The bound with bypass, pair form.** For every cache of `C` blocks with
bypass (`Run`: any rule for storing and evicting, which may read the whole trace), every trace `r`
and every list `Y` of cut points, the hits are at most `C` per cut plus the references that reuse a
block with no cut at or after the previous reference to it and before them. It does not say that
any cache attains the bound; the cache starts empty, blocks have size one, nothing is prefetched,
and a running request's blocks need no room together. -/
public theorem hits_le_freeA {r : List Nat} {C : Nat} {K : Nat → List Nat} (hK : Run r C K) (Y : List Nat) :
    hits r K ≤ C * Y.length + count (FreeA r Y) r.length :=
  show count _ r.length ≤ _ from count_le_charge (FreeA r Y) (fun y j => nth r j ∈ K j ∧ Spans r y j) (spans_le hK) Y _
    fun _ hj hit => free_or_spans hK Y hj hit

/-- **The bound of a capacity certificate with bypass.** The trace `r` has `n` references,
and no cache of `C` blocks with bypass (`Run`) hits more than `h` times on it. It says
nothing of a cache that starts non-empty, prefetches or holds blocks of different sizes, nor of the
room a running request's blocks need while it is computed. -/
@[expose] public def BoundedA (r : List Nat) (n C h : Nat) : Prop :=
  r.length = n ∧ ∀ K : Nat → List Nat, Run r C K → hits r K ≤ h

/-- A bound for every cache with bypass bounds every demand-fetch policy too. -/
public theorem bounded_of_boundedA {r : List Nat} {n C h : Nat} (hb : BoundedA r n C h) : Bounded r n C h :=
  ⟨hb.1, fun _ hP => (run_of_policy hP r).2 ▸ hb.2 _ (run_of_policy hP r).1⟩

end Pycert.Admission
