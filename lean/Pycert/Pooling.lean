module

prelude
public import Pycert.Ceiling
import Init.Omega

/-!
# Pooling wall: pooled vs per-instance caches

Requests are routed to hosts by any routing function. A routed trace lists every block reference as
`(host, block)`, in arrival order. Pooled: one shared cache sees every block. Per-instance: host `h`
runs its own cache, with its own policy, on the references routed to it.
-/

namespace Pycert.Pooling

open Pycert.Ceiling

/-- Route the requests `rs` to hosts, request `i` (counting from `i₀`) to host `route i`; every
block of a request is tagged with its host. -/
@[expose] public noncomputable def routeFrom (route : Nat → Nat) : Nat → List (List Nat) → List (Nat × Nat)
  | _, [] => []
  | i, req :: rs => req.map (Prod.mk (route i)) ++ routeFrom route (i + 1) rs

/-- The routed trace of the requests `rs`, request `i` (from 0) going to host `route i`. -/
@[expose] public noncomputable def routed (route : Nat → Nat) (rs : List (List Nat)) : List (Nat × Nat) :=
  routeFrom route 0 rs

/-- All block references of a routed trace, in order: what the pooled cache sees. -/
@[expose] public noncomputable def blocks : List (Nat × Nat) → List Nat
  | [] => []
  | p :: t => p.2 :: blocks t

/-- The trace restricted to host `h`: what host `h`'s own cache sees. -/
@[expose] public noncomputable def restrict (h : Nat) : List (Nat × Nat) → List Nat
  | [] => []
  | p :: t => if p.1 = h then p.2 :: restrict h t else restrict h t

/-- `sumBelow f H = f 0 + f 1 + ... + f (H - 1)`. -/
@[expose] public noncomputable def sumBelow (f : Nat → Nat) : Nat → Nat
  | 0 => 0
  | H + 1 => sumBelow f H + f H

/-- Every reference of the trace goes to one of the hosts `0, ..., H - 1`. -/
@[expose] public def InRange (H : Nat) : List (Nat × Nat) → Prop
  | [] => True
  | p :: t => p.1 < H ∧ InRange H t

/-- Deciding `InRange` by structural recursion, so `decide` checks it on a concrete trace. -/
@[expose] public def decInRange (H : Nat) : (t : List (Nat × Nat)) → Decidable (InRange H t)
  | [] => isTrue True.intro
  | p :: t =>
    match Nat.decLt p.1 H, decInRange H t with
    | isTrue h1, isTrue h2 => isTrue (And.intro h1 h2)
    | isFalse h1, _ => isFalse (fun h => h1 (And.left h))
    | _, isFalse h2 => isFalse (fun h => h2 (And.right h))

@[expose] public instance instDecidableInRange (H : Nat) (t : List (Nat × Nat)) : Decidable (InRange H t) :=
  decInRange H t

/-- No block is referenced at two different hosts. -/
@[expose] public noncomputable def NoSharing (t : List (Nat × Nat)) : Prop :=
  ∀ h₁ h₂ x, (h₁, x) ∈ t → (h₂, x) ∈ t → h₁ = h₂

/-- Misses of one pooled cache with policy `P` over the whole routed trace. -/
@[expose] public noncomputable def pooledMisses (P : Policy) (t : List (Nat × Nat)) : Nat := misses P (blocks t)

/-- Misses of per-instance caches: host `h < H` runs policy `Q h` on its own references. -/
@[expose] public noncomputable def perInstanceMisses (Q : Nat → Policy) (H : Nat) (t : List (Nat × Nat)) : Nat :=
  sumBelow (fun h => misses (Q h) (restrict h t)) H

/-- `Σ_{h < H} distinct (t restricted to h)`: the per-instance floor. -/
@[expose] public noncomputable def sumDistinct (H : Nat) (t : List (Nat × Nat)) : Nat :=
  sumBelow (fun h => distinct (restrict h t)) H

/-! ## Sums over hosts -/

theorem sumBelow_mono {f g : Nat → Nat} : ∀ (H : Nat), (∀ i, i < H → f i ≤ g i) → sumBelow f H ≤ sumBelow g H
  | 0, _ => Nat.le_refl 0
  | H + 1, h => by
    have h1 := sumBelow_mono H (fun i hi => h i (by omega))
    have h2 := h H (by omega)
    show sumBelow f H + f H ≤ sumBelow g H + g H
    omega

theorem sumBelow_congr {f g : Nat → Nat} : ∀ (H : Nat), (∀ i, i < H → f i = g i) → sumBelow f H = sumBelow g H
  | 0, _ => rfl
  | H + 1, h => by
    have h1 := sumBelow_congr H (fun i hi => h i (by omega))
    have h2 := h H (by omega)
    show sumBelow f H + f H = sumBelow g H + g H
    omega

theorem sumBelow_zero : ∀ (H : Nat), sumBelow (fun _ => 0) H = 0
  | 0 => rfl
  | H + 1 => by show sumBelow (fun _ => 0) H + 0 = 0; rw [sumBelow_zero H]

/-- Changing one term by `k` changes the sum by `k`. -/
theorem sumBelow_bump {f g : Nat → Nat} {h k : Nat} (hf : ∀ i, i ≠ h → f i = g i) (hh : f h = g h + k) :
    ∀ (H : Nat), h < H → sumBelow f H = sumBelow g H + k
  | 0, hH => absurd hH (Nat.not_lt_zero h)
  | H + 1, hH => by
    show sumBelow f H + f H = sumBelow g H + g H + k
    by_cases e : h = H
    · have h1 := sumBelow_congr H (fun i hi => hf i (by omega))
      have h2 : f H = g H + k := by rw [← e]; exact hh
      omega
    · have h1 := sumBelow_bump hf hh H (by omega)
      have h2 := hf H (fun e' => e e'.symm)
      omega

/-! ## The simulation behind the wall -/

/-- Host `h` has now seen `x` too. -/
def touch (S : Nat → List Nat) (h x : Nat) : Nat → List Nat := fun i => if h = i then x :: S i else S i

/-- `Σ_{i < H} distinctFrom (S i) (t restricted to i)`. -/
noncomputable def local_ (H : Nat) (S : Nat → List Nat) (t : List (Nat × Nat)) : Nat :=
  sumBelow (fun i => distinctFrom (S i) (restrict i t)) H

theorem restrict_cons (i h x : Nat) (t : List (Nat × Nat)) :
    restrict i ((h, x) :: t) = if h = i then x :: restrict i t else restrict i t := rfl

theorem touch_sub (S : Nat → List Nat) (h x i : Nat) {y : Nat} (hy : y ∈ S i) : y ∈ touch S h x i := by
  show y ∈ (if h = i then x :: S i else S i)
  by_cases e : h = i
  · rw [if_pos e]; exact mem_cons_of_mem x hy
  · rw [if_neg e]; exact hy

theorem touch_self (S : Nat → List Nat) (h x : Nat) : touch S h x h = x :: S h := by
  show (if h = h then x :: S h else S h) = x :: S h
  rw [if_pos rfl]

theorem touch_other (S : Nat → List Nat) {h i : Nat} (x : Nat) (e : h ≠ i) : touch S h x i = S i := by
  show (if h = i then x :: S i else S i) = S i
  rw [if_neg e]

/-- One reference `(h, x)`: the per-host sum loses exactly `[x ∉ S h]`. -/
theorem local_cons (H : Nat) (S : Nat → List Nat) (h x : Nat) (t : List (Nat × Nat)) (hh : h < H) :
    local_ H S ((h, x) :: t) = local_ H (touch S h x) t + (if x ∈ S h then 0 else 1) := by
  unfold local_
  apply sumBelow_bump _ _ H hh
  · intro i e
    show distinctFrom (S i) (restrict i ((h, x) :: t)) = distinctFrom (touch S h x i) (restrict i t)
    rw [restrict_cons, if_neg (fun e' => e e'.symm), touch_other S x (fun e' => e e'.symm)]
  · show distinctFrom (S h) (restrict h ((h, x) :: t)) =
      distinctFrom (touch S h x h) (restrict h t) + (if x ∈ S h then 0 else 1)
    rw [restrict_cons, if_pos rfl, touch_self]
    by_cases hx : x ∈ S h
    · rw [if_pos hx, distinctFrom_of_mem hx, distinctFrom_cons_of_mem hx, Nat.add_zero]
    · rw [if_neg hx, distinctFrom_of_not_mem hx]

theorem blocks_cons (h x : Nat) (t : List (Nat × Nat)) : blocks ((h, x) :: t) = x :: blocks t := rfl

theorem inRange_cons {H h x : Nat} {t : List (Nat × Nat)} (hR : InRange H ((h, x) :: t)) :
    h < H ∧ InRange H t := hR

/-- Invariant: what any host has seen, the pool has seen. -/
abbrev Covered (G : List Nat) (S : Nat → List Nat) : Prop := ∀ i y, y ∈ S i → y ∈ G

theorem covered_touch {G : List Nat} {S : Nat → List Nat} (hC : Covered G S) (h x : Nat)
    {G' : List Nat} (hG : ∀ y, y ∈ G → y ∈ G') (hx : x ∈ G') : Covered G' (touch S h x) := by
  intro i y hy
  by_cases e : h = i
  · cases e
    rw [touch_self] at hy
    rcases mem_cons.1 hy with e | hy
    · subst e; exact hx
    · exact hG y (hC h y hy)
  · rw [touch_other S x e] at hy
    exact hG y (hC i y hy)

theorem le_aux (H : Nat) (t : List (Nat × Nat)) :
    ∀ (G : List Nat) (S : Nat → List Nat), InRange H t → Covered G S → distinctFrom G (blocks t) ≤ local_ H S t := by
  induction t with
  | nil => intro G S _ _; exact Nat.zero_le _
  | cons p t ih =>
    obtain ⟨h, x⟩ := p
    intro G S hR hC
    have hR := inRange_cons hR
    rw [local_cons H S h x t hR.1, blocks_cons]
    by_cases hG : x ∈ G
    · rw [distinctFrom_of_mem hG]
      have := ih G (touch S h x) hR.2 (covered_touch hC h x (fun _ hy => hy) hG)
      omega
    · have hS : ¬ x ∈ S h := fun hm => hG (hC h x hm)
      rw [distinctFrom_of_not_mem hG, if_neg hS]
      have := ih (x :: G) (touch S h x) hR.2
        (covered_touch hC h x (fun y hy => mem_cons_of_mem x hy) (mem_cons_self x G))
      omega

theorem noSharing_tail {p : Nat × Nat} {t : List (Nat × Nat)} (hN : NoSharing (p :: t)) : NoSharing t :=
  fun h₁ h₂ x m₁ m₂ => hN h₁ h₂ x (mem_cons_of_mem p m₁) (mem_cons_of_mem p m₂)

theorem ge_aux (H : Nat) (t : List (Nat × Nat)) :
    ∀ (G : List Nat) (S : Nat → List Nat), InRange H t → Covered G S →
      (∀ i y, (i, y) ∈ t → y ∈ G → y ∈ S i) → NoSharing t → local_ H S t ≤ distinctFrom G (blocks t) := by
  induction t with
  | nil =>
    intro G S _ _ _ _
    have e : local_ H S [] = 0 := sumBelow_zero H
    rw [e]; exact Nat.zero_le _
  | cons p t ih =>
    obtain ⟨h, x⟩ := p
    intro G S hR hC hK hN
    have hR := inRange_cons hR
    rw [local_cons H S h x t hR.1, blocks_cons]
    have hK' : ∀ i y, (i, y) ∈ t → y ∈ G → y ∈ touch S h x i :=
      fun i y m hy => touch_sub S h x i (hK i y (mem_cons_of_mem _ m) hy)
    by_cases hG : x ∈ G
    · have hS : x ∈ S h := hK h x (mem_cons_self _ _) hG
      rw [distinctFrom_of_mem hG, if_pos hS]
      have := ih G (touch S h x) hR.2 (covered_touch hC h x (fun _ hy => hy) hG) hK' (noSharing_tail hN)
      omega
    · have hS : ¬ x ∈ S h := fun hm => hG (hC h x hm)
      rw [distinctFrom_of_not_mem hG, if_neg hS]
      have := ih (x :: G) (touch S h x) hR.2
        (covered_touch hC h x (fun y hy => mem_cons_of_mem x hy) (mem_cons_self x G))
        (fun i y m hy => by
          rcases mem_cons.1 hy with e | hy
          · have m' : (i, x) ∈ t := by rw [← e]; exact m
            have e2 := hN i h x (mem_cons_of_mem _ m') (mem_cons_self _ _)
            rw [e2, touch_self, e]
            exact mem_cons_self _ _
          · exact hK' i y m hy)
        (noSharing_tail hN)
      omega

/-- A witness that the per-host sum will be strictly larger: a reference `(h, x)` still to come,
where `h` has not seen `x`, and `x` was seen by the pool already or is referenced at another host. -/
abbrev Witness (t : List (Nat × Nat)) (G : List Nat) (S : Nat → List Nat) : Prop :=
  ∃ h x, (h, x) ∈ t ∧ ¬ x ∈ S h ∧ (x ∈ G ∨ ∃ h', h' ≠ h ∧ (h', x) ∈ t)

theorem witness_redirect {h₀ x₀ : Nat} {t : List (Nat × Nat)} {G G' : List Nat} {S : Nat → List Nat}
    (hC : Covered G S) (hG : ¬ x₀ ∈ G) (hx : x₀ ∈ G')
    (hh : ∃ h', h' ≠ h₀ ∧ (h', x₀) ∈ (h₀, x₀) :: t) : Witness t G' (touch S h₀ x₀) := by
  obtain ⟨h', hne, m⟩ := hh
  have m' : (h', x₀) ∈ t := by
    rcases mem_cons.1 m with e | m
    · exact absurd (Prod.mk.inj e).1 hne
    · exact m
  refine ⟨h', x₀, m', ?_, Or.inl hx⟩
  rw [touch_other S x₀ (fun e => hne e.symm)]
  exact fun hm => hG (hC h' x₀ hm)

theorem witness_step {h₀ x₀ : Nat} {t : List (Nat × Nat)} {G G' : List Nat} {S : Nat → List Nat}
    (hC : Covered G S) (hW : Witness ((h₀, x₀) :: t) G S) (hB : ¬ (x₀ ∈ G ∧ ¬ x₀ ∈ S h₀))
    (hGG : ∀ y, y ∈ G → y ∈ G') (hx : x₀ ∈ G') : Witness t G' (touch S h₀ x₀) := by
  obtain ⟨h, x, m, hS, hor⟩ := hW
  rcases mem_cons.1 m with e | m
  · obtain ⟨e1, e2⟩ := Prod.mk.inj e
    rw [e1, e2] at hS hor
    have hG : ¬ x₀ ∈ G := fun hg => hB ⟨hg, hS⟩
    exact witness_redirect hC hG hx (hor.resolve_left hG)
  · by_cases hc : h₀ = h ∧ x₀ = x
    · obtain ⟨e1, e2⟩ := hc
      rw [← e1, ← e2] at hS hor
      have hG : ¬ x₀ ∈ G := fun hg => hB ⟨hg, hS⟩
      exact witness_redirect hC hG hx (hor.resolve_left hG)
    · refine ⟨h, x, m, ?_, ?_⟩
      · by_cases e : h₀ = h
        · subst e
          rw [touch_self]
          intro hm
          rcases mem_cons.1 hm with e' | hm
          · exact hc ⟨rfl, e'.symm⟩
          · exact hS hm
        · rw [touch_other S x₀ e]; exact hS
      · rcases hor with hg | ⟨h', hne, m'⟩
        · exact Or.inl (hGG x hg)
        · rcases mem_cons.1 m' with e | m'
          · obtain ⟨_, e2⟩ := Prod.mk.inj e
            subst e2; exact Or.inl hx
          · exact Or.inr ⟨h', hne, m'⟩

theorem lt_aux (H : Nat) (t : List (Nat × Nat)) :
    ∀ (G : List Nat) (S : Nat → List Nat), InRange H t → Covered G S → Witness t G S →
      distinctFrom G (blocks t) < local_ H S t := by
  induction t with
  | nil =>
    intro G S _ _ hW
    obtain ⟨_, _, m, _⟩ := hW
    exact absurd m (not_mem_nil _)
  | cons p t ih =>
    obtain ⟨h, x⟩ := p
    intro G S hR hC hW
    have hR := inRange_cons hR
    rw [local_cons H S h x t hR.1, blocks_cons]
    by_cases hA : x ∈ G ∧ ¬ x ∈ S h
    · rw [distinctFrom_of_mem hA.1, if_neg hA.2]
      have := le_aux H t G (touch S h x) hR.2 (covered_touch hC h x (fun _ hy => hy) hA.1)
      omega
    · by_cases hG : x ∈ G
      · have hS : x ∈ S h := Classical.byContradiction (fun hS => hA ⟨hG, hS⟩)
        rw [distinctFrom_of_mem hG, if_pos hS]
        have := ih G (touch S h x) hR.2 (covered_touch hC h x (fun _ hy => hy) hG)
          (witness_step hC hW hA (fun _ hy => hy) hG)
        omega
      · have hS : ¬ x ∈ S h := fun hm => hG (hC h x hm)
        rw [distinctFrom_of_not_mem hG, if_neg hS]
        have := ih (x :: G) (touch S h x) hR.2
          (covered_touch hC h x (fun y hy => mem_cons_of_mem x hy) (mem_cons_self x G))
          (witness_step hC hW hA (fun y hy => mem_cons_of_mem x hy) (mem_cons_self x G))
        omega

theorem local_empty (H : Nat) (t : List (Nat × Nat)) : local_ H (fun _ => []) t = sumDistinct H t := rfl

theorem covered_empty : Covered [] (fun _ => []) := fun _ _ hy => absurd hy (not_mem_nil _)

/-! ## The wall -/

/-- **Pooled wall.** For every policy (any capacity, any eviction) and every routed trace, the
pooled cache misses at least once per distinct block of the whole trace. It does not say the wall
is reached (the unbounded pooled cache reaches it: `pooledMisses_unbounded`). -/
public theorem distinct_le_pooledMisses (P : Policy) (t : List (Nat × Nat)) :
    distinct (blocks t) ≤ pooledMisses P t :=
  distinct_le_misses P (blocks t)

/-- The unbounded pooled cache sits exactly on the wall. -/
public theorem pooledMisses_unbounded (t : List (Nat × Nat)) : pooledMisses unbounded t = distinct (blocks t) :=
  misses_unbounded (blocks t)

/-- **Per-instance wall.** For every family of per-host policies `Q` and every routed trace, the
per-instance caches of hosts `0, ..., H - 1` miss at least `Σ_{h < H} distinct (t restricted to h)`
times. It says nothing about references routed to hosts `≥ H` (they are in neither side). -/
public theorem sumDistinct_le_perInstanceMisses (Q : Nat → Policy) (H : Nat) (t : List (Nat × Nat)) :
    sumDistinct H t ≤ perInstanceMisses Q H t := by
  show sumBelow (fun h => distinct (restrict h t)) H ≤ sumBelow (fun h => misses (Q h) (restrict h t)) H
  exact sumBelow_mono H (fun h _ => distinct_le_misses (Q h) (restrict h t))

/-- **Splitting never helps.** If every reference goes to a host below `H`, then
`Σ_{h < H} distinct (t restricted to h) ≥ distinct t`. Without `InRange` it fails: references to
hosts `≥ H` are dropped from the sum. -/
public theorem distinct_le_sumDistinct {H : Nat} {t : List (Nat × Nat)} (hR : InRange H t) :
    distinct (blocks t) ≤ sumDistinct H t :=
  le_aux H t [] (fun _ => []) hR covered_empty

/-- If some block is referenced at two different hosts, the per-host sum is strictly larger:
`distinct t < Σ_{h < H} distinct (t restricted to h)`. -/
public theorem distinct_lt_sumDistinct {H : Nat} {t : List (Nat × Nat)} (hR : InRange H t)
    (hS : ¬ NoSharing t) : distinct (blocks t) < sumDistinct H t := by
  apply lt_aux H t [] (fun _ => []) hR covered_empty
  apply Classical.byContradiction
  intro hW
  apply hS
  intro h₁ h₂ x m₁ m₂
  apply Classical.byContradiction
  intro hne
  exact hW ⟨h₁, x, m₁, not_mem_nil x, Or.inr ⟨h₂, fun e => hne e.symm, m₂⟩⟩

/-- **Equality iff no sharing.** If every reference goes to a host below `H`, then
`Σ_{h < H} distinct (t restricted to h) = distinct t` exactly when no block is referenced at two
different hosts. -/
public theorem sumDistinct_eq_iff {H : Nat} {t : List (Nat × Nat)} (hR : InRange H t) :
    sumDistinct H t = distinct (blocks t) ↔ NoSharing t := by
  constructor
  · intro e
    apply Classical.byContradiction
    intro hS
    have := distinct_lt_sumDistinct hR hS
    omega
  · intro hN
    have h1 := distinct_le_sumDistinct hR
    have h2 := ge_aux H t [] (fun _ => []) hR covered_empty
      (fun _ _ _ hy => absurd hy (not_mem_nil _)) hN
    have h3 : sumDistinct H t ≤ distinct (blocks t) := h2
    omega

/-- **Per-instance cannot reach the pooled optimum once blocks are shared.** If every reference goes
to a host below `H` and some block is referenced at two hosts, then for every choice of per-host
policies the per-instance caches miss strictly more than the unbounded pooled cache. It says
nothing about bounded pooled caches, which may miss more than either. -/
public theorem pooled_lt_perInstance {H : Nat} {t : List (Nat × Nat)} (hR : InRange H t)
    (hS : ¬ NoSharing t) (Q : Nat → Policy) : pooledMisses unbounded t < perInstanceMisses Q H t := by
  rw [pooledMisses_unbounded]
  exact Nat.lt_of_lt_of_le (distinct_lt_sumDistinct hR hS) (sumDistinct_le_perInstanceMisses Q H t)

/-! ## Routing -/

theorem inRange_append {H : Nat} : ∀ {l₁ l₂ : List (Nat × Nat)}, InRange H l₁ → InRange H l₂ → InRange H (l₁ ++ l₂)
  | [], _, _, h₂ => h₂
  | _ :: _, _, h₁, h₂ => And.intro (And.left h₁) (inRange_append (And.right h₁) h₂)

theorem inRange_map {H h : Nat} (hh : h < H) : ∀ (req : List Nat), InRange H (req.map (Prod.mk h))
  | [] => True.intro
  | _ :: req => And.intro hh (inRange_map hh req)

theorem inRange_routeFrom {H : Nat} {route : Nat → Nat} (hr : ∀ i, route i < H) :
    ∀ (i : Nat) (rs : List (List Nat)), InRange H (routeFrom route i rs)
  | _, [] => True.intro
  | i, req :: rs => inRange_append (inRange_map (hr i) req) (inRange_routeFrom hr (i + 1) rs)

/-- A routing into hosts `0, ..., H - 1` gives a trace in range, whatever the requests. -/
public theorem inRange_routed {H : Nat} {route : Nat → Nat} (hr : ∀ i, route i < H) (rs : List (List Nat)) :
    InRange H (routed route rs) :=
  inRange_routeFrom hr 0 rs

/-! ## What an instance proves -/

/-- **The headline of a pooling certificate.** On the host-tagged trace `t` over hosts below `H`:
`refs` references over `d` distinct blocks, per-host distinct counts summing to `w`; every pooled
policy misses at least `d` times and per-instance caches, whatever policy each host runs, at least
`w` times. An instance file proves it with literals, and pycert reads the certificate's walls off
them. It says nothing about routings other than the one in `t`. -/
@[expose] public def Walls (t : List (Nat × Nat)) (H refs d w : Nat) : Prop :=
  (blocks t).length = refs ∧ distinct (blocks t) = d ∧ sumDistinct H t = w ∧
    (∀ P : Policy, d ≤ pooledMisses P t) ∧ ∀ Q : Nat → Policy, w ≤ perInstanceMisses Q H t

/-- `Walls` from the three counts (`distinct_le_pooledMisses`, `sumDistinct_le_perInstanceMisses`). -/
public theorem walls_of_counts {t : List (Nat × Nat)} {H refs d w : Nat} (hr : (blocks t).length = refs)
    (hd : distinct (blocks t) = d) (hw : sumDistinct H t = w) : Walls t H refs d w :=
  ⟨hr, hd, hw, fun P => hd ▸ distinct_le_pooledMisses P t, fun Q => hw ▸ sumDistinct_le_perInstanceMisses Q H t⟩

end Pycert.Pooling
