module

prelude
public import Init.Data.List.Basic
import Init.Omega

/-!
# Digits in base `a`

`digit a k i` is digit `i` of `k` in base `a`, least significant first; a number below `a ^ m` is
determined by its first `m` digits (`digit_inj`).
-/

namespace Pycert

/-- Digit `i` of `k` in base `a`, least significant first. -/
@[expose] public def digit (a : Nat) : Nat → Nat → Nat
  | k, 0 => k % a
  | k, i + 1 => digit a (k / a) i

public theorem digit_lt {a : Nat} (ha : 0 < a) (k i : Nat) : digit a k i < a := by
  induction i generalizing k with
  | zero => exact Nat.mod_lt k ha
  | succ i ih => exact ih (k / a)

/-- A number below `a ^ m` is determined by its first `m` digits in base `a`. -/
public theorem digit_inj {a : Nat} (m : Nat) : ∀ {k k' : Nat}, k < a ^ m → k' < a ^ m →
    (∀ i, i < m → digit a k i = digit a k' i) → k = k' := by
  induction m with
  | zero =>
    intro k k' hk hk' _
    rw [Nat.pow_zero] at hk hk'
    omega
  | succ m ih =>
    intro k k' hk hk' h
    rw [Nat.pow_succ] at hk hk'
    have ha : 0 < a := by
      cases a with
      | zero => rw [Nat.mul_zero] at hk; exact absurd hk (Nat.not_lt_zero k)
      | succ a => exact Nat.succ_pos a
    have e0 : k % a = k' % a := h 0 (Nat.succ_pos m)
    have e1 : k / a = k' / a :=
      ih ((Nat.div_lt_iff_lt_mul ha).2 hk) ((Nat.div_lt_iff_lt_mul ha).2 hk')
        (fun i hi => h (i + 1) (Nat.succ_lt_succ hi))
    calc k = a * (k / a) + k % a := (Nat.div_add_mod k a).symm
      _ = a * (k' / a) + k' % a := by rw [e1, e0]
      _ = k' := Nat.div_add_mod k' a

end Pycert
