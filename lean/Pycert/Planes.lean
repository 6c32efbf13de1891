module

prelude
public import Pycert.Bits
public import Pycert.Packed
public import Pycert.Count
import Init.Data.Nat.Bitwise.Lemmas
import Init.Omega

/-!
# Bit planes: many small numbers as a list of whole numbers

A list of planes `[P₀, P₁, …]` holds one small number per position `p`: `val Ps p`, whose bit `b`
is bit `p` of `P_b`. An operation on whole planes acts on every position at once, so comparing,
adding or testing the numbers at all positions costs a handful of kernel GMP calls per plane. Here:
comparison (`ltP`), equality (`eqP`), adding one bit (`incP`) and counting the set bits of one
plane (`popcount`, by halving sums). `ones` is the all-ones plane of the positions in play.
-/

namespace Pycert.Planes
open Pycert.Bits Pycert.Packed

/-- The number at position `p`: bit `b` is bit `p` of plane `b`. -/
@[expose] public def val : List Nat → Nat → Nat
  | [], _ => 0
  | P :: Ps, p => (if P.testBit p then 1 else 0) + 2 * val Ps p

/-- Bit `p` is set where `val As p < val Bs p` (or, when they are equal, where bit `p` of `acc` is). -/
@[expose] public def ltP (ones : Nat) : List Nat → List Nat → Nat → Nat
  | a :: as, b :: bs, acc => ltP ones as bs (b &&& (a ^^^ ones) ||| (a ^^^ b ^^^ ones) &&& acc)
  | _, _, acc => acc

/-- Bit `p` is set where `val As p = val Bs p` and bit `p` of `acc` is. -/
@[expose] public def eqP (ones : Nat) : List Nat → List Nat → Nat → Nat
  | a :: as, b :: bs, acc => eqP ones as bs (acc &&& (a ^^^ b ^^^ ones))
  | _, _, acc => acc

/-- `As` plus the bit plane `c`, ripple-carry: the sum's planes and the carry out. -/
@[expose] public def incP : List Nat → Nat → List Nat × Nat
  | [], c => ([], c)
  | a :: as, c => ((a ^^^ c) :: (incP as (a &&& c)).1, (incP as (a &&& c)).2)

/-- The bits set in every plane. -/
@[expose] public def allP : List Nat → Nat → Nat
  | [], acc => acc
  | a :: as, acc => allP as (acc &&& a)

/-- The positions `p < 2 ^ M` whose bit `r` is clear: the low half of every block of `2 ^ (r + 1)`. -/
@[expose] public def lowHalves (M r : Nat) : Nat := pat (fun e => if e = r then 0 else 2) M

/-- Rounds `r, r + 1, …` of the halving sum: fields of `2 ^ r` bits added in pairs. -/
@[expose] public def swar (M : Nat) : Nat → Nat → Nat → Nat
  | 0, _, x => x
  | k + 1, r, x => swar M k (r + 1) ((x &&& lowHalves M r) + ((x >>> (2 ^ r)) &&& lowHalves M r))

/-- How many of the bits `0 … 2 ^ M - 1` of `x` are set. -/
@[expose] public def popcount (M x : Nat) : Nat := swar M M 0 (x &&& (2 ^ 2 ^ M - 1)) &&& (2 ^ 2 ^ M - 1)


/-! ## Values -/

/-- `1` where bit `p` of `P` is set. -/
@[expose] public def bit (P p : Nat) : Nat := if P.testBit p then 1 else 0


public theorem bit_le (P p : Nat) : bit P p ≤ 1 := by unfold bit; split <;> omega

public theorem val_cons (P : Nat) (Ps : List Nat) (p : Nat) : val (P :: Ps) p = bit P p + 2 * val Ps p := rfl

public theorem val_lt : ∀ (Ps : List Nat) (p : Nat), val Ps p < 2 ^ Ps.length
  | [], _ => by show 0 < 1; exact Nat.one_pos
  | P :: Ps, p => by
    rw [val_cons, List.length_cons, Nat.pow_succ]
    have := val_lt Ps p
    have := bit_le P p
    omega

public theorem val_append : ∀ (As Bs : List Nat) (p : Nat), val (As ++ Bs) p = val As p + 2 ^ As.length * val Bs p
  | [], _, _ => by simp [val]
  | A :: As, Bs, p => by
    rw [List.cons_append, val_cons, val_cons, val_append As Bs p, List.length_cons, Nat.pow_succ]
    rw [Nat.mul_add, Nat.mul_comm (2 ^ As.length) 2, Nat.mul_assoc]
    omega

/-- Planes moved bitwise: if every plane's bit `p` is read from position `q`, so is the value. -/
public theorem val_map (g : Nat → Nat) {p q : Nat} (hg : ∀ P, (g P).testBit p = P.testBit q) :
    ∀ (Ps : List Nat), val (Ps.map g) p = val Ps q
  | [] => rfl
  | P :: Ps => by
    rw [List.map_cons, val_cons, val_cons, val_map g hg Ps]
    unfold bit; rw [hg]

public theorem length_map_planes (g : Nat → Nat) : ∀ (Ps : List Nat), (Ps.map g).length = Ps.length
  | [] => rfl
  | _ :: Ps => by rw [List.map_cons, List.length_cons, List.length_cons, length_map_planes g Ps]

public theorem mem_map_planes (g : Nat → Nat) {P : Nat} : ∀ {Ps : List Nat}, P ∈ Ps → g P ∈ Ps.map g
  | _ :: _, List.Mem.head _ => List.Mem.head _
  | _ :: _, List.Mem.tail _ h => List.Mem.tail _ (mem_map_planes g h)

/-- Every plane set at `p`: the value is all ones. -/
public theorem val_of_all {p : Nat} : ∀ (Ps : List Nat), (∀ P, P ∈ Ps → P.testBit p = true) →
    val Ps p = 2 ^ Ps.length - 1
  | [], _ => rfl
  | P :: Ps, h => by
    rw [val_cons, val_of_all Ps (fun Q hQ => h Q (List.Mem.tail _ hQ)), List.length_cons, Nat.pow_succ]
    have : bit P p = 1 := by unfold bit; rw [h P (List.Mem.head _)]; rfl
    have := Nat.two_pow_pos Ps.length
    omega

/-- Planes `g b, g (b + 1), …`, `k` of them. -/
@[expose] public def mkPlanes (g : Nat → Nat) : Nat → Nat → List Nat
  | _, 0 => []
  | b, k + 1 => g b :: mkPlanes g (b + 1) k

public theorem length_mkPlanes (g : Nat → Nat) : ∀ b k, (mkPlanes g b k).length = k
  | _, 0 => rfl
  | b, k + 1 => by show (g b :: mkPlanes g (b + 1) k).length = _; rw [List.length_cons, length_mkPlanes g (b + 1) k]

theorem mod_two_pow_succ (y k : Nat) : y % 2 ^ (k + 1) = y % 2 + 2 * (y / 2 % 2 ^ k) := by
  apply Nat.eq_of_testBit_eq
  intro i
  have h1 : y % 2 < 2 ^ 1 := Nat.mod_lt _ (by decide)
  rw [show y % 2 + 2 * (y / 2 % 2 ^ k) = 2 ^ 1 * (y / 2 % 2 ^ k) + y % 2 by omega,
    Nat.testBit_two_pow_mul_add _ h1, Nat.testBit_mod_two_pow]
  cases i with
  | zero => simp
  | succ i =>
    simp only [show ¬ i + 1 < 1 by omega, if_false, Nat.add_sub_cancel, Nat.testBit_mod_two_pow, Nat.testBit_succ]
    simp

/-- Planes whose bit `p` are the bits `b, b + 1, …` of `x` hold `x`'s bits from `b` on. -/
public theorem val_mkPlanes (g : Nat → Nat) (p x : Nat) : ∀ b k, (∀ i, i < k → (g (b + i)).testBit p = x.testBit (b + i)) →
    val (mkPlanes g b k) p = x / 2 ^ b % 2 ^ k
  | b, 0, _ => by simp [mkPlanes, val, Nat.mod_one]
  | b, k + 1, h => by
    show bit (g b) p + 2 * val (mkPlanes g (b + 1) k) p = _
    rw [val_mkPlanes g p x (b + 1) k (fun i hi => by rw [show b + 1 + i = b + (i + 1) by omega]; exact h (i + 1) (by omega)),
      mod_two_pow_succ, Nat.pow_succ, ← Nat.div_div_eq_div_mul]
    congr 1
    unfold bit
    rw [show b = b + 0 from rfl, h 0 (by omega), Nat.add_zero, Nat.testBit_eq_decide_div_mod_eq]
    have := Nat.mod_lt (x / 2 ^ b) (show 0 < 2 by decide)
    by_cases e : x / 2 ^ b % 2 = 1 <;> simp [e] <;> omega

/-! ## Whole-plane tests -/

theorem bool_cases (a : Bool) : (if a then 1 else 0) = 0 ∧ a = false ∨ (if a then 1 else 0) = 1 ∧ a = true := by
  cases a <;> simp

/-- What `ltP` computes at a position where `ones` is set. -/
public theorem testBit_ltP {ones p : Nat} (ho : ones.testBit p = true) : ∀ (As Bs : List Nat) (acc : Nat),
    As.length = Bs.length →
    ((ltP ones As Bs acc).testBit p = true ↔ val As p < val Bs p ∨ (val As p = val Bs p ∧ acc.testBit p = true))
  | [], [], acc, _ => by simp [ltP, val]
  | [], _ :: _, _, h => absurd h (by simp)
  | _ :: _, [], _, h => absurd h (by simp)
  | a :: As, b :: Bs, acc, h => by
    have ih := testBit_ltP ho As Bs ((b &&& (a ^^^ ones)) ||| ((a ^^^ b ^^^ ones) &&& acc)) (by simpa using h)
    show (ltP ones As Bs _).testBit p = true ↔ _
    rw [ih, val_cons, val_cons]
    simp only [Nat.testBit_or, Nat.testBit_and, Nat.testBit_xor, ho]
    unfold bit
    rcases bool_cases (a.testBit p) with ⟨ea, ha⟩ | ⟨ea, ha⟩ <;>
      rcases bool_cases (b.testBit p) with ⟨eb, hb⟩ | ⟨eb, hb⟩ <;> rw [ea, eb] <;> simp only [ha, hb] <;>
      cases acc.testBit p <;> simp <;> omega

/-- What `eqP` computes at a position where `ones` is set. -/
public theorem testBit_eqP {ones p : Nat} (ho : ones.testBit p = true) : ∀ (As Bs : List Nat) (acc : Nat),
    As.length = Bs.length →
    ((eqP ones As Bs acc).testBit p = true ↔ val As p = val Bs p ∧ acc.testBit p = true)
  | [], [], acc, _ => by simp [eqP, val]
  | [], _ :: _, _, h => absurd h (by simp)
  | _ :: _, [], _, h => absurd h (by simp)
  | a :: As, b :: Bs, acc, h => by
    have ih := testBit_eqP ho As Bs (acc &&& (a ^^^ b ^^^ ones)) (by simpa using h)
    show (eqP ones As Bs _).testBit p = true ↔ _
    rw [ih, val_cons, val_cons]
    simp only [Nat.testBit_and, Nat.testBit_xor, ho]
    unfold bit
    rcases bool_cases (a.testBit p) with ⟨ea, ha⟩ | ⟨ea, ha⟩ <;>
      rcases bool_cases (b.testBit p) with ⟨eb, hb⟩ | ⟨eb, hb⟩ <;> rw [ea, eb] <;> simp only [ha, hb] <;>
      cases acc.testBit p <;> simp <;> omega

public theorem length_incP : ∀ (As : List Nat) (c : Nat), (incP As c).1.length = As.length
  | [], _ => rfl
  | _ :: As, _ => by show (_ :: (incP As _).1).length = _; rw [List.length_cons, length_incP As, List.length_cons]

/-- `incP` adds: the sum's value plus the carry out is the value plus the bit added. -/
public theorem val_incP (p : Nat) : ∀ (As : List Nat) (c : Nat),
    val (incP As c).1 p + 2 ^ As.length * bit (incP As c).2 p = val As p + bit c p
  | [], _ => by simp [incP, val]
  | a :: As, c => by
    have ih := val_incP p As (a &&& c)
    show val ((a ^^^ c) :: (incP As (a &&& c)).1) p + 2 ^ (As.length + 1) * bit (incP As (a &&& c)).2 p = _
    rw [val_cons, val_cons, Nat.pow_succ]
    have e : bit (a ^^^ c) p + 2 * bit (a &&& c) p = bit a p + bit c p := by
      unfold bit; rw [Nat.testBit_xor, Nat.testBit_and]
      cases a.testBit p <;> cases c.testBit p <;> rfl
    rw [Nat.mul_comm (2 ^ As.length) 2, Nat.mul_assoc]
    omega

public theorem testBit_allP {p : Nat} : ∀ (As : List Nat) (acc : Nat),
    (allP As acc).testBit p = true ↔ acc.testBit p = true ∧ ∀ a, a ∈ As → a.testBit p = true
  | [], acc => ⟨fun h => ⟨h, fun _ ha => nomatch ha⟩, fun h => h.1⟩
  | a :: As, acc => by
    show (allP As (acc &&& a)).testBit p = true ↔ _
    rw [testBit_allP As, Nat.testBit_and, Bool.and_eq_true]
    constructor
    · rintro ⟨⟨h1, h2⟩, h3⟩
      exact ⟨h1, fun b hb => by
        cases hb with
        | head => exact h2
        | tail _ hb => exact h3 b hb⟩
    · rintro ⟨h1, h2⟩
      exact ⟨⟨h1, h2 a (List.Mem.head _)⟩, fun b hb => h2 b (List.Mem.tail _ hb)⟩

/-! ## Counting the set bits of a plane -/

theorem testBit_lowHalves {M r i : Nat} : (lowHalves M r).testBit i = true ↔ i < 2 ^ M ∧ (r < M → i.testBit r = false) := by
  unfold lowHalves
  rw [testBit_pat]
  constructor
  · rintro ⟨h1, h2⟩
    refine ⟨h1, fun hr => (h2 r hr).1 (by simp)⟩
  · rintro ⟨h1, h2⟩
    refine ⟨h1, fun e he => ⟨fun h => ?_, fun h => ?_⟩⟩
    · by_cases x : e = r
      · subst x; exact h2 he
      · simp [x] at h
    · by_cases x : e = r
      · simp [x] at h
      · simp [x] at h

public theorem testBit_fld (k X q b : Nat) : (fld (2 ^ k) X q).testBit b = (decide (b < k) && X.testBit (k * q + b)) := by
  unfold fld
  rw [← Nat.pow_mul, Nat.testBit_mod_two_pow, Nat.testBit_div_two_pow, Nat.add_comm b]

/-- `g 0 + g 1 + … + g (n - 1)`. -/
@[expose] public def gsum (g : Nat → Nat) : Nat → Nat
  | 0 => 0
  | n + 1 => gsum g n + g n

theorem gsum_congr {f g : Nat → Nat} : ∀ {n : Nat}, (∀ q, q < n → f q = g q) → gsum f n = gsum g n
  | 0, _ => rfl
  | n + 1, h => by
    show gsum f n + f n = gsum g n + g n
    rw [gsum_congr (fun q hq => h q (by omega)), h n (by omega)]

theorem gsum_pairs (g : Nat → Nat) : ∀ n, gsum (fun q => g (2 * q) + g (2 * q + 1)) n = gsum g (2 * n)
  | 0 => rfl
  | n + 1 => by
    show gsum _ n + (g (2 * n) + g (2 * n + 1)) = gsum g (2 * n + 1 + 1)
    rw [gsum_pairs g n]
    show gsum g (2 * n) + (g (2 * n) + g (2 * n + 1)) = gsum g (2 * n) + g (2 * n) + g (2 * n + 1)
    omega

theorem count_eq_gsum (P : Nat) : ∀ n, count (fun q => P.testBit q = true) n = gsum (bit P) n
  | 0 => rfl
  | n + 1 => by
    show _ = gsum (bit P) n + bit P n
    rw [← count_eq_gsum P n]
    unfold bit
    by_cases h : P.testBit n = true
    · rw [count_succ_pos (p := fun q => P.testBit q = true) h, if_pos h]
    · rw [count_succ_neg (p := fun q => P.testBit q = true) h, if_neg h, Nat.add_zero]

theorem lt_two_pow_iff_testBit {b r : Nat} (h : b < 2 ^ (r + 1)) : b < 2 ^ r ↔ b.testBit r = false := by
  constructor
  · exact Nat.testBit_lt_two_pow
  · intro hb
    apply Nat.lt_of_not_le
    intro hle
    rw [testBit_two_pow_of_lt hle h] at hb
    exact absurd hb (by decide)

theorem field_bound {M r q b : Nat} (hr : r < M) (hq : q < 2 ^ (M - r - 1)) (hb : b < 2 ^ (r + 1)) :
    2 ^ (r + 1) * q + b < 2 ^ M := by
  have e : 2 ^ M = 2 ^ (r + 1) * 2 ^ (M - r - 1) := by rw [← Nat.pow_add]; congr 1; omega
  have : 2 ^ (r + 1) * (q + 1) ≤ 2 ^ (r + 1) * 2 ^ (M - r - 1) := Nat.mul_le_mul_left _ hq
  rw [Nat.mul_succ] at this
  omega

theorem round_fields {M r x q : Nat} (hr : r < M) (hq : q < 2 ^ (M - r - 1)) :
    fld (2 ^ 2 ^ (r + 1)) (x &&& lowHalves M r) q = fld (2 ^ 2 ^ r) x (2 * q) ∧
      fld (2 ^ 2 ^ (r + 1)) ((x >>> (2 ^ r)) &&& lowHalves M r) q = fld (2 ^ 2 ^ r) x (2 * q + 1) := by
  have hW : 2 ^ (r + 1) = 2 ^ r + 2 ^ r := by rw [Nat.pow_succ]; omega
  have e0 : 2 ^ r * (2 * q) = 2 ^ (r + 1) * q := by rw [Nat.pow_succ]; rw [Nat.mul_comm 2 q, Nat.mul_assoc, Nat.mul_comm 2 q]
  have e1 : 2 ^ r * (2 * q + 1) = 2 ^ (r + 1) * q + 2 ^ r := by rw [Nat.mul_add, e0, Nat.mul_one]
  constructor
  · apply Nat.eq_of_testBit_eq; intro b
    rw [testBit_fld, testBit_fld, Nat.testBit_and, e0]
    by_cases hb : b < 2 ^ r
    · have hb2 : b < 2 ^ (r + 1) := by omega
      have hm : (lowHalves M r).testBit (2 ^ (r + 1) * q + b) = true := by
        rw [testBit_lowHalves]
        refine ⟨field_bound hr hq hb2, fun _ => ?_⟩
        rw [Nat.testBit_two_pow_mul_add _ hb2, if_pos (by omega)]
        exact (lt_two_pow_iff_testBit hb2).1 hb
      simp [hb, hb2, hm]
    · by_cases hb2 : b < 2 ^ (r + 1)
      · have hm : (lowHalves M r).testBit (2 ^ (r + 1) * q + b) = false := by
          cases h : (lowHalves M r).testBit (2 ^ (r + 1) * q + b)
          · rfl
          · rw [testBit_lowHalves] at h
            have := h.2 hr
            rw [Nat.testBit_two_pow_mul_add _ hb2, if_pos (by omega)] at this
            exact absurd ((lt_two_pow_iff_testBit hb2).2 this) hb
        simp [hb, hm]
      · simp [hb, hb2]
  · apply Nat.eq_of_testBit_eq; intro b
    rw [testBit_fld, testBit_fld, Nat.testBit_and, Nat.testBit_shiftRight, e1,
      show 2 ^ r + (2 ^ (r + 1) * q + b) = 2 ^ (r + 1) * q + 2 ^ r + b by omega]
    by_cases hb : b < 2 ^ r
    · have hb2 : b < 2 ^ (r + 1) := by omega
      have hm : (lowHalves M r).testBit (2 ^ (r + 1) * q + b) = true := by
        rw [testBit_lowHalves]
        refine ⟨field_bound hr hq hb2, fun _ => ?_⟩
        rw [Nat.testBit_two_pow_mul_add _ hb2, if_pos (by omega)]
        exact (lt_two_pow_iff_testBit hb2).1 hb
      simp [hb, hb2, hm]
    · by_cases hb2 : b < 2 ^ (r + 1)
      · have hm : (lowHalves M r).testBit (2 ^ (r + 1) * q + b) = false := by
          cases h : (lowHalves M r).testBit (2 ^ (r + 1) * q + b)
          · rfl
          · rw [testBit_lowHalves] at h
            have := h.2 hr
            rw [Nat.testBit_two_pow_mul_add _ hb2, if_pos (by omega)] at this
            exact absurd ((lt_two_pow_iff_testBit hb2).2 this) hb
        simp [hb, hm]
      · simp [hb, hb2]

theorem fld_lt_pow (k x q : Nat) : fld (2 ^ k) x q < 2 ^ k := fld_lt (Nat.two_pow_pos k) x q

/-- One round of the halving sum: fields of `2 ^ (r + 1)` bits hold the sums of pairs of fields of `2 ^ r`. -/
theorem round_sum {M r : Nat} (hr : r < M) (x : Nat) :
    gsum (fld (2 ^ 2 ^ (r + 1)) ((x &&& lowHalves M r) + ((x >>> (2 ^ r)) &&& lowHalves M r))) (2 ^ (M - (r + 1))) =
      gsum (fld (2 ^ 2 ^ r) x) (2 ^ (M - r)) := by
  have hw : 2 ^ (r + 1) = (2 ^ (r + 1) - 1) + 1 := by have := Nat.two_pow_pos (r + 1); omega
  have small : 2 ^ 2 ^ r ≤ 2 ^ (2 ^ (r + 1) - 1) :=
    Nat.pow_le_pow_right (by decide) (by rw [Nat.pow_succ]; have := Nat.two_pow_pos r; omega)
  have e : 2 ^ (M - r) = 2 * 2 ^ (M - (r + 1)) := by rw [← Nat.pow_succ']; congr 1; omega
  rw [e, ← gsum_pairs]
  apply gsum_congr
  intro q hq
  have hq' : q < 2 ^ (M - r - 1) := by rwa [show M - r - 1 = M - (r + 1) by omega]
  obtain ⟨h0, h1⟩ := round_fields (x := x) hr hq'
  rw [← h0, ← h1]
  have key := fld_add (2 ^ (r + 1) - 1) q (x &&& lowHalves M r) ((x >>> (2 ^ r)) &&& lowHalves M r)
  rw [← hw] at key
  apply key
  · intro i hi
    rw [(round_fields (x := x) hr (by omega)).1]
    exact Nat.lt_of_lt_of_le (fld_lt_pow _ _ _) small
  · intro i hi
    rw [(round_fields (x := x) hr (by omega)).2]
    exact Nat.lt_of_lt_of_le (fld_lt_pow _ _ _) small

theorem swar_spec (M : Nat) : ∀ (k r x : Nat), r + k = M →
    gsum (fld (2 ^ 2 ^ M) (swar M k r x)) 1 = gsum (fld (2 ^ 2 ^ r) x) (2 ^ (M - r))
  | 0, r, x, h => by subst h; simp [swar]
  | k + 1, r, x, h => by
    show gsum _ 1 = _
    rw [show swar M (k + 1) r x = swar M k (r + 1) ((x &&& lowHalves M r) + ((x >>> (2 ^ r)) &&& lowHalves M r)) from rfl,
      swar_spec M k (r + 1) _ (by omega), round_sum (by omega)]

/-- **Counting set bits.** `popcount M x` is how many of the bits `0 … 2 ^ M - 1` of `x` are set. -/
public theorem popcount_eq (M x : Nat) : popcount M x = count (fun q => x.testBit q = true) (2 ^ M) := by
  have h := swar_spec M M 0 (x &&& (2 ^ 2 ^ M - 1)) (by omega)
  have top : gsum (fld (2 ^ 2 ^ M) (swar M M 0 (x &&& (2 ^ 2 ^ M - 1)))) 1 = popcount M x := by
    show 0 + fld _ _ 0 = _
    rw [Nat.zero_add, fld_zero]
    unfold popcount
    rw [Nat.and_two_pow_sub_one_eq_mod (swar M M 0 (x &&& (2 ^ 2 ^ M - 1))) (2 ^ M)]
  rw [← top, h, Nat.pow_zero, Nat.sub_zero, count_eq_gsum]
  apply gsum_congr
  intro q hq
  unfold bit
  have hx : (x &&& (2 ^ 2 ^ M - 1)).testBit q = x.testBit q := by
    rw [Nat.testBit_and, Nat.testBit_two_pow_sub_one]; simp [hq]
  have e : fld (2 ^ 2 ^ 0) (x &&& (2 ^ 2 ^ M - 1)) q = (x &&& (2 ^ 2 ^ M - 1)) / 2 ^ q % 2 := by
    unfold fld; simp
  rw [e, ← hx, Nat.testBit_eq_decide_div_mod_eq]
  have hy := Nat.mod_lt ((x &&& (2 ^ 2 ^ M - 1)) / 2 ^ q) (show 0 < 2 by decide)
  generalize (x &&& (2 ^ 2 ^ M - 1)) / 2 ^ q % 2 = y at hy ⊢
  by_cases h2 : y = 1
  · simp [h2]
  · simp [h2]; omega

end Pycert.Planes
