module

prelude
public import Pycert.Bits
public import Init.Data.List.Basic
import Init.Data.Nat.Bitwise.Lemmas
import Init.Omega

/-!
# Transposing a packed vector into bit planes

A packed vector of `2 ^ M` fields of `2 ^ f` bits has bit `2 ^ f · t + b` for bit `b` of field `t`;
its bit planes want that bit at `2 ^ M · b + t`. Both indices are the same bits in another order (a
rotation of the `M + f` index bits), and exchanging two index bits `u < v` of every position is one
delta swap (`stage`, a `Pycert.Bits.layer` by `2 ^ v - 2 ^ u` on the positions with bit `u` set and
bit `v` clear). `testBit_transpose` says what a list of such stages does, given that the index-bit
exchanges compose to the rotation: a fact about `M + f` small numbers, which an instance decides.

What this file does not say: anything about a list of exchanges that is not that rotation.
-/

namespace Pycert.Transpose
open Pycert.Bits

/-- The positions below `2 ^ L` with bit `u` set and bit `v` clear. -/
@[expose] public def swapMask (L u v : Nat) : Nat := pat (fun e => if e = u then 1 else if e = v then 0 else 2) L

/-- Exchange index bits `u < v` of every position below `2 ^ L`. -/
@[expose] public def stage (L : Nat) (uv : Nat × Nat) (X : Nat) : Nat :=
  layer (2 ^ L) (2 ^ uv.2 - 2 ^ uv.1) (swapMask L uv.1 uv.2) X

/-- Stages applied first to last. -/
@[expose] public def stages (L : Nat) : List (Nat × Nat) → Nat → Nat
  | [], X => X
  | uv :: rest, X => stages L rest (stage L uv X)

/-- Index bits `u` and `v` of `p` exchanged. -/
@[expose] public def bitSwap (u v p : Nat) : Nat := if p.testBit u = p.testBit v then p else p ^^^ 2 ^ u ^^^ 2 ^ v

/-- Index positions `u` and `v` exchanged. -/
@[expose] public def swapIdx (u v e : Nat) : Nat := if e = u then v else if e = v then u else e

/-- Where bit `e` of a position ends after the exchanges, first to last. -/
@[expose] public def idxComp : List (Nat × Nat) → Nat → Nat
  | [], e => e
  | uv :: rest, e => idxComp rest (swapIdx uv.1 uv.2 e)

/-- The position a bit of the stages' result is read from. -/
@[expose] public def bsComp : List (Nat × Nat) → Nat → Nat
  | [], p => p
  | uv :: rest, p => bitSwap uv.1 uv.2 (bsComp rest p)

theorem testBit_bitSwap {u v : Nat} (huv : u ≠ v) (p e : Nat) :
    (bitSwap u v p).testBit e = p.testBit (swapIdx u v e) := by
  unfold bitSwap swapIdx
  by_cases h : p.testBit u = p.testBit v
  · rw [if_pos h]
    by_cases eu : e = u
    · subst eu; rw [if_pos rfl, h]
    · by_cases ev : e = v
      · subst ev; rw [if_neg eu, if_pos rfl, h]
      · rw [if_neg eu, if_neg ev]
  · rw [if_neg h, Nat.testBit_xor, Nat.testBit_xor, Nat.testBit_two_pow, Nat.testBit_two_pow]
    by_cases eu : e = u
    · subst eu
      rw [if_pos rfl]
      simp [show ¬ v = e from fun x => huv x.symm]
      cases hu : p.testBit e <;> cases hv : p.testBit v <;> simp_all
    · by_cases ev : e = v
      · subst ev
        rw [if_neg eu, if_pos rfl]
        simp [show ¬ u = e from fun x => eu x.symm]
        cases hu : p.testBit u <;> cases hv : p.testBit e <;> simp_all
      · rw [if_neg eu, if_neg ev]
        simp [show ¬ u = e from fun x => eu x.symm, show ¬ v = e from fun x => ev x.symm]

theorem bitSwap_lt {L u v p : Nat} (hu : u < L) (hv : v < L) (hp : p < 2 ^ L) : bitSwap u v p < 2 ^ L := by
  unfold bitSwap
  split
  · exact hp
  · exact Nat.xor_lt_two_pow (Nat.xor_lt_two_pow hp (Nat.pow_lt_pow_right (by decide) hu))
      (Nat.pow_lt_pow_right (by decide) hv)

theorem le_of_testBit {r u : Nat} (h : r.testBit u = true) : 2 ^ u ≤ r :=
  Nat.le_of_not_lt fun hl => by rw [Nat.testBit_lt_two_pow hl] at h; exact absurd h (by decide)

/-- Moving from bit pattern `(u set, v clear)` by `2 ^ v - 2 ^ u` flips both bits. -/
theorem add_shift {r u v : Nat} (huv : u < v) (hu : r.testBit u = true) (hv : r.testBit v = false) :
    r + (2 ^ v - 2 ^ u) = r ^^^ 2 ^ u ^^^ 2 ^ v := by
  have h1 := sub_two_pow_eq_xor hu
  have hv' : (r ^^^ 2 ^ u).testBit v = false := by
    rw [Nat.testBit_xor, hv, Nat.testBit_two_pow]; simp [show ¬ u = v by omega]
  have h2 := add_two_pow_eq_xor hv'
  have h3 := le_of_testBit hu
  have h4 : 2 ^ u ≤ 2 ^ v := Nat.pow_le_pow_right (by decide) (by omega)
  omega

theorem testBit_swapMask {L u v q : Nat} (huv : u < v) (hv : v < L) :
    (swapMask L u v).testBit q = true ↔ q < 2 ^ L ∧ q.testBit u = true ∧ q.testBit v = false := by
  unfold swapMask
  rw [testBit_pat]
  constructor
  · rintro ⟨h1, h2⟩
    refine ⟨h1, (h2 u (by omega)).2 (by simp), (h2 v hv).1 (by simp [show ¬ v = u by omega])⟩
  · rintro ⟨h1, h2, h3⟩
    refine ⟨h1, fun e _ => ⟨fun h => ?_, fun h => ?_⟩⟩
    · by_cases eu : e = u
      · simp [eu] at h
      · by_cases ev : e = v
        · subst ev; exact h3
        · simp [eu, ev] at h
    · by_cases eu : e = u
      · subst eu; exact h2
      · by_cases ev : e = v
        · subst ev; simp [show ¬ e = u by omega] at h
        · simp [eu, ev] at h

theorem swapPos_stage {L u v p : Nat} (huv : u < v) (hv : v < L) (hp : p < 2 ^ L) :
    swapPos (2 ^ L) (2 ^ v - 2 ^ u) (swapMask L u v) p = bitSwap u v p := by
  have hM := fun q => testBit_swapMask (L := L) (q := q) huv hv
  have hpow : ∀ e, e < L → 2 ^ e < 2 ^ L := fun e he => Nat.pow_lt_pow_right (by decide) he
  -- the cleaned mask is the mask itself
  have hclean : ∀ q, (clean (2 ^ L) (2 ^ v - 2 ^ u) (swapMask L u v)).testBit q = (swapMask L u v).testBit q := by
    intro q
    rw [testBit_clean]
    cases hq : (swapMask L u v).testBit q
    · rfl
    · obtain ⟨q1, q2, q3⟩ := (hM q).1 hq
      have e := add_shift huv q2 q3
      have hlt : q ^^^ 2 ^ u ^^^ 2 ^ v < 2 ^ L :=
        Nat.xor_lt_two_pow (Nat.xor_lt_two_pow q1 (hpow u (by omega))) (hpow v hv)
      have no : ¬ (2 ^ v - 2 ^ u ≤ q ∧ (swapMask L u v).testBit (q - (2 ^ v - 2 ^ u)) = true) := by
        rintro ⟨h1, h2⟩
        obtain ⟨_, r2, r3⟩ := (hM _).1 h2
        have e2 := add_shift huv r2 r3
        rw [Nat.sub_add_cancel h1] at e2
        have : q.testBit u = false := by
          rw [e2, Nat.testBit_xor, Nat.testBit_xor, r2, Nat.testBit_two_pow, Nat.testBit_two_pow]
          simp [show ¬ v = u by omega]
        rw [q2] at this; exact absurd this (by decide)
      have hs : q < 2 ^ L - (2 ^ v - 2 ^ u) := by omega
      have n2 : (decide (2 ^ v - 2 ^ u ≤ q) && (swapMask L u v).testBit (q - (2 ^ v - 2 ^ u))) = false := by
        cases h : (decide (2 ^ v - 2 ^ u ≤ q) && (swapMask L u v).testBit (q - (2 ^ v - 2 ^ u)))
        · rfl
        · rw [Bool.and_eq_true, decide_eq_true_eq] at h; exact absurd h no
      rw [n2, decide_eq_true hs]; rfl
  unfold swapPos bitSwap
  simp only [hclean]
  cases hu : p.testBit u <;> cases hv' : p.testBit v
  · -- both clear
    have n1 : (swapMask L u v).testBit p = false := by
      cases h : (swapMask L u v).testBit p
      · rfl
      · rw [((hM p).1 h).2.1] at hu; exact absurd hu (by decide)
    rw [if_neg (by rw [n1]; decide), if_pos rfl]
    rw [if_neg]
    rintro ⟨h1, h2⟩
    obtain ⟨_, r2, r3⟩ := (hM _).1 h2
    have e2 := add_shift huv r2 r3
    rw [Nat.sub_add_cancel h1] at e2
    have : p.testBit v = true := by
      rw [e2, Nat.testBit_xor, Nat.testBit_xor, r3, Nat.testBit_two_pow, Nat.testBit_two_pow]
      simp [show ¬ u = v by omega]
    rw [hv'] at this; exact absurd this (by decide)
  · -- u clear, v set: moves down
    have n1 : (swapMask L u v).testBit p = false := by
      cases h : (swapMask L u v).testBit p
      · rfl
      · rw [((hM p).1 h).2.1] at hu; exact absurd hu (by decide)
    obtain ⟨r, hr⟩ : ∃ r, r = p ^^^ 2 ^ u ^^^ 2 ^ v := ⟨_, rfl⟩
    have r2 : r.testBit u = true := by
      rw [hr, Nat.testBit_xor, Nat.testBit_xor, hu, Nat.testBit_two_pow, Nat.testBit_two_pow]
      simp [show ¬ v = u by omega]
    have r3 : r.testBit v = false := by
      rw [hr, Nat.testBit_xor, Nat.testBit_xor, hv', Nat.testBit_two_pow, Nat.testBit_two_pow]
      simp [show ¬ u = v by omega]
    have rlt : r < 2 ^ L := by rw [hr]; exact Nat.xor_lt_two_pow (Nat.xor_lt_two_pow hp (hpow u (by omega))) (hpow v hv)
    have e2 := add_shift huv r2 r3
    have back : r ^^^ 2 ^ u ^^^ 2 ^ v = p := by
      rw [hr]; apply Nat.eq_of_testBit_eq; intro i; simp only [Nat.testBit_xor]
      cases p.testBit i <;> cases (2 ^ u).testBit i <;> cases (2 ^ v).testBit i <;> rfl
    rw [back] at e2
    have hm : (swapMask L u v).testBit r = true := (hM r).2 ⟨rlt, r2, r3⟩
    have cond : 2 ^ v - 2 ^ u ≤ p ∧ (swapMask L u v).testBit (p - (2 ^ v - 2 ^ u)) = true :=
      ⟨by omega, by rw [show p - (2 ^ v - 2 ^ u) = r by omega]; exact hm⟩
    rw [if_neg (by rw [n1]; decide), if_pos cond, if_neg (by decide : ¬ (false = true)), ← hr]
    omega
  · -- u set, v clear: moves up
    have hm : (swapMask L u v).testBit p = true := (hM p).2 ⟨hp, hu, hv'⟩
    rw [if_pos hm, if_neg (by simp)]
    exact add_shift huv hu hv'
  · -- both set
    have n1 : (swapMask L u v).testBit p = false := by
      cases h : (swapMask L u v).testBit p
      · rfl
      · rw [((hM p).1 h).2.2] at hv'; exact absurd hv' (by decide)
    rw [if_neg (by rw [n1]; decide), if_pos rfl]
    rw [if_neg]
    rintro ⟨h1, h2⟩
    obtain ⟨_, r2, r3⟩ := (hM _).1 h2
    have e2 := add_shift huv r2 r3
    rw [Nat.sub_add_cancel h1] at e2
    have : p.testBit u = false := by
      rw [e2, Nat.testBit_xor, Nat.testBit_xor, r2, Nat.testBit_two_pow, Nat.testBit_two_pow]
      simp [show ¬ v = u by omega]
    rw [hu] at this; exact absurd this (by decide)

theorem testBit_stages {L : Nat} : ∀ (l : List (Nat × Nat)), (∀ uv : Nat × Nat, uv ∈ l → uv.1 < uv.2 ∧ uv.2 < L) →
    ∀ (X p : Nat), p < 2 ^ L → (stages L l X).testBit p = X.testBit (bsComp l p) ∧ bsComp l p < 2 ^ L
  | [], _, _, _, hp => ⟨rfl, hp⟩
  | uv :: rest, h, X, p, hp => by
    have hr := testBit_stages rest (fun x hx => h x (List.Mem.tail _ hx)) (stage L uv X) p hp
    obtain ⟨h1, h2⟩ := h uv (List.Mem.head _)
    refine ⟨?_, bitSwap_lt (by omega) h2 hr.2⟩
    show (stages L rest (stage L uv X)).testBit p = X.testBit (bitSwap uv.1 uv.2 (bsComp rest p))
    rw [hr.1]
    unfold stage
    rw [testBit_layer, swapPos_stage h1 h2 hr.2]

theorem testBit_bsComp : ∀ (l : List (Nat × Nat)), (∀ uv : Nat × Nat, uv ∈ l → uv.1 < uv.2) →
    ∀ (p e : Nat), (bsComp l p).testBit e = p.testBit (idxComp l e)
  | [], _, _, _ => rfl
  | uv :: rest, h, p, e => by
    show (bitSwap uv.1 uv.2 (bsComp rest p)).testBit e = p.testBit (idxComp rest (swapIdx uv.1 uv.2 e))
    rw [testBit_bitSwap (by have := (h uv (List.Mem.head _)); omega),
      testBit_bsComp rest (fun x hx => h x (List.Mem.tail _ hx))]

theorem idxComp_of_ge {L : Nat} : ∀ (l : List (Nat × Nat)), (∀ uv : Nat × Nat, uv ∈ l → uv.1 < uv.2 ∧ uv.2 < L) →
    ∀ e, L ≤ e → idxComp l e = e
  | [], _, _, _ => rfl
  | uv :: rest, h, e, he => by
    show idxComp rest (swapIdx uv.1 uv.2 e) = e
    have := h uv (List.Mem.head _)
    rw [show swapIdx uv.1 uv.2 e = e by unfold swapIdx; rw [if_neg (by omega), if_neg (by omega)]]
    exact idxComp_of_ge rest (fun x hx => h x (List.Mem.tail _ hx)) e he

/-- **Transposition.** If the index-bit exchanges `rot` compose to the rotation that moves the low
`f` index bits above the high `M`, the stages send bit `2 ^ f · t + b` of `X` (bit `b` of field `t`)
to bit `2 ^ M · b + t` (bit `t` of plane `b`). -/
public theorem testBit_transpose {f M : Nat} {rot : List (Nat × Nat)}
    (hpairs : ∀ uv : Nat × Nat, uv ∈ rot → uv.1 < uv.2 ∧ uv.2 < M + f)
    (hrot : ∀ e, e < M + f → idxComp rot e = if e < f then M + e else e - f)
    (X : Nat) {t b : Nat} (ht : t < 2 ^ M) (hb : b < 2 ^ f) :
    (stages (M + f) rot X).testBit (2 ^ M * b + t) = X.testBit (2 ^ f * t + b) := by
  have hp : 2 ^ M * b + t < 2 ^ (M + f) := by
    rw [Nat.pow_add]
    have : 2 ^ M * (b + 1) ≤ 2 ^ M * 2 ^ f := Nat.mul_le_mul_left _ hb
    rw [Nat.mul_succ] at this
    omega
  obtain ⟨h1, _⟩ := testBit_stages rot hpairs X _ hp
  rw [h1]
  congr 1
  apply Nat.eq_of_testBit_eq
  intro e
  rw [testBit_bsComp rot (fun x hx => (hpairs x hx).1)]
  by_cases he : e < M + f
  · rw [hrot e he, Nat.testBit_two_pow_mul_add _ hb]
    by_cases hef : e < f
    · rw [if_pos hef, if_pos hef, Nat.testBit_two_pow_mul_add _ ht, if_neg (by omega), Nat.add_sub_cancel_left]
    · rw [if_neg hef, if_neg hef, Nat.testBit_two_pow_mul_add _ ht, if_pos (by omega)]
  · rw [idxComp_of_ge rot hpairs e (by omega), Nat.testBit_lt_two_pow (Nat.lt_of_lt_of_le hp
      (Nat.pow_le_pow_right (by decide) (by omega))), Nat.testBit_two_pow_mul_add _ hb, if_neg (by omega),
      Nat.testBit_lt_two_pow (Nat.lt_of_lt_of_le ht (Nat.pow_le_pow_right (by decide) (by omega)))]

end Pycert.Transpose
