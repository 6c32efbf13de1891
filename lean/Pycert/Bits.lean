module

prelude
public import Init.Data.Nat.Bitwise.Basic
import Init.Data.Nat.Bitwise.Lemmas
import Init.Omega

/-!
# Bits: index patterns and exchange layers on whole numbers

A number is read as a row of bits, bit `p` at position `p`. Two kinds of whole-number operations
move those bits around in a handful of kernel GMP calls, whatever the length of the row:

* `pat L f`: the positions `p < 2 ^ L` whose index bits follow a pattern (`f e = 0`: bit `e` of `p`
  is clear, `1`: set, else free), built by doubling (`testBit_pat`);
* `layer len s M P`: a delta swap, exchanging the bits at `p` and `p + s` of `P` for every `p` in the
  mask `M` (`testBit_layer`). The mask is first cleaned (no position both moves up and is moved onto,
  none moves past `len`), so a layer is an involution on positions whatever `M` holds
  (`swapPos_swapPos`) and keeps `[0, len)` in place (`swapPos_lt`). A list of layers (`routeP`)
  therefore permutes positions with no test to run (`perm`, with its inverse `unperm`).

What this file does not say: which permutation a list of layers realises. Where that matters (a
transposition of index bits, `Pycert.Transpose`) it is proved from the masks' patterns.
-/

namespace Pycert.Bits

/-- The positions `p < 2 ^ L` such that, for every `e < L`, bit `e` of `p` is clear when `f e = 0`
and set when `f e = 1` (any other value leaves it free). -/
@[expose] public def pat (f : Nat → Nat) : Nat → Nat
  | 0 => 1
  | L + 1 =>
    if f L = 0 then pat f L else if f L = 1 then pat f L <<< (2 ^ L) else pat f L ||| (pat f L <<< (2 ^ L))

/-- The mask of a layer as it acts: bits of `M` whose partner `p - s` is not also in `M`, and which
stay below `len` when moved by `s`. The bound is `1 <<< (len - s)`: the kernel computes `2 ^ k` with
GMP only for `k ≤ 2 ^ 24`, and a transposition runs on `len = 2 ^ 25` places for a million references. -/
@[expose] public def clean (len s M : Nat) : Nat := (M ^^^ (M &&& (M <<< s))) &&& ((1 <<< (len - s)) - 1)

/-- A delta swap: the bits at `p` and `p + s` of `P` change places for every `p` in `clean len s M`. -/
@[expose] public def layer (len s M P : Nat) : Nat :=
  let d := ((P >>> s) ^^^ P) &&& clean len s M
  P ^^^ d ^^^ (d <<< s)

/-- Where bit `p` of `layer len s M P` comes from. -/
@[expose] public def swapPos (len s M p : Nat) : Nat :=
  if (clean len s M).testBit p then p + s
  else if s ≤ p ∧ (clean len s M).testBit (p - s) then p - s else p

/-- Layers `(s, M)` applied to `P`, first to last. -/
@[expose] public def routeP (len : Nat) : List (Nat × Nat) → Nat → Nat
  | [], P => P
  | l :: rest, P => routeP len rest (layer len l.1 l.2 P)

/-- Where bit `p` of `routeP len net P` comes from. -/
@[expose] public def perm (len : Nat) : List (Nat × Nat) → Nat → Nat
  | [], p => p
  | l :: rest, p => swapPos len l.1 l.2 (perm len rest p)

/-- The inverse of `perm`. -/
@[expose] public def unperm (len : Nat) : List (Nat × Nat) → Nat → Nat
  | [], p => p
  | l :: rest, p => unperm len rest (swapPos len l.1 l.2 p)

end Pycert.Bits

namespace Pycert.Bits

/-! ## Adding a power of two without a carry -/

theorem testBit_add_one_of_even {a : Nat} (h : a.testBit 0 = false) (i : Nat) :
    (a + 1).testBit i = (a.testBit i ^^ decide (i = 0)) := by
  have h2 : a % 2 = 0 := by rw [Nat.testBit_zero] at h; simp at h; omega
  cases i with
  | zero =>
    have h3 : (a + 1) % 2 = 1 := by omega
    simp [Nat.testBit_zero, h2, h3]
  | succ i =>
    rw [Nat.testBit_succ, Nat.testBit_succ]
    have : (a + 1) / 2 = a / 2 := by omega
    simp [this]

/-- Setting a clear bit `k` adds `2 ^ k`. -/
public theorem add_two_pow_eq_xor {p k : Nat} (h : p.testBit k = false) : p + 2 ^ k = p ^^^ 2 ^ k := by
  have hp := Nat.div_add_mod p (2 ^ k)
  have hr := Nat.mod_lt p (Nat.two_pow_pos k)
  have ha : (p / 2 ^ k).testBit 0 = false := by rw [Nat.testBit_div_two_pow, Nat.zero_add]; exact h
  apply Nat.eq_of_testBit_eq
  intro j
  have e1 : p + 2 ^ k = 2 ^ k * (p / 2 ^ k + 1) + p % 2 ^ k := by rw [Nat.mul_add]; omega
  rw [Nat.testBit_xor, Nat.testBit_two_pow, e1, Nat.testBit_two_pow_mul_add _ hr]
  conv => rhs; rw [← hp, Nat.testBit_two_pow_mul_add _ hr]
  by_cases hj : j < k
  · simp [hj, show ¬ k = j by omega]
  · simp only [hj, if_false]
    rw [testBit_add_one_of_even ha]
    by_cases e : j = k
    · subst e; simp
    · simp [show ¬ j - k = 0 by omega, show ¬ k = j by omega]

/-- Clearing a set bit `k` subtracts `2 ^ k`. -/
public theorem sub_two_pow_eq_xor {p k : Nat} (h : p.testBit k = true) : p - 2 ^ k = p ^^^ 2 ^ k := by
  have h' : (p ^^^ 2 ^ k).testBit k = false := by simp [Nat.testBit_xor, h]
  have e := add_two_pow_eq_xor h'
  rw [Nat.xor_assoc, Nat.xor_self, Nat.xor_zero] at e
  omega

public theorem testBit_two_pow_of_lt {p L : Nat} (h1 : 2 ^ L ≤ p) (h2 : p < 2 ^ (L + 1)) : p.testBit L = true := by
  have : p / 2 ^ L = 1 := by
    have a : 1 ≤ p / 2 ^ L := (Nat.le_div_iff_mul_le (Nat.two_pow_pos L)).2 (by omega)
    have b : p / 2 ^ L < 2 := (Nat.div_lt_iff_lt_mul (Nat.two_pow_pos L)).2 (by rw [Nat.pow_succ] at h2; omega)
    omega
  rw [Nat.testBit_eq_decide_div_mod_eq, this]; rfl

theorem testBit_sub_two_pow {p L e : Nat} (h1 : 2 ^ L ≤ p) (h2 : p < 2 ^ (L + 1)) (he : e ≠ L) :
    (p - 2 ^ L).testBit e = p.testBit e := by
  rw [sub_two_pow_eq_xor (testBit_two_pow_of_lt h1 h2), Nat.testBit_xor, Nat.testBit_two_pow]
  simp [show ¬ L = e by omega]

/-! ## Patterns -/

/-- Bit `b` of a position obeys pattern value `v`: `0` clear, `1` set, anything else free. -/
@[expose] public def Fits (v : Nat) (b : Bool) : Prop := (v = 0 → b = false) ∧ (v = 1 → b = true)

theorem pat_succ (f : Nat → Nat) (L : Nat) : pat f (L + 1) =
    if f L = 0 then pat f L else if f L = 1 then pat f L <<< (2 ^ L) else pat f L ||| (pat f L <<< (2 ^ L)) := rfl

/-- What `pat f L` holds: the positions below `2 ^ L` whose bits below `L` fit `f`. -/
public theorem testBit_pat (f : Nat → Nat) : ∀ (L p : Nat),
    (pat f L).testBit p = true ↔ p < 2 ^ L ∧ ∀ e, e < L → Fits (f e) (p.testBit e)
  | 0, p => by
    show (1 : Nat).testBit p = true ↔ _
    rw [Nat.testBit_one_eq_true_iff_self_eq_zero]
    simp
  | L + 1, p => by
    have ih := testBit_pat f L
    have shl : (pat f L <<< (2 ^ L)).testBit p = true ↔
        2 ^ L ≤ p ∧ p - 2 ^ L < 2 ^ L ∧ ∀ e, e < L → Fits (f e) ((p - 2 ^ L).testBit e) := by
      rw [Nat.testBit_shiftLeft, Bool.and_eq_true, decide_eq_true_iff, ih]
    have split : (p < 2 ^ (L + 1) ∧ ∀ e, e < L + 1 → Fits (f e) (p.testBit e)) ↔
        (p < 2 ^ (L + 1) ∧ Fits (f L) (p.testBit L) ∧ ∀ e, e < L → Fits (f e) (p.testBit e)) := by
      constructor
      · rintro ⟨h1, h2⟩; exact ⟨h1, h2 L (by omega), fun e he => h2 e (by omega)⟩
      · rintro ⟨h1, h2, h3⟩
        refine ⟨h1, fun e he => ?_⟩
        by_cases x : e = L
        · subst x; exact h2
        · exact h3 e (by omega)
    rw [split, pat_succ]
    have hpow : 2 ^ (L + 1) = 2 ^ L + 2 ^ L := by rw [Nat.pow_succ]; omega
    by_cases hp : p < 2 ^ L
    · have hb : p.testBit L = false := Nat.testBit_lt_two_pow hp
      have hs : ¬ (2 ^ L ≤ p) := by omega
      by_cases h0 : f L = 0
      · rw [if_pos h0, ih, hb]
        exact ⟨fun ⟨a, b⟩ => ⟨by omega, ⟨fun _ => rfl, fun h => absurd (h0 ▸ h) (by decide)⟩, b⟩,
          fun ⟨_, _, b⟩ => ⟨hp, b⟩⟩
      · by_cases h1 : f L = 1
        · rw [if_neg h0, if_pos h1, shl, hb]
          exact ⟨fun ⟨a, _⟩ => absurd a hs, fun ⟨_, ⟨_, b⟩, _⟩ => absurd (b h1) (by decide)⟩
        · rw [if_neg h0, if_neg h1, Nat.testBit_or, Bool.or_eq_true, ih, shl, hb]
          constructor
          · rintro (⟨a, b⟩ | ⟨a, _⟩)
            · exact ⟨by omega, ⟨fun h => absurd h h0, fun h => absurd h h1⟩, b⟩
            · exact absurd a hs
          · rintro ⟨_, _, b⟩; exact Or.inl ⟨hp, b⟩
    · by_cases hp2 : p < 2 ^ (L + 1)
      · have hb : p.testBit L = true := testBit_two_pow_of_lt (by omega) hp2
        have low : ∀ e, e < L → (p - 2 ^ L).testBit e = p.testBit e :=
          fun e he => testBit_sub_two_pow (by omega) hp2 (by omega)
        have shl' : (2 ^ L ≤ p ∧ p - 2 ^ L < 2 ^ L ∧ ∀ e, e < L → Fits (f e) ((p - 2 ^ L).testBit e)) ↔
            ∀ e, e < L → Fits (f e) (p.testBit e) := by
          constructor
          · rintro ⟨_, _, h⟩ e he; rw [← low e he]; exact h e he
          · intro h; exact ⟨by omega, by omega, fun e he => by rw [low e he]; exact h e he⟩
        by_cases h0 : f L = 0
        · rw [if_pos h0, ih, hb]
          exact ⟨fun ⟨a, _⟩ => absurd a hp, fun ⟨_, ⟨a, _⟩, _⟩ => absurd (a h0) (by decide)⟩
        · by_cases h1 : f L = 1
          · rw [if_neg h0, if_pos h1, shl, hb, shl']
            exact ⟨fun h => ⟨hp2, ⟨fun h' => absurd h' h0, fun _ => rfl⟩, h⟩, fun ⟨_, _, h⟩ => h⟩
          · rw [if_neg h0, if_neg h1, Nat.testBit_or, Bool.or_eq_true, ih, shl, hb, shl']
            constructor
            · rintro (⟨a, _⟩ | h)
              · exact absurd a hp
              · exact ⟨hp2, ⟨fun h' => absurd h' h0, fun _ => rfl⟩, h⟩
            · rintro ⟨_, _, h⟩; exact Or.inr h
      · have hs : ¬ (p - 2 ^ L < 2 ^ L) := by omega
        have no : ¬ (p < 2 ^ L) := hp
        by_cases h0 : f L = 0
        · rw [if_pos h0, ih]; exact ⟨fun ⟨a, _⟩ => absurd a no, fun ⟨a, _⟩ => absurd a hp2⟩
        · by_cases h1 : f L = 1
          · rw [if_neg h0, if_pos h1, shl]
            exact ⟨fun ⟨_, a, _⟩ => absurd a hs, fun ⟨a, _⟩ => absurd a hp2⟩
          · rw [if_neg h0, if_neg h1, Nat.testBit_or, Bool.or_eq_true, ih, shl]
            exact ⟨fun h => h.elim (fun ⟨a, _⟩ => absurd a no) (fun ⟨_, a, _⟩ => absurd a hs),
              fun ⟨a, _⟩ => absurd a hp2⟩

/-! ## Layers -/

public theorem testBit_clean (len s M q : Nat) : (clean len s M).testBit q =
    (M.testBit q && !(decide (s ≤ q) && M.testBit (q - s)) && decide (q < len - s)) := by
  unfold clean
  rw [Nat.shiftLeft_eq 1, Nat.one_mul, Nat.testBit_and, Nat.testBit_xor, Nat.testBit_and, Nat.testBit_shiftLeft,
    Nat.testBit_two_pow_sub_one]
  cases M.testBit q <;> simp

/-- No position of a cleaned mask has its partner `p + s` in the mask too. -/
theorem clean_disjoint {len s M q : Nat} (h : (clean len s M).testBit q = true) :
    (clean len s M).testBit (q + s) = false := by
  rw [testBit_clean] at h ⊢
  simp only [Bool.and_eq_true, Bool.not_eq_true', decide_eq_true_eq] at h
  simp [Nat.add_sub_cancel, h.1.1]

/-- **What a layer does.** Bit `p` of `layer len s M P` is bit `swapPos len s M p` of `P`. -/
public theorem testBit_layer (len s M P p : Nat) : (layer len s M P).testBit p = P.testBit (swapPos len s M p) := by
  unfold layer swapPos
  simp only [Nat.testBit_xor, Nat.testBit_and, Nat.testBit_shiftRight, Nat.testBit_shiftLeft]
  by_cases hc : (clean len s M).testBit p = true
  · rw [if_pos hc, hc]
    by_cases hs : s ≤ p
    · have : (clean len s M).testBit (p - s) = false := by
        have := clean_disjoint (q := p - s) (len := len) (s := s) (M := M)
        rw [Nat.sub_add_cancel hs] at this
        cases h : (clean len s M).testBit (p - s)
        · rfl
        · exact absurd hc (by rw [this h]; decide)
      simp [this, Nat.add_comm s p]
      cases P.testBit p <;> cases P.testBit (p + s) <;> rfl
    · simp [hs, Nat.add_comm s p]
      cases P.testBit p <;> cases P.testBit (p + s) <;> rfl
  · have hc' : (clean len s M).testBit p = false := by simpa using hc
    rw [if_neg hc, hc']
    by_cases hs : s ≤ p
    · by_cases hd : (clean len s M).testBit (p - s) = true
      · rw [if_pos ⟨hs, hd⟩]
        simp [hs, hd]
      · rw [if_neg (fun h => hd h.2)]
        have hd' : (clean len s M).testBit (p - s) = false := by simpa using hd
        simp [hs, hd']
    · rw [if_neg (fun h => hs h.1)]
      simp [hs]

/-- Every layer undoes itself on positions. -/
public theorem swapPos_swapPos (len s M p : Nat) : swapPos len s M (swapPos len s M p) = p := by
  unfold swapPos
  by_cases hc : (clean len s M).testBit p = true
  · rw [if_pos hc, if_neg (by rw [clean_disjoint hc]; decide), if_pos ⟨by omega, by rw [Nat.add_sub_cancel]; exact hc⟩,
      Nat.add_sub_cancel]
  · rw [if_neg hc]
    by_cases hd : s ≤ p ∧ (clean len s M).testBit (p - s) = true
    · rw [if_pos hd, if_pos (show (clean len s M).testBit (p - s) = true from hd.2), Nat.sub_add_cancel hd.1]
    · rw [if_neg hd, if_neg hc, if_neg hd]

/-- A layer keeps the positions below `len` below `len`. -/
public theorem swapPos_lt {len s M p : Nat} (h : p < len) : swapPos len s M p < len := by
  unfold swapPos
  by_cases hc : (clean len s M).testBit p = true
  · rw [if_pos hc]
    rw [testBit_clean] at hc
    simp only [Bool.and_eq_true, decide_eq_true_eq] at hc
    omega
  · rw [if_neg hc]
    split <;> omega

/-- **What a list of layers does.** Bit `p` of `routeP len net P` is bit `perm len net p` of `P`. -/
public theorem testBit_routeP (len : Nat) : ∀ (net : List (Nat × Nat)) (P p : Nat),
    (routeP len net P).testBit p = P.testBit (perm len net p)
  | [], _, _ => rfl
  | l :: rest, P, p => by
    show (routeP len rest (layer len l.1 l.2 P)).testBit p = P.testBit (swapPos len l.1 l.2 (perm len rest p))
    rw [testBit_routeP len rest, testBit_layer]

public theorem perm_unperm (len : Nat) : ∀ (net : List (Nat × Nat)) (p : Nat), perm len net (unperm len net p) = p
  | [], _ => rfl
  | l :: rest, p => by
    show swapPos len l.1 l.2 (perm len rest (unperm len rest (swapPos len l.1 l.2 p))) = p
    rw [perm_unperm len rest, swapPos_swapPos]

public theorem unperm_perm (len : Nat) : ∀ (net : List (Nat × Nat)) (p : Nat), unperm len net (perm len net p) = p
  | [], _ => rfl
  | l :: rest, p => by
    show unperm len rest (swapPos len l.1 l.2 (swapPos len l.1 l.2 (perm len rest p))) = p
    rw [swapPos_swapPos, unperm_perm len rest]

public theorem perm_lt {len : Nat} : ∀ (net : List (Nat × Nat)) {p : Nat}, p < len → perm len net p < len
  | [], _, h => h
  | _ :: rest, _, h => swapPos_lt (perm_lt rest h)

public theorem unperm_lt {len : Nat} : ∀ (net : List (Nat × Nat)) {p : Nat}, p < len → unperm len net p < len
  | [], _, h => h
  | _ :: rest, _, h => unperm_lt rest (swapPos_lt h)

end Pycert.Bits
