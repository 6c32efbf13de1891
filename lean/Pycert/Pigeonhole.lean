module

prelude
public import Init.Data.List.Basic
import Init.Omega

/-!
# Pigeonhole on `Nat`

A map on `Nat` that is injective on `[0, a)` and sends it into `[0, b)` needs `a ≤ b` (`le_of_inj`).
-/

namespace Pycert

/-- Pigeonhole: a map on `Nat` that is injective on `[0, a)` and sends it into `[0, b)` needs
`a ≤ b`. -/
public theorem le_of_inj (a : Nat) : ∀ {b : Nat} (f : Nat → Nat), (∀ i, i < a → f i < b) →
    (∀ i j, i < a → j < a → f i = f j → i = j) → a ≤ b := by
  induction a with
  | zero => intro b _ _ _; exact Nat.zero_le b
  | succ a ih =>
    intro b f hlt hinj
    have hm : f a < b := hlt a (Nat.lt_succ_self a)
    have hne : ∀ i, i < a → f i ≠ f a := fun i hi e => by
      have := hinj i a (by omega) (by omega) e
      omega
    have key := ih (b := b - 1) (fun i => if f i < f a then f i else f i - 1)
      (fun i hi => by
        show (if f i < f a then f i else f i - 1) < b - 1
        have h1 := hlt i (by omega)
        have h2 := hne i hi
        by_cases c : f i < f a
        · rw [if_pos c]; omega
        · rw [if_neg c]; omega)
      (fun i j hi hj e => by
        have e : (if f i < f a then f i else f i - 1) = (if f j < f a then f j else f j - 1) := e
        have h1 := hne i hi
        have h2 := hne j hj
        apply hinj i j (by omega) (by omega)
        by_cases ci : f i < f a <;> by_cases cj : f j < f a
        · rw [if_pos ci, if_pos cj] at e; exact e
        · rw [if_pos ci, if_neg cj] at e; omega
        · rw [if_neg ci, if_pos cj] at e; omega
        · rw [if_neg ci, if_neg cj] at e; omega)
    omega

end Pycert
