module

prelude
public import Pycert.Lists
public import Pycert.Packed
import Init.Omega

/-!
# A whole trace, checked by the kernel in a few GMP calls

A trace of `n` references over `D` distinct block ids, the ids any natural numbers in any order,
is written as three packed vectors (`Pycert.Packed`):

* `T`, the **table**: the distinct ids in order of first occurrence, one per field of `wt + 1`
  bits;
* `X`, the **references**: reference `j` is table entry `fld X j`, so `X` numbers the blocks densely
  in first-occurrence order (the first reference is `0`, each later one is an earlier number or the
  next unused one);
* `K`, the **counter**: `fld K j` is how many distinct blocks the first `j` references touched, for
  `j = 0 … n`.

The trace the theorems are about is `decode w n X wt T`: field `j` of `X`, looked up in `T`, for
`j < n`. `traceOK` tests, on the whole vectors at once, that `X` and `K` fit together reference by
reference (`Step`) and that the table is strictly increasing, hence has no repeated id. The soundness
theorem `traceOK_sound` turns one `traceOK … = true`, proved by `decide +kernel`, into the length and
the distinct count of the decoded trace.

What this file does not say: that `decode` is the list of ids in some file (that link is the sha256
the certificate records and the decoder a reader can rerun), or anything about a table that is not
increasing: such a trace is refused by `traceOK`, not counted.
-/

namespace Pycert.PackedTrace
open Pycert.Packed

/-- One reference of a densely numbered trace, with `k` blocks seen before it and `k'` after: it is
the next fresh number (`x = k`, one more block seen) or an earlier one (`x < k`, none). -/
@[expose] public def Step (x k k' : Nat) : Prop := (x = k ∧ k' = k + 1) ∨ (x < k ∧ k' = k)

/-- The trace a packed instance stands for: reference `j` is `T`'s field number `fld X j`. -/
@[expose] public noncomputable def decode (w n X wt T : Nat) : List Nat :=
  (fields (2 ^ (w + 1)) n X).map (fld (2 ^ (wt + 1)) T)

/-! ## Densely numbered traces -/

theorem dense_distinct (B : Nat) : ∀ (n X K : Nat) (seen : List Nat),
    (∀ y, y ∈ seen ↔ y < fld B K 0) →
    (∀ j, j < n → Step (fld B X j) (fld B K j) (fld B K (j + 1))) →
    distinctFrom seen (fields B n X) + fld B K 0 = fld B K n := by
  intro n
  induction n with
  | zero => intro X K seen _ _; exact Nat.zero_add _
  | succ n ih =>
    intro X K seen hs hstep
    have h0 := hstep 0 (Nat.zero_lt_succ n)
    have rest : ∀ j, j < n → Step (fld B (X / B) j) (fld B (K / B) j) (fld B (K / B) (j + 1)) := by
      intro j hj
      have := hstep (j + 1) (by omega)
      rw [fld_succ B X j, fld_succ B K j, fld_succ B K (j + 1)] at this
      exact this
    show distinctFrom seen (X % B :: fields B n (X / B)) + fld B K 0 = fld B K (n + 1)
    rw [fld_succ B K n]
    rw [fld_zero B X, fld_succ B K 0] at h0
    rcases h0 with ⟨hx, hk⟩ | ⟨hx, hk⟩
    · have hnot : ¬ X % B ∈ seen := fun hm => by have := (hs _).1 hm; omega
      rw [distinctFrom_of_not_mem hnot]
      have := ih (X / B) (K / B) (X % B :: seen) (fun y => by
        rw [mem_cons, hs y, hk, hx]
        constructor
        · intro h; rcases h with h | h <;> omega
        · intro h; by_cases e : y = fld B K 0
          · exact Or.inl e
          · exact Or.inr (by omega)) rest
      omega
    · have hmem : X % B ∈ seen := (hs _).2 hx
      rw [distinctFrom_of_mem hmem]
      have := ih (X / B) (K / B) seen (fun y => by rw [hs y, hk]) rest
      omega

theorem dense_bound (B : Nat) : ∀ (n X K : Nat),
    (∀ j, j < n → Step (fld B X j) (fld B K j) (fld B K (j + 1))) →
    fld B K 0 ≤ fld B K n ∧ ∀ y, y ∈ fields B n X → y < fld B K n := by
  intro n
  induction n with
  | zero => intro X K _; exact ⟨Nat.le_refl _, fun y h => absurd h (not_mem_nil y)⟩
  | succ n ih =>
    intro X K hstep
    have h0 := hstep 0 (Nat.zero_lt_succ n)
    have rest : ∀ j, j < n → Step (fld B (X / B) j) (fld B (K / B) j) (fld B (K / B) (j + 1)) := by
      intro j hj
      have := hstep (j + 1) (by omega)
      rw [fld_succ B X j, fld_succ B K j, fld_succ B K (j + 1)] at this
      exact this
    obtain ⟨hle, hlt⟩ := ih (X / B) (K / B) rest
    have e1 : fld B (K / B) 0 = fld B K 1 := (fld_succ B K 0).symm
    have e2 : fld B (K / B) n = fld B K (n + 1) := (fld_succ B K n).symm
    rw [e1, e2] at hle
    rw [e2] at hlt
    simp only [Nat.zero_add] at h0
    rw [fld_zero B X] at h0
    have hx : X % B < fld B K 1 ∧ fld B K 0 ≤ fld B K 1 := by
      rcases h0 with ⟨a, b⟩ | ⟨a, b⟩ <;> omega
    refine ⟨by omega, fun y hy => ?_⟩
    rcases mem_cons.1 hy with e | hy
    · omega
    · exact hlt y hy

/-! ## Renaming by an injective table keeps the count -/

theorem length_map' (f : Nat → Nat) : ∀ l : List Nat, (l.map f).length = l.length
  | [] => rfl
  | _ :: l => congrArg Nat.succ (length_map' f l)

theorem mem_map_of_mem' (f : Nat → Nat) {a : Nat} : ∀ {l : List Nat}, a ∈ l → f a ∈ l.map f
  | _ :: _, List.Mem.head _ => List.Mem.head _
  | _ :: _, List.Mem.tail _ h => List.Mem.tail _ (mem_map_of_mem' f h)

theorem exists_of_mem_map' (f : Nat → Nat) {b : Nat} : ∀ {l : List Nat}, b ∈ l.map f → ∃ a, a ∈ l ∧ f a = b
  | [], h => absurd h (not_mem_nil b)
  | a :: l, h => by
    rcases mem_cons.1 h with e | h
    · exact ⟨a, mem_cons_self a l, e.symm⟩
    · obtain ⟨c, hc, e⟩ := exists_of_mem_map' f h
      exact ⟨c, mem_cons_of_mem a hc, e⟩

/-- Renaming blocks by a map that is injective below `D` does not change the count of a trace
whose blocks (and seen-set) are all below `D`. -/
public theorem distinctFrom_map (f : Nat → Nat) (D : Nat) (hf : ∀ a b, a < D → b < D → f a = f b → a = b) :
    ∀ (r S : List Nat), (∀ a, a ∈ S → a < D) → (∀ a, a ∈ r → a < D) →
    distinctFrom (S.map f) (r.map f) = distinctFrom S r := by
  intro r
  induction r with
  | nil => intro S _ _; rfl
  | cons x xs ih =>
    intro S hS hr
    have hx := hr x (mem_cons_self x xs)
    have hxs : ∀ a, a ∈ xs → a < D := fun a h => hr a (mem_cons_of_mem x h)
    show distinctFrom (S.map f) (f x :: xs.map f) = distinctFrom S (x :: xs)
    by_cases m : x ∈ S
    · rw [distinctFrom_of_mem (mem_map_of_mem' f m), distinctFrom_of_mem m]
      exact ih S hS hxs
    · have m' : ¬ f x ∈ S.map f := fun h => by
        obtain ⟨a, ha, e⟩ := exists_of_mem_map' f h
        exact m (hf a x (hS a ha) hx e ▸ ha)
      rw [distinctFrom_of_not_mem m', distinctFrom_of_not_mem m]
      have := ih (x :: S) (fun a h => by rcases mem_cons.1 h with e | h; exact e ▸ hx; exact hS a h) hxs
      exact congrArg (· + 1) this

/-- A strictly increasing table has no repeated entry below `D`. -/
theorem inj_of_increasing (t : Nat → Nat) (D : Nat) (h : ∀ j, j + 1 < D → t j < t (j + 1)) :
    ∀ a b, a < D → b < D → t a = t b → a = b := by
  have up : ∀ d a, a + d + 1 < D → t a < t (a + d + 1) := by
    intro d
    induction d with
    | zero => intro a ha; exact h a ha
    | succ d ih => intro a ha; exact Nat.lt_trans (ih a (by omega)) (h (a + d + 1) (by omega))
  intro a b ha hb e
  rcases Nat.lt_trichotomy a b with l | q | g
  · have := up (b - a - 1) a (by omega)
    rw [show a + (b - a - 1) + 1 = b by omega] at this
    omega
  · exact q
  · have := up (a - b - 1) b (by omega)
    rw [show b + (a - b - 1) + 1 = a by omega] at this
    omega

/-! ## The whole-vector tests -/

/-- `X` and `K` fit together reference by reference (`Step` at every `j < n`), tested on whole
vectors: with `C = K - X` (blocks seen but not referenced), `F = K' - K` (the fresh flag, `K'` the
counter one reference later) and `E = C + F - 1`, every field of `X, C, K, F, E` is small, the
three sums hold without a carry, `F ≤ 1`, and `F = 1` only where `E = 0`. -/
@[expose] public def denseOK (w n X K : Nat) : Bool :=
  let B := 2 ^ (w + 1)
  let Kc := K % B ^ n
  let Kn := K / B
  let C := Kc - X
  let F := Kn - Kc
  let O := ones B n
  let E := C + F - O
  Nat.ble 2 w && small w n X && small w n C && small w n Kc && small w n F && small w n E &&
    Nat.beq (X + C) Kc && Nat.beq (Kc + F) Kn && Nat.beq (E + O) (C + F) &&
    small w n (F + (2 ^ w - 2) * O) && small w n (E + (2 ^ w - 1) * F)

/-- The first `m` fields of `T` strictly increase: with `V = T' - T - 1` (`T'` the table one entry
later), every field of `T`, `T + 1` and `V` is small and `T + 1 + V = T'`. -/
@[expose] public def increasingOK (wt m T : Nat) : Bool :=
  let B := 2 ^ (wt + 1)
  let Tc := T % B ^ m
  let Tn := T / B
  let O := ones B m
  let V := Tn - (Tc + O)
  Nat.ble 1 wt && small wt m Tc && small wt m (Tc + O) && small wt m V && Nat.beq (Tc + O + V) Tn

/-- Everything the kernel checks for one trace: the counter starts at `0` and ends at `D`, the
numbering is dense, and the `D` table entries strictly increase. -/
@[expose] public def traceOK (w n X K wt D T : Nat) : Bool :=
  denseOK w n X K && Nat.beq (fld (2 ^ (w + 1)) K 0) 0 && Nat.beq (fld (2 ^ (w + 1)) K n) D &&
    increasingOK wt (D - 1) T

theorem and_eq_true' {a b : Bool} (h : (a && b) = true) : a = true ∧ b = true := by
  cases a <;> cases b <;> simp_all

theorem step_of_denseOK {w n X K : Nat} (h : denseOK w n X K = true) :
    ∀ j, j < n → Step (fld (2 ^ (w + 1)) X j) (fld (2 ^ (w + 1)) K j) (fld (2 ^ (w + 1)) K (j + 1)) := by
  simp only [denseOK] at h
  obtain ⟨h, hEF⟩ := and_eq_true' h
  obtain ⟨h, hF1⟩ := and_eq_true' h
  obtain ⟨h, hEO⟩ := and_eq_true' h
  obtain ⟨h, hKF⟩ := and_eq_true' h
  obtain ⟨h, hXC⟩ := and_eq_true' h
  obtain ⟨h, sE⟩ := and_eq_true' h
  obtain ⟨h, sF⟩ := and_eq_true' h
  obtain ⟨h, sKc⟩ := and_eq_true' h
  obtain ⟨h, sC⟩ := and_eq_true' h
  obtain ⟨hw, sX⟩ := and_eq_true' h
  have hw : 2 ≤ w := Nat.le_of_ble_eq_true hw
  have hB : 0 < 2 ^ (w + 1) := Nat.two_pow_pos _
  have hH : 4 ≤ 2 ^ w := by
    have := Nat.pow_le_pow_right (show 0 < 2 by decide) hw
    simpa using this
  have hHB : 2 ^ w < 2 ^ (w + 1) := Nat.pow_lt_pow_right (by decide) (by omega)
  generalize hO : ones (2 ^ (w + 1)) n = O at *
  generalize hKc : K % (2 ^ (w + 1)) ^ n = Kc at *
  generalize hC : Kc - X = C at *
  generalize hF : K / 2 ^ (w + 1) - Kc = F at *
  generalize hE : C + F - O = E at *
  have eXC : X + C = Kc := Nat.eq_of_beq_eq_true hXC
  have eKF : Kc + F = K / 2 ^ (w + 1) := Nat.eq_of_beq_eq_true hKF
  have eEO : E + O = C + F := Nat.eq_of_beq_eq_true hEO
  have sX := small_spec sX
  have sC := small_spec sC
  have sKc := small_spec sKc
  have sF := small_spec sF
  have sE := small_spec sE
  have s1 := small_spec hF1
  have s2 := small_spec hEF
  have oO : ∀ i, i < n → fld (2 ^ (w + 1)) O i = 1 := fun i hi => by
    rw [← hO, ← Nat.one_mul (ones _ n)]; exact fld_const w 1 (by omega) hi
  have fO : ∀ i, i < n → fld (2 ^ (w + 1)) ((2 ^ w - 2) * O) i = 2 ^ w - 2 := fun i hi => by
    rw [← hO]; exact fld_const w _ (by omega) hi
  have fle : ∀ i, i < n → fld (2 ^ (w + 1)) F i ≤ 1 := fun i hi => by
    have := s1 i hi
    rw [fld_add w i F _ (fun k hk => sF k (by omega)) (fun k hk => by rw [fO k (by omega)]; omega),
      fO i hi] at this
    omega
  intro j hj
  have a1 : fld (2 ^ (w + 1)) X j + fld (2 ^ (w + 1)) C j = fld (2 ^ (w + 1)) K j := by
    rw [← fld_add w j X C (fun k hk => sX k (by omega)) (fun k hk => sC k (by omega)), eXC, ← hKc,
      fld_mod_pow hB K hj]
  have a2 : fld (2 ^ (w + 1)) K j + fld (2 ^ (w + 1)) F j = fld (2 ^ (w + 1)) K (j + 1) := by
    have := fld_add w j Kc F (fun k hk => sKc k (by omega)) (fun k hk => sF k (by omega))
    rw [eKF, ← fld_succ, ← hKc, fld_mod_pow hB K hj] at this
    exact this.symm
  have a3 : fld (2 ^ (w + 1)) E j + 1 = fld (2 ^ (w + 1)) C j + fld (2 ^ (w + 1)) F j := by
    have := fld_add w j E O (fun k hk => sE k (by omega)) (fun k hk => by rw [oO k (by omega)]; omega)
    rw [eEO, fld_add w j C F (fun k hk => sC k (by omega)) (fun k hk => sF k (by omega)),
      oO j hj] at this
    exact this.symm
  have a4 : fld (2 ^ (w + 1)) E j + (2 ^ w - 1) * fld (2 ^ (w + 1)) F j < 2 ^ w := by
    have mulF : ∀ k, k ≤ j → fld (2 ^ (w + 1)) ((2 ^ w - 1) * F) k = (2 ^ w - 1) * fld (2 ^ (w + 1)) F k :=
      fun k hk => fld_mul w _ k F (fun i hi => by
        have := fle i (by omega)
        rcases Nat.le_one_iff_eq_zero_or_eq_one.1 this with e | e <;> rw [e] <;> omega)
    have := s2 j hj
    rw [fld_add w j E _ (fun k hk => sE k (by omega)) (fun k hk => by
        rw [mulF k hk]
        rcases Nat.le_one_iff_eq_zero_or_eq_one.1 (fle k (by omega)) with e | e <;> rw [e] <;> omega),
      mulF j (Nat.le_refl j)] at this
    exact this
  have f1 := fle j hj
  unfold Step
  rcases Nat.le_one_iff_eq_zero_or_eq_one.1 f1 with e | e
  · rw [e] at a2 a3 a4; right; omega
  · rw [e] at a2 a3 a4; left; omega

theorem increasing_of_OK {wt m T : Nat} (h : increasingOK wt m T = true) :
    ∀ j, j + 1 ≤ m → fld (2 ^ (wt + 1)) T j < fld (2 ^ (wt + 1)) T (j + 1) := by
  simp only [increasingOK] at h
  obtain ⟨h, hsum⟩ := and_eq_true' h
  obtain ⟨h, sV⟩ := and_eq_true' h
  obtain ⟨h, sT1⟩ := and_eq_true' h
  obtain ⟨hw, sT⟩ := and_eq_true' h
  have hw : 1 ≤ wt := Nat.le_of_ble_eq_true hw
  have hB : 0 < 2 ^ (wt + 1) := Nat.two_pow_pos _
  have hH : 2 ≤ 2 ^ wt := by
    have := Nat.pow_le_pow_right (show 0 < 2 by decide) hw
    simpa using this
  generalize hO : ones (2 ^ (wt + 1)) m = O at *
  generalize hTc : T % (2 ^ (wt + 1)) ^ m = Tc at *
  generalize hV : T / 2 ^ (wt + 1) - (Tc + O) = V at *
  have e : Tc + O + V = T / 2 ^ (wt + 1) := Nat.eq_of_beq_eq_true hsum
  have sT := small_spec sT
  have sT1 := small_spec sT1
  have sV := small_spec sV
  have oO : ∀ i, i < m → fld (2 ^ (wt + 1)) O i = 1 := fun i hi => by
    rw [← hO, ← Nat.one_mul (ones _ m)]; exact fld_const wt 1 (by omega) hi
  intro j hj
  have := fld_add wt j (Tc + O) V (fun k hk => sT1 k (by omega)) (fun k hk => sV k (by omega))
  rw [e, ← fld_succ, fld_add wt j Tc O (fun k hk => sT k (by omega))
    (fun k hk => by rw [oO k (by omega)]; omega), oO j (by omega), ← hTc, fld_mod_pow hB T (by omega)] at this
  omega

/-- The counts of a densely numbered trace renamed by a map injective below `D`, from the tests of
`denseOK` and the counter's ends. Both soundness theorems end here. -/
theorem decoded_counts {w n X K D : Nat} (f : Nat → Nat) (hdense : denseOK w n X K = true)
    (h0 : fld (2 ^ (w + 1)) K 0 = 0) (hD : fld (2 ^ (w + 1)) K n = D)
    (inj : ∀ a b, a < D → b < D → f a = f b → a = b) :
    ((fields (2 ^ (w + 1)) n X).map f).length = n ∧ distinct ((fields (2 ^ (w + 1)) n X).map f) = D := by
  have steps := step_of_denseOK hdense
  refine ⟨by rw [length_map', fields_length], ?_⟩
  have hd := dense_distinct (2 ^ (w + 1)) n X K [] (fun y => by
    rw [h0]; exact ⟨fun h => absurd h (not_mem_nil y), fun h => absurd h (Nat.not_lt_zero y)⟩) steps
  rw [h0, hD, Nat.add_zero] at hd
  have hb := (dense_bound (2 ^ (w + 1)) n X K steps).2
  rw [hD] at hb
  show distinctFrom ([] : List Nat) ((fields _ n X).map f) = D
  rw [← hd]
  exact distinctFrom_map f D inj (fields _ n X) [] (fun a h => absurd h (not_mem_nil a)) hb

theorem traceOK_parts {w n X K wt D T : Nat} (h : traceOK w n X K wt D T = true) :
    denseOK w n X K = true ∧ fld (2 ^ (w + 1)) K 0 = 0 ∧ fld (2 ^ (w + 1)) K n = D ∧
    ∀ j, j + 1 < D → fld (2 ^ (wt + 1)) T j < fld (2 ^ (wt + 1)) T (j + 1) := by
  simp only [traceOK] at h
  obtain ⟨h, hinc⟩ := and_eq_true' h
  obtain ⟨h, hD⟩ := and_eq_true' h
  obtain ⟨hdense, h0⟩ := and_eq_true' h
  exact ⟨hdense, Nat.eq_of_beq_eq_true h0, Nat.eq_of_beq_eq_true hD,
    fun j hj => increasing_of_OK hinc j (by omega)⟩

/-- **Kernel-checked trace figures.** If `traceOK w n X K wt D T` holds (the instance file proves it
with `decide +kernel`), the decoded trace has exactly `n` references and exactly `D` distinct
blocks. It does not say that the decoded trace is any particular file's; `decode` is the whole
link, and it is plain field arithmetic. -/
public theorem traceOK_sound {w n X K wt D T : Nat} (h : traceOK w n X K wt D T = true) :
    (decode w n X wt T).length = n ∧ distinct (decode w n X wt T) = D := by
  obtain ⟨hdense, h0, hD, inc⟩ := traceOK_parts h
  exact decoded_counts _ hdense h0 hD (inj_of_increasing _ D inc)

/-! ## Tables in any order: a sorted table and a permutation

When first occurrences do not come in increasing id order, the table is given as the sorted ids `S`
and a permutation `P` of `0 … D-1`: table entry `i` is `S`'s field number `fld P i`. `S` is tested
as above; `P` is walked entry by entry with a bitmask of the positions seen (`permGo`), in chunks so
that each chunk's walk is its own `decide +kernel` and the mask between chunks is a literal. This
walk is per table entry, not per reference: it costs kernel time per distinct block. -/

/-- Walk `n` fields of `P` (base `B`): each must be below `D` and absent from the mask `m`, which then
gains it. The mask after the walk, or `none` at the first repeat or out-of-range entry. -/
@[expose] public def permGo (B D : Nat) : Nat → Nat → Nat → Option Nat
  | 0, _, m => some m
  | n + 1, P, m =>
    cond (Nat.ble (P % B + 1) D && Nat.beq (m / 2 ^ (P % B) % 2) 0) (permGo B D n (P / B) (m ||| 1 <<< (P % B))) none

/-- The trace an instance with a permuted table stands for: reference `j` is `S`'s field number
`fld P (fld X j)`. -/
@[expose] public noncomputable def decodePerm (w n X wp P ws S : Nat) : List Nat :=
  (fields (2 ^ (w + 1)) n X).map (fun i => fld (2 ^ (ws + 1)) S (fld (2 ^ (wp + 1)) P i))

theorem testBit_or_shift (m p q : Nat) : (m ||| 1 <<< p).testBit q = (m.testBit q || decide (p = q)) := by
  rw [Nat.testBit_or, Nat.shiftLeft_eq, Nat.one_mul, Nat.testBit_two_pow]

theorem testBit_false_of {m p : Nat} (h : Nat.beq (m / 2 ^ p % 2) 0 = true) : m.testBit p = false := by
  have h0 : m / 2 ^ p % 2 = 0 := Nat.eq_of_beq_eq_true h
  have key : (1 &&& m >>> p) = m / 2 ^ p % 2 := by
    rw [Nat.and_comm, Nat.and_one_is_mod, Nat.shiftRight_eq_div_pow]
  show (1 &&& m >>> p != 0) = false
  rw [key, h0]
  rfl

theorem permGo_spec (B D : Nat) : ∀ n P m M, permGo B D n P m = some M →
    (∀ j, j < n → fld B P j < D) ∧ (∀ j, j < n → m.testBit (fld B P j) = false) ∧
    (∀ i j, i < j → j < n → fld B P i ≠ fld B P j) := by
  intro n
  induction n with
  | zero => intro P m M _; exact ⟨fun j h => absurd h (Nat.not_lt_zero j), fun j h => absurd h (Nat.not_lt_zero j),
      fun i j _ h => absurd h (Nat.not_lt_zero j)⟩
  | succ n ih =>
    intro P m M h
    simp only [permGo] at h
    cases hc : (Nat.ble (P % B + 1) D && Nat.beq (m / 2 ^ (P % B) % 2) 0) with
    | false => rw [hc] at h; cases h
    | true =>
      rw [hc] at h
      obtain ⟨hlt, hfresh⟩ := and_eq_true' hc
      have hlt : P % B + 1 ≤ D := Nat.le_of_ble_eq_true hlt
      have hfresh : m.testBit (P % B) = false := testBit_false_of hfresh
      obtain ⟨A, Bm, C⟩ := ih (P / B) _ M h
      have Bm' : ∀ j, j < n → m.testBit (fld B (P / B) j) = false ∧ P % B ≠ fld B (P / B) j := by
        intro j hj
        have := Bm j hj
        rw [testBit_or_shift] at this
        cases hq : m.testBit (fld B (P / B) j) <;> cases he : decide (P % B = fld B (P / B) j) <;>
          simp_all
      refine ⟨fun j hj => ?_, fun j hj => ?_, fun i j hij hj => ?_⟩
      · cases j with
        | zero => rw [fld_zero]; omega
        | succ j => rw [fld_succ]; exact A j (by omega)
      · cases j with
        | zero => rw [fld_zero]; exact hfresh
        | succ j => rw [fld_succ]; exact (Bm' j (by omega)).1
      · cases j with
        | zero => omega
        | succ j =>
          rw [fld_succ B P j]
          cases i with
          | zero => rw [fld_zero]; exact (Bm' j (by omega)).2
          | succ i => rw [fld_succ]; exact C i j (by omega) (by omega)

/-- Walking a chunk `c` of `L` fields and then the rest `R` is walking `c + B ^ L * R`. -/
public theorem permGo_chain {B D : Nat} (hB : 0 < B) (n : Nat) :
    ∀ (L c R m m1 M : Nat), c < B ^ L → permGo B D L c m = some m1 → permGo B D n R m1 = some M →
    permGo B D (L + n) (c + B ^ L * R) m = some M := by
  intro L
  induction L with
  | zero =>
    intro c R m m1 M hc h1 h2
    have hc0 : c = 0 := by simp at hc; omega
    simp only [permGo] at h1
    cases h1
    rw [hc0, Nat.pow_zero, Nat.one_mul, Nat.zero_add, Nat.zero_add]
    exact h2
  | succ L ih =>
    intro c R m m1 M hc h1 h2
    rw [show L + 1 + n = (L + n) + 1 by omega]
    have e1 : (c + B ^ (L + 1) * R) % B = c % B := by
      rw [Nat.pow_succ', Nat.mul_assoc, Nat.add_mul_mod_self_left]
    have e2 : (c + B ^ (L + 1) * R) / B = c / B + B ^ L * R := by
      rw [Nat.pow_succ', Nat.mul_assoc, Nat.add_mul_div_left _ _ hB]
    simp only [permGo, e1, e2]
    simp only [permGo] at h1
    cases hc' : (Nat.ble (c % B + 1) D && Nat.beq (m / 2 ^ (c % B) % 2) 0) with
    | false => rw [hc'] at h1; cases h1
    | true =>
      rw [hc'] at h1
      simp only [cond]
      have hcb : c / B < B ^ L := by
        rw [Nat.pow_succ'] at hc
        exact (Nat.div_lt_iff_lt_mul hB).2 (by rw [Nat.mul_comm]; exact hc)
      exact ih (c / B) R _ m1 M hcb h1 h2

/-- **Kernel-checked trace figures, any id order.** With `traceOK`'s tests on the sorted table `S` and a walk of the
permutation `P` (`permGo`, proved chunk by chunk), the decoded trace has exactly `n` references and
`D` distinct blocks. Like `traceOK_sound`, it says nothing about which file the trace came from. -/
public theorem tracePermOK_sound {w n X K wp P ws D S M : Nat} (h : traceOK w n X K ws D S = true)
    (hp : permGo (2 ^ (wp + 1)) D D P 0 = some M) :
    (decodePerm w n X wp P ws S).length = n ∧ distinct (decodePerm w n X wp P ws S) = D := by
  obtain ⟨hdense, h0, hD, inc⟩ := traceOK_parts h
  obtain ⟨pl, _, pd⟩ := permGo_spec (2 ^ (wp + 1)) D D P 0 M hp
  have injS := inj_of_increasing (fld (2 ^ (ws + 1)) S) D inc
  refine decoded_counts _ hdense h0 hD fun a b ha hb e => ?_
  have e' := injS _ _ (pl a ha) (pl b hb) e
  rcases Nat.lt_trichotomy a b with l | q | g
  · exact absurd e' (pd a b l hb)
  · exact q
  · exact absurd e'.symm (pd b a g ha)

end Pycert.PackedTrace
