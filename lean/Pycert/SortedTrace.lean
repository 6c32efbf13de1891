module

prelude
public import Pycert.Planes
public import Pycert.Transpose
public import Pycert.PackedTrace
public import Pycert.Capacity
public import Pycert.Pieces
import Init.Omega

/-!
# The capacity bound on a whole trace, in a few kernel GMP calls

`Pycert.Capacity.hits_le_free` bounds the hits of every policy of capacity `C` by `C - 1` per cut
plus the references that reuse a block with no cut since its previous reference. To count those on
a trace of hundreds of thousands of references the kernel sorts the references by (block, time) and
looks at neighbours, all on whole bit planes (`Pycert.Planes`):

* `sortOK`: the packed block numbers of a trace instance (`Pycert.PackedTrace`) are transposed into
  bit planes (`Pycert.Transpose`), the places past the trace filled with an all-ones block; with the
  time planes they form a key `t + 2 ^ M · block` at every place `t < 2 ^ M`. A Beneš network
  (`net`, delta swaps `Pycert.Bits.layer`: a bijection whatever its words) moves the key planes;
  `sortOK` tests that the moved keys strictly increase and that `same` marks exactly the places
  whose predecessor holds the same (real) block. Then every reference and the previous reference
  to its block sit at consecutive places, the later one marked (`adjacent_of_sortOK`).
* `cutsOK` and `flags`: a cut plane `c` and planes `A` of its running count, tested to count; `A`
  and `c` moved by the same network; `flags` marks the places of `same` with no cut strictly between
  the two references. `capacity_bound`: hits ≤ `(C - 1) · m + popcount flags` for every policy of
  capacity `C`, `m` the number of cuts.

What this file does not say: that the network sorts (if it does not, `sortOK` is false and nothing
is proved), nor that the cut list is a good one (any cut plane gives a sound bound).
-/

namespace Pycert.SortedTrace
open Pycert.Bits Pycert.Planes Pycert.Transpose Pycert.Packed Pycert.PackedTrace Pycert.Ceiling Pycert.Capacity

/-- Positions below `2 ^ M` whose bit `k` is clear. -/
@[expose] public def clear (M k : Nat) : Nat := pat (fun e => if e = k then 0 else 2) M

/-- Positions below `2 ^ M` whose bit `e` is set: plane `e` of the positions themselves. -/
@[expose] public def timePlane (M e : Nat) : Nat := pat (fun e' => if e' = e then 1 else 2) M

/-- The Beneš layers on `2 ^ M` places from one word per bit `k`: the first layer on bit `k` reads
the word at the places with bit `k` clear, the second (not for `k = 0`) at the places with it set. -/
@[expose] public noncomputable def net (M : Nat) (W : List Nat) : List (Nat × Nat) :=
  ((List.range M).reverse.map fun k => (2 ^ k, nth W k &&& clear M k)) ++
    ((List.range M).tail.map fun k => (2 ^ k, (nth W k >>> (2 ^ k)) &&& clear M k))

/-- Plane `b` of a transposed vector. -/
@[expose] public def planeOf (M Y b : Nat) : Nat := (Y >>> (b * 2 ^ M)) &&& (2 ^ 2 ^ M - 1)

/-- The places from `N` to `2 ^ M - 1`. -/
@[expose] public def padding (M N : Nat) : Nat := (2 ^ 2 ^ M - 1) ^^^ (2 ^ N - 1)

/-- The first `wx` bit planes of the packed vector `X` (fields of `2 ^ f` bits) at its first `N`
fields, all ones at the places from `N` on. The mask is `1 <<< 2 ^ (M + f)`, not `2 ^ 2 ^ (M + f)`:
the kernel computes a power with GMP only up to the exponent `2 ^ 24` and unfolds a larger one (a
stack overflow on wasm), while a shift of any size is one GMP call. -/
@[expose] public def xPlanes (f M N wx X : Nat) (rot : List (Nat × Nat)) : List Nat :=
  mkPlanes (fun b => planeOf M (stages (M + f) rot (X &&& ((1 <<< 2 ^ (M + f)) - 1))) b ||| padding M N) 0 wx

/-- Places `p ≥ 1` whose block equals their predecessor's and is not all ones (the padding). -/
@[expose] public noncomputable def sameOf (M : Nat) (rX : List Nat) : Nat :=
  eqP (2 ^ 2 ^ M - 1) (rX.map (· <<< 1)) rX (2 ^ 2 ^ M - 1) &&& (allP rX (2 ^ 2 ^ M - 1) ^^^ (2 ^ 2 ^ M - 1)) &&&
    ((2 ^ 2 ^ M - 1) ^^^ 1)

/-- The test on the routed time planes `rT` and block planes `rX`: the key (time below, block above)
strictly increases from every place to the next, and `same` is what `sameOf` computes. -/
@[expose] public noncomputable def sortTest (M : Nat) (rT rX : List Nat) (same : Nat) : Bool :=
  Nat.beq ((ltP (2 ^ 2 ^ M - 1) ((rT ++ rX).map (· <<< 1)) (rT ++ rX) 0 ||| 1) &&& (2 ^ 2 ^ M - 1)) (2 ^ 2 ^ M - 1) &&
    Nat.beq (sameOf M rX) same

/-- The sort file's test: the time planes and the block planes of `X`, routed by the network. -/
@[expose] public noncomputable def sortOK (f M N wx X : Nat) (rot : List (Nat × Nat)) (W : List Nat) (same : Nat) : Bool :=
  sortTest M ((mkPlanes (timePlane M) 0 M).map (routeP (2 ^ M) (net M W)))
    ((xPlanes f M N wx X rot).map (routeP (2 ^ M) (net M W))) same

/-- The places of `same` where the running cut count of the later reference equals that of the
earlier one plus its own cut: no cut lies strictly between them. -/
@[expose] public noncomputable def flags (M : Nat) (W : List Nat) (same c : Nat) (A : List Nat) : Nat :=
  same &&& eqP (2 ^ 2 ^ M - 1) (incP ((A.map (routeP (2 ^ M) (net M W))).map (· <<< 1))
      (routeP (2 ^ M) (net M W) c <<< 1)).1 (A.map (routeP (2 ^ M) (net M W))) (2 ^ 2 ^ M - 1) &&&
    ((incP ((A.map (routeP (2 ^ M) (net M W))).map (· <<< 1)) (routeP (2 ^ M) (net M W) c <<< 1)).2 ^^^
      (2 ^ 2 ^ M - 1))

/-- `A` counts the cuts of `c`: `A(0) = 0` and `A(t + 1) = A(t) + c(t)` for `t < N`, no overflow. -/
@[expose] public noncomputable def cutsOK (N : Nat) (A : List Nat) (c : Nat) : Bool :=
  Nat.beq (allP (A.map (· ^^^ 1)) 1) 1 &&
    Nat.beq (eqP (2 ^ N - 1) (incP A c).1 (A.map (· >>> 1)) (2 ^ N - 1)) (2 ^ N - 1) &&
    Nat.beq ((incP A c).2 &&& (2 ^ N - 1)) 0

/-- The cuts of `c` below `N`, latest first. -/
@[expose] public def cutsOf (c : Nat) : Nat → List Nat
  | 0 => []
  | t + 1 => if c.testBit t then t :: cutsOf c t else cutsOf c t

/-- A reference and the previous reference to its block sit at consecutive places of the sorted order
(`unperm` sends a time to its place), and `same` marks the later place. -/
@[expose] public def Adjacent (r : List Nat) (len : Nat) (nt : List (Nat × Nat)) (same : Nat) : Prop :=
  ∀ i j, j < r.length → i < j → nth r i = nth r j → (∀ u, i < u → u < j → nth r u ≠ nth r j) →
    unperm len nt i + 1 = unperm len nt j ∧ unperm len nt j < len ∧ same.testBit (unperm len nt j) = true

/-! ## Bits of the planes -/

public theorem and_bool {a b : Bool} : (a && b) = true ↔ a = true ∧ b = true := by simp

public theorem testBit_ones {M p : Nat} : (2 ^ 2 ^ M - 1).testBit p = decide (p < 2 ^ M) := Nat.testBit_two_pow_sub_one _ _

theorem testBit_timePlane {M e p : Nat} (hp : p < 2 ^ M) (he : e < M) : (timePlane M e).testBit p = p.testBit e := by
  unfold timePlane
  cases h : p.testBit e
  · cases h' : (pat (fun e' => if e' = e then 1 else 2) M).testBit p
    · rfl
    · rw [testBit_pat] at h'
      have := (h'.2 e he).2 (by simp)
      rw [h] at this; exact absurd this (by decide)
  · rw [testBit_pat]
    refine ⟨hp, fun e' _ => ⟨fun h0 => ?_, fun h1 => ?_⟩⟩
    · by_cases x : e' = e
      · simp [x] at h0
      · simp [x] at h0
    · by_cases x : e' = e
      · subst x; exact h
      · simp [x] at h1

public theorem val_timePlanes {M p : Nat} (hp : p < 2 ^ M) : val (mkPlanes (timePlane M) 0 M) p = p := by
  rw [val_mkPlanes (timePlane M) p p 0 M (fun i hi => by rw [Nat.zero_add]; exact testBit_timePlane hp hi),
    Nat.pow_zero, Nat.div_one, Nat.mod_eq_of_lt hp]

/-- The block at place `t` of the key: field `t` of `X` below `N`, all ones from `N` on. -/
@[expose] public def xval (f N wx X t : Nat) : Nat := if t < N then fld (2 ^ 2 ^ f) X t else 2 ^ wx - 1

theorem testBit_xPlane {f M N wx X : Nat} {rot : List (Nat × Nat)}
    (hpairs : ∀ uv : Nat × Nat, uv ∈ rot → uv.1 < uv.2 ∧ uv.2 < M + f)
    (hrot : ∀ e, e < M + f → idxComp rot e = if e < f then M + e else e - f)
    (hwx : wx ≤ 2 ^ f) {t b : Nat} (ht : t < 2 ^ M) (hb : b < wx) :
    (planeOf M (stages (M + f) rot (X &&& ((1 <<< 2 ^ (M + f)) - 1))) b ||| padding M N).testBit t =
      (xval f N wx X t).testBit b := by
  rw [Nat.shiftLeft_eq, Nat.one_mul]
  have hbf : b < 2 ^ f := by omega
  have hlt : 2 ^ f * t + b < 2 ^ (M + f) := by
    rw [Nat.pow_add, Nat.mul_comm (2 ^ M)]
    have : 2 ^ f * (t + 1) ≤ 2 ^ f * 2 ^ M := Nat.mul_le_mul_left _ ht
    rw [Nat.mul_succ] at this; omega
  have hp : (planeOf M (stages (M + f) rot (X &&& (2 ^ 2 ^ (M + f) - 1))) b).testBit t = X.testBit (2 ^ f * t + b) := by
    unfold planeOf
    rw [Nat.testBit_and, testBit_ones, Nat.testBit_shiftRight, decide_eq_true ht, Bool.and_true,
      show b * 2 ^ M + t = 2 ^ M * b + t by rw [Nat.mul_comm], testBit_transpose hpairs hrot _ ht hbf,
      Nat.testBit_and, Nat.testBit_two_pow_sub_one, decide_eq_true hlt, Bool.and_true]
  rw [Nat.testBit_or, hp]
  unfold padding xval
  rw [Nat.testBit_xor, testBit_ones, Nat.testBit_two_pow_sub_one, decide_eq_true ht]
  by_cases hn : t < N
  · rw [if_pos hn, decide_eq_true hn, testBit_fld, decide_eq_true hbf]
    simp
  · rw [if_neg hn, decide_eq_false hn, Nat.testBit_two_pow_sub_one, decide_eq_true hb]
    simp

public theorem val_xPlanes {f M N wx X : Nat} {rot : List (Nat × Nat)}
    (hpairs : ∀ uv : Nat × Nat, uv ∈ rot → uv.1 < uv.2 ∧ uv.2 < M + f)
    (hrot : ∀ e, e < M + f → idxComp rot e = if e < f then M + e else e - f)
    (hwx : wx ≤ 2 ^ f) {t : Nat} (ht : t < 2 ^ M) :
    val (xPlanes f M N wx X rot) t = xval f N wx X t % 2 ^ wx := by
  unfold xPlanes
  rw [val_mkPlanes _ t (xval f N wx X t) 0 wx (fun i hi => by
      rw [Nat.zero_add]; exact testBit_xPlane hpairs hrot hwx ht hi),
    Nat.pow_zero, Nat.div_one]

public theorem length_xPlanes (f M N wx X : Nat) (rot : List (Nat × Nat)) : (xPlanes f M N wx X rot).length = wx :=
  length_mkPlanes _ _ _

/-! ## The decoded trace -/

theorem nth_fields (B : Nat) : ∀ (n X t : Nat), t < n → nth (fields B n X) t = fld B X t
  | 0, _, _, h => absurd h (Nat.not_lt_zero _)
  | n + 1, X, 0, _ => by show X % B = fld B X 0; rw [fld_zero]
  | n + 1, X, t + 1, h => by
    show nth (fields B n (X / B)) t = _
    rw [nth_fields B n (X / B) t (by omega), fld_succ]

theorem nth_mem : ∀ (l : List Nat) (t : Nat), t < l.length → nth l t ∈ l
  | [], _, h => absurd h (Nat.not_lt_zero _)
  | x :: _, 0, _ => List.Mem.head _
  | _ :: xs, t + 1, h => List.Mem.tail _ (nth_mem xs t (by simp at h; omega))

/-- What a checked trace instance says reference by reference: block numbers below `D`, and two
references are to the same id exactly when they have the same block number. -/
public theorem decode_facts {w n X K wt D S : Nat} (net0 : List (Nat × Nat)) (h : traceOK w n X K wt D S = true) :
    (decode w n X wt D S net0).length = n ∧ (∀ t, t < n → fld (2 ^ (w + 1)) X t < D) ∧
      ∀ i j, i < n → j < n → (nth (decode w n X wt D S net0) i = nth (decode w n X wt D S net0) j ↔
        fld (2 ^ (w + 1)) X i = fld (2 ^ (w + 1)) X j) := by
  obtain ⟨hdense, _, hD, inc⟩ := traceOK_parts h
  have hlen := (traceOK_sound net0 h).1
  refine ⟨hlen, fun t ht => ?_, fun i j hi hj => ?_⟩
  · have hb := (dense_bound (2 ^ (w + 1)) n X K (step_of_denseOK hdense)).2
    rw [hD] at hb
    rw [← nth_fields _ n X t ht]
    exact hb _ (nth_mem _ t (by rw [fields_length]; exact ht))
  · have hl : (fields (2 ^ (w + 1)) n X).length = n := fields_length _ _ _
    unfold decode
    rw [nth_map _ _ i (by omega), nth_map _ _ j (by omega), nth_fields _ n X i hi, nth_fields _ n X j hj]
    exact ⟨fun e => Pycert.Route.route_inj net0 (look_inj inc e), fun e => by rw [e]⟩

/-! ## From the sort test to adjacent places -/

public theorem one_testBit {p : Nat} (h : 1 ≤ p) : (1 : Nat).testBit p = false :=
  Nat.testBit_lt_two_pow (Nat.lt_of_lt_of_le (by decide) (Nat.pow_le_pow_right (by decide) h))

public theorem val_shl1 {p : Nat} (hp : 1 ≤ p) (Ps : List Nat) : val (Ps.map (· <<< 1)) p = val Ps (p - 1) :=
  val_map _ (fun P => by rw [Nat.testBit_shiftLeft, decide_eq_true hp, Bool.true_and]) Ps

public theorem val_routed (len : Nat) (nt : List (Nat × Nat)) (Ps : List Nat) (p : Nat) :
    val (Ps.map (routeP len nt)) p = val Ps (perm len nt p) :=
  val_map _ (fun P => testBit_routeP len nt P p) Ps

/-- The sort test on any block planes `P`: bit `t` of the planes is the block at time `t` (all ones past
the trace), and the test is `sortTest` on the time planes and `P`, both routed by the network. `sortOK`
is this on the planes of a packed vector (`sortOK_eq`); a keyed trace's planes carry a tenant above the
block (`Pycert.KeyedTrace`). -/
@[expose] public noncomputable def sortOKP (M : Nat) (P W : List Nat) (same : Nat) : Bool :=
  sortTest M ((mkPlanes (timePlane M) 0 M).map (routeP (2 ^ M) (net M W))) (P.map (routeP (2 ^ M) (net M W))) same

public theorem sortOK_eq (f M n wx X : Nat) (rot : List (Nat × Nat)) (W : List Nat) (same : Nat) :
    sortOK f M n wx X rot W same = sortOKP M (xPlanes f M n wx X rot) W same := rfl

/-- **What the sort test says at each sorted place** `p < 2 ^ M`, for any block planes `P`: the key (time
below, the block `val P` above) strictly increases from each place to the next, and `same` is what
`sameOf` computes from the routed planes. `adjacent_of_planes` and
`Pycert.SortedOptimum.linked_of_planes` read their pairs off it. -/
public theorem sort_factsP {M : Nat} {P W : List Nat} {same : Nat} (hs : sortOKP M P W same = true) :
    (∀ p, 1 ≤ p → p < 2 ^ M →
      perm (2 ^ M) (net M W) (p - 1) + 2 ^ M * val P (perm (2 ^ M) (net M W) (p - 1)) <
        perm (2 ^ M) (net M W) p + 2 ^ M * val P (perm (2 ^ M) (net M W) p)) ∧
    sameOf M (P.map (routeP (2 ^ M) (net M W))) = same := by
  let σ := perm (2 ^ M) (net M W)
  let rT := (mkPlanes (timePlane M) 0 M).map (routeP (2 ^ M) (net M W))
  let rX := P.map (routeP (2 ^ M) (net M W))
  have hroute : ∀ p, p < 2 ^ M → val (rT ++ rX) p = σ p + 2 ^ M * val P (σ p) := fun p hp => by
    rw [val_append]
    show val ((mkPlanes (timePlane M) 0 M).map _) p + 2 ^ ((mkPlanes (timePlane M) 0 M).map _).length *
      val (P.map _) p = _
    rw [val_routed, val_routed, val_timePlanes (perm_lt _ hp), length_map_planes, length_mkPlanes]
  unfold sortOKP sortTest at hs
  rw [and_bool] at hs
  have hsort := Nat.eq_of_beq_eq_true hs.1
  refine ⟨fun p h1 hp => ?_, Nat.eq_of_beq_eq_true hs.2⟩
  have ho : (2 ^ 2 ^ M - 1).testBit p = true := by rw [testBit_ones, decide_eq_true hp]
  have hb := congrArg (fun z => z.testBit p) hsort
  simp only [Nat.testBit_and, Nat.testBit_or, ho, Bool.and_true] at hb
  rw [one_testBit h1, Bool.or_false] at hb
  have := (testBit_ltP ho _ _ 0 (length_map_planes _ _)).1 hb
  rw [val_shl1 h1, hroute _ hp, hroute _ (by omega)] at this
  simp at this
  exact this

/-- **What the sort test says at each sorted place** `p < 2 ^ M` of a packed vector's planes: the routed
block planes hold the block of the reference `σ p` sorted there (all ones past the trace), the key (time
below, block above) strictly increases from each place to the next, and `same` is what `sameOf` computes
from those planes (`sort_factsP`). -/
public theorem sort_facts {f M n wx X : Nat} {rot : List (Nat × Nat)} {W : List Nat} {same : Nat} (hwx : wx ≤ 2 ^ f)
    (hpairs : ∀ uv : Nat × Nat, uv ∈ rot → uv.1 < uv.2 ∧ uv.2 < M + f)
    (hrot : ∀ e, e < M + f → idxComp rot e = if e < f then M + e else e - f)
    (hs : sortOK f M n wx X rot W same = true) :
    (∀ q, q < 2 ^ M → val ((xPlanes f M n wx X rot).map (routeP (2 ^ M) (net M W))) q =
      xval f n wx X (perm (2 ^ M) (net M W) q) % 2 ^ wx) ∧
    (∀ p, 1 ≤ p → p < 2 ^ M →
      perm (2 ^ M) (net M W) (p - 1) + 2 ^ M * (xval f n wx X (perm (2 ^ M) (net M W) (p - 1)) % 2 ^ wx) <
        perm (2 ^ M) (net M W) p + 2 ^ M * (xval f n wx X (perm (2 ^ M) (net M W) p) % 2 ^ wx)) ∧
    sameOf M ((xPlanes f M n wx X rot).map (routeP (2 ^ M) (net M W))) = same := by
  obtain ⟨step, hsame⟩ := sort_factsP hs
  refine ⟨fun q hq => by rw [val_routed, val_xPlanes hpairs hrot hwx (perm_lt _ hq)], fun p h1 hp => ?_, hsame⟩
  have := step p h1 hp
  rwa [val_xPlanes hpairs hrot hwx (perm_lt _ (by omega)), val_xPlanes hpairs hrot hwx (perm_lt _ hp)] at this

/-- **Sorting by (block, time) puts each reference after the previous one to its block**, for any block
planes `P`: if the trace `r` has `n ≤ 2 ^ M` references, two of them are to the same block exactly when
`P` holds the same value at their times, no reference's value is all ones (the padding's), and the sort
test holds, then every reference and the previous reference to its block sit at consecutive places of the
network's order, the later one marked in `same`. It does not say where references to different blocks go. -/
public theorem adjacent_of_planes {r : List Nat} {n M : Nat} {P W : List Nat} {same : Nat}
    (hlen : r.length = n) (hn : n ≤ 2 ^ M) (hreal : ∀ t, t < n → val P t < 2 ^ P.length - 1)
    (heq : ∀ i j, i < n → j < n → (nth r i = nth r j ↔ val P i = val P j))
    (hs : sortOKP M P W same = true) : Adjacent r (2 ^ M) (net M W) same := by
  obtain ⟨step, hsame⟩ := sort_factsP hs
  let key := fun t => t + 2 ^ M * val P t
  let σ := perm (2 ^ M) (net M W)
  let rX := P.map (routeP (2 ^ M) (net M W))
  have hX : ∀ q, val rX q = val P (σ q) := fun q => val_routed _ _ _ _
  -- consecutive places strictly increase
  have step : ∀ p, 1 ≤ p → p < 2 ^ M → key (σ (p - 1)) < key (σ p) := step
  have hsame : sameOf M rX = same := hsame
  have mono : ∀ a b, a < b → b < 2 ^ M → key (σ a) < key (σ b) := by
    intro a b hab hb
    induction b with
    | zero => omega
    | succ b ih =>
      have s := step (b + 1) (by omega) hb
      rw [Nat.add_sub_cancel] at s
      by_cases e : a = b
      · subst e; exact s
      · exact Nat.lt_trans (ih (by omega) (by omega)) s
  -- `same` from `sameOf`
  have sameAt : ∀ p, 1 ≤ p → p < 2 ^ M → val P (σ (p - 1)) = val P (σ p) →
      val P (σ p) ≠ 2 ^ P.length - 1 → same.testBit p = true := by
    intro p h1 hp he hne
    have ho : (2 ^ 2 ^ M - 1).testBit p = true := by rw [testBit_ones, decide_eq_true hp]
    rw [← hsame]
    unfold sameOf
    rw [Nat.testBit_and, Nat.testBit_and, and_bool, and_bool]
    refine ⟨⟨(testBit_eqP ho _ _ _ (length_map_planes _ _)).2 ⟨by rw [val_shl1 h1, hX, hX]; exact he, ho⟩, ?_⟩, ?_⟩
    · rw [Nat.testBit_xor, ho]
      cases hall : (allP rX (2 ^ 2 ^ M - 1)).testBit p
      · rfl
      · have := val_of_all _ ((testBit_allP _ _).1 hall).2
        rw [hX, length_map_planes] at this
        exact absurd this hne
    · rw [Nat.testBit_xor, ho, one_testBit h1]
      rfl
  -- the main argument
  intro i j hj hij hsame' hgap
  rw [hlen] at hj
  have hi : i < n := by omega
  have hjM : j < 2 ^ M := by omega
  have hiM : i < 2 ^ M := by omega
  have pj : σ (unperm (2 ^ M) (net M W) j) = j := perm_unperm _ _ _
  have pi : σ (unperm (2 ^ M) (net M W) i) = i := perm_unperm _ _ _
  have ujM := unperm_lt (net M W) hjM
  have uiM := unperm_lt (net M W) hiM
  have hblock : val P i = val P j := (heq i j hi hj).1 hsame'
  have kij : key i < key j := by show i + _ < j + _; rw [hblock]; omega
  -- the place of `i` is before the place of `j`
  have hlt' : unperm (2 ^ M) (net M W) i < unperm (2 ^ M) (net M W) j := by
    rcases Nat.lt_trichotomy (unperm (2 ^ M) (net M W) i) (unperm (2 ^ M) (net M W) j) with l | e | g
    · exact l
    · have := congrArg σ e; rw [pi, pj] at this; omega
    · have := mono _ _ g uiM; rw [pi, pj] at this; omega
  -- and right before it
  have hnext : unperm (2 ^ M) (net M W) i + 1 = unperm (2 ^ M) (net M W) j := by
    apply Nat.le_antisymm hlt'
    apply Nat.le_of_not_lt
    intro far
    obtain ⟨u, hu⟩ : ∃ u, u = unperm (2 ^ M) (net M W) j - 1 := ⟨_, rfl⟩
    have k1 := mono (unperm (2 ^ M) (net M W) i) u (by omega) (by omega)
    have k2 := mono u _ (by omega) ujM
    rw [pi] at k1; rw [pj] at k2
    have e1 : key i = i + 2 ^ M * val P i := rfl
    have e2 : key j = j + 2 ^ M * val P j := rfl
    have e3 : key (σ u) = σ u + 2 ^ M * val P (σ u) := rfl
    have uM : σ u < 2 ^ M := perm_lt _ (by omega)
    rw [e1, hblock] at k1; rw [e2] at k2; rw [e3] at k1 k2
    have same_block : val P (σ u) = val P j := by
      rcases Nat.lt_trichotomy (val P (σ u)) (val P j) with l | e | g
      · have : 2 ^ M * (val P (σ u) + 1) ≤ 2 ^ M * val P j := Nat.mul_le_mul_left _ l
        rw [Nat.mul_succ] at this; omega
      · exact e
      · have : 2 ^ M * (val P j + 1) ≤ 2 ^ M * val P (σ u) := Nat.mul_le_mul_left _ g
        rw [Nat.mul_succ] at this; omega
    rw [same_block] at k1 k2
    have iu : i < σ u := by omega
    have uj : σ u < j := by omega
    exact hgap (σ u) iu uj ((heq _ j (by omega) hj).2 same_block)
  refine ⟨hnext, ujM, sameAt _ (by omega) ujM ?_ ?_⟩
  · rw [show unperm (2 ^ M) (net M W) j - 1 = unperm (2 ^ M) (net M W) i by omega, pi, pj, hblock]
  · rw [pj]
    have := hreal j hj
    omega

/-- **Sorting by (block, time) puts each reference after the previous one to its block.** If the trace
instance checks (`traceOK`), its fields are `2 ^ f` bits wide, `rot` transposes, and `sortOK` holds,
then in the trace `decode …` every reference and the previous reference to its block sit at
consecutive places of the network's order, the later one marked in `same` (`adjacent_of_planes`). It
does not say where references to different blocks go. -/
public theorem adjacent_of_sortOK {w n X K wt D S f M wx : Nat} {net0 rot : List (Nat × Nat)} {W : List Nat} {same : Nat}
    (hck : traceOK w n X K wt D S = true) (hf : w + 1 = 2 ^ f) (hn : n ≤ 2 ^ M) (hD : D < 2 ^ wx) (hwx : wx ≤ 2 ^ f)
    (hpairs : ∀ uv : Nat × Nat, uv ∈ rot → uv.1 < uv.2 ∧ uv.2 < M + f)
    (hrot : ∀ e, e < M + f → idxComp rot e = if e < f then M + e else e - f)
    (hs : sortOK f M n wx X rot W same = true) :
    Adjacent (decode w n X wt D S net0) (2 ^ M) (net M W) same := by
  obtain ⟨hlen, hlt, heq⟩ := decode_facts net0 hck
  rw [hf] at hlt heq
  have hv : ∀ t, t < n → val (xPlanes f M n wx X rot) t = fld (2 ^ 2 ^ f) X t := fun t ht => by
    rw [val_xPlanes hpairs hrot hwx (by omega)]
    unfold xval; rw [if_pos ht]; exact Nat.mod_eq_of_lt (Nat.lt_trans (hlt t ht) hD)
  refine adjacent_of_planes hlen hn (fun t ht => ?_) (fun i j hi hj => ?_) hs
  · rw [hv t ht, length_xPlanes]; have := hlt t ht; omega
  · rw [hv i hi, hv j hj]; exact heq i j hi hj

/-! ## Counting cuts and flags -/

theorem val_zero_of {p : Nat} : ∀ (Ps : List Nat), (∀ P, P ∈ Ps → P.testBit p = false) → val Ps p = 0
  | [], _ => rfl
  | P :: Ps, h => by
    rw [val_cons, val_zero_of Ps (fun Q hQ => h Q (List.Mem.tail _ hQ))]
    unfold bit; rw [h P (List.Mem.head _)]; rfl

public theorem mem_cutsOf (c : Nat) : ∀ (t y : Nat), y ∈ cutsOf c t ↔ y < t ∧ c.testBit y = true
  | 0, y => by
    constructor
    · intro h; cases h
    · intro h; exact absurd h.1 (Nat.not_lt_zero _)
  | t + 1, y => by
    unfold cutsOf
    by_cases hc : c.testBit t = true
    · rw [if_pos hc, mem_cons, mem_cutsOf c t y]
      constructor
      · rintro (e | ⟨h1, h2⟩)
        · subst e; exact ⟨by omega, hc⟩
        · exact ⟨by omega, h2⟩
      · rintro ⟨h1, h2⟩
        by_cases e : y = t
        · exact Or.inl e
        · exact Or.inr ⟨by omega, h2⟩
    · rw [if_neg hc, mem_cutsOf c t y]
      constructor
      · rintro ⟨h1, h2⟩; exact ⟨by omega, h2⟩
      · rintro ⟨h1, h2⟩
        refine ⟨?_, h2⟩
        by_cases e : y = t
        · subst e; exact absurd h2 hc
        · omega

public theorem length_cutsOf (c : Nat) : ∀ t, (cutsOf c t).length = count (fun u => c.testBit u = true) t
  | 0 => rfl
  | t + 1 => by
    unfold cutsOf
    by_cases hc : c.testBit t = true
    · rw [if_pos hc, List.length_cons, length_cutsOf c t, count_succ_pos (p := fun u => c.testBit u = true) hc]
    · rw [if_neg hc, length_cutsOf c t, count_succ_neg (p := fun u => c.testBit u = true) hc]

/-- What `cutsOK` says at each place: the count starts at `0` and steps by the cut bit. -/
theorem cuts_steps {N : Nat} {A : List Nat} {c : Nat} (h : cutsOK N A c = true) :
    val A 0 = 0 ∧ ∀ t, t < N → val A (t + 1) = val A t + bit c t := by
  unfold cutsOK at h
  rw [and_bool, and_bool] at h
  have h0 := Nat.eq_of_beq_eq_true h.1.1
  have heq := Nat.eq_of_beq_eq_true h.1.2
  have hcarry := Nat.eq_of_beq_eq_true h.2
  refine ⟨val_zero_of A fun P hP => ?_, fun t ht => ?_⟩
  · have := congrArg (fun z => z.testBit 0) h0
    simp only at this
    have := ((testBit_allP _ _).1 this).2 (P ^^^ 1) (mem_map_planes (· ^^^ 1) hP)
    rw [Nat.testBit_xor] at this
    simpa using this
  · have ho : (2 ^ N - 1).testBit t = true := by rw [Nat.testBit_two_pow_sub_one, decide_eq_true ht]
    have e1 := (testBit_eqP ho (incP A c).1 (A.map (· >>> 1)) (2 ^ N - 1)
      (by rw [length_incP]; exact (length_map_planes _ _).symm)).1 (by rw [heq]; exact ho)
    have hv : val (A.map (· >>> 1)) t = val A (t + 1) :=
      val_map _ (fun P => by rw [Nat.testBit_shiftRight, Nat.add_comm]) A
    rw [hv] at e1
    have hc : bit (incP A c).2 t = 0 := by
      have := congrArg (fun z => z.testBit t) hcarry
      simp only [Nat.testBit_and, ho, Bool.and_true, Nat.zero_testBit] at this
      unfold bit; rw [this]; rfl
    have := val_incP t A c
    rw [hc, Nat.mul_zero, Nat.add_zero, e1.1] at this
    exact this

public theorem val_A_count {N : Nat} {A : List Nat} {c : Nat} (h : cutsOK N A c = true) :
    ∀ t, t ≤ N → val A t = count (fun u => c.testBit u = true) t
  | 0, _ => (cuts_steps h).1
  | t + 1, ht => by
    rw [(cuts_steps h).2 t (by omega), val_A_count h t (by omega)]
    unfold bit
    by_cases hc : c.testBit t = true
    · rw [if_pos hc, count_succ_pos (p := fun u => c.testBit u = true) hc]
    · rw [if_neg hc, count_succ_neg (p := fun u => c.testBit u = true) hc, Nat.add_zero]

public theorem val_A_gap {N : Nat} {A : List Nat} {c : Nat} (h : cutsOK N A c = true) {i : Nat} :
    ∀ j, i < j → j ≤ N → (∀ u, i < u → u < j → c.testBit u = false) → val A j = val A i + bit c i
  | 0, hij, _, _ => absurd hij (Nat.not_lt_zero _)
  | j + 1, hij, hj, hgap => by
    rw [(cuts_steps h).2 j (by omega)]
    by_cases e : j = i
    · subst e; rfl
    · rw [val_A_gap h j (by omega) (by omega) (fun u h1 h2 => hgap u h1 (by omega))]
      unfold bit
      rw [hgap j (by omega) (by omega)]
      rfl

public theorem flag_at {M : Nat} {W : List Nat} {same c : Nat} {A : List Nat} {p : Nat} (h1 : 1 ≤ p) (hp : p < 2 ^ M)
    (hs : same.testBit p = true)
    (hA : val A (perm (2 ^ M) (net M W) p) =
      val A (perm (2 ^ M) (net M W) (p - 1)) + bit c (perm (2 ^ M) (net M W) (p - 1))) :
    (flags M W same c A).testBit p = true := by
  have ho : (2 ^ 2 ^ M - 1).testBit p = true := by rw [testBit_ones, decide_eq_true hp]
  have hAs : val (A.map (routeP (2 ^ M) (net M W))) p = val A (perm (2 ^ M) (net M W) p) := val_routed _ _ _ _
  have hprev : val ((A.map (routeP (2 ^ M) (net M W))).map (· <<< 1)) p = val A (perm (2 ^ M) (net M W) (p - 1)) := by
    rw [val_shl1 h1]; exact val_routed _ _ _ _
  have hcb : bit (routeP (2 ^ M) (net M W) c <<< 1) p = bit c (perm (2 ^ M) (net M W) (p - 1)) := by
    unfold bit; rw [Nat.testBit_shiftLeft, decide_eq_true h1, Bool.true_and, testBit_routeP]
  have hsum := val_incP p ((A.map (routeP (2 ^ M) (net M W))).map (· <<< 1)) (routeP (2 ^ M) (net M W) c <<< 1)
  rw [hprev, hcb, ← hA, length_map_planes, length_map_planes] at hsum
  have hbound := val_lt A (perm (2 ^ M) (net M W) p)
  have hcarry : bit (incP ((A.map (routeP (2 ^ M) (net M W))).map (· <<< 1)) (routeP (2 ^ M) (net M W) c <<< 1)).2 p = 0 := by
    have := bit_le (incP ((A.map (routeP (2 ^ M) (net M W))).map (· <<< 1)) (routeP (2 ^ M) (net M W) c <<< 1)).2 p
    have hpos := Nat.two_pow_pos A.length
    rcases Nat.le_one_iff_eq_zero_or_eq_one.1 this with e | e
    · exact e
    · rw [e] at hsum; omega
  have hval : val (incP ((A.map (routeP (2 ^ M) (net M W))).map (· <<< 1)) (routeP (2 ^ M) (net M W) c <<< 1)).1 p =
      val (A.map (routeP (2 ^ M) (net M W))) p := by
    rw [hcarry] at hsum; rw [hAs]; omega
  unfold flags
  rw [Nat.testBit_and, Nat.testBit_and, hs, and_bool]
  refine ⟨by rw [Bool.true_and]; exact (testBit_eqP ho _ (A.map (routeP (2 ^ M) (net M W))) (2 ^ 2 ^ M - 1)
    (by rw [length_incP]; exact length_map_planes _ _)).2 ⟨hval, ho⟩, ?_⟩
  rw [Nat.testBit_xor, ho]
  unfold bit at hcarry
  cases h : (incP ((A.map (routeP (2 ^ M) (net M W))).map (· <<< 1)) (routeP (2 ^ M) (net M W) c <<< 1)).2.testBit p
  · rfl
  · rw [h] at hcarry; exact absurd hcarry (by decide)

/-- **The free reuses of a whole trace, counted on sorted places.** If the references of `r` sit as
`Adjacent` says, `A` counts the cut plane `c` (`cutsOK`) and the flags of the places with no cut
between a reference and its previous one number `F`, then at most `F` references of `r` reuse a block
with no cut of `c` strictly in between (`Pycert.Capacity.Free`). -/
public theorem free_le_of_checks {r : List Nat} {N M : Nat} {W : List Nat} {same c : Nat} {A : List Nat} {F : Nat}
    (hN : r.length = N) (hadj : Adjacent r (2 ^ M) (net M W) same) (hcut : cutsOK N A c = true)
    (hflags : popcount M (flags M W same c A) = F) : count (Free r (cutsOf c N)) r.length ≤ F := by
  rw [← hflags, popcount_eq, hN]
  apply count_le_count (Free r (cutsOf c N)) _ (unperm (2 ^ M) (net M W))
  · intro j hj ⟨i', hi'j, e', hY'⟩
    obtain ⟨i, hij, ei, gap⟩ := exists_latest (fun i => nth r i = nth r j) j ⟨i', hi'j, e'⟩
    have hii' : i' ≤ i := by
      apply Nat.le_of_not_lt; intro l; exact gap i' l hi'j e'
    obtain ⟨hnext, hpM, hs⟩ := hadj i j (by omega) hij ei gap
    refine ⟨hpM, flag_at (by omega) hpM hs ?_⟩
    rw [perm_unperm, show unperm (2 ^ M) (net M W) j - 1 = unperm (2 ^ M) (net M W) i by omega, perm_unperm]
    apply val_A_gap hcut j hij (by omega)
    intro u h1 h2
    cases hc : c.testBit u
    · rfl
    · exact absurd ⟨by omega, h2⟩ (hY' u ((mem_cutsOf c N u).2 ⟨by omega, hc⟩))
  · intro a b _ _ _ _ e
    have := congrArg (perm (2 ^ M) (net M W)) e
    rwa [perm_unperm, perm_unperm] at this

/-- **The capacity bound on a whole trace.** If the references of `r` sit as `Adjacent` says, `A` counts
the cut plane `c` (`cutsOK`), the flags of the places with no cut between a reference and its previous
one number `F` and there are `m` cuts, then every demand-fetch policy of capacity `C` hits at most
`(C - 1) · m + F` times on `r`. It is `Pycert.Capacity.hits_le_free` for the cut list of `c`, with its
count of references read off the sorted places; it says nothing of caches that bypass or prefetch,
start non-empty, or hold blocks of different sizes, and nothing about whether the bound is attained. -/
public theorem capacity_bound {r : List Nat} {N M : Nat} {W : List Nat} {same c : Nat} {A : List Nat} {F m : Nat}
    (hN : r.length = N) (hadj : Adjacent r (2 ^ M) (net M W) same) (hcut : cutsOK N A c = true)
    (hflags : popcount M (flags M W same c A) = F) (hm : val A N = m)
    {P : Policy} {C : Nat} (hP : P.cap = some C) : hits P r ≤ (C - 1) * m + F := by
  have hY : (cutsOf c N).length = m := by rw [length_cutsOf, ← val_A_count hcut N (Nat.le_refl _), hm]
  have := hits_le_free hP r (cutsOf c N)
  have := free_le_of_checks hN hadj hcut hflags
  rw [hY] at *
  omega

/-- `Pycert.Capacity.Bounded` from the checks of a sorted instance: the trace has `N` references and,
by `capacity_bound`, no policy of capacity `C` hits more than `(C - 1) · m + F ≤ H` times. -/
public theorem bounded_of_checks {r : List Nat} {N M : Nat} {W : List Nat} {same c : Nat} {A : List Nat}
    {F m C H : Nat} (hN : r.length = N) (hadj : Adjacent r (2 ^ M) (net M W) same) (hcut : cutsOK N A c = true)
    (hflags : popcount M (flags M W same c A) = F) (hm : val A N = m) (hH : (C - 1) * m + F ≤ H) :
    Bounded r N C H :=
  ⟨hN, fun _ hP => Nat.le_trans (capacity_bound hN hadj hcut hflags hm hP) hH⟩

/-- Reference `t` of a decoded trace, read off its field: what a piece states of its first and last
references, checked by evaluating one field, one route and one table entry. -/
public theorem nth_decode_of {w n X wt D S t v : Nat} {net0 : List (Nat × Nat)} (ht : t < n)
    (hv : look wt D S (Pycert.Route.route net0 (fld (2 ^ (w + 1)) X t)) = v) : nth (decode w n X wt D S net0) t = v := by
  unfold decode
  rw [nth_map _ _ t (by rw [fields_length]; exact ht), nth_fields _ n X t ht]
  exact hv

/-- `Pycert.Capacity.Piece` from the checks of a sorted instance: the piece has `N ≥ 1` references,
the stated first and last ones, `m` cuts and at most `F` references that reuse a block with no cut in
between. -/
public theorem piece_of_checks {r : List Nat} {N M : Nat} {W : List Nat} {same c : Nat} {A : List Nat}
    {F m first last : Nat} (hN : r.length = N) (hadj : Adjacent r (2 ^ M) (net M W) same) (hcut : cutsOK N A c = true)
    (hflags : popcount M (flags M W same c A) = F) (hm : val A N = m) (hpos : 0 < N)
    (hfirst : nth r 0 = first) (hlast : nth r (N - 1) = last) : Piece r N m F first last := by
  refine ⟨hN, hpos, hfirst, hlast, cutsOf c N, ?_, ?_⟩
  · rw [length_cutsOf, ← val_A_count hcut N (Nat.le_refl _), hm]
  · have := free_le_of_checks hN hadj hcut hflags
    rwa [hN] at this

end Pycert.SortedTrace
