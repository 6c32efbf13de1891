module

prelude
public import Pycert.Basic

/-!
# Kernel-checked trace instances

A per-trace file encodes a trace as a list of `Chunk`s (big `Nat` literals) and proves, chunk by
chunk with `decide +kernel`, the run of a cheap counter over the decoded references. The lemmas here
turn those closed facts into `distinct` and `length` of the decoded trace.

Why this shape: the kernel evaluates `Nat` arithmetic on GMP but walks every other term node by
node and caches every intermediate result for the whole declaration, so each chunk is its own
theorem (its cache dies with it) and the state handed from one chunk to the next is a literal.
-/

namespace Pycert.TraceCheck

/-- Decode `n` references from `d`. Low bit `0`: a fresh id, `m` (the next fresh id); low bit `1`:
the next `w` bits are an id already named. Fuel keeps the recursion structural. -/
@[expose] public noncomputable def decodeFrom : Nat → Nat → Nat → Nat → List Nat
  | 0, _, _, _ => []
  | n + 1, w, m, d =>
    cond (Nat.beq (Nat.mod d 2) 0)
      (m :: decodeFrom n w (Nat.succ m) (Nat.div d 2))
      (Nat.mod (Nat.div d 2) (Nat.pow 2 w) :: decodeFrom n w m (Nat.div d (Nat.pow 2 (Nat.succ w))))

/-- One packed chunk: `n` references, id width `w`, first fresh id `m`, data `d`. -/
public structure Chunk where
  n : Nat
  w : Nat
  m : Nat
  d : Nat

@[expose] public noncomputable def Chunk.decode (c : Chunk) : List Nat := decodeFrom c.n c.w c.m c.d

/-- The references of a chunk list, in order. -/
@[expose] public noncomputable def decodeAll : List Chunk → List Nat
  | [] => []
  | c :: cs => c.decode ++ decodeAll cs

@[expose] public noncomputable def totalRefs : List Chunk → Nat
  | [] => 0
  | c :: cs => c.n + totalRefs cs

/-- Counter for traces whose ids are numbered densely in first-occurrence order: every id seen so
far is below `k`, and a new id must be exactly `k`. `none` when the trace breaks that shape. -/
@[expose] public noncomputable def denseGo : Nat → List Nat → Option Nat
  | k, [] => some k
  | k, x :: xs =>
    cond (Nat.ble k x)
      (cond (Nat.beq x k) (denseGo (Nat.succ k) xs) none)
      (denseGo k xs)

/-! ## Lengths -/

theorem decodeFrom_length : ∀ (n w m d : Nat), (decodeFrom n w m d).length = n := by
  intro n
  induction n with
  | zero => intro w m d; rfl
  | succ n ih =>
    intro w m d
    rw [decodeFrom]
    cases Nat.beq (Nat.mod d 2) 0 with
    | true => exact congrArg Nat.succ (ih w _ _)
    | false => exact congrArg Nat.succ (ih w _ _)

theorem length_append' : ∀ (a b : List Nat), (a ++ b).length = a.length + b.length := by
  intro a b
  induction a with
  | nil => exact (Nat.zero_add _).symm
  | cons x xs ih =>
    show Nat.succ (xs ++ b).length = Nat.succ xs.length + b.length
    rw [ih, Nat.succ_add]

public theorem decodeAll_length : ∀ cs : List Chunk, (decodeAll cs).length = totalRefs cs := by
  intro cs
  induction cs with
  | nil => rfl
  | cons c cs ih =>
    show (c.decode ++ decodeAll cs).length = c.n + totalRefs cs
    rw [length_append', ih]
    exact congrArg (fun x => x + totalRefs cs) (decodeFrom_length c.n c.w c.m c.d)

/-! ## The dense counter computes `distinct` -/

theorem lt_of_ble_false {k x : Nat} (h : Nat.ble k x = false) : x < k :=
  Nat.gt_of_not_le fun hle => by rw [Nat.ble_eq_true_of_le hle] at h; cases h

theorem denseGo_spec : ∀ (r l : List Nat) (k k' : Nat),
    (∀ y, y ∈ l ↔ y < k) → denseGo k r = some k' → distinctFrom l r + k = k' := by
  intro r
  induction r with
  | nil =>
    intro l k k' _ h
    show 0 + k = k'
    rw [Nat.zero_add]
    exact Option.some.inj h
  | cons x xs ih =>
    intro l k k' hl h
    rw [denseGo] at h
    cases hb : Nat.ble k x with
    | false =>
      rw [hb] at h
      have hmem : x ∈ l := (hl x).2 (lt_of_ble_false hb)
      rw [distinctFrom, if_pos hmem]
      exact ih l k k' hl h
    | true =>
      rw [hb] at h
      cases he : Nat.beq x k with
      | false => rw [he] at h; cases h
      | true =>
        rw [he] at h
        have hx : x = k := Nat.eq_of_beq_eq_true he
        have hnot : ¬ x ∈ l := fun hm => Nat.lt_irrefl k (hx ▸ (hl x).1 hm)
        rw [distinctFrom, if_neg hnot]
        have hl' : ∀ y, y ∈ x :: l ↔ y < Nat.succ k := fun y => Iff.intro
          (fun hy => match hy with
            | List.Mem.head _ => by rw [hx]; exact Nat.lt_succ_self k
            | List.Mem.tail _ hy => Nat.lt_succ_of_lt ((hl y).1 hy))
          (fun hy => match Nat.eq_or_lt_of_le (Nat.le_of_lt_succ hy) with
            | Or.inl heq => by rw [heq, ← hx]; exact List.Mem.head l
            | Or.inr hlt => List.Mem.tail x ((hl y).2 hlt))
        have := ih (x :: l) (Nat.succ k) k' hl' h
        exact (Nat.add_right_comm _ 1 k).trans this

public theorem distinct_of_denseGo {r : List Nat} {d : Nat} (h : denseGo 0 r = some d) :
    distinct r = d :=
  denseGo_spec r [] 0 d (fun y => Iff.intro (fun h => nomatch h) (fun h => absurd h (Nat.not_lt_zero y))) h

theorem denseGo_append : ∀ (a b : List Nat) (k k1 : Nat),
    denseGo k a = some k1 → denseGo k (a ++ b) = denseGo k1 b := by
  intro a b
  induction a with
  | nil => intro k k1 h; cases h; rfl
  | cons x xs ih =>
    intro k k1 h
    show denseGo k (x :: (xs ++ b)) = denseGo k1 b
    rw [denseGo] at h
    rw [denseGo]
    cases hb : Nat.ble k x with
    | false => rw [hb] at h; exact ih k k1 h
    | true =>
      rw [hb] at h
      cases he : Nat.beq x k with
      | false => rw [he] at h; cases h
      | true => rw [he] at h; exact ih _ k1 h

/-- What each chunk lemma of a per-trace file feeds into the chain. -/
public theorem denseGo_chunk {k k1 : Nat} (c : Chunk) (cs : List Chunk) (h : denseGo k c.decode = some k1) :
    denseGo k (decodeAll (c :: cs)) = denseGo k1 (decodeAll cs) :=
  denseGo_append c.decode (decodeAll cs) k k1 h

public theorem denseGo_nil (k : Nat) : denseGo k (decodeAll []) = some k := rfl

end Pycert.TraceCheck
