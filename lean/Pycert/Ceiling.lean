module

prelude
public import Pycert.Cache
public import Pycert.Lists
import Init.Omega

/-!
# Hit ceiling: no cache beats the traffic

For every demand-fetch policy of the cache model (`Pycert.Cache`), any capacity and any eviction
rule, hits plus distinct blocks are at most the trace length; the unbounded cache attains it.
-/

namespace Pycert.Ceiling

/-- The ceiling on the hit ratio, `(|r| - distinct r) / |r|`, as `(numerator, denominator)`. -/
@[expose] public noncomputable def ceiling (r : List Nat) : Nat × Nat := (r.length - distinct r, r.length)

/-- The hit ratio of policy `P` on `r`, `hits / |r|`, as `(numerator, denominator)`. -/
@[expose] public noncomputable def hitRatio (P : Policy) (r : List Nat) : Nat × Nat := (hits P r, r.length)

theorem runHits_cons (P : Policy) (c h : List Nat) (x : Nat) (xs : List Nat) :
    runHits P c h (x :: xs) =
      if x ∈ c then runHits P c (x :: h) xs + 1 else runHits P (admit P c h x) (x :: h) xs := rfl

theorem mem_bound {y : Nat} : ∀ {o : Option Nat} {l : List Nat}, y ∈ bound o l → y ∈ l
  | none, _, hy => hy
  | some _, _, hy => mem_of_mem_take hy

theorem mem_admit (P : Policy) (c h : List Nat) (x : Nat) : ∀ y, y ∈ admit P c h x → y ∈ x :: c := by
  intro y hy
  rcases mem_cons.1 (mem_bound hy) with e | hy
  · subst e; exact mem_cons_self _ _
  · exact mem_cons_of_mem x (mem_of_mem_filter hy)

/-- The invariant behind the ceiling: from any cache `c`, hits plus the first touches relative to `c`
are at most the length. -/
theorem runHits_add_le (P : Policy) (r : List Nat) :
    ∀ (c h : List Nat), runHits P c h r + distinctFrom c r ≤ r.length := by
  induction r with
  | nil => intro c h; exact Nat.le_refl 0
  | cons x xs ih =>
    intro c h
    rw [List.length_cons, runHits_cons]
    by_cases hx : x ∈ c
    · rw [if_pos hx, distinctFrom_of_mem hx]
      have := ih c (x :: h)
      omega
    · rw [if_neg hx, distinctFrom_of_not_mem hx]
      have h1 := ih (admit P c h x) (x :: h)
      have h2 := distinctFrom_anti xs (mem_admit P c h x)
      omega

/-- **Hit ceiling.** For every policy `P` (any capacity, bounded or not, any eviction rule that may
look at the cache and the whole history) and every trace `r`, hits plus distinct blocks are at most
the trace length: each distinct block misses at least once, on its first reference. It does not say
any policy reaches the bound (see `hits_unbounded`), nor anything about a cache that prefetches:
in this model blocks enter only on a miss. -/
public theorem hits_add_distinct_le (P : Policy) (r : List Nat) : hits P r + distinct r ≤ r.length :=
  runHits_add_le P r [] []

/-- Every policy misses at least once per distinct block. Same scope as `hits_add_distinct_le`. -/
public theorem distinct_le_misses (P : Policy) (r : List Nat) : distinct r ≤ misses P r := by
  have := hits_add_distinct_le P r
  show distinct r ≤ r.length - hits P r
  omega

theorem runHits_unbounded (r : List Nat) :
    ∀ (c h : List Nat), runHits unbounded c h r + distinctFrom c r = r.length := by
  induction r with
  | nil => intro c h; rfl
  | cons x xs ih =>
    intro c h
    rw [List.length_cons, runHits_cons]
    by_cases hx : x ∈ c
    · rw [if_pos hx, distinctFrom_of_mem hx]
      have := ih c (x :: h)
      omega
    · rw [if_neg hx, distinctFrom_of_not_mem hx]
      have e : admit unbounded c h x = x :: c := by
        show x :: c.filter (fun _ => true) = x :: c
        rw [filter_true]
      rw [e]
      have := ih (x :: c) (x :: h)
      omega

/-- **The ceiling is attained.** The unbounded cache hits exactly `|r| - distinct r` times on every
trace: it misses only on first references. It does not say a bounded cache attains it. -/
public theorem hits_unbounded (r : List Nat) : hits unbounded r + distinct r = r.length :=
  runHits_unbounded r [] []

/-- The unbounded cache misses exactly once per distinct block. -/
public theorem misses_unbounded (r : List Nat) : misses unbounded r = distinct r := by
  have := hits_unbounded r
  show r.length - hits unbounded r = distinct r
  omega

/-- **The ceiling as an exact fraction.** For every policy and trace, `hits / |r| ≤ (|r| - distinct r) / |r|`,
compared by cross-multiplication of the `(numerator, denominator)` pairs. For the empty trace both
fractions are `0 / 0` and the statement is `0 ≤ 0`. -/
public theorem hitRatio_le_ceiling (P : Policy) (r : List Nat) :
    (hitRatio P r).1 * (ceiling r).2 ≤ (ceiling r).1 * (hitRatio P r).2 := by
  have := hits_add_distinct_le P r
  show hits P r * r.length ≤ (r.length - distinct r) * r.length
  exact Nat.mul_le_mul_right _ (by omega)

/-- The unbounded cache's hit ratio is the ceiling itself, as the same pair. -/
public theorem hitRatio_unbounded (r : List Nat) : hitRatio unbounded r = ceiling r := by
  have := hits_unbounded r
  show (hits unbounded r, r.length) = (r.length - distinct r, r.length)
  have e : hits unbounded r = r.length - distinct r := by omega
  rw [e]

/-! ## What a whole-trace instance proves -/

/-- **The headline of a ceiling certificate.** The trace `r` has `n` references and `d` distinct
blocks, and no demand-fetch policy, of any capacity or eviction rule, hits more than `h` times on it.
An instance file proves it for one trace with literals (`theorem headline : Bounded trace 5339 1356
3983`), and pycert reads the certificate's figures off those literals. It says nothing about a cache
that prefetches, nor about other traces. -/
@[expose] public def Bounded (r : List Nat) (n d h : Nat) : Prop :=
  r.length = n ∧ distinct r = d ∧ ∀ P : Policy, hits P r ≤ h

/-- `Bounded` from a trace's two counts: the hit bound is `n - d` (`hits_add_distinct_le`). -/
public theorem bounded_of_counts {r : List Nat} {n d : Nat} (hn : r.length = n) (hd : distinct r = d) :
    Bounded r n d (n - d) :=
  ⟨hn, hd, fun P => by have := hits_add_distinct_le P r; omega⟩

end Pycert.Ceiling
