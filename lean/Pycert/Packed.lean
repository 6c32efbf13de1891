module

prelude
public import Init.Data.Nat.Bitwise.Basic
import Init.Data.Nat.Bitwise.Lemmas
import Init.Omega

/-!
# Packed vectors: many small numbers in one big `Nat`

A packed vector holds its entries in fields of `w + 1` bits, lowest field first; `fld B X j` is
field `j` of `X` in base `B = 2 ^ (w + 1)`. The kernel runs `+`, `-`, `*` by a small number, `/`,
`%`, `&&&` and shifts on big `Nat` literals in one GMP call, so a test on a whole vector costs a
handful of such calls however many fields it has. The lemmas here say what those whole-vector tests
mean field by field. They are the only bridge: none of them asks the kernel to walk a field.

The top bit of a field is its *guard*. When every guard of `X` and `Y` is clear, adding the vectors
adds the fields (`fld_add`): no carry crosses a field boundary. `small w n X` tests the guards of the
first `n` fields with one `&&&` (`small_spec`).

What this file does not say: anything about fields at or above `n`, or about how a vector was read
from a file. Field widths and counts are parameters; nothing is assumed about their size.
-/

namespace Pycert.Packed

/-- Field `j` of `X` in base `B`. -/
@[expose] public def fld (B X j : Nat) : Nat := X / B ^ j % B

/-- The first `n` fields of `X` in base `B`, lowest first. -/
@[expose] public def fields (B : Nat) : Nat → Nat → List Nat
  | 0, _ => []
  | n + 1, X => X % B :: fields B n (X / B)

/-- `1 + B + B^2 + … + B^(n-1)`: the vector whose first `n` fields are `1`. Written as one division
so that the kernel computes it in a few GMP calls. -/
@[expose] public def ones (B n : Nat) : Nat := (B ^ n - 1) / (B - 1)

/-- Whether the guard bit (bit `w`) of each of the first `n` fields of `X` is clear, i.e. every such
field is below `2 ^ w`. One `&&&` against the mask of all guards. -/
@[expose] public def small (w n X : Nat) : Bool :=
  Nat.beq (X &&& 2 ^ w * ones (2 ^ (w + 1)) n) 0

/-! ## Fields -/

public theorem fields_length (B : Nat) : ∀ n X, (fields B n X).length = n
  | 0, _ => rfl
  | n + 1, X => congrArg Nat.succ (fields_length B n (X / B))

public theorem fld_zero (B X : Nat) : fld B X 0 = X % B := by
  simp only [fld, Nat.pow_zero, Nat.div_one]

public theorem fld_succ (B X j : Nat) : fld B X (j + 1) = fld B (X / B) j := by
  simp only [fld, Nat.div_div_eq_div_mul, Nat.pow_succ']

public theorem fld_lt {B : Nat} (hB : 0 < B) (X j : Nat) : fld B X j < B := Nat.mod_lt _ hB

theorem split (B X : Nat) : X = X % B + B * (X / B) := by
  have := Nat.div_add_mod X B
  omega

theorem div_of_low {B r q : Nat} (hB : 0 < B) (hr : r < B) : (r + B * q) / B = q := by
  rw [Nat.add_mul_div_left _ _ hB, Nat.div_eq_of_lt hr, Nat.zero_add]

theorem mod_of_low {B r q : Nat} (hr : r < B) : (r + B * q) % B = r := by
  rw [Nat.add_mul_mod_self_left, Nat.mod_eq_of_lt hr]

/-- Fields below `n` do not see what is added at `B ^ n` and above. -/
public theorem fld_add_high {B : Nat} (hB : 0 < B) (D : Nat) :
    ∀ j n A, j < n → fld B (A + B ^ n * D) j = fld B A j := by
  intro j
  induction j with
  | zero =>
    intro n A h
    obtain ⟨m, rfl⟩ : ∃ m, n = m + 1 := ⟨n - 1, by omega⟩
    rw [fld_zero, fld_zero, Nat.pow_succ', Nat.mul_assoc, Nat.add_mul_mod_self_left]
  | succ j ih =>
    intro n A h
    obtain ⟨m, rfl⟩ : ∃ m, n = m + 1 := ⟨n - 1, by omega⟩
    rw [fld_succ, fld_succ, Nat.pow_succ', Nat.mul_assoc, Nat.add_mul_div_left _ _ hB]
    exact ih m (A / B) (by omega)

/-- The first `n` fields of `X % B ^ n` are those of `X`. -/
public theorem fld_mod_pow {B : Nat} (hB : 0 < B) (X : Nat) {j n : Nat} (h : j < n) :
    fld B (X % B ^ n) j = fld B X j := by
  conv => rhs; rw [← Nat.mod_add_div X (B ^ n)]
  exact (fld_add_high hB _ j n _ h).symm

/-! ## No carries: sums and small multiples act field by field -/

section Width
variable (w : Nat)

theorem two_pow_pos' : 0 < 2 ^ (w + 1) := Nat.two_pow_pos _

theorem two_le_pow : 2 ≤ 2 ^ (w + 1) := by
  have := Nat.pow_le_pow_right (show 0 < 2 by decide) (show 1 ≤ w + 1 by omega)
  simpa using this

theorem half_add_half : 2 ^ w + 2 ^ w = 2 ^ (w + 1) := by rw [Nat.pow_succ]; omega

theorem add_div_of_low {B X Y : Nat} (hB : 0 < B) (h : X % B + Y % B < B) :
    (X + Y) / B = X / B + Y / B := by
  have hx := Nat.div_add_mod X B
  have hy := Nat.div_add_mod Y B
  have e : X + Y = (X % B + Y % B) + B * (X / B + Y / B) := by rw [Nat.mul_add]; omega
  rw [e, div_of_low hB h]

theorem mul_of_low {B m F : Nat} (hB : 0 < B) (h : m * (F % B) < B) :
    m * F % B = m * (F % B) ∧ m * F / B = m * (F / B) := by
  have hf := Nat.div_add_mod F B
  have e : m * F = m * (F % B) + B * (m * (F / B)) := by
    conv => lhs; rw [← hf]
    rw [Nat.mul_add, Nat.mul_left_comm, Nat.add_comm]
  rw [e]
  exact ⟨mod_of_low h, div_of_low hB h⟩

/-- Adding two vectors adds field `j` when no field at or below `j` has its guard set. -/
public theorem fld_add : ∀ j X Y, (∀ i, i ≤ j → fld (2 ^ (w + 1)) X i < 2 ^ w) →
    (∀ i, i ≤ j → fld (2 ^ (w + 1)) Y i < 2 ^ w) →
    fld (2 ^ (w + 1)) (X + Y) j = fld (2 ^ (w + 1)) X j + fld (2 ^ (w + 1)) Y j := by
  have hB := two_pow_pos' w
  have hh := half_add_half w
  intro j
  induction j with
  | zero =>
    intro X Y hx hy
    have ax := hx 0 (Nat.le_refl 0)
    have ay := hy 0 (Nat.le_refl 0)
    simp only [fld_zero] at ax ay ⊢
    rw [Nat.add_mod, Nat.mod_eq_of_lt (by omega)]
  | succ j ih =>
    intro X Y hx hy
    have ax := hx 0 (Nat.zero_le _)
    have ay := hy 0 (Nat.zero_le _)
    simp only [fld_zero] at ax ay
    rw [fld_succ, fld_succ, fld_succ, add_div_of_low hB (by omega)]
    exact ih _ _ (fun i hi => by rw [← fld_succ]; exact hx (i + 1) (by omega))
      (fun i hi => by rw [← fld_succ]; exact hy (i + 1) (by omega))

/-- Multiplying a vector by `m` multiplies field `j` when no product at or below `j` overflows. -/
public theorem fld_mul : ∀ (m j F : Nat), (∀ i, i ≤ j → m * fld (2 ^ (w + 1)) F i < 2 ^ (w + 1)) →
    fld (2 ^ (w + 1)) (m * F) j = m * fld (2 ^ (w + 1)) F j := by
  have hB := two_pow_pos' w
  intro m j
  induction j with
  | zero =>
    intro F h
    have a := h 0 (Nat.le_refl 0)
    simp only [fld_zero] at a ⊢
    exact (mul_of_low hB a).1
  | succ j ih =>
    intro F h
    have a := h 0 (Nat.zero_le _)
    simp only [fld_zero] at a
    rw [fld_succ, fld_succ, (mul_of_low hB a).2]
    exact ih _ (fun i hi => by rw [← fld_succ]; exact h (i + 1) (by omega))

end Width

/-! ## The all-ones vector -/

theorem pow_pos' {B : Nat} (hB : 0 < B) : ∀ n, 0 < B ^ n
  | 0 => by simp
  | n + 1 => by rw [Nat.pow_succ]; exact Nat.mul_pos (pow_pos' hB n) hB

theorem ones_succ_of {B n : Nat} (hB : 2 ≤ B) (h : B ^ n - 1 = (B - 1) * ones B n) :
    B ^ (n + 1) - 1 = (B - 1) * (1 + B * ones B n) := by
  have ht : 0 < B ^ n := pow_pos' (by omega) n
  rw [Nat.pow_succ, Nat.mul_add, Nat.mul_one, Nat.mul_left_comm, ← h, Nat.mul_sub_one,
    Nat.mul_comm (B ^ n) B]
  have : B ≤ B * B ^ n := Nat.le_mul_of_pos_right B ht
  omega

theorem ones_spec {B : Nat} (hB : 2 ≤ B) : ∀ n, B ^ n - 1 = (B - 1) * ones B n
  | 0 => by simp [ones]
  | n + 1 => by
    rw [ones, ones_succ_of hB (ones_spec hB n), Nat.mul_div_cancel_left _ (by omega)]

public theorem ones_succ {B : Nat} (hB : 2 ≤ B) (n : Nat) : ones B (n + 1) = 1 + B * ones B n := by
  rw [ones, ones_succ_of hB (ones_spec hB n), Nat.mul_div_cancel_left _ (by omega)]

public theorem fld_ones {B : Nat} (hB : 2 ≤ B) : ∀ j n, j < n → fld B (ones B n) j = 1 := by
  intro j
  induction j with
  | zero =>
    intro n h
    obtain ⟨m, rfl⟩ : ∃ m, n = m + 1 := ⟨n - 1, by omega⟩
    rw [fld_zero, ones_succ hB, mod_of_low (by omega)]
  | succ j ih =>
    intro n h
    obtain ⟨m, rfl⟩ : ∃ m, n = m + 1 := ⟨n - 1, by omega⟩
    rw [fld_succ, ones_succ hB, div_of_low (by omega) (by omega)]
    exact ih m (by omega)

/-- `c` times the all-ones vector has every one of its first `n` fields equal to `c`. -/
public theorem fld_const (w c : Nat) (hc : c < 2 ^ (w + 1)) {j n : Nat} (h : j < n) :
    fld (2 ^ (w + 1)) (c * ones (2 ^ (w + 1)) n) j = c := by
  have hB : 2 ≤ 2 ^ (w + 1) := two_le_pow w
  rw [fld_mul w c j _ (fun i hi => by rw [fld_ones hB i n (by omega), Nat.mul_one]; exact hc),
    fld_ones hB j n h, Nat.mul_one]

/-! ## Guard bits -/

theorem div_and (a b k : Nat) : (a &&& b) / 2 ^ k = a / 2 ^ k &&& b / 2 ^ k :=
  Nat.eq_of_testBit_eq fun i => by simp only [Nat.testBit_div_two_pow, Nat.testBit_and]

public theorem fld_and (w X Y j : Nat) :
    fld (2 ^ (w + 1)) (X &&& Y) j = fld (2 ^ (w + 1)) X j &&& fld (2 ^ (w + 1)) Y j := by
  simp only [fld, ← Nat.pow_mul, div_and, Nat.and_mod_two_pow]

theorem lt_of_and_two_pow {w v : Nat} (hv : v < 2 ^ (w + 1)) (h : v &&& 2 ^ w = 0) : v < 2 ^ w := by
  apply Nat.lt_pow_two_of_testBit
  intro i hi
  by_cases e : i = w
  · subst e
    have := congrArg (fun z => z.testBit i) h
    simpa [Nat.testBit_and, Nat.testBit_two_pow] using this
  · exact Nat.testBit_lt_two_pow (Nat.lt_of_lt_of_le hv (Nat.pow_le_pow_right (by decide) (by omega)))

/-- What `small` tests: every one of the first `n` fields is below `2 ^ w`. -/
public theorem small_spec {w n X : Nat} (h : small w n X = true) :
    ∀ j, j < n → fld (2 ^ (w + 1)) X j < 2 ^ w := by
  intro j hj
  have h0 : X &&& 2 ^ w * ones (2 ^ (w + 1)) n = 0 := Nat.eq_of_beq_eq_true h
  have hg : fld (2 ^ (w + 1)) (2 ^ w * ones (2 ^ (w + 1)) n) j = 2 ^ w :=
    fld_const w (2 ^ w) (Nat.pow_lt_pow_right (by decide) (by omega)) hj
  have e := fld_and w X (2 ^ w * ones (2 ^ (w + 1)) n) j
  rw [h0, hg] at e
  have z : fld (2 ^ (w + 1)) 0 j = 0 := by simp [fld]
  rw [z] at e
  exact lt_of_and_two_pow (fld_lt (Nat.two_pow_pos _) X j) e.symm

end Pycert.Packed
