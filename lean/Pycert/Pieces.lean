module

prelude
public import Pycert.Capacity
import Init.Omega

/-!
# A trace in pieces, joined at cuts

A trace too long for one instance is checked in pieces that overlap by one reference: piece `k`
runs from split point `s_k` to `s_{k+1}`, both included, and every split point is a cut. A reuse
that straddles a split point is never free (the split is a cut), so the free reuses of the whole
trace are those of the pieces, each counted in the one piece that holds both of its references
(`piece_glue`), and the capacity bound of the whole trace follows from the pieces' counts
(`bounded_of_piece`). Each piece states its first and last reference, so the kernel checks that
consecutive pieces share the reference they overlap on.

What this file does not say: where the splits fall (any split gives a sound bound; one at a cut
the cut list needs anyway gives the same bound as the whole trace at once), nor anything about a
piece that does not overlap its neighbour.
-/

namespace Pycert.Capacity
open Pycert.Ceiling

/-- **What a piece states.** `r` has `n ≥ 1` references, its first is `first` and its last `last`,
and for some list of `m` cut points at most `F` of its references reuse a block with no cut
strictly in between (`Free`). -/
@[expose] public def Piece (r : List Nat) (n m F first last : Nat) : Prop :=
  r.length = n ∧ 0 < n ∧ nth r 0 = first ∧ nth r (n - 1) = last ∧
    ∃ Y : List Nat, Y.length = m ∧ count (Free r Y) n ≤ F

theorem nth_append_lt : ∀ (a b : List Nat) (j : Nat), j < a.length → nth (a ++ b) j = nth a j
  | [], _, _, h => absurd h (Nat.not_lt_zero _)
  | _ :: _, _, 0, _ => rfl
  | _ :: xs, b, j + 1, h => nth_append_lt xs b j (by simp at h; omega)

theorem nth_append_ge : ∀ (a b : List Nat) (j : Nat), nth (a ++ b) (a.length + j) = nth b j
  | [], _, j => by simp
  | _ :: xs, b, j => by
    rw [List.length_cons, show xs.length + 1 + j = (xs.length + j) + 1 by omega, List.cons_append, nth_cons_succ]
    exact nth_append_ge xs b j

theorem length_tail : ∀ (b : List Nat), b.tail.length = b.length - 1
  | [] => rfl
  | _ :: _ => by rw [List.tail_cons, List.length_cons, Nat.add_sub_cancel]

theorem mem_shift {y k : Nat} : ∀ {Y : List Nat}, y ∈ Y → y + k ∈ Y.map (· + k)
  | _ :: _, List.Mem.head _ => List.Mem.head _
  | _ :: _, List.Mem.tail _ h => List.Mem.tail _ (mem_shift h)

theorem length_shift (k : Nat) : ∀ (Y : List Nat), (Y.map (· + k)).length = Y.length
  | [] => rfl
  | _ :: Y => congrArg Nat.succ (length_shift k Y)

theorem nth_tail : ∀ (b : List Nat) (j : Nat), nth b.tail j = nth b (j + 1)
  | [], _ => rfl
  | _ :: _, _ => rfl

/-- **Two pieces that overlap on one reference make a piece.** If `a` ends with the reference `b`
starts with, `a` followed by the rest of `b` has `n₁ + n₂ - 1` references and, with the cuts of both
and one at the joint, at most `F₁ + F₂` free reuses. -/
public theorem piece_glue {a b : List Nat} {n₁ m₁ F₁ f₁ l₁ n₂ m₂ F₂ l₂ n m F : Nat}
    (ha : Piece a n₁ m₁ F₁ f₁ l₁) (hb : Piece b n₂ m₂ F₂ l₁ l₂)
    (hn : n₁ + n₂ - 1 = n) (hm : m₁ + m₂ + 1 = m) (hF : F₁ + F₂ = F) : Piece (a ++ b.tail) n m F f₁ l₂ := by
  obtain ⟨la, pa, fa, ea, Ya, hYa, ca⟩ := ha
  obtain ⟨lb, pb, fb, eb, Yb, hYb, cb⟩ := hb
  subst hn hm hF
  have lenb : b.tail.length = n₂ - 1 := by rw [length_tail, lb]
  -- reference `j` of the joined list, read in `a` below `n₁` and in `b` from `n₁ - 1` on
  have inA : ∀ j, j < n₁ → nth (a ++ b.tail) j = nth a j := fun j hj => nth_append_lt a _ j (by omega)
  have inB : ∀ j, n₁ - 1 ≤ j → nth (a ++ b.tail) j = nth b (j - (n₁ - 1)) := by
    intro j hj
    by_cases e : j = n₁ - 1
    · subst e; rw [inA _ (by omega), ea, Nat.sub_self, fb]
    · have := nth_append_ge a b.tail (j - n₁)
      rw [la, show n₁ + (j - n₁) = j by omega, nth_tail, show j - n₁ + 1 = j - (n₁ - 1) by omega] at this
      exact this
  refine ⟨by rw [length_append', la, lenb]; omega, by omega, by rw [inA 0 pa, fa], ?_,
    Ya ++ (n₁ - 1) :: Yb.map (· + (n₁ - 1)), by rw [length_append', List.length_cons, length_shift, hYa, hYb]; omega, ?_⟩
  · rw [inB _ (by omega), show n₁ + n₂ - 1 - 1 - (n₁ - 1) = n₂ - 1 by omega, eb]
  · rw [show n₁ + n₂ - 1 = n₁ + (n₂ - 1) by omega, count_add]
    have left : count (Free (a ++ b.tail) (Ya ++ (n₁ - 1) :: Yb.map (· + (n₁ - 1)))) n₁ ≤ F₁ :=
      Nat.le_trans (count_mono fun j hj ⟨i, hij, e, gap⟩ => ⟨i, hij, by rw [← inA i (by omega), ← inA j hj]; exact e,
        fun y hy => gap y (mem_append'.2 (Or.inl hy))⟩) ca
    have right : count (fun l => Free (a ++ b.tail) (Ya ++ (n₁ - 1) :: Yb.map (· + (n₁ - 1))) (n₁ + l)) (n₂ - 1) ≤
        count (fun l => Free b Yb (l + 1)) (n₂ - 1) := by
      refine count_mono fun l _ ⟨i, hij, e, gap⟩ => ?_
      have hi : n₁ - 1 ≤ i := Nat.le_of_not_lt fun h =>
        gap (n₁ - 1) (mem_append'.2 (Or.inr (List.Mem.head _))) ⟨h, by omega⟩
      refine ⟨i - (n₁ - 1), by omega, ?_, fun y hy hb => ?_⟩
      · rw [← inB i hi, e, inB _ (by omega), show n₁ + l - (n₁ - 1) = l + 1 by omega]
      · exact gap (y + (n₁ - 1)) (mem_append'.2 (Or.inr (List.Mem.tail _ (mem_shift hy))))
          ⟨by omega, by omega⟩
    have whole := count_succ_front (Free b Yb) (n₂ - 1)
    rw [show n₂ - 1 + 1 = n₂ by omega] at whole
    omega

/-- **The capacity bound from a piece.** A trace that is one piece (possibly glued from many) with
`m` cuts and `F` free reuses is `Bounded` by `(C - 1) · m + F` at capacity `C`: `hits_le_free` for
the piece's cut list. It says no more than `Bounded` does. -/
public theorem bounded_of_piece {r : List Nat} {n m F first last C H : Nat} (h : Piece r n m F first last)
    (hH : (C - 1) * m + F ≤ H) : Bounded r n C H := by
  obtain ⟨hn, _, _, _, Y, hY, hF⟩ := h
  refine ⟨hn, fun P hP => ?_⟩
  have := hits_le_free hP r Y
  rw [hY, hn] at this
  omega

end Pycert.Capacity
