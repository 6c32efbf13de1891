module

prelude
public import Pycert.AdmissionOptimum
import Init.Omega

/-!
# A trace in pieces, both ways, with bypass: the open pairs carried across each joint

A trace too long for one instance is checked in pieces `b₁, b₂, …` that follow one another (no shared
reference). For the optimum with bypass both halves must cross the joints:

* **The bound.** Each piece states a cut list and its free reuses (`PieceA`); with a cut at the last
  reference of every piece but the last, no free reuse spans a joint, so the pieces' counts add up,
  one cut a joint (`pieceA_glue`), and `boundedA_of_pieceA` is `hits_le_freeA` for the joined list.
* **The witness.** The pairs of the optimum's witness that span a joint belong to no piece. Each piece
  is checked as the list `P ++ b`: the blocks `P` of the pairs open where it starts, one reference each,
  taken as starts, then its own references `b`; it states the blocks `Q` of the starts still live after
  its last reference (`WPiece`). When the next piece starts with exactly those blocks (`Q`), the two
  make one piece (`wpiece_glue`): a start before the joint that is live there is the prefix start of its
  block in the next piece, so the live starts at every step, the ends and the pairs they close are what
  the pieces checked. With no open pair before the first piece, `optimumA_of_pieces` gives `OptimumA`.

What this file does not say: where the joints fall (a joint that is not a saturated cut loosens the bound
and the headline's inequality fails), nor anything outside the model of `Pycert.Admission.Run`.
-/

namespace Pycert.Joints
open Pycert.Ceiling Pycert.Capacity Pycert.Admission

/-! ## Lists -/

theorem nth_app_lt : ∀ (a b : List Nat) (j : Nat), j < a.length → nth (a ++ b) j = nth a j
  | [], _, _, h => absurd h (Nat.not_lt_zero _)
  | _ :: _, _, 0, _ => rfl
  | _ :: xs, b, j + 1, h => nth_app_lt xs b j (by simp at h; omega)

theorem nth_app_ge : ∀ (a b : List Nat) (j : Nat), nth (a ++ b) (a.length + j) = nth b j
  | [], _, j => by simp
  | _ :: xs, b, j => by
    rw [List.length_cons, show xs.length + 1 + j = (xs.length + j) + 1 by omega, List.cons_append, nth_cons_succ]
    exact nth_app_ge xs b j

theorem len_app (a b : List Nat) : (a ++ b).length = a.length + b.length := by simp

/-- The position of `x` in `Q` (`Q.length` when it is not there). -/
@[expose] public def pos (x : Nat) : List Nat → Nat
  | [] => 0
  | y :: ys => if y = x then 0 else pos x ys + 1

theorem pos_spec (x : Nat) : ∀ (Q : List Nat), x ∈ Q → pos x Q < Q.length ∧ nth Q (pos x Q) = x
  | [], h => absurd h (not_mem_nil _)
  | y :: ys, h => by
    unfold pos
    by_cases e : y = x
    · rw [if_pos e]; exact ⟨by simp, e⟩
    · rw [if_neg e]
      have := pos_spec x ys ((mem_cons.1 h).resolve_left (Ne.symm e))
      exact ⟨by simp; omega, by rw [nth_cons_succ]; exact this.2⟩

/-- No block twice. -/
@[expose] public def Distinct (Q : List Nat) : Prop :=
  ∀ p q, p < q → q < Q.length → nth Q p ≠ nth Q q

public theorem mem_of_lt : ∀ (Q : List Nat) (q : Nat), q < Q.length → nth Q q ∈ Q
  | [], _, h => absurd h (Nat.not_lt_zero _)
  | _ :: _, 0, _ => mem_cons_self _ _
  | _ :: ys, q + 1, h => mem_cons_of_mem _ (mem_of_lt ys q (by simp at h; omega))

/-! ## The bound -/

/-- **What a piece states of the bound.** `b` has `n` references and, for some list of `m` cut points,
at most `F` of them reuse a block with no cut at or after the previous reference to it (`FreeA`). -/
@[expose] public def PieceA (b : List Nat) (n m F : Nat) : Prop :=
  b.length = n ∧ ∃ Y : List Nat, Y.length = m ∧ count (FreeA b Y) n ≤ F

theorem length_shift (k : Nat) : ∀ (Y : List Nat), (Y.map (· + k)).length = Y.length
  | [] => rfl
  | _ :: Y => congrArg Nat.succ (length_shift k Y)

theorem mem_shift {y k : Nat} : ∀ {Y : List Nat}, y ∈ Y → y + k ∈ Y.map (· + k)
  | _ :: _, List.Mem.head _ => List.Mem.head _
  | _ :: _, List.Mem.tail _ h => List.Mem.tail _ (mem_shift h)

/-- **Two pieces make one.** `a` followed by `b`, with the cuts of both and one at `a`'s last reference:
`n₁ + n₂` references, `m₁ + m₂ + 1` cuts, at most `F₁ + F₂` free reuses. -/
public theorem pieceA_glue {a b : List Nat} {n₁ m₁ F₁ n₂ m₂ F₂ : Nat} (ha : PieceA a n₁ m₁ F₁)
    (hb : PieceA b n₂ m₂ F₂) (hpos : 0 < n₁) : PieceA (a ++ b) (n₁ + n₂) (m₁ + m₂ + 1) (F₁ + F₂) := by
  obtain ⟨la, Ya, hYa, ca⟩ := ha
  obtain ⟨lb, Yb, hYb, cb⟩ := hb
  refine ⟨by rw [len_app, la, lb], Ya ++ (n₁ - 1) :: Yb.map (· + n₁), by rw [length_append', List.length_cons, length_shift, hYa, hYb]; omega, ?_⟩
  rw [count_add]
  have left : count (FreeA (a ++ b) (Ya ++ (n₁ - 1) :: Yb.map (· + n₁))) n₁ ≤ F₁ :=
    Nat.le_trans (count_mono fun j hj ⟨i, hij, e, gap⟩ =>
      ⟨i, hij, by rw [← nth_app_lt a b i (by omega), ← nth_app_lt a b j (by omega)]; exact e,
        fun y hy => gap y (mem_append'.2 (Or.inl hy))⟩) ca
  have right : count (fun l => FreeA (a ++ b) (Ya ++ (n₁ - 1) :: Yb.map (· + n₁)) (n₁ + l)) n₂ ≤ F₂ := by
    refine Nat.le_trans (count_mono fun l _ ⟨i, hij, e, gap⟩ => ?_) cb
    have hi : n₁ ≤ i := Nat.le_of_not_lt fun h =>
      gap (n₁ - 1) (mem_append'.2 (Or.inr (List.Mem.head _))) ⟨by omega, by omega⟩
    refine ⟨i - n₁, by omega, ?_, fun y hy hb => ?_⟩
    · have e1 := nth_app_ge a b (i - n₁)
      have e2 := nth_app_ge a b l
      rw [la, show n₁ + (i - n₁) = i by omega] at e1
      rw [la] at e2
      rw [← e1, ← e2]; exact e
    · exact gap (y + n₁) (mem_append'.2 (Or.inr (List.Mem.tail _ (mem_shift hy)))) ⟨by omega, by omega⟩
  omega

/-- **The bound from a piece.** A trace that is one piece (possibly glued from many) with `m` cuts and
`F` free reuses is bounded by `C · m + F` for every cache of `C` blocks with bypass. -/
public theorem boundedA_of_pieceA {r : List Nat} {n m F C H : Nat} (h : PieceA r n m F) (hH : C * m + F ≤ H) :
    BoundedA r n C H := by
  obtain ⟨hn, Y, hY, hF⟩ := h
  refine ⟨hn, fun K hK => ?_⟩
  have := hits_le_freeA hK Y
  rw [hY, hn] at this
  omega

/-! ## The witness -/

/-- **What a piece states of the witness.** On `P ++ b` (the blocks `P` of the pairs open where the piece
starts, then its references `b`), starts `S` and ends `E` such that: every position of `P` is a start and
none an end; at most `C` starts are live at every step; every end closes the pair of a start (the
previous reference to its block is a start); there are `h` ends; and `Q` lists, once each, the blocks of
the starts live after the last reference. -/
@[expose] public def WPiece (P b Q : List Nat) (C h : Nat) : Prop :=
  ∃ S E : Nat → Prop,
    (∀ i, i < P.length → S i ∧ ¬ E i) ∧
    (∀ t, t < (P ++ b).length → count (fun i => S i ∧ Live (P ++ b) i t) (P ++ b).length ≤ C) ∧
    (∀ j, j < (P ++ b).length → E j → ∃ i, S i ∧ i < j ∧ nth (P ++ b) i = nth (P ++ b) j ∧
      ∀ u, i < u → u < j → nth (P ++ b) u ≠ nth (P ++ b) j) ∧
    count E (P ++ b).length = h ∧
    (∀ x, x ∈ Q ↔ ∃ i, i < (P ++ b).length ∧ S i ∧ Live (P ++ b) i ((P ++ b).length - 1) ∧ nth (P ++ b) i = x) ∧
    Distinct Q

/-- Liveness up to a step depends only on the references up to it. -/
theorem live_app {T b : List Nat} {i t : Nat} (ht : t < T.length) : Live (T ++ b) i t ↔ Live T i t := by
  constructor
  · rintro ⟨h1, h2⟩
    exact ⟨h1, fun u hu hut => by
      rw [← nth_app_lt T b u (by omega), ← nth_app_lt T b i (by omega)]; exact h2 u hu hut⟩
  · rintro ⟨h1, h2⟩
    exact ⟨h1, fun u hu hut => by
      rw [nth_app_lt T b u (by omega), nth_app_lt T b i (by omega)]; exact h2 u hu hut⟩

/-- A start live at `t ≥` the end of `T` is live at `T`'s last step. -/
theorem live_last {T b : List Nat} {i t : Nat} (hi : i < T.length) (ht : T.length ≤ t + 1)
    (h : Live (T ++ b) i t) : Live T i (T.length - 1) :=
  (live_app (by omega)).1 ⟨by omega, fun u hu hut => h.2 u hu (by omega)⟩

/-- Two starts live at the same step hold different blocks. -/
public theorem live_ne {r : List Nat} {i i' t : Nat} (h : Live r i t) (h' : Live r i' t) (e : nth r i = nth r i') : i = i' := by
  rcases Nat.lt_trichotomy i i' with l | q | g
  · exact absurd e.symm (h.2 i' l h'.1)
  · exact q
  · exact absurd e (h'.2 i g h.1)

/-- A block of `Q`, at its prefix position `pos x Q` of `Q ++ b`, is live at `|Q| + l` when `b` has no
reference to it up to `l`. -/
theorem prefix_live {Q b : List Nat} {x l : Nat} (hQ : Distinct Q) (hx : x ∈ Q)
    (hb : ∀ l', l' ≤ l → nth b l' ≠ x) : Live (Q ++ b) (pos x Q) (Q.length + l) := by
  obtain ⟨hp, hn⟩ := pos_spec x Q hx
  refine ⟨by omega, fun u hu hut => ?_⟩
  rw [nth_app_lt Q b _ hp, hn]
  by_cases hq : u < Q.length
  · rw [nth_app_lt Q b u hq, ← hn]; exact fun e => hQ _ _ hu hq e.symm
  · have := nth_app_ge Q b (u - Q.length)
    rw [show Q.length + (u - Q.length) = u by omega] at this
    rw [this]
    exact hb _ (by omega)

theorem nth_app_sub {T b : List Nat} {u : Nat} (h : T.length ≤ u) : nth (T ++ b) u = nth b (u - T.length) := by
  have := nth_app_ge T b (u - T.length)
  rwa [show T.length + (u - T.length) = u by omega] at this

/-- **Two pieces make one.** If `a` (after the open blocks `P`) leaves the blocks `Q` open and `b` starts
with exactly those, `a` followed by `b` (after `P`) leaves what `b` leaves, and its ends add up. -/
public theorem wpiece_glue {P a Q b R : List Nat} {C h₁ h₂ : Nat} (h1 : WPiece P a Q C h₁) (h2 : WPiece Q b R C h₂)
    (hb : 0 < b.length) : WPiece P (a ++ b) R C (h₁ + h₂) := by
  obtain ⟨S₁, E₁, pre₁, cov₁, end₁, cnt₁, out₁, dis₁⟩ := h1
  obtain ⟨S₂, E₂, pre₂, cov₂, end₂, cnt₂, out₂, dis₂⟩ := h2
  unfold WPiece
  rw [← List.append_assoc]
  generalize hT : P ++ a = T at pre₁ cov₁ end₁ cnt₁ out₁
  have hPT : P.length ≤ T.length := by rw [← hT, len_app]; omega
  generalize hL : T.length = L at *
  generalize hq : Q.length = q at *
  have hTb : (T ++ b).length = L + b.length := by rw [len_app, hL]
  have hQb : (Q ++ b).length = q + b.length := by rw [len_app, hq]
  rw [hTb]
  rw [hQb] at cov₂ end₂ cnt₂ out₂
  have lowT : ∀ u, u < L → nth (T ++ b) u = nth T u := fun u hu => nth_app_lt T b u (by omega)
  have highT : ∀ u, L ≤ u → nth (T ++ b) u = nth b (u - L) := fun u hu => by rw [nth_app_sub (by omega), hL]
  have lowQ : ∀ u, u < q → nth (Q ++ b) u = nth Q u := fun u hu => nth_app_lt Q b u (by omega)
  have highQ : ∀ u, q ≤ u → nth (Q ++ b) u = nth b (u - q) := fun u hu => by rw [nth_app_sub (by omega), hq]
  -- a start after the joint, read in `Q ++ b`: liveness carries over
  have liveB : ∀ i t, L ≤ i → Live (T ++ b) i t → Live (Q ++ b) (i - L + q) (t - L + q) := fun i t hi ⟨h1, h2⟩ =>
    ⟨by omega, fun u hu hut => by
      rw [highQ u (by omega), highQ _ (by omega), show i - L + q - q = i - L by omega]
      have := h2 (u - q + L) (by omega) (by omega)
      rwa [highT _ (by omega), highT i hi, show u - q + L - L = u - q by omega] at this⟩
  have liveB' : ∀ i t, L ≤ i → L ≤ t → Live (Q ++ b) (i - L + q) (t - L + q) → Live (T ++ b) i t :=
    fun i t hi ht ⟨h1, h2⟩ => ⟨by omega, fun u hu hut => by
      rw [highT u (by omega), highT i hi]
      have := h2 (u - L + q) (by omega) (by omega)
      rwa [highQ _ (by omega), highQ _ (by omega), show u - L + q - q = u - L by omega,
        show i - L + q - q = i - L by omega] at this⟩
  -- a start before the joint, live across it: its block is in `Q`, at its prefix position
  have across : ∀ i l, i < L → l < b.length → S₁ i → Live (T ++ b) i (L + l) →
      nth T i ∈ Q ∧ S₂ (pos (nth T i) Q) ∧ Live (Q ++ b) (pos (nth T i) Q) (q + l) := by
    intro i l hi hl si hlive
    have lv : Live T i (T.length - 1) := live_last (by omega) (by omega) hlive
    rw [hL] at lv
    have hx : nth T i ∈ Q := (out₁ _).2 ⟨i, by omega, si, lv, rfl⟩
    refine ⟨hx, (pre₂ _ (by have := (pos_spec _ Q hx).1; omega)).1, ?_⟩
    have := prefix_live (l := l) dis₁ hx fun l' hl' => by
      have := hlive.2 (L + l') (by omega) (by omega)
      rwa [highT _ (by omega), lowT i hi, show L + l' - L = l' by omega] at this
    rwa [hq] at this
  refine ⟨fun i => (i < L ∧ S₁ i) ∨ (L ≤ i ∧ S₂ (i - L + q)), fun i => (i < L ∧ E₁ i) ∨ (L ≤ i ∧ E₂ (i - L + q)),
    fun i hi => ⟨Or.inl ⟨by omega, (pre₁ i hi).1⟩, ?_⟩, fun t ht => ?_, fun j hj ej => ?_, ?_, fun x => ?_, dis₂⟩
  · rintro (⟨_, e⟩ | ⟨h, _⟩)
    · exact (pre₁ i hi).2 e
    · omega
  · -- at most `C` live starts at every step
    by_cases htL : t < L
    · rw [count_stop (m := L) (by omega) fun j hj ⟨_, hl, _⟩ => by omega]
      refine Nat.le_trans (Nat.le_of_eq (count_congr fun i hi => ?_)) (cov₁ t (by omega))
      rw [live_app (by omega)]
      exact ⟨fun ⟨h, lv⟩ => ⟨h.elim (fun h => h.2) (fun h => absurd h.1 (by omega)), lv⟩,
        fun ⟨si, lv⟩ => ⟨Or.inl ⟨hi, si⟩, lv⟩⟩
    · refine Nat.le_trans (count_le_count _ (fun i => S₂ i ∧ Live (Q ++ b) i (t - L + q))
        (fun i => if i < L then pos (nth T i) Q else i - L + q) (fun i hi ⟨si, lv⟩ => ?_)
        (fun i i' hi hi' ⟨si, lv⟩ ⟨si', lv'⟩ e => ?_)) (cov₂ (t - L + q) (by omega))
      · dsimp only
        rcases si with ⟨hiL, si⟩ | ⟨hiL, si⟩
        · rw [if_pos hiL]
          obtain ⟨hx, s2, l2⟩ := across i (t - L) hiL (by omega) si (by rwa [show L + (t - L) = t by omega])
          exact ⟨by have := (pos_spec _ Q hx).1; omega, s2, by rwa [show q + (t - L) = t - L + q by omega] at l2⟩
        · rw [if_neg (by omega)]
          exact ⟨by omega, si, liveB i t hiL lv⟩
      · dsimp only at e
        rcases si with ⟨hiL, si⟩ | ⟨hiL, si⟩ <;> rcases si' with ⟨hiL', si'⟩ | ⟨hiL', si'⟩
        · rw [if_pos hiL, if_pos hiL'] at e
          obtain ⟨hx, -, -⟩ := across i (t - L) hiL (by omega) si (by rwa [show L + (t - L) = t by omega])
          obtain ⟨hx', -, -⟩ := across i' (t - L) hiL' (by omega) si' (by rwa [show L + (t - L) = t by omega])
          have hn := (pos_spec _ Q hx).2
          rw [e, (pos_spec _ Q hx').2] at hn
          have l1 := live_last (b := b) (by omega) (by omega) lv
          have l2 := live_last (b := b) (by omega) (by omega) lv'
          rw [hL] at l1 l2
          exact live_ne l1 l2 hn.symm
        · rw [if_pos hiL, if_neg (by omega)] at e
          obtain ⟨hx, -, -⟩ := across i (t - L) hiL (by omega) si (by rwa [show L + (t - L) = t by omega])
          have := (pos_spec _ Q hx).1
          omega
        · rw [if_neg (by omega), if_pos hiL'] at e
          obtain ⟨hx', -, -⟩ := across i' (t - L) hiL' (by omega) si' (by rwa [show L + (t - L) = t by omega])
          have := (pos_spec _ Q hx').1
          omega
        · rw [if_neg (by omega), if_neg (by omega)] at e
          omega
  · -- every end closes the pair of a start
    rcases ej with ⟨hjL, ej⟩ | ⟨hjL, ej⟩
    · obtain ⟨i, si, hij, e, gap⟩ := end₁ j (by omega) ej
      refine ⟨i, Or.inl ⟨by omega, si⟩, hij, by rw [lowT i (by omega), lowT j hjL]; exact e, fun u hu huj => ?_⟩
      rw [lowT u (by omega), lowT j hjL]; exact gap u hu huj
    · obtain ⟨i₂, si, hij, e, gap⟩ := end₂ (j - L + q) (by omega) ej
      have hjb : nth (T ++ b) j = nth (Q ++ b) (j - L + q) := by
        rw [highT j hjL, highQ _ (by omega), show j - L + q - q = j - L by omega]
      by_cases hi₂ : q ≤ i₂
      · refine ⟨i₂ - q + L, Or.inr ⟨by omega, by rwa [show i₂ - q + L - L + q = i₂ by omega]⟩, by omega, ?_,
          fun u hu huj => ?_⟩
        · rw [hjb, ← e, highT _ (by omega), highQ _ hi₂, show i₂ - q + L - L = i₂ - q by omega]
        · rw [hjb, highT u (by omega)]
          have := gap (u - L + q) (by omega) (by omega)
          rwa [highQ _ (by omega), show u - L + q - q = u - L by omega] at this
      · have hx : nth Q i₂ ∈ Q := mem_of_lt Q i₂ (by omega)
        obtain ⟨i, hi, si₁, lv, ei⟩ := (out₁ _).1 hx
        have ex : nth (T ++ b) j = nth T i := by rw [hjb, ← e, lowQ i₂ (by omega), ei]
        refine ⟨i, Or.inl ⟨by omega, si₁⟩, by omega, by rw [lowT i (by omega), ex], fun u hu huj => ?_⟩
        by_cases huL : u < L
        · rw [lowT u huL, ex]; exact lv.2 u hu (by omega)
        · rw [hjb, highT u (by omega)]
          have := gap (u - L + q) (by omega) (by omega)
          rwa [highQ _ (by omega), show u - L + q - q = u - L by omega] at this
  · -- the ends add up
    rw [count_add, ← cnt₁]
    have e1 : count (fun i => (i < L ∧ E₁ i) ∨ (L ≤ i ∧ E₂ (i - L + q))) L = count E₁ L :=
      count_congr fun i hi => ⟨fun h => h.elim (fun h => h.2) (fun h => absurd h.1 (by omega)), fun e => Or.inl ⟨hi, e⟩⟩
    have e2 : count (fun l => (L + l < L ∧ E₁ (L + l)) ∨ (L ≤ L + l ∧ E₂ (L + l - L + q))) b.length =
        count (fun l => E₂ (q + l)) b.length :=
      count_congr fun l _ => ⟨fun h => h.elim (fun h => absurd h.1 (by omega))
        (fun h => by rw [show L + l - L + q = q + l by omega] at h; exact h.2),
        fun h => Or.inr ⟨by omega, by rwa [show L + l - L + q = q + l by omega]⟩⟩
    rw [e1, e2, ← cnt₂, count_add, count_eq_zero fun i hi => (pre₂ i (by omega)).2, Nat.zero_add]
  · -- the blocks left open
    rw [out₂ x]
    constructor
    · rintro ⟨i₂, hi₂, si, lv, ex⟩
      by_cases hq₂ : q ≤ i₂
      · refine ⟨i₂ - q + L, by omega, Or.inr ⟨by omega, by rwa [show i₂ - q + L - L + q = i₂ by omega]⟩, ?_, ?_⟩
        · exact liveB' _ _ (by omega) (by omega)
            (by rwa [show i₂ - q + L - L + q = i₂ by omega, show L + b.length - 1 - L + q = q + b.length - 1 by omega])
        · rw [highT _ (by omega), ← ex, highQ _ hq₂, show i₂ - q + L - L = i₂ - q by omega]
      · have hx : nth Q i₂ ∈ Q := mem_of_lt Q i₂ (by omega)
        obtain ⟨i, hi, si₁, lvT, ei⟩ := (out₁ _).1 hx
        have ex' : nth T i = x := by rw [ei, ← lowQ i₂ (by omega), ex]
        refine ⟨i, by omega, Or.inl ⟨by omega, si₁⟩, ⟨by omega, fun u hu hut => ?_⟩, by rw [lowT i (by omega), ex']⟩
        rw [lowT i (by omega), ex']
        by_cases huL : u < L
        · rw [lowT u huL, ← ex']; exact lvT.2 u hu (by omega)
        · rw [highT u (by omega)]
          have := lv.2 (u - L + q) (by omega) (by omega)
          rwa [highQ _ (by omega), show u - L + q - q = u - L by omega, ex] at this
    · rintro ⟨i, hi, si, lv, ex⟩
      rcases si with ⟨hiL, si⟩ | ⟨hiL, si⟩
      · obtain ⟨hx, s2, l2⟩ := across i (b.length - 1) hiL (by omega) si
          (by rwa [show L + (b.length - 1) = L + b.length - 1 by omega])
        rw [lowT i hiL] at ex
        refine ⟨pos (nth T i) Q, by have := (pos_spec _ Q hx).1; omega, s2,
          by rwa [show q + (b.length - 1) = q + b.length - 1 by omega] at l2, ?_⟩
        rw [lowQ _ (by have := (pos_spec _ Q hx).1; omega), (pos_spec _ Q hx).2, ex]
      · refine ⟨i - L + q, by omega, si, ?_, ?_⟩
        · have := liveB i _ hiL lv
          rwa [show L + b.length - 1 - L + q = q + b.length - 1 by omega] at this
        · rw [highQ _ (by omega), show i - L + q - q = i - L by omega, ← highT i hiL, ex]

/-- **The optimum with bypass from pieces.** A trace that is one piece both ways (possibly glued
from many: no open pair before it) with `m` cuts, `F` free reuses and a witness of `H ≥ C · m + F` ends
has `H` as its optimum at `C` blocks with bypass (`OptimumA`). It says nothing outside the model
of `Pycert.Admission.Run`, and the cache reaching `H` reads the whole trace (it is offline). -/
public theorem optimumA_of_pieces {r Q : List Nat} {n m F C H : Nat} (hb : PieceA r n m F) (hH : C * m + F ≤ H)
    (hw : WPiece [] r Q C H) : OptimumA r n C H := by
  obtain ⟨S, E, -, cov, ends, cnt, -, -⟩ := hw
  rw [List.nil_append] at cov ends cnt
  exact optimumA_of (boundedA_of_pieceA hb (Nat.le_refl _) |> fun h => ⟨h.1, fun K hK => Nat.le_trans (h.2 K hK) hH⟩)
    S E cov ends cnt

/-! ## Both halves -/

/-- **What a piece states, both ways.** Its bound (`PieceA`) and its witness after the open blocks `P`,
leaving the blocks `Q` open (`WPiece`). -/
@[expose] public def PieceBoth (P b Q : List Nat) (n m F C h : Nat) : Prop :=
  PieceA b n m F ∧ WPiece P b Q C h

/-- **Two pieces make one, both ways.** -/
public theorem both_glue {P a Q b R : List Nat} {n₁ m₁ F₁ h₁ n₂ m₂ F₂ h₂ n m F h C : Nat}
    (h1 : PieceBoth P a Q n₁ m₁ F₁ C h₁) (h2 : PieceBoth Q b R n₂ m₂ F₂ C h₂) (p₁ : 0 < n₁) (p₂ : 0 < n₂)
    (hn : n₁ + n₂ = n) (hm : m₁ + m₂ + 1 = m) (hF : F₁ + F₂ = F) (hh : h₁ + h₂ = h) : PieceBoth P (a ++ b) R n m F C h := by
  subst hn hm hF hh
  exact ⟨pieceA_glue h1.1 h2.1 p₁, wpiece_glue h1.2 h2.2 (by rw [h2.1.1]; exact p₂)⟩

/-- **The optimum with bypass of a trace in pieces.** A trace that is one piece both ways with
no open pair before it, `m` cuts, `F` free reuses and a witness of `H ≥ C · m + F` ends: `OptimumA`. -/
public theorem optimumA_of_both {r Q : List Nat} {n m F C H : Nat} (h : PieceBoth [] r Q n m F C H)
    (hH : C * m + F ≤ H) : OptimumA r n C H :=
  optimumA_of_pieces h.1 hH h.2

end Pycert.Joints
