module

prelude
public import Pycert.Capacity
import Init.Omega

/-!
# The optimum at a capacity, the other way: reuse pairs a cache can keep

`Pycert.Capacity` shows that no policy of capacity `C` hits more than a bound. This file shows when
a count of hits *is* reached: pick a set `S` of references (the starts of reuse pairs: `i ∈ S` pairs
with the next reference to the same block). If every start has a next reference and at most `C - 1`
pairs are open at every step (`i < t` and the block not referenced again up to `t` included), a
demand-fetch policy of capacity `C` hits at least `|S|` times (`realise`). The policy keeps, on each
miss, exactly the blocks whose latest reference is a start: with the block just referenced they are
at most `C` (this is where `C - 1`, not `C`, is needed), so the truncation to capacity drops none of
them, and every pair's second reference hits.

With `Pycert.Capacity.Bounded` this gives `Optimum`: a trace's best hit count at a capacity, both
ways. The model is `Pycert.Cache`'s: no bypass, no prefetch, an empty cache at the start and blocks
of size one.
-/

namespace Pycert.Capacity
open Pycert.Ceiling

/-- The pair that starts at reference `i` is open at step `t`: `i < t` and `i`'s block is not
referenced again up to `t`, included. With a later reference `j` to the block, that is `i < t < j`
for the first such `j`. -/
@[expose] public def Open (r : List Nat) (i t : Nat) : Prop :=
  i < t ∧ ∀ u, i < u → u ≤ t → nth r u ≠ nth r i

/-- Block `y`'s latest reference before step `t` is a start. -/
def Pending (r : List Nat) (S : Nat → Prop) (t y : Nat) : Prop :=
  ∃ i, i < t ∧ S i ∧ nth r i = y ∧ ∀ u, i < u → u < t → nth r u ≠ y

/-- The policy that keeps, on a miss at step `t` (the history's length), the blocks whose latest
reference is a start. -/
noncomputable def realiser (r : List Nat) (S : Nat → Prop) (C : Nat) : Policy :=
  ⟨some C, fun _ h _ y => @decide (Pending r S h.length y) (Classical.propDecidable _)⟩

theorem cacheAt_succ (P : Policy) (r : List Nat) (t : Nat) :
    cacheAt P r (t + 1) = if nth r t ∈ cacheAt P r t then cacheAt P r t
      else admit P (cacheAt P r t) (state P r t).2 (nth r t) := rfl

/-- No entry twice. -/
def Distinct : List Nat → Prop
  | [] => True
  | x :: l => ¬ x ∈ l ∧ Distinct l

theorem distinct_filter (p : Nat → Bool) : ∀ {l : List Nat}, Distinct l → Distinct (l.filter p)
  | [], _ => trivial
  | a :: l, ⟨ha, hl⟩ => by
    cases hp : p a
    · have e : List.filter p (a :: l) = List.filter p l := by simp only [List.filter, hp]
      rw [e]; exact distinct_filter p hl
    · have e : List.filter p (a :: l) = a :: List.filter p l := by simp only [List.filter, hp]
      rw [e]; exact ⟨fun h => ha (mem_of_mem_filter h), distinct_filter p hl⟩

theorem distinct_take : ∀ (k : Nat) {l : List Nat}, Distinct l → Distinct (l.take k)
  | 0, _, _ => by rw [List.take_zero]; trivial
  | _ + 1, [], _ => by rw [List.take_nil]; trivial
  | k + 1, a :: l, ⟨ha, hl⟩ => by
    rw [List.take_succ_cons]; exact ⟨fun h => ha (mem_of_mem_take h), distinct_take k hl⟩

theorem mem_filter_of {p : Nat → Bool} {y : Nat} : ∀ {l : List Nat}, y ∈ l → p y = true → y ∈ l.filter p
  | [], h, _ => h
  | a :: l, h, hp => by
    cases ha : p a
    · have e : List.filter p (a :: l) = List.filter p l := by simp only [List.filter, ha]
      rw [e]
      rcases mem_cons.1 h with e | h
      · subst e; rw [hp] at ha; exact absurd ha (by decide)
      · exact mem_filter_of h hp
    · have e : List.filter p (a :: l) = a :: List.filter p l := by simp only [List.filter, ha]
      rw [e]
      rcases mem_cons.1 h with e | h
      · subst e; exact mem_cons_self _ _
      · exact mem_cons_of_mem a (mem_filter_of h hp)

theorem take_of_length_le : ∀ (k : Nat) (l : List Nat), l.length ≤ k → l.take k = l
  | _, [], _ => List.take_nil
  | 0, _ :: _, h => by rw [List.length_cons] at h; omega
  | k + 1, a :: l, h => by
    rw [List.take_succ_cons, take_of_length_le k l (by rw [List.length_cons] at h; omega)]

/-- Whatever the policy, the cache never holds a block twice. -/
theorem distinct_cacheAt (P : Policy) (r : List Nat) : ∀ t, Distinct (cacheAt P r t)
  | 0 => trivial
  | t + 1 => by
    rw [cacheAt_succ]
    by_cases hx : nth r t ∈ cacheAt P r t
    · rw [if_pos hx]; exact distinct_cacheAt P r t
    · rw [if_neg hx]
      unfold admit bound
      have d : Distinct (nth r t :: (cacheAt P r t).filter (P.keep (cacheAt P r t) (state P r t).2 (nth r t))) :=
        ⟨fun h => hx (mem_of_mem_filter h), distinct_filter _ (distinct_cacheAt P r t)⟩
      cases P.cap with
      | none => exact d
      | some k => exact distinct_take k d

theorem length_history (P : Policy) (r : List Nat) : ∀ t, (state P r t).2.length = t
  | 0 => rfl
  | t + 1 => by
    show (nth r t :: (state P r t).2).length = t + 1
    rw [List.length_cons, length_history P r t]

theorem one_le_count {p : Nat → Prop} {i n : Nat} (hi : i < n) (hp : p i) : 1 ≤ count p n := by
  have h := count_le_count (fun j => j < 1) p (fun _ => i) (n := 1) (m := n)
    (fun _ _ _ => ⟨hi, hp⟩) (fun a b ha hb _ _ _ => by omega)
  rw [count_succ_pos (p := fun j => j < 1) (Nat.zero_lt_one), count_zero] at h
  exact h

/-- A list with no entry twice, each entry the block of some position `i < n` satisfying `q`, has
at most as many entries as there are such positions. -/
theorem length_le_count (r : List Nat) {n : Nat} : ∀ (l : List Nat) (q : Nat → Prop), Distinct l →
    (∀ y, y ∈ l → ∃ i, i < n ∧ q i ∧ nth r i = y) → l.length ≤ count q n
  | [], _, _, _ => Nat.zero_le _
  | y :: l, q, ⟨hy, hl⟩, h => by
    obtain ⟨i, hi, qi, ei⟩ := h y (mem_cons_self y l)
    have ih := length_le_count r l (fun k => q k ∧ ¬ nth r k = y) hl fun z hz => by
      obtain ⟨k, hk, qk, ek⟩ := h z (mem_cons_of_mem y hz)
      exact ⟨k, hk, ⟨qk, fun e => hy (by rw [← e, ek]; exact hz)⟩, ek⟩
    have one := one_le_count (p := fun k => q k ∧ ¬ ¬ nth r k = y) hi ⟨qi, fun h => h ei⟩
    have split := count_split q (fun k => ¬ nth r k = y) n
    rw [List.length_cons]
    omega

/-- **The policy keeps every open pair.** Under its hypotheses, after the first `t` references the
realiser's cache holds every block whose latest reference is a start. -/
theorem keeps {r : List Nat} {C : Nat} (hC : 1 ≤ C) (S : Nat → Prop)
    (hcov : ∀ t, t < r.length → count (fun i => S i ∧ Open r i t) r.length ≤ C - 1) :
    ∀ t, t ≤ r.length → ∀ y, Pending r S t y → y ∈ cacheAt (realiser r S C) r t
  | 0, _, _, ⟨_, hi, _⟩ => absurd hi (Nat.not_lt_zero _)
  | t + 1, ht, y, ⟨i, hi, si, ei, gap⟩ => by
    by_cases hit : i = t
    · subst hit ei
      exact nth_mem_cacheAt rfl hC r i
    have pt : Pending r S t y := ⟨i, by omega, si, ei, fun u h1 h2 => gap u h1 (by omega)⟩
    have hy := keeps hC S hcov t (by omega) y pt
    rw [cacheAt_succ]
    by_cases hx : nth r t ∈ cacheAt (realiser r S C) r t
    · rw [if_pos hx]; exact hy
    rw [if_neg hx]
    unfold admit bound
    show y ∈ (nth r t :: (cacheAt (realiser r S C) r t).filter _).take C
    have hlen := length_history (realiser r S C) r t
    have mem : ∀ z, z ∈ (cacheAt (realiser r S C) r t).filter ((realiser r S C).keep
        (cacheAt (realiser r S C) r t) (state (realiser r S C) r t).2 (nth r t)) →
        z ∈ cacheAt (realiser r S C) r t ∧ Pending r S t z := fun z hz => by
      refine ⟨mem_of_mem_filter hz, ?_⟩
      have h2 : Pending r S (state (realiser r S C) r t).2.length z :=
        @of_decide_eq_true _ (Classical.propDecidable _) (mem_filter hz)
      rw [hlen] at h2
      exact h2
    have short := length_le_count r (n := r.length) _ (fun i => S i ∧ Open r i t) (distinct_filter _ (distinct_cacheAt _ r t))
      fun z hz => by
        obtain ⟨zc, k, hk, sk, ek, gk⟩ := mem z hz
        refine ⟨k, by omega, ⟨sk, hk, fun u h1 h2 => ?_⟩, ek⟩
        rcases Nat.lt_or_ge u t with h | h
        · exact ek ▸ gk u h1 h
        · rw [show u = t by omega, ek]; exact fun e => hx (e ▸ zc)
    rw [take_of_length_le C _ (by rw [List.length_cons]; have := hcov t (by omega); omega)]
    refine mem_cons_of_mem _ (mem_filter_of hy ?_)
    show @decide _ (Classical.propDecidable _) = true
    rw [hlen]
    exact @decide_eq_true _ (Classical.propDecidable _) pt
where
  mem_filter {p : Nat → Bool} {z : Nat} : ∀ {l : List Nat}, z ∈ l.filter p → p z = true
    | [], h => absurd h (not_mem_nil _)
    | a :: l, h => by
      cases ha : p a
      · have e : List.filter p (a :: l) = List.filter p l := by simp only [List.filter, ha]
        rw [e] at h; exact mem_filter h
      · have e : List.filter p (a :: l) = a :: List.filter p l := by simp only [List.filter, ha]
        rw [e] at h
        rcases mem_cons.1 h with e | h
        · subst e; exact ha
        · exact mem_filter h

/-- If some `j < n` satisfies `q`, a first one does. -/
theorem exists_earliest (q : Nat → Prop) : ∀ n, (∃ j, j < n ∧ q j) → ∃ j, j < n ∧ q j ∧ ∀ u, u < j → ¬ q u
  | 0, ⟨_, h, _⟩ => absurd h (Nat.not_lt_zero _)
  | n + 1, ⟨j, hj, qj⟩ => by
    by_cases h : ∃ k, k < n ∧ q k
    · obtain ⟨k, hk, qk, hmin⟩ := exists_earliest q n h
      exact ⟨k, by omega, qk, hmin⟩
    · have : j = n := by
        rcases Nat.lt_or_ge j n with l | g
        · exact absurd ⟨j, l, qj⟩ h
        · omega
      subst this
      exact ⟨j, by omega, qj, fun u hu qu => h ⟨u, hu, qu⟩⟩

/-- `j` is the next reference after `i` to `i`'s block. -/
def Next (r : List Nat) (i j : Nat) : Prop :=
  i < j ∧ j < r.length ∧ nth r j = nth r i ∧ ∀ u, i < u → u < j → nth r u ≠ nth r i

/-- **Realisability.** Let `S` be a set of references of the trace `r` ("starts"), each with a later
reference to its block, such that at every step `t` at most `C - 1` starts are open (`i < t` and
`i`'s block not referenced again up to `t`). Then some demand-fetch policy of capacity `C ≥ 1` hits
at least `|S|` times on `r`: each start's next reference is a hit. The policy depends on `r` and
`S` (it reads the time off the history's length). This is the statement; it does not say that `S`
is the best such set, and the policy is in the model of `Pycert.Cache` (it inserts every missed
block, never prefetches, starts empty; blocks have size one). -/
public theorem realise {r : List Nat} {C : Nat} (hC : 1 ≤ C) (S : Nat → Prop)
    (hnext : ∀ i, i < r.length → S i → ∃ j, i < j ∧ j < r.length ∧ nth r j = nth r i)
    (hcov : ∀ t, t < r.length → count (fun i => S i ∧ Open r i t) r.length ≤ C - 1) :
    ∃ P : Policy, P.cap = some C ∧ count S r.length ≤ hits P r := by
  refine ⟨realiser r S C, rfl, ?_⟩
  rw [hits_eq_count]
  have total : ∀ i, ∃ j, (∃ k, Next r i k) → Next r i j := fun i =>
    (Classical.em (∃ k, Next r i k)).elim (fun ⟨k, hk⟩ => ⟨k, fun _ => hk⟩) (fun h => ⟨0, fun h' => absurd h' h⟩)
  have next : ∀ i, i < r.length → S i → Next r i (Classical.choose (total i)) := fun i hi si => by
    refine Classical.choose_spec (total i) ?_
    obtain ⟨j, hj, q, hmin⟩ := exists_earliest (fun j => i < j ∧ nth r j = nth r i) r.length
      (let ⟨j, h1, h2, h3⟩ := hnext i hi si; ⟨j, h2, h1, h3⟩)
    exact ⟨j, q.1, hj, q.2, fun u h1 h2 e => hmin u h2 ⟨h1, e⟩⟩
  refine count_le_count S (Hit (realiser r S C) r) (fun i => Classical.choose (total i))
    (fun i hi si => ?_) (fun a b ha hb sa sb e => ?_)
  · obtain ⟨hij, hj, e, gap⟩ := next i hi si
    refine ⟨hj, keeps hC S hcov _ (Nat.le_of_lt hj) _ ⟨i, hij, si, e.symm, fun u h1 h2 => ?_⟩⟩
    rw [e]; exact gap u h1 h2
  · obtain ⟨ha1, _, ea, gapa⟩ := next a ha sa
    obtain ⟨hb1, _, eb, gapb⟩ := next b hb sb
    have e : Classical.choose (total a) = Classical.choose (total b) := e
    rcases Nat.lt_trichotomy a b with l | q | g
    · exact absurd (show nth r b = nth r a by rw [← eb, ← e, ea]) (gapa b l (by rw [e]; exact hb1))
    · exact q
    · exact absurd (show nth r a = nth r b by rw [← ea, e, eb]) (gapb a g (by rw [← e]; exact ha1))

/-- **The headline of a capacity certificate checked both ways.** The trace `r` has `n` references;
no demand-fetch policy of capacity `C` blocks hits more than `h` times on it (`Bounded`), and some
policy of capacity `C` hits exactly `h` times: `h` is the optimum. It says nothing of caches that
bypass (decline to insert a missed block) or prefetch, of a cache that starts non-empty, of blocks
of different sizes, or of other traces; the policy that reaches `h` may read the whole trace (it
is offline, like Belady's). -/
@[expose] public def Optimum (r : List Nat) (n C h : Nat) : Prop :=
  Bounded r n C h ∧ ∃ P : Policy, P.cap = some C ∧ hits P r = h

/-- A bound and a set of `h` starts that a cache of `C ≥ 1` blocks can keep make `h` the optimum. -/
public theorem optimum_of {r : List Nat} {n C h : Nat} (hC : 1 ≤ C) (hb : Bounded r n C h) (S : Nat → Prop)
    (hnext : ∀ i, i < r.length → S i → ∃ j, i < j ∧ j < r.length ∧ nth r j = nth r i)
    (hcov : ∀ t, t < r.length → count (fun i => S i ∧ Open r i t) r.length ≤ C - 1)
    (hS : count S r.length = h) : Optimum r n C h := by
  obtain ⟨P, hP, hge⟩ := realise hC S hnext hcov
  exact ⟨hb, P, hP, Nat.le_antisymm (hb.2 P hP) (hS ▸ hge)⟩

end Pycert.Capacity
