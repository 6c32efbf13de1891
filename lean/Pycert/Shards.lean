module

prelude
public import Pycert.Lists
public import Pycert.PackedTrace
import Init.Omega

/-!
# Shards: a trace too big for one Lean process, checked in pieces

A trace is split by **id range**: the cuts `c₀ < c₁ < … < c_k ≤ top` give shard `i` every reference
whose id lies in `[cᵢ, cᵢ₊₁)`, in the trace's order. Each shard is a packed instance of its own
(`shardOK`, checked by `decide +kernel` in a module of its own, so its memory is bounded by the
shard's size), and its headline says three things: its length, its distinct count, and that every
id it holds lies in its band (`Within`). The whole trace is the shards **merged by a schedule**
(`merge`): reference `j` is the next unused reference of shard `sched[j]`.

`merge_figures` composes them: whatever the schedule says, the merge is a permutation of the
shards laid end to end (`merge_perm`: a schedule that names an exhausted shard skips, references it
leaves unused follow at the end), so its length is the sum of the shards' lengths; and since the
bands do not overlap, no id is in two shards, so its distinct count is the sum of theirs. Neither
the schedule nor the cuts cost the kernel more than the few comparisons of `cutsOK`.

A shard decodes like a whole trace (`Pycert.PackedTrace.decode`) except past the end of its table:
there `slook` gives `lo + top * (i + 1)`, above every id and congruent to the shard's own `lo`, so a
network that sent a block past the table (never one pycert computes) would still give ids no other
shard can hold (`Within`). That is what lets every shard be checked with no test on its network.

What this file does not say: that the merge is the trace in some file, in that file's order (that
link is the schedule and the shards' vectors, which pycert writes and verify regenerates from the
file and compares byte for byte), or anything about a schedule beyond the order it gives.
-/

namespace Pycert.Shards
open Pycert.Packed Pycert.PackedTrace

/-! ## Merging shards by a schedule -/

/-- The shards laid end to end. -/
@[expose] public noncomputable def flat : List (List Nat) → List Nat
  | [] => []
  | t :: ts => t ++ flat ts

/-- The next reference of shard `s`: `([x], ts')` with `x` the head of shard `s` and `ts'` the shards
with it taken off; `([], ts)` when shard `s` is empty or absent. -/
@[expose] public noncomputable def pick : List (List Nat) → Nat → List Nat × List (List Nat)
  | [], _ => ([], [])
  | t :: ts, 0 => (t.take 1, t.drop 1 :: ts)
  | t :: ts, s + 1 => ((pick ts s).1, t :: (pick ts s).2)

/-- The references taken from the shards in the order `sched` names them, and what is left of the
shards. -/
@[expose] public noncomputable def interleave : List Nat → List (List Nat) → List Nat × List (List Nat)
  | [], ts => ([], ts)
  | s :: sched, ts => ((pick ts s).1 ++ (interleave sched (pick ts s).2).1, (interleave sched (pick ts s).2).2)

/-- The whole trace from its shards: reference `j` is the next unused reference of shard
`sched[j]`, and whatever the schedule leaves unused follows at the end, so that no reference of any
shard is lost, whatever the schedule says. -/
@[expose] public noncomputable def merge (sched : List Nat) (ts : List (List Nat)) : List Nat :=
  (interleave sched ts).1 ++ flat (interleave sched ts).2

theorem append_assoc' : ∀ (a b c : List Nat), (a ++ b) ++ c = a ++ (b ++ c)
  | [], _, _ => rfl
  | x :: a, b, c => congrArg (x :: ·) (append_assoc' a b c)

theorem perm_refl' : ∀ l : List Nat, List.Perm l l
  | [] => List.Perm.nil
  | x :: l => List.Perm.cons x (perm_refl' l)

theorem perm_append_left' (a : List Nat) {l l' : List Nat} (h : List.Perm l l') : List.Perm (a ++ l) (a ++ l') := by
  induction a with
  | nil => exact h
  | cons x a ih => exact List.Perm.cons x ih

theorem perm_middle' (x : Nat) : ∀ (b c : List Nat), List.Perm (x :: (b ++ c)) (b ++ x :: c)
  | [], _ => perm_refl' _
  | y :: b, c => List.Perm.trans (List.Perm.swap y x (b ++ c)) (List.Perm.cons y (perm_middle' x b c))

/-- Moving a block over another keeps the multiset. -/
theorem perm_over : ∀ (a b c : List Nat), List.Perm (a ++ (b ++ c)) (b ++ (a ++ c))
  | [], _, _ => perm_refl' _
  | x :: a, b, c => List.Perm.trans (List.Perm.cons x (perm_over a b c)) (perm_middle' x b (a ++ c))

theorem pick_perm : ∀ (ts : List (List Nat)) (s : Nat), List.Perm ((pick ts s).1 ++ flat (pick ts s).2) (flat ts)
  | [], _ => perm_refl' _
  | [] :: ts, 0 => perm_refl' _
  | (x :: t) :: ts, 0 => perm_refl' _
  | t :: ts, s + 1 => by
    show List.Perm ((pick ts s).1 ++ (t ++ flat (pick ts s).2)) (t ++ flat ts)
    exact List.Perm.trans (perm_over (pick ts s).1 t (flat (pick ts s).2)) (perm_append_left' t (pick_perm ts s))

theorem interleave_perm : ∀ (sched : List Nat) (ts : List (List Nat)),
    List.Perm ((interleave sched ts).1 ++ flat (interleave sched ts).2) (flat ts)
  | [], ts => perm_refl' _
  | s :: sched, ts => by
    show List.Perm (((pick ts s).1 ++ (interleave sched (pick ts s).2).1) ++ flat (interleave sched (pick ts s).2).2) _
    rw [append_assoc']
    exact List.Perm.trans (perm_append_left' _ (interleave_perm sched (pick ts s).2)) (pick_perm ts s)

/-- **A merge loses and invents nothing.** Whatever the schedule, the merged trace is a permutation
of the shards laid end to end. -/
public theorem merge_perm (sched : List Nat) (ts : List (List Nat)) : List.Perm (merge sched ts) (flat ts) :=
  interleave_perm sched ts

/-! ## What a permutation keeps -/

theorem perm_length {l l' : List Nat} (h : List.Perm l l') : l.length = l'.length := by
  induction h with
  | nil => rfl
  | cons x _ ih => exact congrArg Nat.succ ih
  | swap x y l => rfl
  | trans _ _ ih₁ ih₂ => exact ih₁.trans ih₂

theorem distinctFrom_swap (S : List Nat) (x y : Nat) (l : List Nat) :
    distinctFrom S (y :: x :: l) = distinctFrom S (x :: y :: l) := by
  by_cases hx : x ∈ S <;> by_cases hy : y ∈ S
  · rw [distinctFrom_of_mem hy, distinctFrom_of_mem hx, distinctFrom_of_mem hx, distinctFrom_of_mem hy]
  · rw [distinctFrom_of_not_mem hy, distinctFrom_of_mem (mem_cons_of_mem y hx), distinctFrom_of_mem hx,
      distinctFrom_of_not_mem hy]
  · rw [distinctFrom_of_mem hy, distinctFrom_of_not_mem hx, distinctFrom_of_not_mem hx,
      distinctFrom_of_mem (mem_cons_of_mem x hy)]
  · by_cases e : x = y
    · subst e; rfl
    · have hxy : ¬ x ∈ y :: S := fun h => (mem_cons.1 h).elim e hx
      have hyx : ¬ y ∈ x :: S := fun h => (mem_cons.1 h).elim (fun h => e h.symm) hy
      rw [distinctFrom_of_not_mem hy, distinctFrom_of_not_mem hxy, distinctFrom_of_not_mem hx,
        distinctFrom_of_not_mem hyx, distinctFrom_congr l (A := x :: y :: S) (B := y :: x :: S) (fun z => by
          simp only [mem_cons]; constructor <;> intro h <;> rcases h with h | h | h <;> simp [h])]

theorem perm_distinctFrom {l l' : List Nat} (h : List.Perm l l') : ∀ S, distinctFrom S l = distinctFrom S l' := by
  induction h with
  | nil => intro S; rfl
  | cons x _ ih =>
    intro S
    by_cases hx : x ∈ S
    · rw [distinctFrom_of_mem hx, distinctFrom_of_mem hx, ih S]
    · rw [distinctFrom_of_not_mem hx, distinctFrom_of_not_mem hx, ih (x :: S)]
  | swap x y l => intro S; exact distinctFrom_swap S x y l
  | trans _ _ ih₁ ih₂ => intro S; exact (ih₁ S).trans (ih₂ S)

/-! ## Disjoint pieces add up -/

/-- Seen-sets that agree on the references to come give the same count. -/
theorem distinctFrom_agree : ∀ (r : List Nat) {A B : List Nat}, (∀ y, y ∈ r → (y ∈ A ↔ y ∈ B)) →
    distinctFrom A r = distinctFrom B r
  | [], _, _, _ => rfl
  | x :: r, A, B, h => by
    have rest : ∀ y, y ∈ r → (y ∈ A ↔ y ∈ B) := fun y hy => h y (mem_cons_of_mem x hy)
    by_cases hA : x ∈ A
    · rw [distinctFrom_of_mem hA, distinctFrom_of_mem ((h x (mem_cons_self x r)).1 hA)]
      exact distinctFrom_agree r rest
    · have hB : ¬ x ∈ B := fun hB => hA ((h x (mem_cons_self x r)).2 hB)
      rw [distinctFrom_of_not_mem hA, distinctFrom_of_not_mem hB]
      exact congrArg (· + 1) (distinctFrom_agree r (fun y hy => by
        rw [mem_cons, mem_cons, rest y hy]))

theorem distinctFrom_append : ∀ (S a b : List Nat),
    distinctFrom S (a ++ b) = distinctFrom S a + distinctFrom (a ++ S) b
  | S, [], b => (Nat.zero_add _).symm
  | S, x :: a, b => by
    show distinctFrom S (x :: (a ++ b)) = distinctFrom S (x :: a) + distinctFrom (x :: (a ++ S)) b
    by_cases hx : x ∈ S
    · rw [distinctFrom_of_mem hx, distinctFrom_of_mem hx, distinctFrom_append S a b,
        distinctFrom_cons_of_mem (mem_append'.2 (Or.inr hx))]
    · rw [distinctFrom_of_not_mem hx, distinctFrom_of_not_mem hx, distinctFrom_append (x :: S) a b,
        distinctFrom_congr b (A := a ++ x :: S) (B := x :: (a ++ S)) (fun y => by
          rw [mem_append', mem_cons, mem_cons, mem_append']
          constructor
          · intro h; rcases h with h | h | h
            · exact Or.inr (Or.inl h)
            · exact Or.inl h
            · exact Or.inr (Or.inr h)
          · intro h; rcases h with h | h | h
            · exact Or.inr (Or.inl h)
            · exact Or.inl h
            · exact Or.inr (Or.inr h))]
      omega

/-- A later piece with no id of an earlier one adds its own count. -/
theorem distinct_append_disjoint (a b : List Nat) (h : ∀ x, x ∈ a → ∀ y, y ∈ b → x ≠ y) :
    distinct (a ++ b) = distinct a + distinct b := by
  show distinctFrom [] (a ++ b) = distinctFrom [] a + distinctFrom [] b
  rw [distinctFrom_append]
  congr 1
  exact distinctFrom_agree b (fun y hy => by
    rw [mem_append']
    exact ⟨fun h' => h'.elim (fun hx => absurd rfl (h y hx y hy)) id, Or.inr⟩)

/-! ## Bands -/

/-- Where shard `[lo, hi)`'s ids lie: in its band, or (a block sent past its table) at least `top`
and congruent to `lo` modulo `top`. -/
@[expose] public def Within (lo hi top x : Nat) : Prop := (lo ≤ x ∧ x < hi) ∨ (top ≤ x ∧ x % top = lo)

/-- Where the ids of every shard from cut `c` on lie. -/
def Above (c top y : Nat) : Prop := (c ≤ y ∧ y < top) ∨ (top ≤ y ∧ c ≤ y % top)

/-- The cuts strictly increase and the last is at most `top`: the bands do not overlap. -/
@[expose] public def cutsOK (top : Nat) : List Nat → Bool
  | [] => false
  | [c] => Nat.ble c top
  | c :: d :: cs => Nat.ble (c + 1) d && cutsOK top (d :: cs)

/-- The sum of a list of counts. -/
@[expose] public def total : List Nat → Nat
  | [] => 0
  | n :: ns => n + total ns

/-- `Shards top cuts ts ns ds`: shard `i` of `ts` has `ns[i]` references and `ds[i]` distinct ids,
each `Within` its band `[cuts[i], cuts[i+1])`. -/
public inductive Shards (top : Nat) : List Nat → List (List Nat) → List Nat → List Nat → Prop
  | nil (c : Nat) : Shards top [c] [] [] []
  | cons {lo hi : Nat} {cs : List Nat} {t : List Nat} {ts : List (List Nat)} {n d : Nat} {ns ds : List Nat} :
      (t.length = n ∧ distinct t = d ∧ ∀ x, x ∈ t → Within lo hi top x) →
      Shards top (hi :: cs) ts ns ds → Shards top (lo :: hi :: cs) (t :: ts) (n :: ns) (d :: ds)

theorem and_true' {a b : Bool} (h : (a && b) = true) : a = true ∧ b = true := by
  cases a <;> cases b <;> simp_all

theorem cuts_tail {top c d : Nat} {cs : List Nat} (h : cutsOK top (c :: d :: cs) = true) :
    c < d ∧ cutsOK top (d :: cs) = true := by
  obtain ⟨h1, h2⟩ := and_true' h
  exact ⟨Nat.le_of_ble_eq_true h1, h2⟩

theorem cut_le_top {top : Nat} : ∀ {c : Nat} {cs : List Nat}, cutsOK top (c :: cs) = true → c ≤ top
  | c, [], h => Nat.le_of_ble_eq_true h
  | c, d :: cs, h => by
    obtain ⟨hcd, h⟩ := cuts_tail h
    have := cut_le_top h
    omega

theorem mem_flat {y : Nat} {t : List Nat} {ts : List (List Nat)} (h : y ∈ flat (t :: ts)) : y ∈ t ∨ y ∈ flat ts :=
  mem_append'.1 h

theorem shards_above {top : Nat} : ∀ {cuts : List Nat} {ts : List (List Nat)} {ns ds : List Nat},
    Shards top cuts ts ns ds → ∀ {c : Nat} {cs : List Nat}, cuts = c :: cs → cutsOK top cuts = true →
    ∀ y, y ∈ flat ts → Above c top y := by
  intro cuts ts ns ds h
  induction h with
  | nil => intro c cs _ _ y hy; exact absurd hy (not_mem_nil y)
  | @cons lo hi cs t ts n d ns ds ht _ ih =>
    intro c cs' e hok y hy
    cases e
    obtain ⟨hlt, hrest⟩ := cuts_tail hok
    have htop := cut_le_top hrest
    rcases mem_flat hy with hy | hy
    · rcases ht.2.2 y hy with ⟨a, b⟩ | ⟨a, b⟩
      · exact Or.inl ⟨a, by omega⟩
      · exact Or.inr ⟨a, by omega⟩
    · rcases ih rfl hrest y hy with ⟨a, b⟩ | ⟨a, b⟩
      · exact Or.inl ⟨by omega, b⟩
      · exact Or.inr ⟨a, by omega⟩

theorem within_ne_above {lo hi top x y : Nat} (hlt : lo < hi) (htop : hi ≤ top) (hx : Within lo hi top x)
    (hy : Above hi top y) : x ≠ y := by
  intro e
  subst e
  rcases hx with ⟨a, b⟩ | ⟨a, b⟩ <;> rcases hy with ⟨c, d⟩ | ⟨c, d⟩ <;> omega

theorem flat_figures {top : Nat} : ∀ {cuts : List Nat} {ts : List (List Nat)} {ns ds : List Nat},
    Shards top cuts ts ns ds → cutsOK top cuts = true →
    (flat ts).length = total ns ∧ distinct (flat ts) = total ds := by
  intro cuts ts ns ds h
  induction h with
  | nil => intro _; exact ⟨rfl, rfl⟩
  | @cons lo hi cs t ts n d ns ds ht hs ih =>
    intro hok
    obtain ⟨hlt, hrest⟩ := cuts_tail hok
    obtain ⟨hl, hd⟩ := ih hrest
    have htop := cut_le_top hrest
    refine ⟨?_, ?_⟩
    · show (t ++ flat ts).length = n + total ns
      rw [length_append', ht.1, hl]
    · show distinct (t ++ flat ts) = d + total ds
      rw [distinct_append_disjoint t (flat ts) (fun x hx y hy =>
        within_ne_above hlt htop (ht.2.2 x hx) (shards_above hs rfl hrest y hy)), ht.2.1, hd]

/-- **Shards compose.** If shard `i` of `ts` has `ns[i]` references and `ds[i]` distinct ids, all
within band `i` of cuts that strictly increase up to `top` (`cutsOK`), then the shards merged by any
schedule have `total ns` references and `total ds` distinct ids. The schedule fixes only the order:
it is never tested, because no schedule can drop, repeat or invent a reference (`merge_perm`). It
does not say the merge is any particular file's trace. -/
public theorem merge_figures {top : Nat} {cuts : List Nat} {ts : List (List Nat)} {ns ds : List Nat}
    (sched : List Nat) (hok : cutsOK top cuts = true) (h : Shards top cuts ts ns ds) :
    (merge sched ts).length = total ns ∧ distinct (merge sched ts) = total ds := by
  obtain ⟨hl, hd⟩ := flat_figures h hok
  have p := merge_perm sched ts
  exact ⟨(perm_length p).trans hl, (perm_distinctFrom p []).trans hd⟩

/-! ## One shard: a packed trace whose ids lie in a band -/

/-- Shard table entry `i`: field `i` of `S` below `D`; from `D` on, `lo + top * (i + 1)`, a value
above every id and congruent to `lo` modulo `top` (`Within`), and unlike any table entry, so that
`slook` is injective on all of `Nat` and the shard needs no test of its network. -/
@[expose] public def slook (lo top wt D S i : Nat) : Nat :=
  if i < D then fld (2 ^ (wt + 1)) S i else lo + top * (i + 1)

/-- The references of a shard: as `Pycert.PackedTrace.decode`, looked up with `slook`. -/
@[expose] public noncomputable def sdecode (lo top w n X wt D S : Nat) (net : List (Nat × Nat)) : List Nat :=
  (fields (2 ^ (w + 1)) n X).map (fun x => slook lo top wt D S (Route.route net x))

/-- Everything the kernel checks for one shard: the trace test of `Pycert.PackedTrace.traceOK`, and
that its sorted table, not empty, starts at `lo` or above and ends below `hi`, with `hi ≤ top`. -/
@[expose] public def shardOK (w n X K wt D S lo hi top : Nat) : Bool :=
  traceOK w n X K wt D S && Nat.ble 1 D && Nat.ble lo (fld (2 ^ (wt + 1)) S 0) &&
    Nat.ble (fld (2 ^ (wt + 1)) S (D - 1) + 1) hi && Nat.ble hi top

theorem mono_of_increasing (t : Nat → Nat) (D : Nat) (h : ∀ j, j + 1 < D → t j < t (j + 1)) :
    ∀ d a, a + d < D → t a ≤ t (a + d) := by
  intro d
  induction d with
  | zero => intro a _; exact Nat.le_refl _
  | succ d ih =>
    intro a ha
    have := ih a (by omega)
    have := h (a + d) (by omega)
    rw [show a + (d + 1) = a + d + 1 by omega]
    omega

theorem exists_of_mem_map'' (f : Nat → Nat) {b : Nat} : ∀ {l : List Nat}, b ∈ l.map f → ∃ a, a ∈ l ∧ f a = b
  | [], h => absurd h (not_mem_nil b)
  | a :: l, h => by
    rcases mem_cons.1 h with e | h
    · exact ⟨a, mem_cons_self a l, e.symm⟩
    · obtain ⟨c, hc, e⟩ := exists_of_mem_map'' f h
      exact ⟨c, mem_cons_of_mem a hc, e⟩

/-- **Kernel-checked shard figures.** If `shardOK` holds (the shard's module proves it with
`decide +kernel`), the shard has exactly `n` references and `D` distinct ids, each `Within` the band
`[lo, hi)`, whatever the network. It does not say the shard is any particular file's references. -/
public theorem shardOK_sound {w n X K wt D S lo hi top : Nat} (net : List (Nat × Nat))
    (h : shardOK w n X K wt D S lo hi top = true) :
    (sdecode lo top w n X wt D S net).length = n ∧ distinct (sdecode lo top w n X wt D S net) = D ∧
      ∀ x, x ∈ sdecode lo top w n X wt D S net → Within lo hi top x := by
  obtain ⟨h, htop⟩ := and_true' h
  obtain ⟨h, hhi⟩ := and_true' h
  obtain ⟨h, hlo⟩ := and_true' h
  obtain ⟨htr, hD⟩ := and_true' h
  have htop : hi ≤ top := Nat.le_of_ble_eq_true htop
  have hhi : fld (2 ^ (wt + 1)) S (D - 1) < hi := Nat.le_of_ble_eq_true hhi
  have hlo : lo ≤ fld (2 ^ (wt + 1)) S 0 := Nat.le_of_ble_eq_true hlo
  have hD : 1 ≤ D := Nat.le_of_ble_eq_true hD
  obtain ⟨hdense, h0, hK, inc⟩ := traceOK_parts htr
  have mono := mono_of_increasing _ D inc
  have inband : ∀ i, i < D → lo ≤ fld (2 ^ (wt + 1)) S i ∧ fld (2 ^ (wt + 1)) S i < hi := fun i hi' => by
    have a := mono i 0 (by omega)
    rw [Nat.zero_add] at a
    have b := mono (D - 1 - i) i (by omega)
    rw [show i + (D - 1 - i) = D - 1 by omega] at b
    exact ⟨by omega, by omega⟩
  have inj : ∀ a b, slook lo top wt D S a = slook lo top wt D S b → a = b := by
    intro a b e
    unfold slook at e
    by_cases ha : a < D <;> by_cases hb : b < D
    · rw [if_pos ha, if_pos hb] at e
      exact look_inj inc (show look wt D S a = look wt D S b by unfold look; rw [if_pos ha, if_pos hb]; exact e)
    · rw [if_pos ha, if_neg hb] at e
      have := (inband a ha).2
      have : top ≤ top * (b + 1) := Nat.le_mul_of_pos_right top (Nat.succ_pos b)
      omega
    · rw [if_neg ha, if_pos hb] at e
      have := (inband b hb).2
      have : top ≤ top * (a + 1) := Nat.le_mul_of_pos_right top (Nat.succ_pos a)
      omega
    · rw [if_neg ha, if_neg hb] at e
      have e' : top * (a + 1) = top * (b + 1) := by omega
      have hpos : 0 < top := by omega
      have := Nat.eq_of_mul_eq_mul_left hpos e'
      omega
  obtain ⟨hlen, hdist⟩ := decoded_counts (fun x => slook lo top wt D S (Route.route net x)) hdense h0 hK
    (fun a b _ _ e => Route.route_inj net (inj _ _ e))
  refine ⟨hlen, hdist, fun x hx => ?_⟩
  obtain ⟨a, _, e⟩ := exists_of_mem_map'' _ hx
  subst e
  unfold slook
  by_cases hi' : Route.route net a < D
  · rw [if_pos hi']
    exact Or.inl (inband _ hi')
  · rw [if_neg hi']
    have hlt : lo < top := by have := inband 0 (by omega); omega
    refine Or.inr ⟨?_, ?_⟩
    · have : top ≤ top * (Route.route net a + 1) := Nat.le_mul_of_pos_right top (Nat.succ_pos _)
      omega
    · rw [Nat.add_mul_mod_self_left, Nat.mod_eq_of_lt hlt]

end Pycert.Shards
