module

prelude
public import Init.Data.List.Basic
import Init.Omega

/-!
# Lists: membership facts and first-touch counting

Membership and append lemmas proved here so that no file needs the list lemma library (the shards'
and the pieces' proofs share them), and the first-touch count of a trace (`distinctFrom`,
`distinct`): how many references touch a block for the first time.
-/

namespace Pycert

/-! ## List membership -/

public theorem mem_cons {α : Type} {a b : α} {l : List α} : a ∈ b :: l ↔ a = b ∨ a ∈ l := by
  constructor
  · intro h
    cases h with
    | head => exact Or.inl rfl
    | tail _ h => exact Or.inr h
  · intro h
    cases h with
    | inl e => subst e; exact List.Mem.head l
    | inr h => exact List.Mem.tail b h

public theorem mem_cons_self {α : Type} (a : α) (l : List α) : a ∈ a :: l := List.Mem.head l

public theorem mem_cons_of_mem {α : Type} {a : α} (b : α) {l : List α} (h : a ∈ l) : a ∈ b :: l :=
  List.Mem.tail b h

public theorem not_mem_nil {α : Type} (a : α) : ¬ a ∈ ([] : List α) := fun h => by cases h

public theorem mem_of_mem_filter {α : Type} {p : α → Bool} {y : α} :
    ∀ {l : List α}, y ∈ l.filter p → y ∈ l
  | [], h => h
  | a :: l, h => by
    cases hp : p a
    · have e : List.filter p (a :: l) = List.filter p l := by simp only [List.filter, hp]
      rw [e] at h
      exact mem_cons_of_mem a (mem_of_mem_filter h)
    · have e : List.filter p (a :: l) = a :: List.filter p l := by simp only [List.filter, hp]
      rw [e] at h
      rcases mem_cons.1 h with e | h
      · subst e; exact mem_cons_self _ _
      · exact mem_cons_of_mem a (mem_of_mem_filter h)

public theorem mem_append' {y : Nat} : ∀ {a b : List Nat}, y ∈ a ++ b ↔ y ∈ a ∨ y ∈ b
  | [], b => ⟨Or.inr, fun h => h.elim (fun h => absurd h (not_mem_nil y)) id⟩
  | x :: a, b => by
    show y ∈ x :: (a ++ b) ↔ y ∈ x :: a ∨ y ∈ b
    rw [mem_cons, mem_cons, mem_append']
    constructor
    · intro h; rcases h with h | h | h
      · exact Or.inl (Or.inl h)
      · exact Or.inl (Or.inr h)
      · exact Or.inr h
    · intro h; rcases h with (h | h) | h
      · exact Or.inl h
      · exact Or.inr (Or.inl h)
      · exact Or.inr (Or.inr h)

public theorem length_append' : ∀ (a b : List Nat), (a ++ b).length = a.length + b.length
  | [], b => (Nat.zero_add _).symm
  | _ :: a, b => by
    show (a ++ b).length + 1 = a.length + 1 + b.length
    rw [length_append' a b]; omega

public theorem filter_true {α : Type} : ∀ (l : List α), l.filter (fun _ => true) = l
  | [] => rfl
  | a :: l => by
    have e : List.filter (fun _ => true) (a :: l) = a :: List.filter (fun _ => true) l := by
      simp only [List.filter]
    rw [e, filter_true l]

public theorem mem_of_mem_take {α : Type} {y : α} : ∀ {k : Nat} {l : List α}, y ∈ l.take k → y ∈ l
  | 0, _, h => by rw [List.take_zero] at h; exact absurd h (not_mem_nil y)
  | _ + 1, [], h => by rw [List.take_nil] at h; exact h
  | k + 1, a :: l, h => by
    rw [List.take_succ_cons] at h
    rcases mem_cons.1 h with e | h
    · subst e; exact mem_cons_self _ _
    · exact mem_cons_of_mem a (mem_of_mem_take h)

/-! ## First-touch counting -/

/-- `distinctFrom seen r`: how many references of `r` touch a block for the first time, given that
the blocks in `seen` were touched already. -/
@[expose] public noncomputable def distinctFrom : List Nat → List Nat → Nat
  | _, [] => 0
  | seen, x :: xs => if x ∈ seen then distinctFrom seen xs else distinctFrom (x :: seen) xs + 1

/-- The number of distinct blocks a trace references. -/
@[expose] public noncomputable def distinct (r : List Nat) : Nat := distinctFrom [] r

public theorem distinctFrom_nil (S : List Nat) : distinctFrom S [] = 0 := rfl

public theorem distinctFrom_cons (S : List Nat) (x : Nat) (r : List Nat) :
    distinctFrom S (x :: r) = if x ∈ S then distinctFrom S r else distinctFrom (x :: S) r + 1 := rfl

public theorem distinctFrom_of_mem {S : List Nat} {x : Nat} (h : x ∈ S) (r : List Nat) :
    distinctFrom S (x :: r) = distinctFrom S r := by
  rw [distinctFrom_cons, if_pos h]

public theorem distinctFrom_of_not_mem {S : List Nat} {x : Nat} (h : ¬ x ∈ S) (r : List Nat) :
    distinctFrom S (x :: r) = distinctFrom (x :: S) r + 1 := by
  rw [distinctFrom_cons, if_neg h]

/-- Antitone in the seen-set: knowing more blocks leaves fewer first touches. -/
public theorem distinctFrom_anti (r : List Nat) :
    ∀ {A B : List Nat}, (∀ y, y ∈ A → y ∈ B) → distinctFrom B r ≤ distinctFrom A r := by
  induction r with
  | nil => intro A B _; exact Nat.le_refl 0
  | cons x xs ih =>
    intro A B h
    by_cases hA : x ∈ A
    · rw [distinctFrom_of_mem hA, distinctFrom_of_mem (h x hA)]
      exact ih h
    · rw [distinctFrom_of_not_mem hA]
      by_cases hB : x ∈ B
      · rw [distinctFrom_of_mem hB]
        have := ih (A := x :: A) (B := B) (fun y hy => by
          rcases mem_cons.1 hy with e | hy
          · subst e; exact hB
          · exact h y hy)
        omega
      · rw [distinctFrom_of_not_mem hB]
        have := ih (A := x :: A) (B := x :: B) (fun y hy => by
          rcases mem_cons.1 hy with e | hy
          · subst e; exact mem_cons_self _ _
          · exact mem_cons_of_mem x (h y hy))
        omega

/-- Seen-sets with the same members give the same count. -/
public theorem distinctFrom_congr (r : List Nat) {A B : List Nat} (h : ∀ y, y ∈ A ↔ y ∈ B) :
    distinctFrom A r = distinctFrom B r :=
  Nat.le_antisymm (distinctFrom_anti r (fun y hy => (h y).2 hy))
    (distinctFrom_anti r (fun y hy => (h y).1 hy))

/-- Re-adding a block already seen changes nothing. -/
public theorem distinctFrom_cons_of_mem {S : List Nat} {x : Nat} (h : x ∈ S) (r : List Nat) :
    distinctFrom (x :: S) r = distinctFrom S r :=
  distinctFrom_congr r (fun y => ⟨fun hy => (mem_cons.1 hy).elim (fun e => by subst e; exact h) id,
    mem_cons_of_mem x⟩)

public theorem distinctFrom_le_length (r : List Nat) : ∀ (S : List Nat), distinctFrom S r ≤ r.length := by
  induction r with
  | nil => intro S; exact Nat.le_refl 0
  | cons x xs ih =>
    intro S
    rw [List.length_cons]
    by_cases h : x ∈ S
    · rw [distinctFrom_of_mem h]; have := ih S; omega
    · rw [distinctFrom_of_not_mem h]; have := ih (x :: S); omega

end Pycert
