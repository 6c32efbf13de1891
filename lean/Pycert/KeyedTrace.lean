module

prelude
public import Pycert.SortedOptimum
import Init.Omega

/-!
# A trace keyed by tenant, sorted on whole bit planes

A per-tenant salt (vLLM's `cache_salt`) makes every block of a request a block of the request's tenant
alone. Here the **keyed trace** is written from a trace's block numbers and each reference's tenant:
`X`, the block numbers as a packed vector in fields of `2 ^ f` bits (as in `Pycert.SortedTrace`), and `T`,
the tenants as bit planes (bit `j` of plane `b` is bit `b` of reference `j`'s tenant, `tenant T j`).
Reference `j`'s keyed block is its block number with its tenant above it (`keyed`), so two references
are to the same keyed block exactly when they have the same block number and the same tenant
(`keyed_iff`): by construction, with nothing to check.

Its sorted instance sorts by (keyed block, time) on the planes of `X`, then the tenant planes, then one
plane set exactly past the trace, so that no reference's key is all ones (`keyPlanes`); the sort test
gives what `Pycert.SortedTrace` and `Pycert.SortedOptimum` read off a decoded trace (`adjacent_of_sortOK`,
`linked_facts`), and every bound and witness of those files applies to the keyed trace unchanged.
`requestsOK` tests on whole planes that the tenant changes only where a request starts.

What this file does not say: which tenant a request has (the planes are data: pycert writes them from a
tenant rule, and verify writes them again), nor which trace `X` numbers; `Pycert.IsolationCost.keyed_of`
ties `X` to a decoded trace.
-/

namespace Pycert.KeyedTrace
open Pycert.Bits Pycert.Planes Pycert.Transpose Pycert.Packed Pycert.SortedTrace Pycert.SortedOptimum

/-- The tenant of reference `j`: the value of the tenant planes `T` at bit `j`. -/
@[expose] public def tenant (T : List Nat) (j : Nat) : Nat := val T j

/-- The list `g s, g (s + 1), …`, `k` entries. -/
@[expose] public def tab (g : Nat → Nat) : Nat → Nat → List Nat
  | _, 0 => []
  | s, k + 1 => g s :: tab g (s + 1) k

/-- **The keyed trace** of `n` references: reference `t` is its block number (the low `wx` bits of field
`t` of `X`) with its tenant above it. -/
@[expose] public def keyed (f n wx X : Nat) (T : List Nat) : List Nat :=
  tab (fun t => fld (2 ^ 2 ^ f) X t % 2 ^ wx + 2 ^ wx * tenant T t) 0 n

/-- The planes the sort reads: the block number's, the tenant's (each set past the trace, as the block
number's are) and one plane set exactly past the trace. -/
@[expose] public noncomputable def keyPlanes (f M n wx X : Nat) (rot : List (Nat × Nat)) (T : List Nat) : List Nat :=
  xPlanes f M n wx X rot ++ (T.map (· ||| padding M n) ++ [padding M n])

/-- The sort test of a keyed instance: `Pycert.SortedTrace.sortOKP` on `keyPlanes`. -/
@[expose] public noncomputable def sortOK (f M n wx X : Nat) (rot : List (Nat × Nat)) (T W : List Nat) (same : Nat) :
    Bool :=
  sortOKP M (keyPlanes f M n wx X rot T) W same

/-- Every plane of `T` keeps its bit from `j` to `j + 1` wherever no request starts at `j + 1` (`first`),
for `j + 1 < n`: the tenant changes only where a request starts. -/
@[expose] public def requestsOK (n first : Nat) : List Nat → Bool
  | [] => true
  | P :: Ps => Nat.beq ((P ^^^ (P <<< 1)) &&& ((2 ^ n - 1) ^^^ ((first ||| 1) &&& (2 ^ n - 1)))) 0 && requestsOK n first Ps

/-! ## The keyed trace, reference by reference -/

theorem length_tab (g : Nat → Nat) : ∀ s k, (tab g s k).length = k
  | _, 0 => rfl
  | s, k + 1 => by show (g s :: tab g (s + 1) k).length = _; rw [List.length_cons, length_tab g (s + 1) k]

theorem nth_tab (g : Nat → Nat) : ∀ s k t, t < k → nth (tab g s k) t = g (s + t)
  | _, 0, _, h => absurd h (Nat.not_lt_zero _)
  | s, k + 1, 0, _ => by show g s = g (s + 0); rw [Nat.add_zero]
  | s, k + 1, t + 1, h => by
    show nth (tab g (s + 1) k) t = _
    rw [nth_tab g (s + 1) k t (by omega), show s + 1 + t = s + (t + 1) by omega]

public theorem length_keyed (f n wx X : Nat) (T : List Nat) : (keyed f n wx X T).length = n := length_tab _ _ _

theorem nth_keyed {f n wx X t : Nat} {T : List Nat} (ht : t < n) :
    nth (keyed f n wx X T) t = fld (2 ^ 2 ^ f) X t % 2 ^ wx + 2 ^ wx * tenant T t := by
  unfold keyed; rw [nth_tab _ 0 n t ht, Nat.zero_add]

theorem split_eq {a b c d w : Nat} (ha : a < 2 ^ w) (hc : c < 2 ^ w) :
    a + 2 ^ w * b = c + 2 ^ w * d ↔ a = c ∧ b = d := by
  constructor
  · intro h
    have hp := Nat.two_pow_pos w
    have m := congrArg (· % 2 ^ w) h
    have q := congrArg (· / 2 ^ w) h
    simp only [Nat.add_mul_mod_self_left, Nat.mod_eq_of_lt ha, Nat.mod_eq_of_lt hc] at m
    simp only [Nat.add_mul_div_left _ _ hp, Nat.div_eq_of_lt ha, Nat.div_eq_of_lt hc, Nat.zero_add] at q
    exact ⟨m, q⟩
  · rintro ⟨rfl, rfl⟩; rfl

/-- **Two references are to the same keyed block exactly when they have the same block number and the
same tenant.** -/
public theorem keyed_iff {f n wx X : Nat} {T : List Nat} {i j : Nat} (hi : i < n) (hj : j < n) :
    nth (keyed f n wx X T) i = nth (keyed f n wx X T) j ↔
      fld (2 ^ 2 ^ f) X i % 2 ^ wx = fld (2 ^ 2 ^ f) X j % 2 ^ wx ∧ tenant T i = tenant T j := by
  rw [nth_keyed hi, nth_keyed hj]
  exact split_eq (Nat.mod_lt _ (Nat.two_pow_pos wx)) (Nat.mod_lt _ (Nat.two_pow_pos wx))

/-! ## The planes of the sort -/

theorem testBit_padding {M n t : Nat} (ht : t < 2 ^ M) : (padding M n).testBit t = decide (n ≤ t) := by
  unfold padding
  rw [Nat.testBit_xor, testBit_ones, Nat.testBit_two_pow_sub_one, decide_eq_true ht]
  by_cases h : t < n
  · rw [decide_eq_true h, decide_eq_false (Nat.not_le_of_lt h)]; rfl
  · rw [decide_eq_false h, decide_eq_true (Nat.le_of_not_lt h)]; rfl

theorem set_map_or {p Q : Nat} (hQ : Q.testBit p = true) :
    ∀ (Ps : List Nat), ∀ P, P ∈ Ps.map (· ||| Q) → P.testBit p = true
  | [], _, h => absurd h (not_mem_nil _)
  | R :: Ps, P, h => by
    rcases mem_cons.1 h with e | h
    · rw [e, Nat.testBit_or, hQ, Bool.or_true]
    · exact set_map_or hQ Ps P h

theorem val_tenants {M n t : Nat} (ht : t < 2 ^ M) (T : List Nat) :
    val (T.map (· ||| padding M n) ++ [padding M n]) t =
      if t < n then tenant T t else 2 ^ (T.length + 1) - 1 := by
  by_cases h : t < n
  · rw [if_pos h, val_append, val_map _ (fun P => by rw [Nat.testBit_or, testBit_padding ht,
      decide_eq_false (Nat.not_le_of_lt h), Bool.or_false]) T, val_cons]
    unfold bit tenant
    rw [testBit_padding ht, decide_eq_false (Nat.not_le_of_lt h)]
    simp [val]
  · rw [if_neg h, val_append, val_of_all _ (set_map_or (Q := padding M n) (by
      rw [testBit_padding ht, decide_eq_true (Nat.le_of_not_lt h)]) T), val_cons, length_map_planes]
    unfold bit
    rw [testBit_padding ht, decide_eq_true (Nat.le_of_not_lt h), if_pos rfl, Nat.pow_succ]
    have := Nat.two_pow_pos T.length
    show 2 ^ T.length - 1 + 2 ^ T.length * (1 + 2 * 0) = 2 ^ T.length * 2 - 1
    omega

theorem length_keyPlanes (f M n wx X : Nat) (rot : List (Nat × Nat)) (T : List Nat) :
    (keyPlanes f M n wx X rot T).length = wx + (T.length + 1) := by
  unfold keyPlanes
  rw [length_append', length_xPlanes, length_append', length_map_planes]
  rfl

/-- The key of a reference: its keyed block. -/
theorem val_real {f M n wx X t : Nat} {rot : List (Nat × Nat)} {T : List Nat}
    (hpairs : ∀ uv : Nat × Nat, uv ∈ rot → uv.1 < uv.2 ∧ uv.2 < M + f)
    (hrot : ∀ e, e < M + f → idxComp rot e = if e < f then M + e else e - f)
    (hwx : wx ≤ 2 ^ f) (hn : n ≤ 2 ^ M) (ht : t < n) :
    val (keyPlanes f M n wx X rot T) t = nth (keyed f n wx X T) t := by
  unfold keyPlanes
  rw [val_append, val_xPlanes hpairs hrot hwx (by omega), length_xPlanes, val_tenants (by omega), if_pos ht,
    nth_keyed ht]
  unfold xval; rw [if_pos ht]

/-- Past the trace every plane is set. -/
theorem val_pad {f M n wx X t : Nat} {rot : List (Nat × Nat)} {T : List Nat}
    (hpairs : ∀ uv : Nat × Nat, uv ∈ rot → uv.1 < uv.2 ∧ uv.2 < M + f)
    (hrot : ∀ e, e < M + f → idxComp rot e = if e < f then M + e else e - f)
    (hwx : wx ≤ 2 ^ f) (hnt : n ≤ t) (ht : t < 2 ^ M) :
    val (keyPlanes f M n wx X rot T) t = 2 ^ (keyPlanes f M n wx X rot T).length - 1 := by
  rw [length_keyPlanes]
  unfold keyPlanes
  rw [val_append, val_xPlanes hpairs hrot hwx ht, length_xPlanes, val_tenants ht, if_neg (Nat.not_lt_of_le hnt)]
  unfold xval; rw [if_neg (Nat.not_lt_of_le hnt), Nat.mod_eq_of_lt (Nat.sub_lt (Nat.two_pow_pos wx) (by decide)),
    Nat.pow_add 2 wx (T.length + 1), Nat.mul_sub_one]
  have h1 := Nat.two_pow_pos wx
  have h2 : 2 ^ wx ≤ 2 ^ wx * 2 ^ (T.length + 1) :=
    Nat.le_mul_of_pos_right _ (Nat.two_pow_pos _)
  omega

/-- No reference's key is all ones. -/
theorem val_lt_ones {f M n wx X t : Nat} {rot : List (Nat × Nat)} {T : List Nat}
    (hpairs : ∀ uv : Nat × Nat, uv ∈ rot → uv.1 < uv.2 ∧ uv.2 < M + f)
    (hrot : ∀ e, e < M + f → idxComp rot e = if e < f then M + e else e - f)
    (hwx : wx ≤ 2 ^ f) (hn : n ≤ 2 ^ M) (ht : t < n) :
    val (keyPlanes f M n wx X rot T) t < 2 ^ (keyPlanes f M n wx X rot T).length - 1 := by
  rw [val_real hpairs hrot hwx hn ht, nth_keyed ht, length_keyPlanes, Nat.pow_add, Nat.pow_succ]
  have ha := Nat.mod_lt (fld (2 ^ 2 ^ f) X t) (Nat.two_pow_pos wx)
  have hb : tenant T t + 1 ≤ 2 ^ T.length := val_lt T t
  have hm : 2 ^ wx * (tenant T t + 1) ≤ 2 ^ wx * 2 ^ T.length := Nat.mul_le_mul_left _ hb
  rw [Nat.mul_succ] at hm
  have hp : 0 < 2 ^ wx * 2 ^ T.length := Nat.mul_pos (Nat.two_pow_pos _) (Nat.two_pow_pos _)
  rw [← Nat.mul_assoc]
  omega

/-! ## What the sort gives -/

/-- **Sorting by (keyed block, time) puts each reference after the previous one to its keyed block**
(`Pycert.SortedTrace.adjacent_of_planes` on `keyPlanes`). -/
public theorem adjacent_of_sortOK {f M n wx X : Nat} {rot : List (Nat × Nat)} {T W : List Nat} {same : Nat}
    (hn : n ≤ 2 ^ M) (hwx : wx ≤ 2 ^ f)
    (hpairs : ∀ uv : Nat × Nat, uv ∈ rot → uv.1 < uv.2 ∧ uv.2 < M + f)
    (hrot : ∀ e, e < M + f → idxComp rot e = if e < f then M + e else e - f)
    (hs : sortOK f M n wx X rot T W same = true) : Adjacent (keyed f n wx X T) (2 ^ M) (net M W) same :=
  adjacent_of_planes (length_keyed f n wx X T) hn (fun _ ht => val_lt_ones hpairs hrot hwx hn ht)
    (fun i j hi hj => by rw [val_real hpairs hrot hwx hn hi, val_real hpairs hrot hwx hn hj]) hs

/-- `Linked` for the keyed trace (`Pycert.SortedOptimum.linked_of_planes` on `keyPlanes`). -/
public theorem linked_facts {f M n wx X : Nat} {rot : List (Nat × Nat)} {T W : List Nat} {same : Nat}
    (hn : n ≤ 2 ^ M) (hwx : wx ≤ 2 ^ f)
    (hpairs : ∀ uv : Nat × Nat, uv ∈ rot → uv.1 < uv.2 ∧ uv.2 < M + f)
    (hrot : ∀ e, e < M + f → idxComp rot e = if e < f then M + e else e - f)
    (hs : sortOK f M n wx X rot T W same = true) : Linked (keyed f n wx X T) M W same :=
  linked_of_planes (length_keyed f n wx X T) (fun _ hnt ht => val_pad hpairs hrot hwx hnt ht)
    (fun i j hi hj _ _ => by rw [val_real hpairs hrot hwx hn hi, val_real hpairs hrot hwx hn hj]) hs

/-! ## Requests -/

theorem val_eq_of_bits {p q : Nat} : ∀ (Ps : List Nat), (∀ P, P ∈ Ps → P.testBit p = P.testBit q) → val Ps p = val Ps q
  | [], _ => rfl
  | P :: Ps, h => by
    rw [val_cons, val_cons, val_eq_of_bits Ps (fun Q hQ => h Q (List.Mem.tail _ hQ))]
    unfold bit; rw [h P (List.Mem.head _)]

theorem bits_of_requestsOK {n first j : Nat} (hj : j + 1 < n) (hf : first.testBit (j + 1) = false) :
    ∀ (Ps : List Nat), requestsOK n first Ps = true → ∀ P, P ∈ Ps → P.testBit (j + 1) = P.testBit j
  | [], _, _, h => absurd h (not_mem_nil _)
  | P :: Ps, h, Q, hQ => by
    unfold requestsOK at h
    rw [and_bool] at h
    rcases mem_cons.1 hQ with e | hQ
    · subst e
      have h0 := congrArg (fun z => z.testBit (j + 1)) (Nat.eq_of_beq_eq_true h.1)
      simp only [Nat.testBit_and, Nat.testBit_xor, Nat.testBit_or, Nat.testBit_shiftLeft, Nat.testBit_two_pow_sub_one,
        Nat.zero_testBit, hf, one_testBit (show 1 ≤ j + 1 by omega), decide_eq_true hj] at h0
      simp only [show j + 1 ≥ 1 by omega, decide_true, Bool.true_and, Nat.add_sub_cancel, Bool.or_false,
        Bool.xor_false, Bool.and_true] at h0
      revert h0
      cases Q.testBit (j + 1) <;> cases Q.testBit j <;> simp
    · exact bits_of_requestsOK hj hf Ps h.2 Q hQ

/-- **The tenant changes only where a request starts**, from `requestsOK`. -/
public theorem tenant_of_requestsOK {n first : Nat} {T : List Nat} (h : requestsOK n first T = true) :
    ∀ j, j + 1 < n → first.testBit (j + 1) = false → tenant T (j + 1) = tenant T j :=
  fun _ hj hf => val_eq_of_bits T (bits_of_requestsOK hj hf T h)

/-- What a keyed instance exports: the keyed trace has `n` references, two of them share a keyed block
exactly when they share the block number and the tenant, and the tenant changes only where a request starts. -/
public theorem keyed_facts {f n wx X first : Nat} {T : List Nat} (h : requestsOK n first T = true) :
    (keyed f n wx X T).length = n ∧
      (∀ i j, i < n → j < n → (nth (keyed f n wx X T) i = nth (keyed f n wx X T) j ↔
        fld (2 ^ 2 ^ f) X i % 2 ^ wx = fld (2 ^ 2 ^ f) X j % 2 ^ wx ∧ tenant T i = tenant T j)) ∧
      ∀ j, j + 1 < n → first.testBit (j + 1) = false → tenant T (j + 1) = tenant T j :=
  ⟨length_keyed f n wx X T, fun _ _ hi hj => keyed_iff hi hj, tenant_of_requestsOK h⟩

end Pycert.KeyedTrace
