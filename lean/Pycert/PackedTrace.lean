module

prelude
public import Pycert.Lists
public import Pycert.Packed
public import Pycert.Route
import Init.Omega

/-!
# A whole trace, checked by the kernel in a few GMP calls

A trace of `n` references over `D` distinct block ids, the ids any natural numbers in any order,
is written as three packed vectors (`Pycert.Packed`) and an exchange network (`Pycert.Route`):

* `X`, the **references**: reference `j` is block number `fld X j`, the blocks numbered densely in
  first-occurrence order (the first reference is `0`, each later one is an earlier number or the
  next unused one);
* `K`, the **counter**: `fld K j` is how many distinct blocks the first `j` references touched, for
  `j = 0 … n`;
* `S`, the **table**: the distinct ids in increasing order, one per field of `wt + 1` bits;
* `net`, the **network**: layers of pair swaps that send each block number to the place of its id
  in `S` (empty when first occurrences already come in increasing id order).

The trace the theorems are about is `decode w n X wt D S net`: field `j` of `X`, sent through the
network and looked up in `S`, for `j < n`. `traceOK` tests, on the whole vectors at once, that `X`
and `K` fit together reference by reference (`Step`) and that `S` strictly increases, hence has no
repeated id. The network needs no test: every layer is an involution, so any network is a bijection.
The soundness theorem `traceOK_sound` turns one `traceOK … = true`, proved by `decide +kernel`, into
the length and the distinct count of the decoded trace.

What this file does not say: that `decode` is the list of ids in some file (that link is the sha256
the certificate records and the decoder a reader can rerun), or anything about a table that does
not increase: such a trace is refused by `traceOK`, not counted.
-/

namespace Pycert.PackedTrace
open Pycert.Packed

/-- One reference of a densely numbered trace, with `k` blocks seen before it and `k'` after: it is
the next fresh number (`x = k`, one more block seen) or an earlier one (`x < k`, none). -/
@[expose] public def Step (x k k' : Nat) : Prop := (x = k ∧ k' = k + 1) ∨ (x < k ∧ k' = k)

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

public theorem dense_bound (B : Nat) : ∀ (n X K : Nat),
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
numbering is dense, and the `D` entries of the sorted table strictly increase. -/
@[expose] public def traceOK (w n X K wt D S : Nat) : Bool :=
  denseOK w n X K && Nat.beq (fld (2 ^ (w + 1)) K 0) 0 && Nat.beq (fld (2 ^ (w + 1)) K n) D &&
    increasingOK wt (D - 1) S

theorem and_eq_true' {a b : Bool} (h : (a && b) = true) : a = true ∧ b = true := by
  cases a <;> cases b <;> simp_all

public theorem step_of_denseOK {w n X K : Nat} (h : denseOK w n X K = true) :
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
public theorem decoded_counts {w n X K D : Nat} (f : Nat → Nat) (hdense : denseOK w n X K = true)
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

public theorem traceOK_parts {w n X K wt D S : Nat} (h : traceOK w n X K wt D S = true) :
    denseOK w n X K = true ∧ fld (2 ^ (w + 1)) K 0 = 0 ∧ fld (2 ^ (w + 1)) K n = D ∧
    ∀ j, j + 1 < D → fld (2 ^ (wt + 1)) S j < fld (2 ^ (wt + 1)) S (j + 1) := by
  simp only [traceOK] at h
  obtain ⟨h, hinc⟩ := and_eq_true' h
  obtain ⟨h, hD⟩ := and_eq_true' h
  obtain ⟨hdense, h0⟩ := and_eq_true' h
  exact ⟨hdense, Nat.eq_of_beq_eq_true h0, Nat.eq_of_beq_eq_true hD,
    fun j hj => increasing_of_OK hinc j (by omega)⟩

/-- Table entry `i`: field `i` of `S` below `D`; from `D` on, `2 ^ (wt + 1) + i`, a value no field
of `S` can take. Entries past the table are never looked up when the network is the one pycert
computed; they are defined so that `look` is injective on all of `Nat` (`look_inj`) and the soundness
theorem needs no bound on where the network sends a reference. -/
@[expose] public def look (wt D S i : Nat) : Nat :=
  if i < D then fld (2 ^ (wt + 1)) S i else 2 ^ (wt + 1) + i

/-- The trace a packed instance stands for: reference `j` is block number `fld X j` (first-occurrence
order), sent through the exchange network `net` (`Pycert.Route.route`) to its place in the sorted
table `S`, whose entry there is its id. -/
@[expose] public noncomputable def decode (w n X wt D S : Nat) (net : List (Nat × Nat)) : List Nat :=
  (fields (2 ^ (w + 1)) n X).map (fun x => look wt D S (Route.route net x))

/-- A table that strictly increases below `D` makes `look` injective everywhere. -/
public theorem look_inj {wt D S : Nat}
    (inc : ∀ j, j + 1 < D → fld (2 ^ (wt + 1)) S j < fld (2 ^ (wt + 1)) S (j + 1))
    {a b : Nat} (h : look wt D S a = look wt D S b) : a = b := by
  have lt : ∀ i, fld (2 ^ (wt + 1)) S i < 2 ^ (wt + 1) := fun i => fld_lt (Nat.two_pow_pos _) S i
  unfold look at h
  by_cases ha : a < D <;> by_cases hb : b < D
  · rw [if_pos ha, if_pos hb] at h; exact inj_of_increasing _ D inc a b ha hb h
  · rw [if_pos ha, if_neg hb] at h; have := lt a; omega
  · rw [if_neg ha, if_pos hb] at h; have := lt b; omega
  · rw [if_neg ha, if_neg hb] at h; omega

/-- **Kernel-checked trace figures.** If `traceOK w n X K wt D S` holds (the instance file proves it
with `decide +kernel`), the decoded trace has exactly `n` references and exactly `D` distinct
blocks, whatever the network `net`: the network is a bijection by construction
(`Pycert.Route.route_inj`) and the sorted table has no repeated id, so looking blocks up through
them keeps every distinct block distinct. It does not say that the decoded trace is any particular
file's; `decode` is the whole link, and it is plain field arithmetic and bit tests. -/
public theorem traceOK_sound {w n X K wt D S : Nat} (net : List (Nat × Nat))
    (h : traceOK w n X K wt D S = true) :
    (decode w n X wt D S net).length = n ∧ distinct (decode w n X wt D S net) = D := by
  obtain ⟨hdense, h0, hD, inc⟩ := traceOK_parts h
  exact decoded_counts _ hdense h0 hD fun _ _ _ _ e => Route.route_inj net (look_inj inc e)

end Pycert.PackedTrace
