module

prelude
public import Init.Prelude
import Init.Omega

/-!
# First-touch closed form: a headline that is arithmetic

A store pre-warmed in chunks of `c` tokens holds whole chunks only, so of an `n`-token prompt it
serves `c * (n / c)` tokens and the pooled prefill is the tail `n % c`. The "cut" in prefill work is
`(n - n % c) / n`, kept as an exact numerator/denominator pair of naturals (no `Float`).
-/

namespace Pycert.FirstTouch

/-- Tokens of an `n`-token prompt that a store pre-warmed in chunks of `c` tokens serves. -/
@[expose] public def served (c n : Nat) : Nat := c * (n / c)

/-- Tokens still to prefill with pooling: the tail after the last whole chunk. -/
@[expose] public def pooledPrefill (c n : Nat) : Nat := n % c

/-- The cut in prefill work as `(numerator, denominator)`: `(n - pooledPrefill c n) / n`, against
`n` tokens without pooling. -/
@[expose] public def cut (c n : Nat) : Nat × Nat := (n - pooledPrefill c n, n)

/-- Served and pooled-prefill tokens add up to the prompt: `c * (n / c) + n % c = n`, for every
`c` and `n` (for `c = 0` both sides are `n`, since `n / 0 = 0` and `n % 0 = n`). -/
public theorem served_add_pooledPrefill (c n : Nat) : served c n + pooledPrefill c n = n :=
  Nat.div_add_mod n c

/-- The identity `cut = c * (n / c) / n`, exactly: the cut's numerator is `c * (n / c)` and its
denominator `n`, for every `c` and `n`. It says nothing about the size of the cut. -/
public theorem cut_eq (c n : Nat) : cut c n = (c * (n / c), n) := by
  have h := Nat.div_add_mod n c
  show (n - n % c, n) = (c * (n / c), n)
  have e : n - n % c = c * (n / c) := by omega
  rw [e]

/-- The same identity as a cross-multiplication of the two fractions. -/
public theorem cut_cross (c n : Nat) : (cut c n).1 * n = c * (n / c) * (cut c n).2 := by
  rw [cut_eq]

/-- The cut exceeds one half, `n < 2 * numerator`, for every chunk size `c > 0` and every prompt of
at least `c` tokens (so in particular for every `n ≥ 2c`). It needs `c > 0` (with `c = 0` the store
serves nothing) and `n ≥ c` (for `n < c` nothing is served); it says nothing about shorter prompts. -/
public theorem cut_gt_half_of_le {c n : Nat} (hc : 0 < c) (hn : c ≤ n) : (cut c n).2 < 2 * (cut c n).1 := by
  rw [cut_eq]
  show n < 2 * (c * (n / c))
  have h1 : 1 ≤ n / c := (Nat.le_div_iff_mul_le hc).2 (by omega)
  have h2 : c * 1 ≤ c * (n / c) := Nat.mul_le_mul_left c h1
  have h3 := Nat.div_add_mod n c
  have h4 := Nat.mod_lt n hc
  omega

/-- The issue's form: for every `c > 0` and every `n ≥ 2c`, the cut exceeds one half. -/
public theorem cut_gt_half {c n : Nat} (hc : 0 < c) (hn : 2 * c ≤ n) : (cut c n).2 < 2 * (cut c n).1 :=
  cut_gt_half_of_le hc (by omega)

/-- Any floor `p / q ≤ 1/2` is met, `p * n ≤ q * numerator`, by every prompt of at least `c` tokens
when `c > 0`. It does not speak to floors above one half. -/
public theorem floor_met {c n p q : Nat} (hc : 0 < c) (hn : c ≤ n) (hpq : 2 * p ≤ q) :
    p * (cut c n).2 ≤ q * (cut c n).1 := by
  have h := cut_gt_half_of_le hc hn
  have h1 : 2 * p * (cut c n).2 ≤ q * (cut c n).2 := Nat.mul_le_mul_right _ hpq
  have h2 : q * (cut c n).2 ≤ q * (2 * (cut c n).1) := Nat.mul_le_mul_left q (Nat.le_of_lt h)
  rw [Nat.mul_assoc] at h1
  rw [Nat.mul_left_comm] at h2
  omega

/-- The pre-registered gate is vacuous: with LMCache's chunk of 256 tokens, every prompt of at least
512 tokens meets the floor 0.30 (`3 * n ≤ 10 * numerator`). It holds already from 256 tokens; it
says nothing about prompts shorter than that. -/
public theorem lmcache_floor_vacuous {n : Nat} (hn : 512 ≤ n) : 3 * (cut 256 n).2 ≤ 10 * (cut 256 n).1 :=
  floor_met (by decide) (by omega) (by decide)

/-! ## The engine's closed form: the last token computed again -/

/-- Tokens of an `n`-token prompt served from a store of whole chunks of `c` tokens by an engine that computes
the prompt's last token again: the whole chunks of the first `n - 1` tokens. -/
@[expose] public def lastServed (c n : Nat) : Nat := c * ((n - 1) / c)

/-- **Where the two closed forms differ.** For a prompt of `n ≥ 1` tokens and chunks of `c ≥ 1` tokens, the
engine's closed form serves one chunk less than `served` when `c` divides `n`, and the same otherwise. -/
public theorem lastServed_add {c n : Nat} (hc : 0 < c) (hn : 0 < n) :
    lastServed c n + (if n % c = 0 then c else 0) = served c n := by
  unfold lastServed served
  have h := Nat.div_add_mod n c
  have hr := Nat.mod_lt n hc
  by_cases e : n % c = 0
  · rw [if_pos e]
    have hq : 1 ≤ n / c := by
      rcases Nat.eq_zero_or_pos (n / c) with z | p
      · rw [z, e, Nat.mul_zero] at h; omega
      · exact p
    have hm : n - 1 = (c - 1) + c * (n / c - 1) := by
      rw [Nat.mul_sub_one]; have := Nat.mul_le_mul_left c hq; rw [Nat.mul_one] at this; omega
    rw [hm, Nat.add_mul_div_left _ _ hc, Nat.div_eq_of_lt (by omega), Nat.zero_add, Nat.mul_sub_one]
    have := Nat.mul_le_mul_left c hq; rw [Nat.mul_one] at this; omega
  · rw [if_neg e, Nat.add_zero]
    have hm : n - 1 = (n % c - 1) + c * (n / c) := by omega
    rw [hm, Nat.add_mul_div_left _ _ hc, Nat.div_eq_of_lt (by omega), Nat.zero_add]

/-! ## What an instance proves -/

/-- **The headline of a first-touch certificate.** A store pre-warmed in chunks of `c` tokens serves
`served` of an `n`-token prompt, and for every prompt of at least `2 * c` tokens the cut exceeds one
half and meets a floor of 0.30. An instance file proves it with literals, and pycert reads the
certificate's figures off them. It says nothing about prompts shorter than `2 * c`. -/
@[expose] public def CutAt (c n served : Nat) : Prop :=
  cut c n = (served, n) ∧
    ∀ m, 2 * c ≤ m → (cut c m).2 < 2 * (cut c m).1 ∧ 3 * (cut c m).2 ≤ 10 * (cut c m).1

/-- `CutAt` from the served count `c * (n / c)` (`cut_eq`, `cut_gt_half`, `floor_met`). -/
public theorem cutAt {c n served : Nat} (hc : 0 < c) (hs : c * (n / c) = served) : CutAt c n served :=
  ⟨by rw [cut_eq, hs], fun _ h => ⟨cut_gt_half hc h, floor_met hc (by omega) (by decide)⟩⟩

/-- **The headline of a measured row of the first-touch dataset.** `CutAt c n served`, and the engine's
closed form: an engine that computes the prompt's last token again serves `last = c * ((n - 1) / c)`
(`lastServed`). It says nothing of what an engine measured. -/
@[expose] public def RampAt (c n served last : Nat) : Prop := CutAt c n served ∧ lastServed c n = last

/-- `RampAt` from the two served counts (`cutAt`). -/
public theorem rampAt {c n served last : Nat} (hc : 0 < c) (hs : c * (n / c) = served) (hl : c * ((n - 1) / c) = last) :
    RampAt c n served last :=
  ⟨cutAt hc hs, hl⟩

end Pycert.FirstTouch
