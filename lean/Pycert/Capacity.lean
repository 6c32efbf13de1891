module

prelude
public import Pycert.CacheSteps
import Init.Omega

/-!
# The optimum at a capacity, bounded: cut points and windows

A cache of `C` blocks holds, after step `t`, the block just referenced and at most `C - 1` others.
A hit at `j` on a block last referenced at `i < j` needs that block resident after every step
strictly between `i` and `j` (`Pycert.Ceiling.resident`), so at most `C - 1` hits straddle any step
(`straddle_le`). Given any list `Y` of cut points, charge each hit that straddles a cut to that cut;
every other hit reuses a block with no cut in between (`Free`). Hence for every policy of capacity
`C` (`hits_le_free`)

    hits ≤ (C - 1) · |Y| + #{j : j reuses a block with no cut strictly in between},

and the second term is at most the sum, over the closed windows between consecutive cuts (sharing
their endpoints), of `|W| - distinct W` (`hits_le_windows`). `Y = []` gives the ceiling (the
best at any size); every `Y` gives a sound bound, and a good `Y` makes it Belady's hit count.

What this file does not say: that any policy reaches a bound (only that none exceeds it), nor anything
about a cache that bypasses (declines to insert a missed block) or prefetches: in the model of
`Pycert.Cache` every miss inserts its block and nothing else enters. The cache starts empty and
every block has size one.
-/

namespace Pycert.Capacity
open Pycert.Ceiling

/-- Reference `j`'s block was referenced last at some `i < t`, and `j > t`: the reuse at `j`
straddles step `t`. -/
@[expose] public def Straddles (r : List Nat) (t j : Nat) : Prop :=
  ∃ i, i < t ∧ t < j ∧ nth r i = nth r j ∧ ∀ u, i < u → u < j → nth r u ≠ nth r j

/-- Reference `j` reuses the block of some reference `i < j` with no cut of `Y` strictly between them. -/
@[expose] public def Free (r Y : List Nat) (j : Nat) : Prop :=
  ∃ i, i < j ∧ nth r i = nth r j ∧ ∀ y, y ∈ Y → ¬ (i < y ∧ y < j)

/-- **At most `C - 1` hits straddle a step.** For every policy of capacity `C` and every step `t`, at
most `C - 1` hits `j > t` are on blocks last referenced before `t`: each such block is cached after
step `t`, no two of them are the same block, and none is the block referenced at `t`, which is cached
too. -/
public theorem straddle_le {P : Policy} {C : Nat} (hP : P.cap = some C) (r : List Nat) (t : Nat) :
    count (fun j => Hit P r j ∧ Straddles r t j) r.length ≤ C - 1 := by
  by_cases hC : C = 0
  · subst hC
    rw [count_eq_zero fun j _ ⟨hit, _⟩ => by
      have := cacheAt_zero_cap hP r j
      unfold Hit at hit
      rw [this] at hit
      exact not_mem_nil _ hit]
    exact Nat.zero_le _
  have hx := nth_mem_cacheAt hP (by omega) r t
  have hlen := length_rm hx
  have hcap := length_cacheAt hP r (t + 1)
  have := count_le_length (fun j => Hit P r j ∧ Straddles r t j) (nth r) r.length (rm (nth r t) (cacheAt P r (t + 1)))
    (fun j _ ⟨hit, i, hi, hj, _, gap⟩ =>
      mem_rm (fun e => gap t hi hj e.symm) (resident hit gap (t + 1) (by omega) (by omega)))
    (fun j₁ j₂ _ _ ⟨_, i₁, _, h₁, _, gap₁⟩ ⟨_, i₂, _, h₂, _, gap₂⟩ e => by
      rcases Nat.lt_trichotomy j₁ j₂ with l | q | g
      · exact absurd e (gap₂ j₁ (by omega) l)
      · exact q
      · exact absurd e.symm (gap₁ j₂ (by omega) g))
  omega

/-- Every hit is free or straddles a cut: it reuses a block last referenced at some `i < j` (blocks
enter only when referenced), and either no cut lies strictly between `i` and `j` or one does. -/
theorem free_or_straddles {P : Policy} {r : List Nat} (Y : List Nat) {j : Nat} (hit : Hit P r j) :
    Free r Y j ∨ ∃ y, y ∈ Y ∧ (Hit P r j ∧ Straddles r y j) := by
  obtain ⟨i, hi, hq, gap⟩ := exists_latest (fun i => nth r i = nth r j) j (referenced_of_mem hit)
  by_cases hf : ∀ y, y ∈ Y → ¬ (i < y ∧ y < j)
  · exact Or.inl ⟨i, hi, hq, hf⟩
  · refine Or.inr (Classical.byContradiction fun hn => hf fun y hy hb => hn ⟨y, hy, hit, i, hb.1, hb.2, hq, gap⟩)

/-- **The capacity bound, pair form.** For every demand-fetch policy `P` of capacity `C` (any
eviction rule, which may read the whole history), every trace `r` and every list `Y` of cut points
(any order, repeats allowed), the hits of `P` on `r` are at most `C - 1` per cut plus the number of
references that reuse a block with no cut strictly between the two references. It does not say that
any policy attains the bound; it says nothing of caches that bypass or prefetch (outside the model
of `Pycert.Cache`), of a cache that starts non-empty, or of blocks of different sizes. -/
public theorem hits_le_free {P : Policy} {C : Nat} (hP : P.cap = some C) (r Y : List Nat) :
    hits P r ≤ (C - 1) * Y.length + count (Free r Y) r.length := by
  rw [hits_eq_count]
  exact count_le_charge (Free r Y) (fun y j => Hit P r j ∧ Straddles r y j) (straddle_le hP r) Y (Hit P r)
    fun _ _ hit => free_or_straddles Y hit

/-! ## Windows -/

/-- The closed window `r[a..b]`: references `a` to `b` of `r`, both included (fewer where `r` ends
first, none when `b < a`). -/
@[expose] public noncomputable def window (r : List Nat) (a b : Nat) : List Nat := (r.drop a).take (b + 1 - a)

/-- The references of `W` that are not the first to their block: `|W| - distinct W`. -/
@[expose] public noncomputable def excess (W : List Nat) : Nat := W.length - distinct W

/-- `excess` summed over the windows cut at `Y`: from `a` to the first cut, from each cut to the
next, from the last cut to the last reference of `r`. Consecutive windows share their endpoint. -/
@[expose] public noncomputable def windowsExcess (r : List Nat) : Nat → List Nat → Nat
  | a, [] => excess (window r a (r.length - 1))
  | a, y :: Y => excess (window r a y) + windowsExcess r y Y

theorem repeats_add_distinctFrom : ∀ (W S : List Nat),
    count (fun l => nth W l ∈ S ∨ ∃ k, k < l ∧ nth W k = nth W l) W.length + distinctFrom S W = W.length
  | [], _ => rfl
  | x :: W, S => by
    rw [List.length_cons, count_succ_front]
    by_cases hx : x ∈ S
    · have ih := repeats_add_distinctFrom W S
      rw [distinctFrom_of_mem hx, count_succ_pos (p := fun l => nth (x :: W) l ∈ S ∨ _) (n := 0) (Or.inl hx),
        count_zero]
      rw [count_congr (q := fun l => nth W l ∈ S ∨ ∃ k, k < l ∧ nth W k = nth W l) fun l _ => by
        refine ⟨fun h => ?_, fun h => ?_⟩
        · rcases h with h | ⟨k, hk, e⟩
          · exact Or.inl h
          · cases k with
            | zero => exact Or.inl (e ▸ hx)
            | succ k => exact Or.inr ⟨k, by omega, e⟩
        · rcases h with h | ⟨k, hk, e⟩
          · exact Or.inl h
          · exact Or.inr ⟨k + 1, by omega, e⟩]
      omega
    · have ih := repeats_add_distinctFrom W (x :: S)
      rw [distinctFrom_of_not_mem hx, count_succ_neg (p := fun l => nth (x :: W) l ∈ S ∨ _) (n := 0)
        (fun h => h.elim hx fun ⟨_, hk, _⟩ => absurd hk (Nat.not_lt_zero _)), count_zero]
      rw [count_congr (q := fun l => nth W l ∈ x :: S ∨ ∃ k, k < l ∧ nth W k = nth W l) fun l _ => by
        refine ⟨fun h => ?_, fun h => ?_⟩
        · rcases h with h | ⟨k, hk, e⟩
          · exact Or.inl (mem_cons_of_mem x h)
          · cases k with
            | zero => exact Or.inl (e ▸ mem_cons_self x S)
            | succ k => exact Or.inr ⟨k, by omega, e⟩
        · rcases h with h | ⟨k, hk, e⟩
          · rcases mem_cons.1 h with e | h
            · exact Or.inr ⟨0, by omega, e.symm⟩
            · exact Or.inl h
          · exact Or.inr ⟨k + 1, by omega, e⟩]
      omega

/-- `|W| - distinct W` counts the entries of `W` whose block appeared earlier in `W`. -/
public theorem excess_eq_count (W : List Nat) :
    excess W = count (fun l => ∃ k, k < l ∧ nth W k = nth W l) W.length := by
  have h := repeats_add_distinctFrom W []
  rw [count_congr (q := fun l => ∃ k, k < l ∧ nth W k = nth W l)
    fun l _ => ⟨fun h => h.resolve_left (not_mem_nil _), Or.inr⟩] at h
  show W.length - distinctFrom [] W = _
  omega

theorem lt_length_drop : ∀ (a : Nat) (r : List Nat) (l : Nat), a + l < r.length → l < (r.drop a).length
  | 0, r, l, h => by rw [List.drop_zero]; omega
  | _ + 1, [], _, h => absurd h (Nat.not_lt_zero _)
  | a + 1, _ :: xs, l, h => by
    rw [List.drop_succ_cons]; exact lt_length_drop a xs l (by rw [List.length_cons] at h; omega)

theorem lt_length_take : ∀ (k : Nat) (r : List Nat) (l : Nat), l < k → l < r.length → l < (r.take k).length
  | 0, _, _, h, _ => absurd h (Nat.not_lt_zero _)
  | _ + 1, [], _, _, h => absurd h (Nat.not_lt_zero _)
  | k + 1, _ :: xs, 0, _, _ => by rw [List.take_succ_cons, List.length_cons]; omega
  | k + 1, _ :: xs, l + 1, h, h' => by
    rw [List.take_succ_cons, List.length_cons]
    have := lt_length_take k xs l (by omega) (by rw [List.length_cons] at h'; omega)
    omega

theorem length_window_le (r : List Nat) (a b : Nat) : (window r a b).length ≤ r.length - a := by
  have h1 : ∀ (k : Nat) (l : List Nat), (l.take k).length ≤ l.length := by
    intro k l
    induction l generalizing k with
    | nil => rw [List.take_nil]; exact Nat.le_refl _
    | cons x xs ih => cases k with
      | zero => rw [List.take_zero]; exact Nat.zero_le _
      | succ k => rw [List.take_succ_cons, List.length_cons, List.length_cons]; have := ih k; omega
  have h2 : ∀ (a : Nat) (l : List Nat), (l.drop a).length = l.length - a := by
    intro a l
    induction l generalizing a with
    | nil => rw [List.drop_nil, List.length_nil, Nat.zero_sub]
    | cons x xs ih => cases a with
      | zero => rfl
      | succ a => rw [List.drop_succ_cons, ih a, List.length_cons]; omega
  unfold window
  rw [← h2]
  exact h1 _ _

theorem nth_window (r : List Nat) (a b l : Nat) (h : a + l ≤ b) : nth (window r a b) l = nth r (a + l) := by
  unfold window
  rw [nth_take _ _ _ (by omega), nth_drop]

/-- The references up to `b` that reuse a block referenced at or after `a` are at most the
excess of the window `r[a..b]`. -/
theorem count_le_excess (r : List Nat) (a b : Nat) :
    count (fun j => j ≤ b ∧ ∃ i, a ≤ i ∧ i < j ∧ nth r i = nth r j) r.length ≤ excess (window r a b) := by
  rw [excess_eq_count]
  by_cases ha : r.length ≤ a
  · rw [count_eq_zero (n := r.length) fun j hj ⟨_, i, hi, hij, _⟩ => by omega]
    exact Nat.zero_le _
  have split := count_add (fun j => j ≤ b ∧ ∃ i, a ≤ i ∧ i < j ∧ nth r i = nth r j) a (r.length - a)
  rw [show a + (r.length - a) = r.length by omega, count_eq_zero (n := a) fun j hj ⟨_, i, hi, hij, _⟩ => by omega,
    Nat.zero_add] at split
  rw [split]
  have hW := length_window_le r a b
  refine Nat.le_trans (count_mono (q := fun l => l < (window r a b).length ∧
      ∃ k, k < l ∧ nth (window r a b) k = nth (window r a b) l) fun l hl ⟨hb, i, hi, hij, e⟩ => ?_) ?_
  · refine ⟨?_, i - a, by omega, ?_⟩
    · exact lt_length_take _ _ _ (by omega) (lt_length_drop a r l (by omega))
    · rw [nth_window r a b _ (by omega), nth_window r a b _ (by omega), show a + (i - a) = i by omega]
      exact e
  · rw [count_stop hW fun l hl h => by omega]
    exact count_mono fun _ _ h => h.2

theorem count_le_windowsExcess (r : List Nat) : ∀ (Y : List Nat) (a : Nat),
    count (fun j => ∃ i, a ≤ i ∧ i < j ∧ nth r i = nth r j ∧ ∀ y, y ∈ Y → ¬ (i < y ∧ y < j)) r.length ≤
      windowsExcess r a Y
  | [], a => Nat.le_trans (count_mono fun j hj ⟨i, hi, hij, e, _⟩ => ⟨by omega, i, hi, hij, e⟩)
      (count_le_excess r a (r.length - 1))
  | y :: Y, a => by
    rw [count_split _ (fun j => j ≤ y)]
    have first : count (fun j => (∃ i, a ≤ i ∧ i < j ∧ nth r i = nth r j ∧ ∀ z, z ∈ y :: Y → ¬ (i < z ∧ z < j)) ∧
        j ≤ y) r.length ≤ excess (window r a y) :=
      Nat.le_trans (count_mono fun j _ ⟨⟨i, hi, hij, e, _⟩, hy⟩ => ⟨hy, i, hi, hij, e⟩) (count_le_excess r a y)
    have rest : count (fun j => (∃ i, a ≤ i ∧ i < j ∧ nth r i = nth r j ∧ ∀ z, z ∈ y :: Y → ¬ (i < z ∧ z < j)) ∧
        ¬ j ≤ y) r.length ≤ windowsExcess r y Y :=
      Nat.le_trans (count_mono fun j _ ⟨⟨i, _, hij, e, hY⟩, hy⟩ => ⟨i,
        (by have := hY y (mem_cons_self y Y); omega), hij, e, fun z hz => hY z (mem_cons_of_mem y hz)⟩)
      (count_le_windowsExcess r Y y)
    show _ ≤ excess (window r a y) + windowsExcess r y Y
    omega

/-- **The capacity bound, window form.** For every demand-fetch policy `P` of capacity `C`, every
trace `r` and every list of cut points `Y = y₁, …, yₘ`: with the closed windows `r[0..y₁]`,
`r[y₁..y₂]`, …, `r[yₘ..|r|-1]` (consecutive windows share their endpoint),

    hits P r ≤ (C - 1) · m + Σ over the windows W of (|W| - distinct W).

Stated for every list; for a strictly increasing one the windows are the ones above, and a window
between a cut and an earlier one is empty. It does not say that any policy attains the bound, nor
anything of caches that bypass (decline to insert a missed block) or prefetch, of a cache that
starts non-empty, or of blocks of different sizes: the model is `Pycert.Cache`'s. -/
public theorem hits_le_windows {P : Policy} {C : Nat} (hP : P.cap = some C) (r Y : List Nat) :
    hits P r ≤ (C - 1) * Y.length + windowsExcess r 0 Y :=
  Nat.le_trans (hits_le_free hP r Y) (Nat.add_le_add_left (Nat.le_trans
    (count_mono fun _ _ ⟨i, hij, e, hY⟩ => ⟨i, Nat.zero_le i, hij, e, hY⟩) (count_le_windowsExcess r Y 0)) _)

/-! ## What a capacity instance proves -/

/-- **The headline of a capacity certificate.** The trace `r` has `n` references, and no demand-fetch
policy of capacity `C` blocks (any eviction rule, which may read the whole history) hits more than `h`
times on it. An instance file proves it for one trace with literals (`theorem headline : Bounded trace
288500 128 21914`), from `hits_le_free` and a cut list the kernel checks on every reference; pycert reads
the certificate's figures off those literals. It does not say that any policy reaches `h` (that Belady
does is a cross-check outside the kernel), and nothing of caches that bypass (decline to insert a missed
block) or prefetch, of a cache that starts non-empty, of blocks of different sizes, or of other traces. -/
@[expose] public def Bounded (r : List Nat) (n C h : Nat) : Prop :=
  r.length = n ∧ ∀ P : Policy, P.cap = some C → hits P r ≤ h

end Pycert.Capacity
