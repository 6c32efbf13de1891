module

prelude
public import Init.Data.Nat.Bitwise.Basic
import Init.Data.Nat.Bitwise.Lemmas
import Init.Omega

/-!
# Exchange networks: permutations that are bijections by construction

A layer `(k, c)` pairs every position `j` with `j ^^^ 2 ^ k` (the position that differs from it in
bit `k` only) and swaps the pair when bit `pairIndex k j` of the control word `c` is set; both
positions of a pair read the same control bit, so a layer is an involution whatever `c` holds
(`swap_swap`). A list of layers (`route`) is therefore injective on all of `Nat` (`route_inj`),
with no test to run: a Beneš network (layers on bits `m-1, …, 1, 0, 1, …, m-1`) with controls
chosen by the looping algorithm realises any permutation of `0 … 2^m - 1`, and `pycert.lean_trace`
computes them, but no theorem here depends on how the controls were chosen.

What this file does not say: which permutation a network realises (a wrong control word gives
another bijection, not an error), nor anything about the range of `route` (a position may be
sent anywhere in `Nat`; `Pycert.PackedTrace.look` is injective everywhere so that it needs no
bound).
-/

namespace Pycert.Route

/-- The pair number of position `j` in a layer on bit `k`: `j` with bit `k` taken out. The two
positions of a pair have the same number (`pairIndex_xor`), so they read one control bit. -/
@[expose] public def pairIndex (k j : Nat) : Nat := (j >>> (k + 1)) <<< k ||| j % 2 ^ k

/-- One exchange layer on bit `k` with control word `c`: `j` moves to `j ^^^ 2 ^ k` when its pair's
control bit is set. -/
@[expose] public def swap (k c j : Nat) : Nat :=
  if c.testBit (pairIndex k j) then j ^^^ 2 ^ k else j

/-- Where position `j` ends after the layers, applied first to last. -/
@[expose] public def route : List (Nat × Nat) → Nat → Nat
  | [], j => j
  | l :: rest, j => route rest (swap l.1 l.2 j)

public theorem pairIndex_xor (k j : Nat) : pairIndex k (j ^^^ 2 ^ k) = pairIndex k j := by
  have hi : (j ^^^ 2 ^ k) >>> (k + 1) = j >>> (k + 1) := Nat.eq_of_testBit_eq fun i => by
    simp only [Nat.testBit_shiftRight, Nat.testBit_xor, Nat.testBit_two_pow]
    have : ¬ k = k + 1 + i := by omega
    simp [this]
  have lo : (j ^^^ 2 ^ k) % 2 ^ k = j % 2 ^ k := Nat.eq_of_testBit_eq fun i => by
    simp only [Nat.testBit_mod_two_pow, Nat.testBit_xor, Nat.testBit_two_pow]
    by_cases h : i < k
    · have : ¬ k = i := by omega
      simp [h, this]
    · simp [h]
  simp only [pairIndex, hi, lo]

/-- Every layer undoes itself. -/
public theorem swap_swap (k c j : Nat) : swap k c (swap k c j) = j := by
  by_cases h : c.testBit (pairIndex k j)
  · have h' : c.testBit (pairIndex k (j ^^^ 2 ^ k)) = true := by rw [pairIndex_xor]; exact h
    simp only [swap, h, h', if_true, Nat.xor_assoc, Nat.xor_self, Nat.xor_zero]
  · have h' : c.testBit (pairIndex k j) = false := by simpa using h
    simp only [swap, h', Bool.false_eq_true, if_false]

public theorem swap_inj (k c : Nat) {a b : Nat} (h : swap k c a = swap k c b) : a = b := by
  rw [← swap_swap k c a, h, swap_swap]

/-- **A network never merges two positions.** Whatever the layers and their control words, `route`
sends different positions to different positions. -/
public theorem route_inj : ∀ (net : List (Nat × Nat)) {a b : Nat}, route net a = route net b → a = b
  | [], _, _, h => h
  | l :: rest, _, _, h => swap_inj l.1 l.2 (route_inj rest h)

end Pycert.Route
