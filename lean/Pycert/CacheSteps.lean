module

prelude
public import Pycert.Cache
public import Pycert.Count
public import Pycert.Lists
import Init.Omega

/-!
# The cache model step by step

`runHits` (`Pycert.Cache`) walks a trace with the cache and the history as accumulators. Here the
same walk is read by time: `cacheAt P r t` is the cache after the first `t` references, and a
reference `j` hits exactly when its block is in `cacheAt P r j` (`hits_eq_count`). What the
capacity bound needs follows: under `cap = some C` the cache never holds more than `C` entries, it
holds the block just referenced (for `C ≥ 1`), a block enters only when it is referenced, and a
block that is hit at `j` was resident after every step since its previous reference (`resident`).

What this file does not say: anything about which blocks a policy chooses to keep.
-/

namespace Pycert.Ceiling

/-- The cache and the history (most recent first) after the first `t` references of `r`. -/
@[expose] public noncomputable def state (P : Policy) (r : List Nat) : Nat → List Nat × List Nat
  | 0 => ([], [])
  | t + 1 =>
    ((if nth r t ∈ (state P r t).1 then (state P r t).1 else admit P (state P r t).1 (state P r t).2 (nth r t)),
      nth r t :: (state P r t).2)

/-- The cache after the first `t` references of `r`. -/
@[expose] public noncomputable def cacheAt (P : Policy) (r : List Nat) (t : Nat) : List Nat := (state P r t).1

/-- Reference `j` of `r` hits: its block is cached when it comes. -/
@[expose] public def Hit (P : Policy) (r : List Nat) (j : Nat) : Prop := nth r j ∈ cacheAt P r j

theorem cacheAt_succ (P : Policy) (r : List Nat) (t : Nat) :
    cacheAt P r (t + 1) = if nth r t ∈ cacheAt P r t then cacheAt P r t
      else admit P (cacheAt P r t) (state P r t).2 (nth r t) := rfl

theorem runHits_step (P : Policy) (c h : List Nat) (x : Nat) (xs : List Nat) :
    runHits P c h (x :: xs) =
      if x ∈ c then runHits P c (x :: h) xs + 1 else runHits P (admit P c h x) (x :: h) xs := rfl

theorem drop_length_self : ∀ (r : List Nat), r.drop r.length = []
  | [] => rfl
  | _ :: xs => by rw [List.length_cons, List.drop_succ_cons]; exact drop_length_self xs

theorem length_take_le : ∀ (k : Nat) (l : List Nat), (l.take k).length ≤ k
  | 0, l => by rw [List.take_zero]; exact Nat.le_refl 0
  | _ + 1, [] => by rw [List.take_nil]; exact Nat.zero_le _
  | k + 1, _ :: l => by rw [List.take_succ_cons, List.length_cons]; have := length_take_le k l; omega

theorem hits_split (P : Policy) (r : List Nat) : ∀ t, t ≤ r.length →
    hits P r = count (Hit P r) t + runHits P (state P r t).1 (state P r t).2 (r.drop t)
  | 0, _ => by rw [count_zero, Nat.zero_add, List.drop_zero]; rfl
  | t + 1, ht => by
    have ih := hits_split P r t (by omega)
    rw [drop_eq_nth_cons r t (by omega), runHits_step] at ih
    have e2 : (state P r (t + 1)).2 = nth r t :: (state P r t).2 := rfl
    by_cases hx : nth r t ∈ (state P r t).1
    · rw [if_pos hx] at ih
      rw [count_succ_pos (p := Hit P r) hx]
      have e1 : (state P r (t + 1)).1 = (state P r t).1 := by
        show (if nth r t ∈ (state P r t).1 then _ else _) = _
        rw [if_pos hx]
      rw [e1, e2]; omega
    · rw [if_neg hx] at ih
      rw [count_succ_neg (p := Hit P r) hx]
      have e1 : (state P r (t + 1)).1 = admit P (state P r t).1 (state P r t).2 (nth r t) := by
        show (if nth r t ∈ (state P r t).1 then _ else _) = _
        rw [if_neg hx]
      rw [e1, e2]; exact ih

/-- **Hits, counted by time.** A policy's hits on `r` are the references whose block is cached when
they come. -/
public theorem hits_eq_count (P : Policy) (r : List Nat) : hits P r = count (Hit P r) r.length := by
  have h := hits_split P r r.length (Nat.le_refl _)
  rw [drop_length_self] at h
  rw [h]; rfl

theorem mem_admit_of (P : Policy) (c h : List Nat) (x y : Nat) (hy : y ∈ admit P c h x) : y ∈ x :: c := by
  have : y ∈ x :: c.filter (P.keep c h x) := by
    unfold admit bound at hy
    cases hc : P.cap with
    | none => rw [hc] at hy; exact hy
    | some k => rw [hc] at hy; exact mem_of_mem_take hy
  rcases mem_cons.1 this with e | hy
  · exact e ▸ mem_cons_self _ _
  · exact mem_cons_of_mem x (mem_of_mem_filter hy)

/-- A block is cached after step `t` only if it was cached before it or is the block referenced at `t`. -/
public theorem mem_cacheAt_succ {P : Policy} {r : List Nat} {t y : Nat} (h : y ∈ cacheAt P r (t + 1)) :
    y ∈ cacheAt P r t ∨ y = nth r t := by
  rw [cacheAt_succ] at h
  by_cases hx : nth r t ∈ cacheAt P r t
  · rw [if_pos hx] at h; exact Or.inl h
  · rw [if_neg hx] at h
    rcases mem_cons.1 (mem_admit_of P _ _ _ _ h) with e | h
    · exact Or.inr e
    · exact Or.inl h

/-- Blocks enter the cache only by being referenced: a block cached after `t` steps was referenced
at some step before `t`. -/
public theorem referenced_of_mem {P : Policy} {r : List Nat} : ∀ {t y : Nat}, y ∈ cacheAt P r t →
    ∃ i, i < t ∧ nth r i = y
  | 0, _, h => absurd h (not_mem_nil _)
  | t + 1, y, h => by
    rcases mem_cacheAt_succ h with h | e
    · obtain ⟨i, hi, e⟩ := referenced_of_mem h
      exact ⟨i, by omega, e⟩
    · exact ⟨t, by omega, e.symm⟩

/-- Under capacity `C` the cache never holds more than `C` entries. -/
public theorem length_cacheAt {P : Policy} {C : Nat} (hP : P.cap = some C) (r : List Nat) :
    ∀ t, (cacheAt P r t).length ≤ C
  | 0 => Nat.zero_le _
  | t + 1 => by
    rw [cacheAt_succ]
    by_cases hx : nth r t ∈ cacheAt P r t
    · rw [if_pos hx]; exact length_cacheAt hP r t
    · rw [if_neg hx]
      unfold admit bound
      rw [hP]
      exact length_take_le _ _

/-- Under capacity `C ≥ 1` the block referenced at `t` is cached after step `t`. -/
public theorem nth_mem_cacheAt {P : Policy} {C : Nat} (hP : P.cap = some C) (hC : 1 ≤ C) (r : List Nat)
    (t : Nat) : nth r t ∈ cacheAt P r (t + 1) := by
  rw [cacheAt_succ]
  by_cases hx : nth r t ∈ cacheAt P r t
  · rw [if_pos hx]; exact hx
  · rw [if_neg hx]
    unfold admit bound
    rw [hP]
    obtain ⟨k, rfl⟩ : ∃ k, C = k + 1 := ⟨C - 1, by omega⟩
    show nth r t ∈ (nth r t :: _).take (k + 1)
    rw [List.take_succ_cons]
    exact mem_cons_self _ _

/-- Under capacity `0` nothing is ever cached. -/
public theorem cacheAt_zero_cap {P : Policy} (hP : P.cap = some 0) (r : List Nat) : ∀ t, cacheAt P r t = []
  | t => by
    have := length_cacheAt hP r t
    cases h : cacheAt P r t with
    | nil => rfl
    | cons _ _ => rw [h, List.length_cons] at this; omega

/-- **Residency.** If reference `j` hits and no reference strictly between `i` and `j` is to its
block, its block was cached after every step `t` with `i < t ≤ j`: with nothing referencing it in
between, it cannot have entered the cache after `i`. -/
public theorem resident {P : Policy} {r : List Nat} {i j : Nat} (hit : Hit P r j)
    (gap : ∀ u, i < u → u < j → nth r u ≠ nth r j) : ∀ t, i < t → t ≤ j → nth r j ∈ cacheAt P r t := by
  have key : ∀ k t, t + k = j → i < t → nth r j ∈ cacheAt P r t := by
    intro k
    induction k with
    | zero => intro t ht _; rw [Nat.add_zero] at ht; subst ht; exact hit
    | succ k ih =>
      intro t ht hi
      rcases mem_cacheAt_succ (ih (t + 1) (by omega) (by omega)) with h | e
      · exact h
      · exact absurd e.symm (gap t hi (by omega))
  intro t hi ht
  exact key (j - t) t (by omega) hi

end Pycert.Ceiling
