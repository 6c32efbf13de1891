module

prelude
public import Pycert.SortedAdmission
public import Pycert.Joints
import Init.Omega

/-!
# A piece of a trace, both ways with bypass, from the checks of its sorted instance

A piece of `Pycert.Joints` is checked as one sorted instance (`Pycert.SortedTrace`) of the list `r = P ++ b`:
the blocks `P` of the pairs open where the piece starts, then its references `b`. Besides the checks of
a whole trace with bypass (`Pycert.SortedAdmission`), on the same planes:

* `looksAt`: the first references of `r` are the blocks of `P` (one field, one route and one table entry
  each), so `r = P ++ b` with `b = r.drop P.length`;
* `edgeOK`: every place of `P` is a start of the witness and none an end;
* `outOK`: the plane `out` marks the starts whose sorted successor is not a reference to the same block,
  that is the starts still live after the last reference; `posOK` lists its places in increasing order,
  as many as it has (`popcount`), and `looksOK` reads the blocks `Q` there;
* the cut plane's running count at `P.length`, `k₀`: the cuts of the prefix, which the piece's own count
  leaves out (the one at its last place is the joint's).

`piece_of_checks` turns them into `Pycert.Joints.PieceBoth`. What this file does not say: that `P` is the
previous piece's `Q` (the composition's types say it), nor that the cuts and the witness are good ones.
-/

namespace Pycert.SortedJoints
open Pycert.Bits Pycert.Planes Pycert.Packed Pycert.PackedTrace Pycert.Ceiling Pycert.Capacity Pycert.SortedTrace
open Pycert.SortedOptimum Pycert.SortedAdmission Pycert.Admission Pycert.Joints

/-! ## Reading references off the packed trace -/

/-- Reference `i` of the decoded trace, the next `i + 1`, …, are the entries of `xs`. -/
@[expose] public def looksAt (w X wt D S : Nat) (net0 : List (Nat × Nat)) : Nat → List Nat → Bool
  | _, [] => true
  | i, x :: xs => Nat.beq (look wt D S (Pycert.Route.route net0 (fld (2 ^ (w + 1)) X i))) x &&
      looksAt w X wt D S net0 (i + 1) xs

/-- Reference `p` of the decoded trace is `x`, for each pair of entries of `ps` and `xs`. -/
@[expose] public def looksOK (w X wt D S : Nat) (net0 : List (Nat × Nat)) : List Nat → List Nat → Bool
  | [], [] => true
  | p :: ps, x :: xs => Nat.beq (look wt D S (Pycert.Route.route net0 (fld (2 ^ (w + 1)) X p))) x &&
      looksOK w X wt D S net0 ps xs
  | _, _ => false

public theorem looksAt_spec {w n X wt D S : Nat} {net0 : List (Nat × Nat)} : ∀ (i : Nat) (xs : List Nat),
    looksAt w X wt D S net0 i xs = true → i + xs.length ≤ n →
      ∀ k, k < xs.length → nth (decode w n X wt D S net0) (i + k) = nth xs k
  | _, [], _, _, k, hk => absurd hk (Nat.not_lt_zero _)
  | i, x :: xs, h, hn, k, hk => by
    unfold looksAt at h
    rw [and_bool] at h
    cases k with
    | zero => exact nth_decode_of (by simp at hn; omega) (Nat.eq_of_beq_eq_true h.1)
    | succ k =>
      rw [nth_cons_succ, show i + (k + 1) = (i + 1) + k by omega]
      exact looksAt_spec (i + 1) xs h.2 (by simp at hn; omega) k (by simp at hk; omega)

public theorem looksOK_spec {w n X wt D S : Nat} {net0 : List (Nat × Nat)} : ∀ (ps xs : List Nat),
    looksOK w X wt D S net0 ps xs = true → (∀ k, k < ps.length → nth ps k < n) →
      xs.length = ps.length ∧ ∀ k, k < ps.length → nth (decode w n X wt D S net0) (nth ps k) = nth xs k
  | [], [], _, _ => ⟨rfl, fun _ h => absurd h (Nat.not_lt_zero _)⟩
  | [], _ :: _, h, _ => absurd h (by simp [looksOK])
  | _ :: _, [], h, _ => absurd h (by simp [looksOK])
  | p :: ps, x :: xs, h, hn => by
    unfold looksOK at h
    rw [and_bool] at h
    have ih := looksOK_spec ps xs h.2 fun k hk => hn (k + 1) (by simp; omega)
    refine ⟨by simp [ih.1], fun k hk => ?_⟩
    cases k with
    | zero => exact nth_decode_of (hn 0 (by simp)) (Nat.eq_of_beq_eq_true h.1)
    | succ k => exact ih.2 k (by simp at hk; omega)

/-! ## The plane tests -/

/-- The first `p` places: every one a start, none an end. -/
@[expose] public def edgeOK (p s e : Nat) : Bool :=
  Nat.beq (s &&& (2 ^ p - 1)) (2 ^ p - 1) && Nat.beq (e &&& (2 ^ p - 1)) 0

/-- Routed to the sorted order, `out` is the starts whose next place is not marked `same`. -/
@[expose] public noncomputable def outOK (M : Nat) (W : List Nat) (same s out : Nat) : Bool :=
  Nat.beq (routeP (2 ^ M) (net M W) out) (routeP (2 ^ M) (net M W) s &&& ((same >>> 1) ^^^ (2 ^ 2 ^ M - 1)))

/-- The places `ps` increase, each below `n` and a place of `out`. -/
@[expose] public def posOK (n out : Nat) : List Nat → Bool
  | [] => true
  | [p] => Nat.blt p n && out.testBit p
  | p :: q :: ps => Nat.blt p q && out.testBit p && posOK n out (q :: ps)

theorem edge_spec {p s e : Nat} (h : edgeOK p s e = true) : ∀ i, i < p → s.testBit i = true ∧ ¬ e.testBit i = true := by
  intro i hi
  unfold edgeOK at h
  rw [and_bool] at h
  have h1 := congrArg (fun z => z.testBit i) (Nat.eq_of_beq_eq_true h.1)
  have h2 := congrArg (fun z => z.testBit i) (Nat.eq_of_beq_eq_true h.2)
  simp only [Nat.testBit_and, Nat.testBit_two_pow_sub_one, decide_eq_true hi, Bool.and_true, Nat.zero_testBit] at h1 h2
  exact ⟨h1, by rw [h2]; decide⟩

theorem out_spec {M : Nat} {W : List Nat} {same s out : Nat} (h : outOK M W same s out = true) {i : Nat}
    (hi : i < 2 ^ M) : out.testBit i = true ↔
      s.testBit i = true ∧ same.testBit (unperm (2 ^ M) (net M W) i + 1) = false := by
  have := congrArg (fun z => z.testBit (unperm (2 ^ M) (net M W) i)) (Nat.eq_of_beq_eq_true h)
  simp only [testBit_routeP, perm_unperm, Nat.testBit_and, Nat.testBit_xor, Nat.testBit_shiftRight, testBit_ones,
    decide_eq_true (unperm_lt (net M W) hi), Nat.add_comm 1] at this
  rw [this]
  cases s.testBit i <;> cases same.testBit (unperm (2 ^ M) (net M W) i + 1) <;> simp

theorem pos_spec' {n out : Nat} : ∀ (ps : List Nat), posOK n out ps = true →
    ∀ k, k < ps.length → nth ps k < n ∧ out.testBit (nth ps k) = true ∧ ∀ k', k < k' → k' < ps.length → nth ps k < nth ps k'
  | [], _, k, hk => absurd hk (Nat.not_lt_zero _)
  | [p], h, k, hk => by
    unfold posOK at h
    rw [and_bool] at h
    have : k = 0 := by simp at hk; omega
    subst this
    exact ⟨by simpa using h.1, h.2, fun k' h1 h2 => by simp at h2; omega⟩
  | p :: q :: ps, h, k, hk => by
    unfold posOK at h
    rw [and_bool, and_bool] at h
    have ih := pos_spec' (q :: ps) h.2
    have hpq : p < q := by simpa using h.1.1
    cases k with
    | zero =>
      have hq := ih 0 (by simp)
      refine ⟨by rw [nth_cons_zero]; exact Nat.lt_trans hpq hq.1, h.1.2, fun k' h1 h2 => ?_⟩
      cases k' with
      | zero => omega
      | succ k' =>
        rw [nth_cons_zero, nth_cons_succ]
        cases k' with
        | zero => exact hpq
        | succ k'' => exact Nat.lt_trans hpq (hq.2.2 (k'' + 1) (by omega) (by simp at h2 ⊢; omega))
    | succ k =>
      have hk' := ih k (by simp at hk ⊢; omega)
      refine ⟨hk'.1, hk'.2.1, fun k' h1 h2 => ?_⟩
      cases k' with
      | zero => omega
      | succ k' => exact hk'.2.2 k' (by omega) (by simp at h2 ⊢; omega)

/-! ## Counting -/

theorem count_all : ∀ L, count (fun k => k < L) L = L
  | 0 => rfl
  | L + 1 => by
    rw [count_succ_pos (p := fun k => k < L + 1) (by omega),
      count_congr (q := fun k => k < L) fun k hk => ⟨fun _ => hk, fun _ => by omega⟩, count_all L]

theorem count_pos {p : Nat → Prop} {j : Nat} (hj : p j) : ∀ n, j < n → 0 < count p n
  | 0, h => absurd h (Nat.not_lt_zero _)
  | n + 1, h => by
    by_cases e : j = n
    · subst e; rw [count_succ_pos hj]; omega
    · by_cases hn : p n
      · rw [count_succ_pos hn]; omega
      · rw [count_succ_neg hn]; exact count_pos hj n (by omega)

public theorem mem_nth : ∀ {x : Nat} {Q : List Nat}, x ∈ Q → ∃ k, k < Q.length ∧ nth Q k = x
  | _, [], h => absurd h (not_mem_nil _)
  | x, y :: ys, h => by
    rcases mem_cons.1 h with e | h
    · exact ⟨0, by simp, e.symm⟩
    · obtain ⟨k, hk, e⟩ := mem_nth h
      exact ⟨k + 1, by simp; omega, by rw [nth_cons_succ]; exact e⟩

/-- The first `j` steps after the start `i` with `q`, when some step does: the earliest of them. -/
theorem exists_first (q : Nat → Prop) (i : Nat) : ∀ t, (∃ u, i < u ∧ u ≤ t ∧ q u) →
    ∃ j, i < j ∧ j ≤ t ∧ q j ∧ ∀ v, i < v → v < j → ¬ q v
  | 0, ⟨_, h1, h2, _⟩ => absurd h2 (by omega)
  | t + 1, ⟨u, h1, h2, hu⟩ => by
    by_cases h : ∃ u, i < u ∧ u ≤ t ∧ q u
    · obtain ⟨j, a, b, c, d⟩ := exists_first q i t h
      exact ⟨j, a, by omega, c, d⟩
    · have hu' : u = t + 1 := by
        rcases Nat.lt_or_ge u (t + 1) with l | g
        · exact absurd ⟨u, h1, by omega, hu⟩ h
        · omega
      subst hu'
      exact ⟨t + 1, h1, Nat.le_refl _, hu, fun v hv1 hv2 hv => h ⟨v, hv1, by omega, hv⟩⟩

/-! ## The piece -/

/-- A start is live after the last reference exactly when its sorted successor is not to its block. -/
theorem live_iff {r : List Nat} {n M : Nat} {W : List Nat} {same : Nat} (hlen : r.length = n)
    (hadj : Adjacent r (2 ^ M) (net M W) same) (hlink : Linked r M W same) {i : Nat} (hi : i < n) :
    Live r i (n - 1) ↔ same.testBit (unperm (2 ^ M) (net M W) i + 1) = false := by
  constructor
  · intro lv
    cases hs : same.testBit (unperm (2 ^ M) (net M W) i + 1)
    · rfl
    · obtain ⟨_, hord, hreal, hnth⟩ := hlink _ hs
      rw [Nat.add_sub_cancel, perm_unperm] at hord hnth
      exact absurd hnth.symm (lv.2 _ hord (by omega))
  · intro hs
    refine ⟨by omega, fun u hu hun e => ?_⟩
    obtain ⟨j, hij, hjn, ej, first⟩ := exists_first (fun u => nth r u = nth r i) i (n - 1) ⟨u, hu, hun, e⟩
    have := hadj i j (by omega) hij ej.symm (fun v h1 h2 ev => first v h1 h2 (ev.trans ej))
    rw [← this.1] at this
    rw [this.2.2] at hs
    exact absurd hs (by decide)

/-- The first references of a decoded trace are the entries of `P`, read by `looksAt` from reference 0. -/
public theorem prefix_of_looks {w n X wt D S : Nat} {net0 : List (Nat × Nat)} {P : List Nat}
    (h : looksAt w X wt D S net0 0 P = true) (hn : P.length ≤ n) :
    ∀ k, k < P.length → nth (decode w n X wt D S net0) k = nth P k := fun k hk => by
  have := looksAt_spec (n := n) 0 P h (by omega) k hk
  rwa [Nat.zero_add] at this

theorem length_drop' : ∀ (p : Nat) (r : List Nat), (r.drop p).length = r.length - p
  | 0, r => by simp
  | _ + 1, [] => by simp
  | p + 1, _ :: r => by rw [List.drop_succ_cons, length_drop' p r, List.length_cons]; omega

theorem app_drop : ∀ (P r : List Nat), P.length ≤ r.length → (∀ k, k < P.length → nth r k = nth P k) →
    P ++ r.drop P.length = r
  | [], r, _, _ => by simp
  | _ :: _, [], h, _ => absurd h (by simp)
  | x :: P, y :: r, h, hk => by
    have e0 := hk 0 (by simp)
    rw [nth_cons_zero, nth_cons_zero] at e0
    rw [List.length_cons, List.cons_append, List.drop_succ_cons, app_drop P r (by simp at h; omega)
      fun k hk' => by have := hk (k + 1) (by simp; omega); rwa [nth_cons_succ, nth_cons_succ] at this, e0]

/-- **A piece, both ways, from the checks of its sorted instance.** `r` (the decoded list) is `P` followed
by `b = r.drop P.length`; the checks of the model with bypass on `r`, the prefix's starts and
the blocks `Q` read at the places of `out` give `PieceBoth P b Q (n - |P|) (m - k₀) F C h`: the cuts of `r`
from `|P|` on, and the witness's `h` ends. It says nothing outside the model of `Pycert.Admission.Run`. -/
public theorem piece_of_checks {r P Q Qp : List Nat} {n M : Nat} {W : List Nat} {same c s e out : Nat}
    {A AS AE : List Nat} {F m k₀ C h : Nat}
    (hlen : r.length = n) (hn : n ≤ 2 ^ M) (hadj : Adjacent r (2 ^ M) (net M W) same) (hlink : Linked r M W same)
    (hp : P.length ≤ n) (hpfx : ∀ k, k < P.length → nth r k = nth P k)
    (hcut : cutsOK n A c = true) (hflags : popcount M (flags M W same 0 A) = F) (hm : val A n = m)
    (hk : val A P.length = k₀)
    (hw : witnessOK M W same (s ^^^ out) e = true) (hAS : cutsOK n AS s = true) (hAE : cutsOK n AE e = true)
    (hcov : coverOK n C (AS.map (· >>> 1)) AE = true) (hh : val AE n = h) (hedge : edgeOK P.length s e = true)
    (hout : outOK M W same s out = true) (hq : popcount M (out &&& (2 ^ n - 1)) = Qp.length)
    (hqp : posOK n out Qp = true) (hQ : Q.length = Qp.length)
    (hids : ∀ k, k < Qp.length → nth r (nth Qp k) = nth Q k) :
    PieceBoth P (r.drop P.length) Q (n - P.length) (m - k₀) F C h := by
  have hr : P ++ r.drop P.length = r := app_drop P r (by omega) hpfx
  have hps := pos_spec' Qp hqp
  -- the places of `out` below `n` are exactly the listed ones
  have outs : ∀ i, i < n → (out.testBit i = true ↔ s.testBit i = true ∧ Live r i (n - 1)) := fun i hi => by
    rw [out_spec hout (Nat.lt_of_lt_of_le hi hn), live_iff hlen hadj hlink hi]
  have listed : ∀ i, i < n → out.testBit i = true → ∃ k, k < Qp.length ∧ nth Qp k = i := by
    have total : count (fun i => out.testBit i = true) n = Qp.length := by
      rw [← hq, popcount_eq, count_stop (m := n) hn fun j hj => by
          simp only [Nat.testBit_and, Nat.testBit_two_pow_sub_one, decide_eq_false (Nat.not_lt_of_le hj),
            Bool.and_false]; decide]
      exact count_congr fun i hi => by
        simp only [Nat.testBit_and, Nat.testBit_two_pow_sub_one, decide_eq_true hi, Bool.and_true]
    have some : Qp.length ≤ count (fun i => out.testBit i = true ∧ ∃ k, k < Qp.length ∧ nth Qp k = i) n := by
      refine Nat.le_trans (Nat.le_of_eq (count_all Qp.length).symm) (count_le_count _ _ (nth Qp)
        (fun k hk _ => ⟨(hps k hk).1, (hps k hk).2.1, k, hk, rfl⟩) fun a b ha hb _ _ e => ?_)
      rcases Nat.lt_trichotomy a b with l | q | g
      · exact absurd e (Nat.ne_of_lt ((hps a ha).2.2 b l hb))
      · exact q
      · exact absurd e.symm (Nat.ne_of_lt ((hps b hb).2.2 a g ha))
    intro i hi oi
    have split := count_split (fun i => out.testBit i = true) (fun i => ∃ k, k < Qp.length ∧ nth Qp k = i) n
    refine Classical.byContradiction fun no => ?_
    have := count_pos (p := fun i => out.testBit i = true ∧ ¬ ∃ k, k < Qp.length ∧ nth Qp k = i) ⟨oi, no⟩ n hi
    omega
  refine ⟨⟨by rw [length_drop', hlen], cutsOf (c >>> P.length) (n - P.length), ?_, ?_⟩,
    fun i => s.testBit i = true, fun j => e.testBit j = true, ?_⟩
  · rw [length_cutsOf, ← hm, ← hk, val_A_count hcut n (Nat.le_refl _), val_A_count hcut _ hp]
    have := count_add (fun u => c.testBit u = true) P.length (n - P.length)
    rw [show P.length + (n - P.length) = n by omega] at this
    rw [this, Nat.add_sub_cancel_left]
    exact count_congr fun l _ => by rw [Nat.testBit_shiftRight, Nat.add_comm]
  · have hF := freeA_le_of_checks hlen hadj hcut hflags
    rw [hlen] at hF
    refine Nat.le_trans ?_ hF
    refine count_le_count _ _ (fun l => l + P.length) (fun l hl hfree => ?_) fun a b _ _ _ _ e => by
      simp only at e; omega
    obtain ⟨i, hil, ei, gap⟩ := hfree
    refine ⟨by simp only; omega, i + P.length, by simp only; omega, ?_, fun y hy hyb => ?_⟩
    · rw [nth_drop, nth_drop] at ei
      simp only
      rwa [Nat.add_comm i, Nat.add_comm l]
    · simp only at hyb
      have := (mem_cutsOf c n y).1 hy
      exact gap (y - P.length) ((mem_cutsOf _ _ _).2 ⟨by omega, by
        rw [Nat.testBit_shiftRight, show P.length + (y - P.length) = y by omega]; exact this.2⟩) ⟨by omega, by omega⟩
  · rw [hr, hlen]
    -- the ends were checked against the starts that are not open at the end (`s ^^^ out`, a part of `s`)
    have ends : ∀ j, j < r.length → e.testBit j = true →
        s.testBit (perm (2 ^ M) (net M W) (unperm (2 ^ M) (net M W) j - 1)) = true ∧
        perm (2 ^ M) (net M W) (unperm (2 ^ M) (net M W) j - 1) < j ∧
        nth r (perm (2 ^ M) (net M W) (unperm (2 ^ M) (net M W) j - 1)) = nth r j ∧
        ∀ u, perm (2 ^ M) (net M W) (unperm (2 ^ M) (net M W) j - 1) < u → u < j → nth r u ≠ nth r j := by
      intro j hj ej
      obtain ⟨sx, rest⟩ := ends_spec (by omega) hadj hlink hw j hj ej
      refine ⟨?_, rest⟩
      rw [Nat.testBit_xor] at sx
      have hi : perm (2 ^ M) (net M W) (unperm (2 ^ M) (net M W) j - 1) < n := by omega
      cases hs : s.testBit (perm (2 ^ M) (net M W) (unperm (2 ^ M) (net M W) j - 1))
      · rw [hs] at sx
        have := (out_spec hout (Nat.lt_of_lt_of_le hi hn)).1 (by simpa using sx)
        rw [hs] at this
        exact absurd this.1 (by decide)
      · rfl
    refine ⟨fun i hi => edge_spec hedge i hi, fun t ht => ?_, fun j hj ej => ⟨_, ends j (by omega) ej⟩, ?_,
      fun x => ⟨fun hx => ?_, fun ⟨i, hi, si, lv, ex⟩ => ?_⟩, fun a b hab hb => ?_⟩
    · rw [← hlen]; exact live_le _ hlen ends hAS hAE hcov t (by omega)
    · rw [← hh, val_A_count hAE n (Nat.le_refl _)]
    · obtain ⟨k, hk, ek⟩ := mem_nth hx
      have hk' : k < Qp.length := by omega
      have := (outs _ (hps k hk').1).1 (hps k hk').2.1
      exact ⟨nth Qp k, (hps k hk').1, this.1, this.2, by rw [hids k hk', ek]⟩
    · obtain ⟨k, hk, ek⟩ := listed i hi ((outs i hi).2 ⟨si, lv⟩)
      rw [← ex, ← ek, hids k hk]
      exact mem_of_lt Q k (by omega)
    · intro eq
      have ha : a < Qp.length := by omega
      have hb' : b < Qp.length := by omega
      rw [← hids a ha, ← hids b hb'] at eq
      have la := ((outs _ (hps a ha).1).1 (hps a ha).2.1).2
      have lb := ((outs _ (hps b hb').1).1 (hps b hb').2.1).2
      exact absurd (live_ne la lb eq) (Nat.ne_of_lt ((hps a ha).2.2 b hab hb'))

/-- **A piece from the checks its instance file states.** `piece_of_checks` for the decoded trace, with the
prefix `P` read by `looksAt` and the open blocks `Q` by `looksOK` at the places `Qp`, and the counts as
literals: `p = |P|`, `N = n - p` references after the prefix, `m' = m - k₀` cuts of its own. What it does
not say is `piece_of_checks`'s. -/
public theorem piece_of_looks {w n X wt D S : Nat} {net0 : List (Nat × Nat)} {P Q Qp : List Nat} {M : Nat}
    {W : List Nat} {same c s e out : Nat} {A AS AE : List Nat} {F m k₀ C h p N m' : Nat}
    (hlen : (decode w n X wt D S net0).length = n) (hn : n ≤ 2 ^ M)
    (hadj : Adjacent (decode w n X wt D S net0) (2 ^ M) (net M W) same)
    (hlink : Linked (decode w n X wt D S net0) M W same)
    (hpl : P.length = p) (hp : p ≤ n) (hlook : looksAt w X wt D S net0 0 P = true)
    (hcut : cutsOK n A c = true) (hflags : popcount M (flags M W same 0 A) = F) (hm : val A n = m)
    (hk : val A p = k₀) (hN : n - p = N) (hm' : m - k₀ = m')
    (hw : witnessOK M W same (s ^^^ out) e = true) (hAS : cutsOK n AS s = true) (hAE : cutsOK n AE e = true)
    (hcov : coverOK n C (AS.map (· >>> 1)) AE = true) (hh : val AE n = h) (hedge : edgeOK p s e = true)
    (hout : outOK M W same s out = true) (hq : popcount M (out &&& (2 ^ n - 1)) = Qp.length)
    (hqp : posOK n out Qp = true) (hids : looksOK w X wt D S net0 Qp Q = true) :
    PieceBoth P ((decode w n X wt D S net0).drop p) Q N m' F C h := by
  subst hpl hN hm'
  have hps := pos_spec' Qp hqp
  have hQ := looksOK_spec (n := n) Qp Q hids fun k hk => (hps k hk).1
  exact piece_of_checks hlen hn hadj hlink hp (prefix_of_looks hlook hp) hcut hflags hm hk hw hAS hAE hcov hh
    hedge hout hq hqp hQ.1 hQ.2

end Pycert.SortedJoints
