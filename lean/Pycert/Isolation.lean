module

prelude
public import Init.Data.Nat.Log2
import Init.Data.Nat.Lemmas
import Pycert.Digits
import Pycert.Pigeonhole

/-!
# Isolation floor: the price of zero-leak sharing

`T` tenants, `n` blocks. A manager keeps one state per rights matrix and answers every read from
that state alone. Serving every matrix exactly (no leak, no refused reuse) needs a state space of at
least `2 ^ (T * n)` states; below that some answer is wrong, and a wrong answer is a leak or a
refused reuse.
-/

namespace Pycert.Isolation

/-- Read rights: `M t b` says tenant `t` may read block `b`. -/
@[expose] public def Auth (T n : Nat) : Type := Fin T → Fin n → Bool

/-- Rights of the single-owner model: tenant `t` may read block `b` iff `t` owns `b`. -/
@[expose] public def ownerAuth {T n : Nat} (owner : Fin n → Fin T) : Auth T n :=
  fun t b => decide (owner b = t)

/-- The rights matrix whose row `t` holds the bits of digit `t` of `k` in base `2 ^ n`. -/
def enc (T n k : Nat) : Auth T n :=
  fun t b => decide (digit 2 (digit (2 ^ n) k t.val) b.val = 1)

theorem enc_inj {T n k k' : Nat} (hk : k < 2 ^ (T * n)) (hk' : k' < 2 ^ (T * n))
    (h : ∀ t b, enc T n k t b = enc T n k' t b) : k = k' := by
  have hp : 2 ^ (T * n) = (2 ^ n) ^ T := by rw [Nat.mul_comm, Nat.pow_mul]
  rw [hp] at hk hk'
  have h2n : 0 < 2 ^ n := Nat.two_pow_pos n
  apply digit_inj T hk hk'
  intro t ht
  apply digit_inj n (digit_lt h2n k t) (digit_lt h2n k' t)
  intro b hb
  have e : decide (digit 2 (digit (2 ^ n) k t) b = 1) = decide (digit 2 (digit (2 ^ n) k' t) b = 1) :=
    h ⟨t, ht⟩ ⟨b, hb⟩
  have l1 := digit_lt (by decide : 0 < 2) (digit (2 ^ n) k t) b
  have l2 := digit_lt (by decide : 0 < 2) (digit (2 ^ n) k' t) b
  by_cases c : digit 2 (digit (2 ^ n) k t) b = 1
  · rw [decide_eq_true c] at e
    have := of_decide_eq_true e.symm
    omega
  · rw [decide_eq_false c] at e
    have := of_decide_eq_false e.symm
    omega

/-- **Isolation floor.** If a manager with `s` states serves every rights matrix exactly
(`serve (σ M) t b = M t b` for all `M`, `t`, `b`: zero leak and full reuse), then `2 ^ (T * n) ≤ s`.
It counts states only: it says nothing about time, nor about managers allowed to err. -/
public theorem floor {T n s : Nat} (σ : Auth T n → Fin s) (serve : Fin s → Fin T → Fin n → Bool)
    (h : ∀ M t b, serve (σ M) t b = M t b) : 2 ^ (T * n) ≤ s := by
  apply le_of_inj (2 ^ (T * n)) (fun k => (σ (enc T n k)).val) (fun k _ => (σ (enc T n k)).isLt)
  intro k k' hk hk' e
  apply enc_inj hk hk'
  intro t b
  have e' : σ (enc T n k) = σ (enc T n k') := Fin.eq_of_val_eq e
  rw [← h (enc T n k) t b, ← h (enc T n k') t b, e']

/-- **Isolation floor in bits.** Under the same hypothesis, the state needs `T * n` bits:
`T * n ≤ Nat.log2 s`. -/
public theorem floor_log2 {T n s : Nat} (σ : Auth T n → Fin s) (serve : Fin s → Fin T → Fin n → Bool)
    (h : ∀ M t b, serve (σ M) t b = M t b) : T * n ≤ Nat.log2 s := by
  have hs : s ≠ 0 := by
    have := (σ (fun _ _ => false)).isLt
    omega
  exact (Nat.le_log2 hs).2 (floor σ serve h)

/-- **Below the floor: leak or refused reuse.** If `s < 2 ^ (T * n)`, then for every manager some
tenant `t`, block `b` and rights matrix `M` get a wrong answer, and it is either a leak (served
`true`, entitled `false`) or a refused reuse (served `false`, entitled `true`). It does not say which
of the two occurs, nor how many answers are wrong. -/
public theorem leak_or_refusal {T n s : Nat} (σ : Auth T n → Fin s) (serve : Fin s → Fin T → Fin n → Bool)
    (hs : s < 2 ^ (T * n)) :
    ∃ M t b, (serve (σ M) t b = true ∧ M t b = false) ∨ (serve (σ M) t b = false ∧ M t b = true) := by
  apply Classical.byContradiction
  intro hno
  have hc : ∀ M t b, serve (σ M) t b = M t b := by
    intro M t b
    cases h1 : serve (σ M) t b <;> cases h2 : M t b
    · rfl
    · exact (hno ⟨M, t, b, Or.inr ⟨h1, h2⟩⟩).elim
    · exact (hno ⟨M, t, b, Or.inl ⟨h1, h2⟩⟩).elim
    · rfl
  have := floor σ serve hc
  omega

/-- **No third option.** A served answer differs from the entitlement exactly when it is a leak or a
refused reuse, and never both. -/
public theorem wrong_iff_leak_or_refusal (served entitled : Bool) :
    served ≠ entitled ↔ ((served = true ∧ entitled = false) ∨ (served = false ∧ entitled = true)) ∧
      ¬ ((served = true ∧ entitled = false) ∧ (served = false ∧ entitled = true)) := by
  cases served <;> cases entitled <;> decide

/-- **Single-owner floor.** Each block belongs to exactly one tenant (`owner : Fin n → Fin T`) and
tenant `t` may read `b` iff it owns `b`. A manager that serves every owner map exactly must tell all
`T ^ n` of them apart: `T ^ n ≤ s`. It says nothing about managers allowed to err. -/
public theorem owner_floor {T n s : Nat} (σ : (Fin n → Fin T) → Fin s)
    (serve : Fin s → Fin T → Fin n → Bool)
    (h : ∀ owner t b, serve (σ owner) t b = ownerAuth owner t b) : T ^ n ≤ s := by
  by_cases hT : 0 < T
  · let o : Nat → Fin n → Fin T := fun k b => ⟨digit T k b.val, digit_lt hT k b.val⟩
    apply le_of_inj (T ^ n) (fun k => (σ (o k)).val) (fun k _ => (σ (o k)).isLt)
    intro k k' hk hk' e
    have e' : σ (o k) = σ (o k') := Fin.eq_of_val_eq e
    apply digit_inj n hk hk'
    intro b hb
    have h1 := h (o k) (o k ⟨b, hb⟩) ⟨b, hb⟩
    have h2 := h (o k') (o k ⟨b, hb⟩) ⟨b, hb⟩
    rw [e', h2] at h1
    have h3 : o k' ⟨b, hb⟩ = o k ⟨b, hb⟩ := by
      have := h1
      unfold ownerAuth at this
      exact of_decide_eq_true (this.trans (decide_eq_true rfl))
    exact (congrArg Fin.val h3).symm
  · have hT0 : T = 0 := by omega
    subst hT0
    cases n with
    | zero =>
      rw [Nat.pow_zero]
      have := (σ (fun b => b.elim0)).isLt
      omega
    | succ n =>
      rw [Nat.pow_succ, Nat.mul_zero]
      exact Nat.zero_le s

/-- **Single-owner floor in bits.** Under the same hypothesis, `n * Nat.log2 T ≤ Nat.log2 s`. -/
public theorem owner_floor_log2 {T n s : Nat} (σ : (Fin n → Fin T) → Fin s)
    (serve : Fin s → Fin T → Fin n → Bool)
    (h : ∀ owner t b, serve (σ owner) t b = ownerAuth owner t b) : n * Nat.log2 T ≤ Nat.log2 s := by
  by_cases hT : T = 0
  · subst hT
    rw [Nat.log2_zero, Nat.mul_zero]
    exact Nat.zero_le _
  · have hs : s ≠ 0 := by
      have := (σ (fun _ => ⟨0, by omega⟩)).isLt
      omega
    apply (Nat.le_log2 hs).2
    calc 2 ^ (n * Nat.log2 T) = (2 ^ Nat.log2 T) ^ n := by rw [Nat.mul_comm, Nat.pow_mul]
      _ ≤ T ^ n := Nat.pow_le_pow_left (Nat.log2_self_le hT) n
      _ ≤ s := owner_floor σ serve h

/-! ## What an instance proves -/

/-- **The headline of an isolation certificate.** For `T` tenants and `n` blocks: a manager that
serves every rights matrix exactly needs at least `bits` bits of state, and one that serves every
single-owner map exactly at least `ownerBits` bits (`Nat.log2` of its number of states). An instance
file proves it with literals, and pycert reads the certificate's figures off them. It says nothing
about managers allowed to err. -/
@[expose] public def FloorAt (T n bits ownerBits : Nat) : Prop :=
  (∀ {s : Nat} (σ : Auth T n → Fin s) (serve : Fin s → Fin T → Fin n → Bool),
      (∀ M t b, serve (σ M) t b = M t b) → bits ≤ Nat.log2 s) ∧
    ∀ {s : Nat} (σ : (Fin n → Fin T) → Fin s) (serve : Fin s → Fin T → Fin n → Bool),
      (∀ owner t b, serve (σ owner) t b = ownerAuth owner t b) → ownerBits ≤ Nat.log2 s

/-- `FloorAt` for any figures below the two floors, `T * n` and `n * Nat.log2 T` (`floor_log2`,
`owner_floor_log2`). -/
public theorem floorAt {T n bits ownerBits : Nat} (hb : bits ≤ T * n) (ho : ownerBits ≤ n * Nat.log2 T) :
    FloorAt T n bits ownerBits :=
  ⟨fun σ serve h => Nat.le_trans hb (floor_log2 σ serve h),
    fun σ serve h => Nat.le_trans ho (owner_floor_log2 σ serve h)⟩

end Pycert.Isolation
