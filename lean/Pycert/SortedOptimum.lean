module

prelude
public import Pycert.SortedTrace
public import Pycert.Realise
import Init.Omega

/-!
# The optimum at a capacity on a whole trace: the bound and a witness, both on bit planes

`Pycert.SortedTrace` checks that no policy of capacity `C` hits more than `H` times. Here the kernel
also checks a witness that some policy reaches `H` (`Pycert.Capacity.realise`), on the same sorted
instance and in the same few whole-plane operations:

* `s`, a plane in time order, the starts: references whose next reference to the same block is to
  be a hit (Belady's hit pairs); `e` the ends, the second references of those pairs;
* `witnessOK`: routed to the sorted order, every start sits right before a place of `same` (so the
  next place is the next reference to its block: `linked_at`), and every end sits right after
  a start;
* `AS` and `AE`, planes of the running counts of `s` and `e` (tested like the cuts, `cutsOK`), and
  `coverOK`: `AS(t) ≤ AE(t + 1) + (C - 1)` at every `t < N` (a ripple-carry sum and a comparison on
  planes). Every pair open at `t` starts before `t` and has not ended by `t`, so at most `C - 1` are
  open at any step, and `realise` gives a policy of capacity `C` with `AS(N)` hits.

What this file does not say: that the starts are Belady's (any set that passes is a witness), nor
anything outside the cache model of `Pycert.Cache` (no bypass, no prefetch, an empty start, blocks of
size one).
-/

namespace Pycert.SortedOptimum
open Pycert.Bits Pycert.Planes Pycert.Transpose Pycert.Packed Pycert.PackedTrace Pycert.Ceiling Pycert.Capacity
open Pycert.SortedTrace

/-! ## Adding plane lists -/

/-- `As + Bs` plus the carry plane `c`, ripple-carry: the sum's planes and the carry out. -/
@[expose] public def addP : List Nat → List Nat → Nat → List Nat × Nat
  | a :: as, b :: bs, c =>
    ((a ^^^ b ^^^ c) :: (addP as bs (a &&& b ||| c &&& (a ^^^ b))).1, (addP as bs (a &&& b ||| c &&& (a ^^^ b))).2)
  | _, _, c => ([], c)

/-- The number `K` at every place of `ones`, in `w` planes. -/
@[expose] public def constP (ones K w : Nat) : List Nat := mkPlanes (fun b => if K.testBit b then ones else 0) 0 w

/-- At every `t < N`: `AS(t) ≤ AE(t + 1) + K`, both lists of the same number of planes. -/
@[expose] public noncomputable def coverOK (N K : Nat) (AS AE : List Nat) : Bool :=
  Nat.beq AS.length AE.length &&
    Nat.beq (ltP (2 ^ N - 1) (addP (AE.map (· >>> 1)) (constP (2 ^ N - 1) K AE.length) 0).1 AS 0 &&& (2 ^ N - 1)) 0

/-- The starts `s` and ends `e` against the sorted order: every start's sorted place is followed by
a place of `same`, and every end's sorted place follows a start's. -/
@[expose] public noncomputable def witnessOK (M : Nat) (W : List Nat) (same s e : Nat) : Bool :=
  Nat.beq (routeP (2 ^ M) (net M W) s &&& ((same >>> 1) ^^^ (2 ^ 2 ^ M - 1))) 0 &&
    Nat.beq (routeP (2 ^ M) (net M W) e &&& ((routeP (2 ^ M) (net M W) s <<< 1) ^^^ (2 ^ 2 ^ M - 1))) 0

theorem length_addP : ∀ (As Bs : List Nat) (c : Nat), As.length = Bs.length → (addP As Bs c).1.length = As.length
  | [], [], _, _ => rfl
  | [], _ :: _, _, h => absurd h (by simp)
  | _ :: _, [], _, h => absurd h (by simp)
  | a :: As, b :: Bs, c, h => by
    show (_ :: (addP As Bs _).1).length = _
    rw [List.length_cons, length_addP As Bs _ (by simpa using h), List.length_cons]

theorem val_addP (p : Nat) : ∀ (As Bs : List Nat) (c : Nat), As.length = Bs.length →
    val (addP As Bs c).1 p + 2 ^ As.length * bit (addP As Bs c).2 p = val As p + val Bs p + bit c p
  | [], [], _, _ => by simp [addP, val]
  | [], _ :: _, _, h => absurd h (by simp)
  | _ :: _, [], _, h => absurd h (by simp)
  | a :: As, b :: Bs, c, h => by
    have ih := val_addP p As Bs (a &&& b ||| c &&& (a ^^^ b)) (by simpa using h)
    show val ((a ^^^ b ^^^ c) :: (addP As Bs _).1) p + 2 ^ (As.length + 1) * bit (addP As Bs _).2 p = _
    rw [val_cons, val_cons, val_cons, Nat.pow_succ]
    have e : bit (a ^^^ b ^^^ c) p + 2 * bit (a &&& b ||| c &&& (a ^^^ b)) p = bit a p + bit b p + bit c p := by
      unfold bit
      simp only [Nat.testBit_xor, Nat.testBit_and, Nat.testBit_or]
      cases a.testBit p <;> cases b.testBit p <;> cases c.testBit p <;> rfl
    rw [Nat.mul_comm (2 ^ As.length) 2, Nat.mul_assoc]
    omega

theorem val_constP {ones p : Nat} (ho : ones.testBit p = true) (K w : Nat) : val (constP ones K w) p = K % 2 ^ w := by
  unfold constP
  rw [val_mkPlanes _ p K 0 w (fun i _ => by cases h : K.testBit (0 + i) <;> simp [ho]), Nat.pow_zero, Nat.div_one]

/-- What `coverOK` says at each `t < N`. -/
public theorem cover_spec {N K : Nat} {AS AE : List Nat} (h : coverOK N K AS AE = true) :
    ∀ t, t < N → val AS t ≤ val AE (t + 1) + K := by
  intro t ht
  unfold coverOK at h
  rw [and_bool] at h
  have hl := Nat.eq_of_beq_eq_true h.1
  have hz := congrArg (fun z => z.testBit t) (Nat.eq_of_beq_eq_true h.2)
  have ho : (2 ^ N - 1).testBit t = true := by rw [Nat.testBit_two_pow_sub_one, decide_eq_true ht]
  simp only [Nat.testBit_and, ho, Bool.and_true, Nat.zero_testBit] at hz
  have hlen : (AE.map (· >>> 1)).length = (constP (2 ^ N - 1) K AE.length).length := by
    rw [length_map_planes]; unfold constP; rw [length_mkPlanes]
  have hlt := testBit_ltP ho (addP (AE.map (· >>> 1)) (constP (2 ^ N - 1) K AE.length) 0).1 AS 0
    (by rw [length_addP _ _ _ hlen, length_map_planes, hl])
  rw [hz] at hlt
  have nlt : ¬ val (addP (AE.map (· >>> 1)) (constP (2 ^ N - 1) K AE.length) 0).1 t < val AS t :=
    fun l => absurd (hlt.2 (Or.inl l)) (by decide)
  have hsum := val_addP t (AE.map (· >>> 1)) (constP (2 ^ N - 1) K AE.length) 0 hlen
  have hv : val (AE.map (· >>> 1)) t = val AE (t + 1) :=
    val_map _ (fun P => by rw [Nat.testBit_shiftRight, Nat.add_comm]) AE
  rw [hv, val_constP ho] at hsum
  have : bit 0 t = 0 := by unfold bit; simp
  have := Nat.mod_le K (2 ^ AE.length)
  omega

/-! ## From a `same` place back to a pair -/

/-- Every plane set at `p` when the value is all ones. -/
theorem all_of_val {p : Nat} : ∀ (Ps : List Nat), val Ps p = 2 ^ Ps.length - 1 → ∀ P, P ∈ Ps → P.testBit p = true
  | [], _, _, h => nomatch h
  | P :: Ps, h, Q, hQ => by
    rw [val_cons, List.length_cons, Nat.pow_succ] at h
    have hl := val_lt Ps p
    have hb := bit_le P p
    have hpos := Nat.two_pow_pos Ps.length
    cases hQ with
    | head =>
      unfold bit at h
      cases e : P.testBit p
      · rw [e] at h; simp at h; omega
      · rfl
    | tail _ hQ => exact all_of_val Ps (by omega) Q hQ

/-- **A place of `same` is a pair**, for any block planes `P`: if two references of the trace `r` (of `n`
references) are to the same block exactly when `P` holds the same value at their times, every place past
the trace holds all ones, and the sort test holds, then every place `p` marked in `same` has a
predecessor, and the references at places `p - 1` and `p` of the sorted order are two references to the
same block, the earlier first. (`Pycert.SortedTrace.adjacent_of_planes` is the other way.) -/
public theorem linked_at {r : List Nat} {n M : Nat} {P W : List Nat} {same : Nat}
    (hpad : ∀ t, n ≤ t → t < 2 ^ M → val P t = 2 ^ P.length - 1)
    (heq : ∀ i j, i < n → j < n → i < 2 ^ M → j < 2 ^ M → (nth r i = nth r j ↔ val P i = val P j))
    (hs : sortOKP M P W same = true) {p : Nat} (hp : same.testBit p = true) :
    p < 2 ^ M ∧ 1 ≤ p ∧ perm (2 ^ M) (net M W) (p - 1) < perm (2 ^ M) (net M W) p ∧ perm (2 ^ M) (net M W) p < n ∧
      nth r (perm (2 ^ M) (net M W) (p - 1)) = nth r (perm (2 ^ M) (net M W) p) := by
  obtain ⟨steps, hsame⟩ := sort_factsP hs
  let σ := perm (2 ^ M) (net M W)
  let rX := P.map (routeP (2 ^ M) (net M W))
  have hX : ∀ q, val rX q = val P (σ q) := fun q => val_routed _ _ _ _
  have hsame : sameOf M rX = same := hsame
  have hp' := hp
  rw [← hsame] at hp'
  unfold sameOf at hp'
  rw [Nat.testBit_and, Nat.testBit_and, and_bool, and_bool] at hp'
  obtain ⟨⟨heqb, hnall⟩, hfirst⟩ := hp'
  rw [Nat.testBit_xor, testBit_ones] at hfirst
  have hpM : p < 2 ^ M := by
    apply Nat.lt_of_not_le; intro g
    rw [decide_eq_false (Nat.not_lt_of_le g), one_testBit (Nat.le_trans (Nat.one_le_two_pow) g)] at hfirst
    exact absurd hfirst (by decide)
  have h1 : 1 ≤ p := by
    apply Nat.lt_of_not_le; intro g
    rw [show p = 0 by omega, decide_eq_true (Nat.two_pow_pos M)] at hfirst
    exact absurd hfirst (by decide)
  have ho : (2 ^ 2 ^ M - 1).testBit p = true := by rw [testBit_ones, decide_eq_true hpM]
  have hblk := ((testBit_eqP ho _ _ _ (length_map_planes _ _)).1 heqb).1
  rw [val_shl1 h1, hX, hX] at hblk
  -- the place holds a reference, not the padding
  have hreal : σ p < n := by
    apply Nat.lt_of_not_le; intro g
    have hv : val rX p = 2 ^ rX.length - 1 := by
      rw [hX, length_map_planes]; exact hpad _ g (perm_lt _ hpM)
    rw [Nat.testBit_xor, ho, (testBit_allP _ _).2 ⟨ho, all_of_val rX hv⟩] at hnall
    exact absurd hnall (by decide)
  -- consecutive places strictly increase
  have step := steps p h1 hpM
  have hord : σ (p - 1) < σ p := by
    change σ (p - 1) + 2 ^ M * val P (σ (p - 1)) < σ p + 2 ^ M * val P (σ p) at step
    rw [hblk] at step
    omega
  exact ⟨hpM, h1, hord, hreal, (heq _ _ (Nat.lt_trans hord hreal) hreal (perm_lt _ (by omega)) (perm_lt _ hpM)).2 hblk⟩

/-- **A place of `same` is a pair.** If the trace instance checks and `sortOK` holds, every place `p`
marked in `same` has a predecessor, and the references at places `p - 1` and `p` of the sorted order
are two references to the same block, the earlier first (`linked_at`). (`adjacent_of_sortOK` is the
other way.) -/
public theorem linked_of_sortOK {w n X K wt D S f M wx : Nat} {net0 rot : List (Nat × Nat)} {W : List Nat} {same : Nat}
    (hck : traceOK w n X K wt D S = true) (hf : w + 1 = 2 ^ f) (hD : D < 2 ^ wx) (hwx : wx ≤ 2 ^ f)
    (hpairs : ∀ uv : Nat × Nat, uv ∈ rot → uv.1 < uv.2 ∧ uv.2 < M + f)
    (hrot : ∀ e, e < M + f → idxComp rot e = if e < f then M + e else e - f)
    (hs : sortOK f M n wx X rot W same = true) {p : Nat} (hp : same.testBit p = true) :
    p < 2 ^ M ∧ 1 ≤ p ∧ perm (2 ^ M) (net M W) (p - 1) < perm (2 ^ M) (net M W) p ∧ perm (2 ^ M) (net M W) p < n ∧
      nth (decode w n X wt D S net0) (perm (2 ^ M) (net M W) (p - 1)) =
        nth (decode w n X wt D S net0) (perm (2 ^ M) (net M W) p) := by
  obtain ⟨_, hlt, heq⟩ := decode_facts net0 hck
  rw [hf] at hlt heq
  refine linked_at (fun t g ht => ?_) (fun i j hi hj hi' hj' => ?_) hs hp
  · rw [val_xPlanes hpairs hrot hwx ht, length_xPlanes]
    unfold xval; rw [if_neg (Nat.not_lt_of_le g)]
    exact Nat.mod_eq_of_lt (Nat.sub_lt (Nat.two_pow_pos wx) (by decide))
  · rw [val_xPlanes hpairs hrot hwx hi', val_xPlanes hpairs hrot hwx hj']
    unfold xval; rw [if_pos hi, if_pos hj, Nat.mod_eq_of_lt (Nat.lt_trans (hlt i hi) hD),
      Nat.mod_eq_of_lt (Nat.lt_trans (hlt j hj) hD)]
    exact heq i j hi hj

/-! ## The witness -/

/-- Every place `p` of `same` holds two references to one block at consecutive sorted places, the
earlier at `p - 1`. -/
@[expose] public def Linked (r : List Nat) (M : Nat) (W : List Nat) (same : Nat) : Prop :=
  ∀ p, same.testBit p = true → 1 ≤ p ∧ perm (2 ^ M) (net M W) (p - 1) < perm (2 ^ M) (net M W) p ∧
    perm (2 ^ M) (net M W) p < r.length ∧ nth r (perm (2 ^ M) (net M W) (p - 1)) = nth r (perm (2 ^ M) (net M W) p)

/-- `Linked` for any block planes that pass the sort test (`linked_at` at every place). -/
public theorem linked_of_planes {r : List Nat} {n M : Nat} {P W : List Nat} {same : Nat} (hlen : r.length = n)
    (hpad : ∀ t, n ≤ t → t < 2 ^ M → val P t = 2 ^ P.length - 1)
    (heq : ∀ i j, i < n → j < n → i < 2 ^ M → j < 2 ^ M → (nth r i = nth r j ↔ val P i = val P j))
    (hs : sortOKP M P W same = true) : Linked r M W same := fun p hp => by
  obtain ⟨_, h1, hord, hreal, hnth⟩ := linked_at hpad heq hs hp
  exact ⟨h1, hord, by rw [hlen]; exact hreal, hnth⟩

/-- `Linked` for a checked, sorted trace instance (`linked_of_sortOK` at every place). -/
public theorem linked_facts {w n X K wt D S f M wx : Nat} {net0 rot : List (Nat × Nat)} {W : List Nat} {same : Nat}
    (hck : traceOK w n X K wt D S = true) (hf : w + 1 = 2 ^ f) (hD : D < 2 ^ wx) (hwx : wx ≤ 2 ^ f)
    (hpairs : ∀ uv : Nat × Nat, uv ∈ rot → uv.1 < uv.2 ∧ uv.2 < M + f)
    (hrot : ∀ e, e < M + f → idxComp rot e = if e < f then M + e else e - f)
    (hs : sortOK f M n wx X rot W same = true) : Linked (decode w n X wt D S net0) M W same := fun p hp => by
  obtain ⟨_, h1, hord, hreal, hnth⟩ := linked_of_sortOK (net0 := net0) (K := K) hck hf hD hwx hpairs hrot hs hp
  exact ⟨h1, hord, by rw [(decode_facts net0 hck).1]; exact hreal, hnth⟩

/-- **What a checked witness says of its ends.** Each end `j` of a witness that passes `witnessOK`
closes a pair: the reference at the sorted place before `j`'s is a start, earlier than `j`, to the
same block, and no reference between the two is to that block. -/
public theorem ends_spec {r : List Nat} {M : Nat} {W : List Nat} {same s e : Nat} (hn : r.length ≤ 2 ^ M)
    (hadj : Adjacent r (2 ^ M) (net M W) same) (hlink : Linked r M W same) (hw : witnessOK M W same s e = true) :
    ∀ j, j < r.length → e.testBit j = true →
      s.testBit (perm (2 ^ M) (net M W) (unperm (2 ^ M) (net M W) j - 1)) = true ∧
      perm (2 ^ M) (net M W) (unperm (2 ^ M) (net M W) j - 1) < j ∧
      nth r (perm (2 ^ M) (net M W) (unperm (2 ^ M) (net M W) j - 1)) = nth r j ∧
      ∀ u, perm (2 ^ M) (net M W) (unperm (2 ^ M) (net M W) j - 1) < u → u < j → nth r u ≠ nth r j := by
  intro j hj ej
  unfold witnessOK at hw
  rw [and_bool] at hw
  have ones : ∀ q, q < 2 ^ M → (2 ^ 2 ^ M - 1).testBit q = true := fun q hq => by
    rw [testBit_ones, decide_eq_true hq]
  have sub : ∀ x y q, (x &&& (y ^^^ (2 ^ 2 ^ M - 1))) = 0 → q < 2 ^ M → x.testBit q = true → y.testBit q = true := by
    intro x y q h hq hx
    have := congrArg (fun z => z.testBit q) h
    simp only [Nat.testBit_and, Nat.testBit_xor, hx, ones q hq, Nat.zero_testBit] at this
    revert this; cases y.testBit q <;> decide
  have hq := unperm_lt (net M W) (Nat.lt_of_lt_of_le hj hn)
  have hback := sub _ _ _ (Nat.eq_of_beq_eq_true hw.2) hq (by rw [testBit_routeP, perm_unperm]; exact ej)
  rw [Nat.testBit_shiftLeft, testBit_routeP] at hback
  simp only [Bool.and_eq_true, decide_eq_true_eq] at hback
  obtain ⟨h1, hsq⟩ := hback
  have hsame := sub _ _ _ (Nat.eq_of_beq_eq_true hw.1) (show unperm (2 ^ M) (net M W) j - 1 < 2 ^ M by omega)
    (by rw [testBit_routeP]; exact hsq)
  rw [Nat.testBit_shiftRight, Nat.add_comm, Nat.sub_add_cancel h1] at hsame
  obtain ⟨_, hord, _, hnth⟩ := hlink _ hsame
  rw [perm_unperm] at hord hnth
  obtain ⟨i, hi, ei, gap⟩ := exists_latest (fun i => nth r i = nth r j) j ⟨_, hord, hnth⟩
  have hadj' := (hadj i j hj hi ei gap).1
  have hi' : perm (2 ^ M) (net M W) (unperm (2 ^ M) (net M W) j - 1) = i := by
    rw [show unperm (2 ^ M) (net M W) j - 1 = unperm (2 ^ M) (net M W) i by omega, perm_unperm]
  rw [hi'] at hsq ⊢
  exact ⟨hsq, hi, ei, gap⟩


/-- **The optimum on a whole trace, from what the sort says.** With the references of `r` sitting as
`Adjacent` and `Linked` say, the checks of `Pycert.SortedTrace.bounded_of_checks` give
`Bounded`; with a witness `s`, `e` (`witnessOK`), the running counts `AS` and `AE` of its starts and
ends (`cutsOK`), `AS(t) ≤ AE(t + 1) + (C - 1)` at every step (`coverOK`) and `AS(N) = H` starts, some
policy of capacity `C ≥ 1` hits exactly `H` times: `Optimum`. It says nothing of caches outside the
model of `Pycert.Cache`, and the policy that reaches `H` reads the whole trace (it is offline). -/
public theorem optimum_of_facts {r : List Nat} {n M : Nat} {W : List Nat}
    {same c s e : Nat} {A AS AE : List Nat} {F m C H : Nat}
    (hlen : r.length = n) (hn : n ≤ 2 ^ M) (hadj : Adjacent r (2 ^ M) (net M W) same) (hlink : Linked r M W same)
    (hcut : cutsOK n A c = true) (hflags : popcount M (flags M W same c A) = F) (hm : val A n = m)
    (hH : (C - 1) * m + F ≤ H) (hC : 1 ≤ C)
    (hw : witnessOK M W same s e = true) (hAS : cutsOK n AS s = true) (hAE : cutsOK n AE e = true)
    (hcov : coverOK n (C - 1) AS AE = true) (hh : val AS n = H) :
    Optimum r n C H := by
  have hb := bounded_of_checks hlen hadj hcut hflags hm hH
  unfold witnessOK at hw
  rw [and_bool] at hw
  have w1 := Nat.eq_of_beq_eq_true hw.1
  have w2 := Nat.eq_of_beq_eq_true hw.2
  have ones : ∀ q, q < 2 ^ M → (2 ^ 2 ^ M - 1).testBit q = true := fun q hq => by
    rw [testBit_ones, decide_eq_true hq]
  have sub : ∀ x y q, (x &&& (y ^^^ (2 ^ 2 ^ M - 1))) = 0 → q < 2 ^ M → x.testBit q = true → y.testBit q = true := by
    intro x y q h hq hx
    have := congrArg (fun z => z.testBit q) h
    simp only [Nat.testBit_and, Nat.testBit_xor, hx, ones q hq, Nat.zero_testBit] at this
    revert this; cases y.testBit q <;> decide
  -- a start's sorted place is followed by a place of `same`
  have fwd : ∀ q, q < 2 ^ M → s.testBit (perm (2 ^ M) (net M W) q) = true → same.testBit (q + 1) = true := by
    intro q hq hsq
    have := sub _ _ q w1 hq (by rw [testBit_routeP]; exact hsq)
    rw [Nat.testBit_shiftRight, Nat.add_comm] at this
    exact this
  -- an end's sorted place follows a start's
  have back : ∀ j, j < n → e.testBit j = true →
      1 ≤ unperm (2 ^ M) (net M W) j ∧ s.testBit (perm (2 ^ M) (net M W) (unperm (2 ^ M) (net M W) j - 1)) = true := by
    intro j hj hej
    have hq := unperm_lt (net M W) (Nat.lt_of_lt_of_le hj hn)
    have := sub _ _ _ w2 hq (by rw [testBit_routeP, perm_unperm]; exact hej)
    rw [Nat.testBit_shiftLeft, testBit_routeP] at this
    simp only [Bool.and_eq_true, decide_eq_true_eq] at this
    exact this
  have link := fun {p : Nat} (h : same.testBit p = true) => hlink p h
  refine optimum_of hC hb (fun i => s.testBit i = true) (fun i hi si => ?_) (fun t ht => ?_) ?_
  · -- every start has a later reference to its block
    rw [hlen] at hi ⊢
    have hq := unperm_lt (net M W) (Nat.lt_of_lt_of_le hi hn)
    obtain ⟨_, hord, hreal, hnth⟩ := link (fwd _ hq (by rw [perm_unperm]; exact si))
    rw [Nat.add_sub_cancel, perm_unperm] at hord hnth
    exact ⟨_, hord, by omega, hnth.symm⟩
  · -- at most `C - 1` pairs are open at every step
    dsimp only
    rw [hlen] at ht ⊢
    have cS := val_A_count hAS t (Nat.le_of_lt ht)
    have cE := val_A_count hAE (t + 1) ht
    have cov := cover_spec hcov t ht
    have split := count_split (fun i => s.testBit i = true ∧ i < t) (fun i => Open (r) i t) n
    have a1 : count (fun i => s.testBit i = true ∧ Open (r) i t) n =
        count (fun i => (s.testBit i = true ∧ i < t) ∧ Open (r) i t) n :=
      count_congr fun i _ => ⟨fun ⟨a, b⟩ => ⟨⟨a, b.1⟩, b⟩, fun ⟨⟨a, _⟩, b⟩ => ⟨a, b⟩⟩
    have a2 : count (fun i => s.testBit i = true ∧ i < t) n = count (fun i => s.testBit i = true) t := by
      rw [count_stop (m := t) (Nat.le_of_lt ht) (fun j hj h => by omega)]
      exact count_congr fun i hi => ⟨fun h => h.1, fun h => ⟨h, hi⟩⟩
    have a3 : count (fun j => e.testBit j = true) (t + 1) ≤
        count (fun i => (s.testBit i = true ∧ i < t) ∧ ¬ Open (r) i t) n := by
      refine count_le_count _ _ (fun j => perm (2 ^ M) (net M W) (unperm (2 ^ M) (net M W) j - 1))
        (fun j hj ej => ?_) (fun a b ha hb ea eb hab => ?_)
      · dsimp only
        obtain ⟨h1, hs'⟩ := back j (by omega) ej
        have hq := unperm_lt (net M W) (Nat.lt_of_lt_of_le (show j < n by omega) hn)
        obtain ⟨_, hord, _, hnth⟩ := link (show same.testBit (unperm (2 ^ M) (net M W) j) = true by
          have := fwd _ (by omega) hs'; rwa [Nat.sub_add_cancel h1] at this)
        rw [perm_unperm] at hord hnth
        exact ⟨by omega, ⟨hs', by omega⟩, fun ⟨_, g⟩ => g j hord (by omega) hnth.symm⟩
      · have ua := (back a (by omega) ea).1
        have ub := (back b (by omega) eb).1
        have := congrArg (unperm (2 ^ M) (net M W)) hab
        simp only [unperm_perm] at this
        have := congrArg (perm (2 ^ M) (net M W)) (show unperm (2 ^ M) (net M W) a = unperm (2 ^ M) (net M W) b by omega)
        rwa [perm_unperm, perm_unperm] at this
    omega
  · rw [hlen, ← hh, val_A_count hAS n (Nat.le_refl _)]

/-- `optimum_of_facts` for a checked, sorted trace instance (its sort's facts derived from the checks). -/
public theorem optimum_of_checks {w n X K wt D S f M wx : Nat} {net0 rot : List (Nat × Nat)} {W : List Nat}
    {same c s e : Nat} {A AS AE : List Nat} {F m C H : Nat}
    (hck : traceOK w n X K wt D S = true) (hf : w + 1 = 2 ^ f) (hn : n ≤ 2 ^ M) (hD : D < 2 ^ wx) (hwx : wx ≤ 2 ^ f)
    (hpairs : ∀ uv : Nat × Nat, uv ∈ rot → uv.1 < uv.2 ∧ uv.2 < M + f)
    (hrot : ∀ e, e < M + f → idxComp rot e = if e < f then M + e else e - f)
    (hs : sortOK f M n wx X rot W same = true)
    (hcut : cutsOK n A c = true) (hflags : popcount M (flags M W same c A) = F) (hm : val A n = m)
    (hH : (C - 1) * m + F ≤ H) (hC : 1 ≤ C)
    (hw : witnessOK M W same s e = true) (hAS : cutsOK n AS s = true) (hAE : cutsOK n AE e = true)
    (hcov : coverOK n (C - 1) AS AE = true) (hh : val AS n = H) :
    Optimum (decode w n X wt D S net0) n C H :=
  optimum_of_facts (decode_facts net0 hck).1 hn (adjacent_of_sortOK hck hf hn hD hwx hpairs hrot hs)
    (linked_facts hck hf hD hwx hpairs hrot hs) hcut hflags hm hH hC hw hAS hAE hcov hh

end Pycert.SortedOptimum
