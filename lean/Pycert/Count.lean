module

prelude
public import Init.Data.List.Basic
public import Init.Classical
public import Pycert.Lists
import Init.Omega

/-!
# Counting positions, and reading a list by position

`count p n` is how many `j < n` satisfy `p`, for any proposition `p` (decided classically: nothing
here is meant to be evaluated). The lemmas split, shift and compare counts, and `count_le_length` is
the pigeonhole principle for lists: positions mapped injectively into a list are no more than its
length, whether or not the list repeats an element. `nth r j` is reference `j` of a trace (`0` past
its end), with what `drop`, `take` and `map` do to it.
-/

namespace Pycert

/-! ## Reading by position -/

/-- Entry `j` of `r`, `0` past the end. -/
@[expose] public def nth : List Nat → Nat → Nat
  | [], _ => 0
  | x :: _, 0 => x
  | _ :: xs, j + 1 => nth xs j

public theorem nth_cons_zero (x : Nat) (xs : List Nat) : nth (x :: xs) 0 = x := rfl

public theorem nth_cons_succ (x : Nat) (xs : List Nat) (j : Nat) : nth (x :: xs) (j + 1) = nth xs j := rfl

public theorem nth_drop : ∀ (a : Nat) (r : List Nat) (j : Nat), nth (r.drop a) j = nth r (a + j)
  | 0, r, j => by rw [List.drop_zero, Nat.zero_add]
  | _ + 1, [], _ => by rw [List.drop_nil]; rfl
  | a + 1, _ :: xs, j => by
    rw [List.drop_succ_cons, nth_drop a xs j, show a + 1 + j = (a + j) + 1 by omega]; rfl

public theorem nth_take : ∀ (k : Nat) (r : List Nat) (j : Nat), j < k → nth (r.take k) j = nth r j
  | 0, _, _, h => absurd h (Nat.not_lt_zero _)
  | _ + 1, [], _, _ => by rw [List.take_nil]
  | _ + 1, _ :: _, 0, _ => rfl
  | k + 1, _ :: xs, j + 1, h => by
    rw [List.take_succ_cons, nth_cons_succ, nth_cons_succ]; exact nth_take k xs j (by omega)

public theorem nth_map (f : Nat → Nat) : ∀ (r : List Nat) (j : Nat), j < r.length → nth (r.map f) j = f (nth r j)
  | [], _, h => absurd h (Nat.not_lt_zero _)
  | _ :: _, 0, _ => rfl
  | _ :: xs, j + 1, h => nth_map f xs j (by simp at h; omega)

/-- A list is its first entry followed by the rest, read by position. -/
public theorem drop_eq_nth_cons : ∀ (r : List Nat) (t : Nat), t < r.length → r.drop t = nth r t :: r.drop (t + 1)
  | [], _, h => absurd h (Nat.not_lt_zero _)
  | _ :: _, 0, _ => rfl
  | _ :: xs, t + 1, h => by
    rw [List.drop_succ_cons, List.drop_succ_cons, nth_cons_succ]; exact drop_eq_nth_cons xs t (by simp at h; omega)

/-! ## Counting -/

/-- How many `j < n` satisfy `p`. -/
@[expose] public noncomputable def count (p : Nat → Prop) : Nat → Nat
  | 0 => 0
  | n + 1 => count p n + @ite Nat (p n) (Classical.propDecidable (p n)) 1 0

public theorem count_zero (p : Nat → Prop) : count p 0 = 0 := rfl

public theorem count_succ_pos {p : Nat → Prop} {n : Nat} (h : p n) : count p (n + 1) = count p n + 1 := by
  show count p n + @ite Nat (p n) (Classical.propDecidable (p n)) 1 0 = _
  rw [if_pos h]

public theorem count_succ_neg {p : Nat → Prop} {n : Nat} (h : ¬ p n) : count p (n + 1) = count p n := by
  show count p n + @ite Nat (p n) (Classical.propDecidable (p n)) 1 0 = _
  rw [if_neg h, Nat.add_zero]

public theorem count_le (p : Nat → Prop) : ∀ n, count p n ≤ n
  | 0 => Nat.le_refl 0
  | n + 1 => by
    by_cases h : p n
    · rw [count_succ_pos h]; have := count_le p n; omega
    · rw [count_succ_neg h]; have := count_le p n; omega

/-- Counting a weaker property below `n` gives at least as many. -/
public theorem count_mono {p q : Nat → Prop} : ∀ {n : Nat}, (∀ j, j < n → p j → q j) → count p n ≤ count q n
  | 0, _ => Nat.le_refl 0
  | n + 1, h => by
    have ih := count_mono (n := n) (fun j hj => h j (by omega))
    by_cases hp : p n
    · rw [count_succ_pos hp, count_succ_pos (h n (by omega) hp)]; omega
    · rw [count_succ_neg hp]
      by_cases hq : q n
      · rw [count_succ_pos hq]; omega
      · rw [count_succ_neg hq]; exact ih

public theorem count_congr {p q : Nat → Prop} {n : Nat} (h : ∀ j, j < n → (p j ↔ q j)) : count p n = count q n :=
  Nat.le_antisymm (count_mono fun j hj => (h j hj).1) (count_mono fun j hj => (h j hj).2)

/-- Nothing below `n` satisfies `p`: the count is `0`. -/
public theorem count_eq_zero {p : Nat → Prop} : ∀ {n : Nat}, (∀ j, j < n → ¬ p j) → count p n = 0
  | 0, _ => rfl
  | n + 1, h => by rw [count_succ_neg (h n (by omega)), count_eq_zero (fun j hj => h j (by omega))]

/-- Split by a second property. -/
public theorem count_split (p q : Nat → Prop) : ∀ n, count p n = count (fun j => p j ∧ q j) n + count (fun j => p j ∧ ¬ q j) n
  | 0 => rfl
  | n + 1 => by
    have ih := count_split p q n
    by_cases hp : p n
    · by_cases hq : q n
      · rw [count_succ_pos hp, count_succ_pos (p := fun j => p j ∧ q j) ⟨hp, hq⟩,
          count_succ_neg (p := fun j => p j ∧ ¬ q j) (fun h => h.2 hq)]; omega
      · rw [count_succ_pos hp, count_succ_neg (p := fun j => p j ∧ q j) (fun h => hq h.2),
          count_succ_pos (p := fun j => p j ∧ ¬ q j) ⟨hp, hq⟩]; omega
    · rw [count_succ_neg hp, count_succ_neg (p := fun j => p j ∧ q j) (fun h => hp h.1),
        count_succ_neg (p := fun j => p j ∧ ¬ q j) (fun h => hp h.1)]; exact ih

/-- Counting up to `a + n`: the first `a` positions, then the next `n` read from `a`. -/
public theorem count_add (p : Nat → Prop) (a : Nat) : ∀ n, count p (a + n) = count p a + count (fun l => p (a + l)) n
  | 0 => rfl
  | n + 1 => by
    have ih := count_add p a n
    rw [← Nat.add_assoc]
    by_cases hp : p (a + n)
    · rw [count_succ_pos hp, count_succ_pos (p := fun l => p (a + l)) hp]; omega
    · rw [count_succ_neg hp, count_succ_neg (p := fun l => p (a + l)) hp]; exact ih

/-- Counting from the front: position `0`, then the rest read one further. -/
public theorem count_succ_front (p : Nat → Prop) (n : Nat) :
    count p (n + 1) = count p 1 + count (fun l => p (l + 1)) n := by
  rw [Nat.add_comm n 1, count_add p 1 n]
  exact congrArg _ (count_congr fun j _ => by rw [Nat.add_comm])

/-- Nothing from `m` on satisfies `p`: counting to `n ≥ m` counts to `m`. -/
public theorem count_stop {p : Nat → Prop} {m n : Nat} (hmn : m ≤ n) (h : ∀ j, m ≤ j → ¬ p j) :
    count p n = count p m := by
  obtain ⟨k, rfl⟩ : ∃ k, n = m + k := ⟨n - m, by omega⟩
  rw [count_add, count_eq_zero (fun l _ => h (m + l) (by omega)), Nat.add_zero]

/-- **Charging.** If every position satisfying `p` satisfies `q` or is charged to some `y ∈ Y`
(`s y j`), and each `y` is charged at most `K` positions, then `p` counts at most `K` per entry of `Y`
more than `q`. -/
public theorem count_le_charge {n K : Nat} (q : Nat → Prop) (s : Nat → Nat → Prop) (hs : ∀ y, count (s y) n ≤ K) :
    ∀ (Y : List Nat) (p : Nat → Prop), (∀ j, j < n → p j → q j ∨ ∃ y, y ∈ Y ∧ s y j) →
      count p n ≤ K * Y.length + count q n
  | [], p, h => by
    rw [List.length_nil, Nat.mul_zero, Nat.zero_add]
    exact count_mono fun j hj hp => (h j hj hp).resolve_right fun ⟨_, hy, _⟩ => not_mem_nil _ hy
  | y :: Y, p, h => by
    have split := count_split p (s y) n
    have first := Nat.le_trans (count_mono (p := fun j => p j ∧ s y j) (q := s y) (n := n) fun _ _ hp => hp.2) (hs y)
    have rest := count_le_charge q s hs Y (fun j => p j ∧ ¬ s y j) fun j hj ⟨hp, hn⟩ => by
      rcases h j hj hp with hq | ⟨z, hz, hs⟩
      · exact Or.inl hq
      · rcases mem_cons.1 hz with e | hz
        · exact absurd (e ▸ hs) hn
        · exact Or.inr ⟨z, hz, hs⟩
    rw [List.length_cons, Nat.mul_succ]
    omega

/-! ## Pigeonhole into a list -/



/-- `l` with the first `a` removed. -/
@[expose] public def rm (a : Nat) : List Nat → List Nat
  | [] => []
  | b :: l => if b = a then l else b :: rm a l

public theorem length_rm {a : Nat} : ∀ {l : List Nat}, a ∈ l → (rm a l).length + 1 = l.length
  | [], h => absurd h (not_mem_nil a)
  | b :: l, h => by
    by_cases e : b = a
    · rw [show rm a (b :: l) = l from if_pos e, List.length_cons]
    · have : a ∈ l := by
        cases h with
        | head => exact absurd rfl e
        | tail _ h => exact h
      rw [show rm a (b :: l) = b :: rm a l from if_neg e, List.length_cons, List.length_cons, length_rm this]

public theorem mem_rm {a b : Nat} (hb : b ≠ a) : ∀ {l : List Nat}, b ∈ l → b ∈ rm a l
  | [], h => h
  | c :: l, h => by
    by_cases e : c = a
    · rw [show rm a (c :: l) = l from if_pos e]
      cases h with
      | head => exact absurd e hb
      | tail _ h => exact h
    · rw [show rm a (c :: l) = c :: rm a l from if_neg e]
      cases h with
      | head => exact List.Mem.head _
      | tail _ h => exact List.Mem.tail _ (mem_rm hb h)

/-- **Pigeonhole.** If `f` sends the positions `j < n` satisfying `p` into the list `c`, different
positions to different entries, there are at most `c.length` of them. `c` may repeat entries. -/
public theorem count_le_length (p : Nat → Prop) (f : Nat → Nat) :
    ∀ (n : Nat) (c : List Nat), (∀ j, j < n → p j → f j ∈ c) →
      (∀ i j, i < n → j < n → p i → p j → f i = f j → i = j) → count p n ≤ c.length
  | 0, _, _, _ => Nat.zero_le _
  | n + 1, c, hc, hinj => by
    by_cases hp : p n
    · rw [count_succ_pos hp]
      have hn := hc n (by omega) hp
      have := count_le_length p f n (rm (f n) c)
        (fun j hj pj => mem_rm (fun e => by have := hinj j n (by omega) (by omega) pj hp e; omega)
          (hc j (by omega) pj))
        (fun i j hi hj => hinj i j (by omega) (by omega))
      have := length_rm hn
      omega
    · rw [count_succ_neg hp]
      exact count_le_length p f n c (fun j hj => hc j (by omega)) (fun i j hi hj => hinj i j (by omega) (by omega))

/-- The positions `j < m` satisfying `q`, latest first. -/
@[expose] public noncomputable def sel (q : Nat → Prop) : Nat → List Nat
  | 0 => []
  | m + 1 => @ite _ (q m) (Classical.propDecidable (q m)) (m :: sel q m) (sel q m)

public theorem mem_sel (q : Nat → Prop) : ∀ (m j : Nat), j ∈ sel q m ↔ j < m ∧ q j
  | 0, j => by
    constructor
    · intro h; cases h
    · intro h; exact absurd h.1 (Nat.not_lt_zero _)
  | m + 1, j => by
    show j ∈ @ite _ (q m) (Classical.propDecidable (q m)) (m :: sel q m) (sel q m) ↔ _
    by_cases hq : q m
    · rw [if_pos hq, mem_cons, mem_sel q m j]
      constructor
      · rintro (e | ⟨h1, h2⟩)
        · subst e; exact ⟨by omega, hq⟩
        · exact ⟨by omega, h2⟩
      · rintro ⟨h1, h2⟩
        by_cases e : j = m
        · exact Or.inl e
        · exact Or.inr ⟨by omega, h2⟩
    · rw [if_neg hq, mem_sel q m j]
      constructor
      · rintro ⟨h1, h2⟩; exact ⟨by omega, h2⟩
      · rintro ⟨h1, h2⟩
        refine ⟨?_, h2⟩
        by_cases e : j = m
        · subst e; exact absurd h2 hq
        · omega

public theorem length_sel (q : Nat → Prop) : ∀ m, (sel q m).length = count q m
  | 0 => rfl
  | m + 1 => by
    show (@ite _ (q m) (Classical.propDecidable (q m)) (m :: sel q m) (sel q m)).length = _
    by_cases hq : q m
    · rw [if_pos hq, List.length_cons, length_sel q m, count_succ_pos hq]
    · rw [if_neg hq, length_sel q m, count_succ_neg hq]

/-- Positions satisfying `p` sent injectively to positions satisfying `q`: no more of them. -/
public theorem count_le_count (p q : Nat → Prop) (f : Nat → Nat) {n m : Nat}
    (h : ∀ j, j < n → p j → f j < m ∧ q (f j))
    (inj : ∀ i j, i < n → j < n → p i → p j → f i = f j → i = j) : count p n ≤ count q m := by
  rw [← length_sel q m]
  exact count_le_length p f n (sel q m) (fun j hj pj => (mem_sel q m (f j)).2 (h j hj pj)) inj

/-! ## The latest position before `j` -/

/-- If some `i < j` satisfies `q`, a latest one does: nothing strictly between it and `j` satisfies `q`. -/
public theorem exists_latest (q : Nat → Prop) : ∀ j, (∃ i, i < j ∧ q i) →
    ∃ i, i < j ∧ q i ∧ ∀ u, i < u → u < j → ¬ q u
  | 0, ⟨_, h, _⟩ => absurd h (Nat.not_lt_zero _)
  | j + 1, ⟨i, hi, hq⟩ => by
    by_cases hj : q j
    · exact ⟨j, by omega, hj, fun u h1 h2 => absurd h2 (by omega)⟩
    · have hij : i < j := by
        rcases Nat.lt_or_ge i j with h | h
        · exact h
        · exact absurd (show i = j by omega ▸ hq) hj
      obtain ⟨k, hk, qk, hmax⟩ := exists_latest q j ⟨i, hij, hq⟩
      refine ⟨k, by omega, qk, fun u h1 h2 => ?_⟩
      by_cases e : u = j
      · exact e ▸ hj
      · exact hmax u h1 (by omega)

end Pycert
