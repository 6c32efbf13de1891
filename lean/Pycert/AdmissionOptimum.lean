module

prelude
public import Pycert.PrefixCache
public import Pycert.Realise
import Init.Omega

/-!
# The optimum with bypass: reuse pairs a cache that may skip storing a miss can keep

`Pycert.Admission` bounds the hits of every cache of `C` blocks with bypass. This file
gives the other direction: pick a set `S` of references (starts) and a set `E` of hits to be (ends),
each end the next reference to the block of some start. If at every step `t` at most `C` starts are
live (`i ≤ t` and their block not referenced again up to `t`), some cache of `C` blocks with
bypass holds every end's block when it comes (`realiseA`): after each step it holds
exactly the blocks of the live starts. Where the ends of each request form a prefix of it, the same
cache is a prefix cache hitting every end (`prefixOptimum_of`).

Against `Pycert.Realise` (no admission): the start at step `t` counts as live at `t` itself, so the
bound is `C` where it was `C - 1`, and a missed block that is no start is not admitted.

What this file does not say: that `S` and `E` are the best such sets; the cache may read the whole
trace (it is offline), starts empty, holds blocks of size one, and does not make a running request's
blocks resident together.
-/

namespace Pycert.Admission
open Pycert.Capacity Pycert.PrefixCache

/-- The pair that starts at reference `i` is live at step `t`: `i ≤ t` and `i`'s block is not referenced
again up to `t` included. A cache that is to hit the block's next reference holds it after step `t`. -/
@[expose] public def Live (r : List Nat) (i t : Nat) : Prop :=
  i ≤ t ∧ ∀ u, i < u → u ≤ t → nth r u ≠ nth r i

/-- Start `i` is before `t` and its block is not referenced again before `t`. -/
def Pending (r : List Nat) (S : Nat → Prop) (t i : Nat) : Prop :=
  S i ∧ ∀ u, i < u → u < t → nth r u ≠ nth r i

/-- The blocks of the starts `i < k` pending at `t`. -/
noncomputable def keep (r : List Nat) (S : Nat → Prop) (t : Nat) : Nat → List Nat
  | 0 => []
  | k + 1 => @ite _ (Pending r S t k) (Classical.propDecidable _) (nth r k :: keep r S t k) (keep r S t k)

theorem length_keep (r : List Nat) (S : Nat → Prop) (t : Nat) : ∀ k, (keep r S t k).length = count (Pending r S t) k
  | 0 => rfl
  | k + 1 => by
    show List.length (@ite (List Nat) (Pending r S t k) (Classical.propDecidable _) _ _) = _
    by_cases h : Pending r S t k
    · rw [if_pos h, List.length_cons, length_keep r S t k, count_succ_pos h]
    · rw [if_neg h, length_keep r S t k, count_succ_neg h]

theorem mem_keep (r : List Nat) (S : Nat → Prop) (t : Nat) :
    ∀ k y, y ∈ keep r S t k → ∃ i, i < k ∧ Pending r S t i ∧ nth r i = y
  | 0, _, h => absurd h (not_mem_nil _)
  | k + 1, y, h => by
    change y ∈ @ite _ (Pending r S t k) (Classical.propDecidable _) _ _ at h
    by_cases hp : Pending r S t k
    · rw [if_pos hp] at h
      rcases mem_cons.1 h with e | h
      · exact ⟨k, by omega, hp, e.symm⟩
      · obtain ⟨i, hi, pi, e⟩ := mem_keep r S t k y h
        exact ⟨i, by omega, pi, e⟩
    · rw [if_neg hp] at h
      obtain ⟨i, hi, pi, e⟩ := mem_keep r S t k y h
      exact ⟨i, by omega, pi, e⟩

theorem keep_mem (r : List Nat) (S : Nat → Prop) (t : Nat) :
    ∀ k i, i < k → Pending r S t i → nth r i ∈ keep r S t k
  | 0, _, h, _ => absurd h (Nat.not_lt_zero _)
  | k + 1, i, hi, pi => by
    show nth r i ∈ @ite _ (Pending r S t k) (Classical.propDecidable _) _ _
    by_cases hp : Pending r S t k
    · rw [if_pos hp]
      by_cases e : i = k
      · subst e; exact mem_cons_self _ _
      · exact mem_cons_of_mem _ (keep_mem r S t k i (by omega) pi)
    · rw [if_neg hp]
      by_cases e : i = k
      · subst e; exact absurd pi hp
      · exact keep_mem r S t k i (by omega) pi

/-- **Realisability with bypass.** If at every step at most `C` starts of `S` are live,
some cache of `C` blocks with bypass holds, when each start's next reference comes, its
block: after step `t` it holds the blocks of the starts live at `t`. -/
public theorem realiseA {r : List Nat} {C : Nat} (S : Nat → Prop)
    (hcov : ∀ t, t < r.length → count (fun i => S i ∧ Live r i t) r.length ≤ C) :
    ∃ K, Run r C K ∧ ∀ i j, S i → i < j → nth r i = nth r j → (∀ u, i < u → u < j → nth r u ≠ nth r j) →
      nth r j ∈ K j := by
  refine ⟨fun t => keep r S t t, ⟨rfl, fun t ht => ⟨?_, fun y hy => ?_⟩⟩, fun i j si hij e gap => ?_⟩
  · show (keep r S (t + 1) (t + 1)).length ≤ C
    rw [length_keep]
    refine Nat.le_trans (count_le_count _ _ id (fun i hi h => by
      obtain ⟨si, gap⟩ := h
      exact ⟨show i < r.length by omega, si, show i ≤ t by omega, fun u h1 h2 => gap u h1 (by omega)⟩)
      (fun _ _ _ _ _ _ e => e)) (hcov t ht)
  · obtain ⟨i, hi, ⟨si, gap⟩, e⟩ := mem_keep r S (t + 1) (t + 1) y hy
    by_cases h : i = t
    · subst h; exact Or.inr e.symm
    · refine Or.inl ?_
      show y ∈ keep r S t t
      rw [← e]
      exact keep_mem r S t t i (by omega) ⟨si, fun u h1 h2 => gap u h1 (by omega)⟩
  · show nth r j ∈ keep r S j j
    rw [← e]
    exact keep_mem r S j j i hij ⟨si, fun u h1 h2 => by rw [e]; exact gap u h1 h2⟩

/-- **The optimum with bypass.** The trace `r` has `n` references; no cache of `C` blocks
with bypass hits more than `h` times on it (`BoundedA`), and one hits exactly `h` times.
It says nothing of a cache that starts non-empty, prefetches or holds blocks of different sizes, nor
of the room a running request's blocks need; the cache reaching `h` may read the whole trace. -/
@[expose] public def OptimumA (r : List Nat) (n C h : Nat) : Prop :=
  BoundedA r n C h ∧ ∃ K : Nat → List Nat, Run r C K ∧ hits r K = h

/-- A witness of hits `E`, each closing the pair of a start in `S`, with at most `C` starts live at
every step: some cache of `C` blocks with bypass holds every end's block when it comes. -/
theorem held_of {r : List Nat} {C : Nat} (S E : Nat → Prop)
    (hcov : ∀ t, t < r.length → count (fun i => S i ∧ Live r i t) r.length ≤ C)
    (hend : ∀ j, j < r.length → E j → ∃ i, S i ∧ i < j ∧ nth r i = nth r j ∧ ∀ u, i < u → u < j → nth r u ≠ nth r j) :
    ∃ K, Run r C K ∧ ∀ j, j < r.length → E j → nth r j ∈ K j := by
  obtain ⟨K, hK, held⟩ := realiseA S hcov
  exact ⟨K, hK, fun j hj ej => let ⟨i, si, hij, e, gap⟩ := hend j hj ej; held i j si hij e gap⟩

/-- A bound with bypass and `h` ends that a cache of `C` blocks can hold (`held_of`) make
`h` the optimum with bypass. -/
public theorem optimumA_of {r : List Nat} {n C h : Nat} (hb : BoundedA r n C h) (S E : Nat → Prop)
    (hcov : ∀ t, t < r.length → count (fun i => S i ∧ Live r i t) r.length ≤ C)
    (hend : ∀ j, j < r.length → E j → ∃ i, S i ∧ i < j ∧ nth r i = nth r j ∧ ∀ u, i < u → u < j → nth r u ≠ nth r j)
    (hE : count E r.length = h) : OptimumA r n C h := by
  obtain ⟨K, hK, held⟩ := held_of S E hcov hend
  exact ⟨hb, K, hK, Nat.le_antisymm (hb.2 K hK) (hE ▸ count_mono held)⟩

/-- The same witness, where each end that does not start its request follows another end: some
prefix cache of `C` blocks hits every end, so `h` is the prefix caches' optimum too. -/
public theorem prefixOptimum_of {r : List Nat} {first : Nat → Bool} {n C h : Nat} (hb : BoundedA r n C h)
    (S E : Nat → Prop)
    (hcov : ∀ t, t < r.length → count (fun i => S i ∧ Live r i t) r.length ≤ C)
    (hend : ∀ j, j < r.length → E j → ∃ i, S i ∧ i < j ∧ nth r i = nth r j ∧ ∀ u, i < u → u < j → nth r u ≠ nth r j)
    (hpre : ∀ j, j + 1 < r.length → E (j + 1) → first (j + 1) = true ∨ E j)
    (hE : count E r.length = h) : PrefixOptimum r first n C h := by
  obtain ⟨K, hK, held⟩ := held_of S E hcov hend
  have hit := phit_of (first := first) (fun j => j < r.length ∧ E j) (fun j ⟨hj, ej⟩ => held j hj ej)
    (fun j ⟨hj, ej⟩ => (hpre j hj ej).imp id fun e => ⟨by omega, e⟩)
  refine ⟨hb.1, fun K hK => Nat.le_trans (prefixHits_le r first K) (hb.2 K hK), K, hK, Nat.le_antisymm
    (Nat.le_trans (prefixHits_le r first K) (hb.2 K hK)) (hE ▸ count_mono fun j hj ej => hit j ⟨hj, ej⟩)⟩

/-- **The headline of a capacity certificate in both models.** On the trace `r` of `n` references, `h`
is the optimum at `C` blocks for demand-fetch caches that store every missed block and start empty
(`Pycert.Capacity.Optimum`), and `hA` the optimum for caches of `C` blocks with bypass
(`OptimumA`), which include them. What the two models leave out is in their definitions. -/
@[expose] public def Optima (r : List Nat) (n C h hA : Nat) : Prop :=
  Optimum r n C h ∧ OptimumA r n C hA

/-- **The headline with prefix caches.** `Optima`, and `hP` is the optimum at `C` blocks for prefix caches
over the requests that `first` starts, with or without bypass (`PrefixOptimum`). -/
@[expose] public def PrefixOptima (r : List Nat) (first : Nat → Bool) (n C h hA hP : Nat) : Prop :=
  Optima r n C h hA ∧ PrefixOptimum r first n C hP

end Pycert.Admission
