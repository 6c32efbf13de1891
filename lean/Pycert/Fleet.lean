module

prelude
public import Pycert.AdmissionOptimum
public import Pycert.Ceiling
import Init.Omega

/-!
# A fleet: `H` caches of `C` blocks behind a router

A serving fleet runs `H` replicas, each with a cache of `C` blocks, behind a router that sends each
request to one of them. Here the router is a routing `g` (reference `j` goes to host `g j < H`; a
request's references all go where the request goes, which this file does not need) and the hosts'
caches are given by their contents along the whole trace (`Fleet`): `K h t` is what host `h` holds after
the first `t` references of the trace. Each host's cache is the model of `Pycert.Admission.Run`: it
starts empty, holds at most `C` blocks, may evict anything at any step and may decline to store a missed
block (bypass), and it loads a block only at a reference routed to it. A reference hits when its block
is in its own host's cache when it comes (`fleetHits`).

* **The union bound** (`fleet_le`, `Pooled`): after every step the hosts' caches together hold at most
  `H · C` blocks, gain a block only when it is referenced, and hold every block that hits at any host;
  so they are one cache of `H · C` blocks with bypass (`union_run`), and the optimum of such a cache
  bounds every routing and every per-host policy.
* **The routed optimum** (`Routed`, `routed_of`): under one routing the hosts are independent. Host `h`
  sees its sub-trace `sub r g h` (the references routed to it, in order), each host's cache read at its
  own references is a cache of `C` blocks on that sub-trace (`host_run`), and conversely per-host caches on
  the sub-traces make a fleet (`host_fleet`); so the fleet's best is the sum of the per-host optima, and
  that sum is attained.

What this file does not model: caches that start non-empty, blocks of different sizes, prefetching (a
block enters a host only at a reference routed to it), the room a running request's blocks need, the
timing of requests (the fleet is offline: its caches may read the whole trace), and, for `Routed`, a
routing that depends on what the caches hold (the routing is fixed in advance, whatever made it).
-/

namespace Pycert.Fleet
open Pycert.Admission

/-! ## The model -/

/-- **A fleet of `H` caches of `C` blocks along the trace `r`, behind the routing `g`.** Every reference
goes to a host below `H`; host `h` holds `K h t` after the first `t` references: it starts empty, holds at
most `C` blocks after each reference, and after reference `t` holds only blocks it held before, or the
block of reference `t` when `t` was routed to it. So each host may evict any block at any step and may
decline to store a missed block; what decides may read the whole trace (the fleet is offline). Blocks
have size one; nothing makes a running request's blocks resident together. -/
@[expose] public def Fleet (r : List Nat) (H C : Nat) (g : Nat → Nat) (K : Nat → Nat → List Nat) : Prop :=
  (∀ j, j < r.length → g j < H) ∧
  ∀ h, h < H → K h 0 = [] ∧ ∀ t, t < r.length →
    (K h (t + 1)).length ≤ C ∧ ∀ y, y ∈ K h (t + 1) → y ∈ K h t ∨ (y = nth r t ∧ g t = h)

/-- The fleet's hits: the references whose block is in their own host's cache when they come. -/
@[expose] public noncomputable def fleetHits (r : List Nat) (g : Nat → Nat) (K : Nat → Nat → List Nat) : Nat :=
  count (fun j => nth r j ∈ K (g j) j) r.length

/-! ## The union of the hosts' caches -/

/-- What the hosts below `H` hold after `t` references, one host's list after another. -/
@[expose] public noncomputable def union (K : Nat → Nat → List Nat) : Nat → Nat → List Nat
  | 0, _ => []
  | H + 1, t => K H t ++ union K H t

theorem mem_union {K : Nat → Nat → List Nat} {y t : Nat} : ∀ {H : Nat}, y ∈ union K H t ↔ ∃ h, h < H ∧ y ∈ K h t
  | 0 => ⟨fun m => absurd m (not_mem_nil y), fun ⟨_, hh, _⟩ => absurd hh (Nat.not_lt_zero _)⟩
  | H + 1 => by
    show y ∈ K H t ++ union K H t ↔ _
    rw [mem_append', mem_union]
    constructor
    · rintro (m | ⟨h, hh, m⟩)
      · exact ⟨H, by omega, m⟩
      · exact ⟨h, by omega, m⟩
    · rintro ⟨h, hh, m⟩
      by_cases e : h = H
      · subst e; exact Or.inl m
      · exact Or.inr ⟨h, by omega, m⟩

theorem length_union {K : Nat → Nat → List Nat} {C t : Nat} :
    ∀ {H : Nat}, (∀ h, h < H → (K h t).length ≤ C) → (union K H t).length ≤ H * C
  | 0, _ => Nat.zero_le _
  | H + 1, hk => by
    show (K H t ++ union K H t).length ≤ (H + 1) * C
    rw [length_append', Nat.succ_mul]
    have := hk H (by omega)
    have := length_union (H := H) fun h hh => hk h (by omega)
    omega

theorem union_zero {K : Nat → Nat → List Nat} : ∀ {H : Nat}, (∀ h, h < H → K h 0 = []) → union K H 0 = []
  | 0, _ => rfl
  | H + 1, hk => by
    show K H 0 ++ union K H 0 = []
    rw [hk H (by omega), union_zero fun h hh => hk h (by omega)]
    rfl

/-- **The hosts' caches together are one cache of `H · C` blocks with bypass**: it starts empty, holds at
most `H · C` blocks, and gains a block only when that block is referenced (at whichever host). -/
public theorem union_run {r : List Nat} {H C : Nat} {g : Nat → Nat} {K : Nat → Nat → List Nat}
    (hF : Fleet r H C g K) : Run r (H * C) (union K H) :=
  ⟨union_zero fun h hh => (hF.2 h hh).1, fun t ht => ⟨length_union fun h hh => ((hF.2 h hh).2 t ht).1,
    fun y hy => by
      obtain ⟨h, hh, m⟩ := mem_union.1 hy
      rcases ((hF.2 h hh).2 t ht).2 y m with m | ⟨e, _⟩
      · exact Or.inl (mem_union.2 ⟨h, hh, m⟩)
      · exact Or.inr e⟩⟩

/-- Every hit of the fleet is a hit of the union. -/
public theorem fleetHits_le_union {r : List Nat} {H C : Nat} {g : Nat → Nat} {K : Nat → Nat → List Nat}
    (hF : Fleet r H C g K) : fleetHits r g K ≤ hits r (union K H) :=
  count_mono fun j hj m => mem_union.2 ⟨g j, hF.1 j hj, m⟩

/-- **The union bound.** For every routing of the references of `r` to `H` hosts and every `H` caches of
`C` blocks (any eviction, bypass allowed, each starting empty and loading a block only at a reference
routed to it), the fleet hits no more often than a bound on every cache of `H · C` blocks with bypass. It
says nothing of caches that start non-empty, prefetch, or hold blocks of different sizes. -/
public theorem fleet_le {r : List Nat} {n H C p : Nat} {g : Nat → Nat} {K : Nat → Nat → List Nat}
    (hF : Fleet r H C g K) (hb : BoundedA r n (H * C) p) : fleetHits r g K ≤ p :=
  Nat.le_trans (fleetHits_le_union hF) (hb.2 _ (union_run hF))

/-- **The pooled optimum at `H · C` blocks, and what it bounds.** On the trace `r` of `n` references some
cache of `H · C` blocks with bypass hits exactly `p` times and none hits more (`OptimumA`), and every fleet
of `H` caches of `C` blocks, under every routing, hits at most `p` times. The caches start empty, hold
blocks of size one, prefetch nothing and keep no room for a running request's blocks. -/
@[expose] public def Pooled (r : List Nat) (n H C p : Nat) : Prop :=
  OptimumA r n (H * C) p ∧ ∀ g K, Fleet r H C g K → fleetHits r g K ≤ p

public theorem pooled_of {r : List Nat} {n H C p : Nat} (h : OptimumA r n (H * C) p) : Pooled r n H C p :=
  ⟨h, fun _ _ hF => fleet_le hF h.1⟩

/-! ## Sub-traces -/

/-- The references among the first `t` of `r` that `g` routes to host `h`, in order. -/
@[expose] public noncomputable def subTo (r : List Nat) (g : Nat → Nat) (h : Nat) : Nat → List Nat
  | 0 => []
  | t + 1 => subTo r g h t ++ (if g t = h then [nth r t] else [])

/-- **Host `h`'s sub-trace**: the references of `r` that `g` routes to it, in the trace's order. -/
@[expose] public noncomputable def sub (r : List Nat) (g : Nat → Nat) (h : Nat) : List Nat := subTo r g h r.length

theorem subTo_pos {r : List Nat} {g : Nat → Nat} {h t : Nat} (e : g t = h) :
    subTo r g h (t + 1) = subTo r g h t ++ [nth r t] := by
  show subTo r g h t ++ (if g t = h then [nth r t] else []) = _
  rw [if_pos e]

theorem subTo_neg {r : List Nat} {g : Nat → Nat} {h t : Nat} (e : ¬ g t = h) :
    subTo r g h (t + 1) = subTo r g h t := by
  show subTo r g h t ++ (if g t = h then [nth r t] else []) = _
  rw [if_neg e, List.append_nil]

theorem length_subTo (r : List Nat) (g : Nat → Nat) (h : Nat) :
    ∀ t, (subTo r g h t).length = count (fun j => g j = h) t
  | 0 => rfl
  | t + 1 => by
    by_cases e : g t = h
    · rw [subTo_pos e, length_append', count_succ_pos (p := fun j => g j = h) e, length_subTo r g h t]; rfl
    · rw [subTo_neg e, count_succ_neg (p := fun j => g j = h) e, length_subTo r g h t]

theorem subTo_add (r : List Nat) (g : Nat → Nat) (h t : Nat) : ∀ k, ∃ l, subTo r g h (t + k) = subTo r g h t ++ l
  | 0 => ⟨[], (List.append_nil _).symm⟩
  | k + 1 => by
    obtain ⟨l, e⟩ := subTo_add r g h t k
    refine ⟨l ++ (if g (t + k) = h then [nth r (t + k)] else []), ?_⟩
    show subTo r g h (t + k) ++ _ = _
    rw [e, List.append_assoc]
    rfl

theorem nth_append_length : ∀ (a : List Nat) (x : Nat) (b : List Nat), nth (a ++ x :: b) a.length = x
  | [], _, _ => rfl
  | _ :: a, x, b => nth_append_length a x b

/-- Reference `j`, routed to `h`, is entry `count (g · = h) j` of `h`'s sub-trace. -/
theorem nth_subTo {r : List Nat} {g : Nat → Nat} {h j m : Nat} (e : g j = h) (hj : j < m) :
    nth (subTo r g h m) (count (fun i => g i = h) j) = nth r j := by
  obtain ⟨l, hl⟩ := subTo_add r g h (j + 1) (m - (j + 1))
  rw [show j + 1 + (m - (j + 1)) = m by omega] at hl
  rw [hl, subTo_pos e, List.append_assoc, ← length_subTo r g h j]
  exact nth_append_length _ _ _

/-! ## Counting along a routing -/

theorem count_le_of_le (q : Nat → Prop) {t u : Nat} (h : t ≤ u) : count q t ≤ count q u := by
  obtain ⟨k, rfl⟩ : ∃ k, u = t + k := ⟨u - t, by omega⟩
  rw [count_add]
  omega

/-- Counting the references routed to `h` by a property of their place in `h`'s sub-trace. -/
theorem count_routed (g : Nat → Nat) (h : Nat) (P : Nat → Prop) :
    ∀ t, count (fun j => g j = h ∧ P (count (fun i => g i = h) j)) t = count P (count (fun i => g i = h) t)
  | 0 => rfl
  | t + 1 => by
    have ih := count_routed g h P t
    by_cases e : g t = h
    · rw [count_succ_pos (p := fun i => g i = h) e]
      by_cases hp : P (count (fun i => g i = h) t)
      · rw [count_succ_pos (p := fun j => g j = h ∧ P (count (fun i => g i = h) j)) ⟨e, hp⟩, count_succ_pos hp, ih]
      · rw [count_succ_neg (p := fun j => g j = h ∧ P (count (fun i => g i = h) j)) (fun c => hp c.2),
          count_succ_neg hp, ih]
    · rw [count_succ_neg (p := fun i => g i = h) e,
        count_succ_neg (p := fun j => g j = h ∧ P (count (fun i => g i = h) j)) (fun c => e c.1), ih]

/-- Every `k` up to the count is the count at some earlier place. -/
theorem count_reaches (q : Nat → Prop) : ∀ m k, k ≤ count q m → ∃ t, t ≤ m ∧ count q t = k
  | 0, k, hk => ⟨0, Nat.le_refl 0, by rw [count_zero] at hk ⊢; omega⟩
  | m + 1, k, hk => by
    by_cases e : k ≤ count q m
    · obtain ⟨t, ht, c⟩ := count_reaches q m k e
      exact ⟨t, by omega, c⟩
    · refine ⟨m + 1, Nat.le_refl _, ?_⟩
      by_cases hq : q m
      · rw [count_succ_pos hq] at hk ⊢; omega
      · rw [count_succ_neg hq] at hk ⊢; omega

/-- The sum of `f h` for `h < H`. -/
@[expose] public noncomputable def sumTo (f : Nat → Nat) : Nat → Nat
  | 0 => 0
  | H + 1 => sumTo f H + f H

theorem sumTo_le {f f' : Nat → Nat} : ∀ {H : Nat}, (∀ h, h < H → f h ≤ f' h) → sumTo f H ≤ sumTo f' H
  | 0, _ => Nat.le_refl 0
  | H + 1, hf => by
    show sumTo f H + f H ≤ sumTo f' H + f' H
    have := sumTo_le (H := H) fun h hh => hf h (by omega)
    have := hf H (by omega)
    omega

theorem sumTo_congr {f f' : Nat → Nat} {H : Nat} (hf : ∀ h, h < H → f h = f' h) : sumTo f H = sumTo f' H :=
  Nat.le_antisymm (sumTo_le fun h hh => Nat.le_of_eq (hf h hh)) (sumTo_le fun h hh => Nat.le_of_eq (hf h hh).symm)

/-- The references below `n` routed below `H` and satisfying `p`, host by host. -/
theorem count_below (g : Nat → Nat) (p : Nat → Prop) (n : Nat) :
    ∀ H, count (fun j => g j < H ∧ p j) n = sumTo (fun h => count (fun j => g j = h ∧ p j) n) H
  | 0 => count_eq_zero fun _ _ c => absurd c.1 (Nat.not_lt_zero _)
  | H + 1 => by
    rw [count_split (fun j => g j < H + 1 ∧ p j) (fun j => g j = H) n]
    show _ = sumTo (fun h => count (fun j => g j = h ∧ p j) n) H + count (fun j => g j = H ∧ p j) n
    rw [← count_below g p n H,
      count_congr (p := fun j => (g j < H + 1 ∧ p j) ∧ g j = H) (q := fun j => g j = H ∧ p j)
        fun _ _ => ⟨fun ⟨⟨_, hp⟩, e⟩ => ⟨e, hp⟩, fun ⟨e, hp⟩ => ⟨⟨by omega, hp⟩, e⟩⟩,
      count_congr (p := fun j => (g j < H + 1 ∧ p j) ∧ ¬ g j = H) (q := fun j => g j < H ∧ p j)
        fun _ _ => ⟨fun ⟨⟨_, hp⟩, _⟩ => ⟨by omega, hp⟩, fun ⟨_, hp⟩ => ⟨⟨by omega, hp⟩, by omega⟩⟩]
    omega

/-- The fleet's hits, host by host. -/
theorem fleetHits_eq {r : List Nat} {H : Nat} {g : Nat → Nat} (hg : ∀ j, j < r.length → g j < H)
    (K : Nat → Nat → List Nat) :
    fleetHits r g K = sumTo (fun h => count (fun j => g j = h ∧ nth r j ∈ K h j) r.length) H := by
  show count _ _ = _
  rw [count_congr (p := fun j => nth r j ∈ K (g j) j) (q := fun j => g j < H ∧ nth r j ∈ K (g j) j)
    fun j hj => ⟨fun m => ⟨hg j hj, m⟩, fun c => c.2⟩, count_below]
  exact sumTo_congr fun h _ => count_congr fun j _ =>
    ⟨fun ⟨e, m⟩ => ⟨e, by rw [← e]; exact m⟩, fun ⟨e, m⟩ => ⟨e, by rw [e]; exact m⟩⟩

/-! ## One host, read at its own references -/

/-- The latest `t ≤ m` with `p t`, `0` when none. -/
@[expose] public noncomputable def latest (p : Nat → Prop) : Nat → Nat
  | 0 => 0
  | m + 1 => @ite _ (p (m + 1)) (Classical.propDecidable _) (m + 1) (latest p m)

theorem latest_pos {p : Nat → Prop} {m : Nat} (h : p (m + 1)) : latest p (m + 1) = m + 1 := by
  show @ite _ (p (m + 1)) (Classical.propDecidable _) (m + 1) (latest p m) = _
  rw [if_pos h]

theorem latest_neg {p : Nat → Prop} {m : Nat} (h : ¬ p (m + 1)) : latest p (m + 1) = latest p m := by
  show @ite _ (p (m + 1)) (Classical.propDecidable _) (m + 1) (latest p m) = _
  rw [if_neg h]

theorem latest_le (p : Nat → Prop) : ∀ m, latest p m ≤ m
  | 0 => Nat.le_refl 0
  | m + 1 => by
    by_cases h : p (m + 1)
    · rw [latest_pos h]; exact Nat.le_refl _
    · rw [latest_neg h]; have := latest_le p m; omega

theorem latest_spec (p : Nat → Prop) : ∀ m, (∃ t, t ≤ m ∧ p t) →
    p (latest p m) ∧ ∀ u, latest p m < u → u ≤ m → ¬ p u
  | 0, ⟨t, ht, pt⟩ => by
    have e : t = 0 := by omega
    subst e
    exact ⟨pt, fun u h1 h2 => absurd h2 (by show ¬ u ≤ 0; omega)⟩
  | m + 1, ⟨t, ht, pt⟩ => by
    by_cases hp : p (m + 1)
    · rw [latest_pos hp]; exact ⟨hp, fun u h1 h2 => absurd h2 (by omega)⟩
    · rw [latest_neg hp]
      have ht' : t ≤ m := by
        rcases Nat.lt_or_ge t (m + 1) with h | h
        · omega
        · exact absurd (by rw [show m + 1 = t by omega]; exact pt) hp
      obtain ⟨a, c⟩ := latest_spec p m ⟨t, ht', pt⟩
      refine ⟨a, fun u h1 h2 => ?_⟩
      by_cases e : u = m + 1
      · rw [e]; exact hp
      · exact c u h1 (by omega)

theorem eq_nil_of {l : List Nat} (h : ∀ y, y ∈ l → False) : l = [] :=
  match l with
  | [] => rfl
  | a :: _ => absurd (mem_cons_self a _) (h a)

/-- Host `h` of a fleet, read at its own references: after the first `k` references of its sub-trace, what
it held at the latest step at which it had seen `k` of them. -/
@[expose] public noncomputable def atHost (r : List Nat) (g : Nat → Nat) (h : Nat) (K : Nat → Nat → List Nat)
    (k : Nat) : List Nat :=
  K h (latest (fun t => count (fun j => g j = h) t = k) r.length)

section Host
variable {r : List Nat} {C h : Nat} {g : Nat → Nat} {K : Nat → Nat → List Nat}

/-- Between two references routed to `h`, its cache only loses blocks. -/
theorem shrink (step : ∀ t, t < r.length → ∀ y, y ∈ K h (t + 1) → y ∈ K h t ∨ (y = nth r t ∧ g t = h)) :
    ∀ d a, a + d ≤ r.length → count (fun j => g j = h) (a + d) = count (fun j => g j = h) a →
      ∀ y, y ∈ K h (a + d) → y ∈ K h a
  | 0, _, _, _, _, m => m
  | d + 1, a, hn, hc, y, m => by
    have h1 := count_le_of_le (fun j => g j = h) (show a ≤ a + d by omega)
    have h2 := count_le_of_le (fun j => g j = h) (show a + d + 1 ≤ a + (d + 1) by omega)
    have ne : ¬ g (a + d) = h := fun e => by
      rw [count_succ_pos (p := fun j => g j = h) e] at h2
      omega
    have h3 := count_le_of_le (fun j => g j = h) (show a + d ≤ a + d + 1 by omega)
    rcases step (a + d) (by omega) y m with m' | ⟨_, e⟩
    · exact shrink step d a (by omega) (Nat.le_antisymm (by omega) h1) y m'
    · exact absurd e ne

/-- A reference routed to `h` is the latest step at which `h` had seen as many of its references. -/
theorem latest_routed {j : Nat} (e : g j = h) (hj : j < r.length) :
    latest (fun t => count (fun i => g i = h) t = count (fun i => g i = h) j) r.length = j := by
  obtain ⟨pl, after⟩ := latest_spec (fun t => count (fun i => g i = h) t = count (fun i => g i = h) j) r.length
    ⟨j, Nat.le_of_lt hj, rfl⟩
  have le := latest_le (fun t => count (fun i => g i = h) t = count (fun i => g i = h) j) r.length
  have up : count (fun i => g i = h) (j + 1) = count (fun i => g i = h) j + 1 := count_succ_pos e
  rcases Nat.lt_trichotomy (latest (fun t => count (fun i => g i = h) t = count (fun i => g i = h) j) r.length) j
    with l | q | g'
  · exact absurd rfl (after j l (Nat.le_of_lt hj))
  · exact q
  · have := count_le_of_le (fun i => g i = h) (show j + 1 ≤ latest (fun t => count (fun i => g i = h) t =
      count (fun i => g i = h) j) r.length by omega)
    omega

/-- **A fleet's host is a cache on its sub-trace.** Host `h`'s cache, read at its own references
(`atHost`), is a cache of `C` blocks with bypass on `sub r g h`, and it hits there exactly where the fleet
hits at host `h`. -/
public theorem host_run (h0 : K h 0 = [])
    (hK : ∀ t, t < r.length →
      (K h (t + 1)).length ≤ C ∧ ∀ y, y ∈ K h (t + 1) → y ∈ K h t ∨ (y = nth r t ∧ g t = h)) :
    Run (sub r g h) C (atHost r g h K) ∧
      hits (sub r g h) (atHost r g h K) = count (fun j => g j = h ∧ nth r j ∈ K h j) r.length := by
  have step := fun t ht => (hK t ht).2
  have len : (sub r g h).length = count (fun j => g j = h) r.length := length_subTo r g h r.length
  have lenK : ∀ t, t ≤ r.length → (K h t).length ≤ C := fun t ht => by
    cases t with
    | zero => rw [h0]; exact Nat.zero_le _
    | succ t => exact (hK t (by omega)).1
  refine ⟨⟨?_, fun k hk => ⟨lenK _ (latest_le _ _), fun y hy => ?_⟩⟩, ?_⟩
  · -- before its first reference the host holds nothing
    obtain ⟨pl, _⟩ := latest_spec (fun t => count (fun j => g j = h) t = 0) r.length ⟨0, Nat.zero_le _, rfl⟩
    have le := latest_le (fun t => count (fun j => g j = h) t = 0) r.length
    refine eq_nil_of fun y m => ?_
    have := shrink step _ 0 (by rw [Nat.zero_add]; exact le) (by rw [Nat.zero_add]; exact pl) y
      (by rw [Nat.zero_add]; exact m)
    rw [h0] at this
    exact not_mem_nil y this
  · rw [len] at hk
    obtain ⟨a0, ha0, ca0⟩ := count_reaches (fun j => g j = h) r.length k (by omega)
    obtain ⟨pa, aa⟩ := latest_spec (fun t => count (fun j => g j = h) t = k) r.length ⟨a0, ha0, ca0⟩
    have lea := latest_le (fun t => count (fun j => g j = h) t = k) r.length
    obtain ⟨b0, hb0, cb0⟩ := count_reaches (fun j => g j = h) r.length (k + 1) (by omega)
    obtain ⟨pb, _⟩ := latest_spec (fun t => count (fun j => g j = h) t = k + 1) r.length ⟨b0, hb0, cb0⟩
    have leb := latest_le (fun t => count (fun j => g j = h) t = k + 1) r.length
    change y ∈ K h (latest (fun t => count (fun j => g j = h) t = k) r.length) ∨ y = nth (sub r g h) k
    generalize latest (fun t => count (fun j => g j = h) t = k) r.length = a at pa aa lea ⊢
    generalize hb : latest (fun t => count (fun j => g j = h) t = k + 1) r.length = b at pb leb
    -- the last step with `k` seen is reference `k` of the host's sub-trace
    have an : a < r.length := by
      rcases Nat.lt_or_ge a r.length with l | l
      · exact l
      · have : a = r.length := by omega
        subst this; omega
    have ga : g a = h := by
      have next := aa (a + 1) (by omega) (by omega)
      simp only at next
      by_cases e : g a = h
      · exact e
      · rw [count_succ_neg (p := fun j => g j = h) e] at next; exact absurd pa next
    have ca1 : count (fun j => g j = h) (a + 1) = k + 1 := by rw [count_succ_pos (p := fun j => g j = h) ga, pa]
    have ab : a + 1 ≤ b := by
      rcases Nat.lt_or_ge b (a + 1) with l | l
      · have := count_le_of_le (fun j => g j = h) (show b ≤ a by omega); omega
      · exact l
    have my : y ∈ K h b := by
      change y ∈ K h (latest (fun t => count (fun j => g j = h) t = k + 1) r.length) at hy
      rw [hb] at hy; exact hy
    have := shrink step (b - (a + 1)) (a + 1) (by omega) (by rw [show a + 1 + (b - (a + 1)) = b by omega, pb, ca1]) y
      (by rw [show a + 1 + (b - (a + 1)) = b by omega]; exact my)
    rcases step a an y this with m | ⟨e, _⟩
    · exact Or.inl m
    · refine Or.inr ?_
      rw [e, ← pa]
      exact (nth_subTo ga an).symm
  · show count _ _ = _
    rw [len, ← count_routed g h (fun k => nth (sub r g h) k ∈ atHost r g h K k) r.length]
    exact count_congr fun j hj => ⟨fun ⟨e, m⟩ => ⟨e, by
      have h1 := nth_subTo (r := r) e hj
      have h2 := latest_routed e hj
      change nth (subTo r g h r.length) _ ∈ K h _ at m
      rw [h1, h2] at m; exact m⟩, fun ⟨e, m⟩ => ⟨e, by
      have h1 := nth_subTo (r := r) e hj
      have h2 := latest_routed e hj
      show nth (subTo r g h r.length) _ ∈ K h _
      rw [h1, h2]; exact m⟩⟩

end Host

theorem run_length {r : List Nat} {C : Nat} {K : Nat → List Nat} (hK : Run r C K) :
    ∀ k, k ≤ r.length → (K k).length ≤ C
  | 0, _ => by rw [hK.1]; exact Nat.zero_le _
  | k + 1, hk => (hK.2 k (by omega)).1

/-- **Per-host caches on the sub-traces make a fleet.** Given a cache `F h` of `C` blocks with bypass on
each host's sub-trace, host `h` holding `F h k` once it has seen `k` of its references is a fleet, and it
hits as often as the per-host caches together. -/
public theorem host_fleet {r : List Nat} {H C : Nat} {g : Nat → Nat} (hg : ∀ j, j < r.length → g j < H)
    (F : Nat → Nat → List Nat) (hF : ∀ h, h < H → Run (sub r g h) C (F h)) :
    Fleet r H C g (fun h t => F h (count (fun j => g j = h) t)) ∧
      fleetHits r g (fun h t => F h (count (fun j => g j = h) t)) = sumTo (fun h => hits (sub r g h) (F h)) H := by
  refine ⟨⟨hg, fun h hh => ⟨(hF h hh).1, fun t ht => ?_⟩⟩, ?_⟩
  · have len : (sub r g h).length = count (fun j => g j = h) r.length := length_subTo r g h r.length
    have top := count_le_of_le (fun j => g j = h) (show t + 1 ≤ r.length by omega)
    dsimp only
    by_cases e : g t = h
    · rw [count_succ_pos (p := fun j => g j = h) e]
      rw [count_succ_pos (p := fun j => g j = h) e] at top
      have run := (hF h hh).2 (count (fun j => g j = h) t) (by omega)
      refine ⟨run.1, fun y hy => ?_⟩
      rcases run.2 y hy with m | m
      · exact Or.inl m
      · exact Or.inr ⟨by rw [m]; exact nth_subTo e ht, e⟩
    · rw [count_succ_neg (p := fun j => g j = h) e]
      have t1 := count_le_of_le (fun j => g j = h) (show t ≤ t + 1 by omega)
      exact ⟨run_length (hF h hh) _ (by omega), fun y hy => Or.inl hy⟩
  · rw [fleetHits_eq hg]
    refine sumTo_congr fun h _ => ?_
    show _ = count _ (sub r g h).length
    rw [show (sub r g h).length = count (fun j => g j = h) r.length from length_subTo r g h r.length, ← count_routed g h (fun k => nth (sub r g h) k ∈ F h k) r.length]
    exact count_congr fun j hj => ⟨fun ⟨e, m⟩ => ⟨e, by
      show nth (subTo r g h r.length) _ ∈ _
      rw [nth_subTo e hj]; exact m⟩, fun ⟨e, m⟩ => ⟨e, by
      change nth (subTo r g h r.length) _ ∈ _ at m
      rw [nth_subTo e hj] at m; exact m⟩⟩

/-! ## Under one routing -/

/-- **The optimum under the routing `g`.** Every fleet of `H` caches of `C` blocks on `r` behind `g` (any
eviction, bypass allowed, each starting empty and loading a block only at a reference routed to it) hits at
most `q` times, and one hits exactly `q` times. The routing is fixed in advance: this says nothing of a
router that looks at the caches, nor of caches that start non-empty or prefetch. -/
@[expose] public def Routed (r : List Nat) (g : Nat → Nat) (H C q : Nat) : Prop :=
  (∀ K, Fleet r H C g K → fleetHits r g K ≤ q) ∧ ∃ K, Fleet r H C g K ∧ fleetHits r g K = q

/-- **The routed optimum is the sum of the per-host optima.** If every reference goes below `H` and the
optimum with bypass at `C` blocks of each host's sub-trace is `b h`, the fleet's optimum under `g` is their
sum. -/
public theorem routed_of_optima {r : List Nat} {H C : Nat} {g : Nat → Nat} {ns b : Nat → Nat}
    (hg : ∀ j, j < r.length → g j < H) (ho : ∀ h, h < H → OptimumA (sub r g h) (ns h) C (b h)) :
    Routed r g H C (sumTo b H) := by
  refine ⟨fun K hF => ?_, ?_⟩
  · rw [fleetHits_eq hg]
    exact sumTo_le fun h hh => by
      have := host_run (hF.2 h hh).1 (hF.2 h hh).2
      rw [← this.2]
      exact (ho h hh).1.2 _ this.1
  · have pick : ∀ h, ∃ F : Nat → List Nat, h < H → Run (sub r g h) C F ∧ hits (sub r g h) F = b h := fun h => by
      by_cases hh : h < H
      · obtain ⟨F, hF, e⟩ := (ho h hh).2
        exact ⟨F, fun _ => ⟨hF, e⟩⟩
      · exact ⟨fun _ => [], fun c => absurd c hh⟩
    let F := fun h => Classical.choose (pick h)
    have spec := fun h hh => Classical.choose_spec (pick h) hh
    obtain ⟨fl, e⟩ := host_fleet hg F fun h hh => (spec h hh).1
    exact ⟨_, fl, by rw [e]; exact sumTo_congr fun h hh => (spec h hh).2⟩

/-! ## What a fleet certificate states -/

/-- Entry `k` of a list of lists, `[]` past its end. -/
@[expose] public def part : List (List Nat) → Nat → List Nat
  | [], _ => []
  | x :: _, 0 => x
  | _ :: xs, k + 1 => part xs k

/-- The sum of a list. -/
@[expose] public def total : List Nat → Nat
  | [] => 0
  | x :: xs => x + total xs

theorem sumTo_front (f : Nat → Nat) : ∀ H, sumTo f (H + 1) = f 0 + sumTo (fun k => f (k + 1)) H
  | 0 => by show 0 + f 0 = f 0 + 0; omega
  | H + 1 => by
    show sumTo f (H + 1) + f (H + 1) = f 0 + (sumTo (fun k => f (k + 1)) H + f (H + 1))
    rw [sumTo_front f H]
    omega

theorem sumTo_nth : ∀ l : List Nat, sumTo (nth l) l.length = total l
  | [] => rfl
  | x :: l => by
    rw [List.length_cons, sumTo_front]
    show x + sumTo (nth l) l.length = x + total l
    rw [sumTo_nth l]

/-- **Each host's optimum.** There are `H` lists in `subs` (the hosts' sub-traces, as written) and `H`
figures in `ns` and `hs`; on list `k`, of `ns[k]` references, the optimum with bypass at `C` blocks is
`hs[k]` (`OptimumA`, both ways). -/
@[expose] public def Hosts (H C : Nat) (subs : List (List Nat)) (ns hs : List Nat) : Prop :=
  subs.length = H ∧ ns.length = H ∧ hs.length = H ∧ ∀ k, k < H → OptimumA (part subs k) (nth ns k) C (nth hs k)

public theorem hosts_nil (C : Nat) : Hosts 0 C [] [] [] :=
  ⟨rfl, rfl, rfl, fun _ h => absurd h (Nat.not_lt_zero _)⟩

public theorem hosts_cons {H C n h : Nat} {r : List Nat} {subs : List (List Nat)} {ns hs : List Nat}
    (o : OptimumA r n C h) (rest : Hosts H C subs ns hs) : Hosts (H + 1) C (r :: subs) (n :: ns) (h :: hs) :=
  ⟨by rw [List.length_cons, rest.1], by rw [List.length_cons, rest.2.1], by rw [List.length_cons, rest.2.2.1],
    fun k hk => match k with
      | 0 => o
      | k + 1 => rest.2.2.2 k (by omega)⟩

/-- A host that receives no reference hits nothing, and that is its optimum. -/
public theorem optimumA_nil (C : Nat) : OptimumA [] 0 C 0 :=
  ⟨⟨rfl, fun _ _ => Nat.le_refl 0⟩, fun _ => [], ⟨rfl, fun _ h => absurd h (Nat.not_lt_zero _)⟩, rfl⟩

/-- **The headline of a fleet certificate.** On the trace `r` of `n` references and `H` hosts of `C`
blocks: the pooled optimum at `H · C` blocks is `p`, and it bounds every fleet under every routing
(`Pooled`); on each list of `subs` the optimum at `C` blocks is the figure of `hs` (`Hosts`), and they sum
to `q ≤ p`; and **if** each list of `subs` is the sub-trace that `g` routes to its host, `q` is the
optimum of the fleet under `g` (`Routed`). That condition is not checked by the kernel: pycert writes the
sub-traces from the trace and the routing, and verify makes them again. Every cache starts empty, holds
blocks of size one, prefetches nothing and keeps no room for a running request's blocks; the fleet is
offline. -/
@[expose] public def Certified (r : List Nat) (g : Nat → Nat) (subs : List (List Nat)) (n H C p : Nat)
    (ns hs : List Nat) (q : Nat) : Prop :=
  Pooled r n H C p ∧ Hosts H C subs ns hs ∧ total hs = q ∧ q ≤ p ∧
    ((∀ k, k < H → sub r g k = part subs k) → Routed r g H C q)

/-- **The same, with the workload's reuse**: no cache of any size hits more than `w = n - d` times on `r`,
its `d` distinct blocks each missing once (`Pycert.Ceiling.Bounded`). -/
@[expose] public def CertifiedCeiling (r : List Nat) (g : Nat → Nat) (subs : List (List Nat)) (n d w H C p : Nat)
    (ns hs : List Nat) (q : Nat) : Prop :=
  Ceiling.Bounded r n d w ∧ Certified r g subs n H C p ns hs q

/-- `Certified` from the pooled optimum and the hosts' optima: the union bound and the routed optimum are
theorems here, so an instance proves only the optima and the sums. -/
public theorem certified_of {r : List Nat} {g : Nat → Nat} {subs : List (List Nat)} {n H C p q : Nat}
    {ns hs : List Nat} (hg : ∀ j, j < r.length → g j < H) (po : OptimumA r n (H * C) p)
    (ho : Hosts H C subs ns hs) (hq : total hs = q) (hle : q ≤ p) : Certified r g subs n H C p ns hs q := by
  refine ⟨pooled_of po, ho, hq, hle, fun tie => ?_⟩
  have routed := routed_of_optima (ns := nth ns) (b := nth hs) hg fun k hk => by
    rw [tie k hk]; exact ho.2.2.2 k hk
  have e : sumTo (nth hs) H = q := by rw [← ho.2.2.1, sumTo_nth]; exact hq
  exact e ▸ routed

/-- The host of reference `j` under the packed routing `G`: its field of `b` bits, modulo `H`. -/
@[expose] public def route (G b H j : Nat) : Nat := (G >>> (b * j)) % 2 ^ b % H

public theorem route_lt {G b H : Nat} (hH : 0 < H) (j : Nat) : route G b H j < H := Nat.mod_lt _ hH

end Pycert.Fleet
