module

prelude
public import Init.Data.List.Basic
import Init.Omega

/-!
# First touch on a trace: the leading blocks a pooled store holds

A prefix cache serves a request's blocks from the front and stops at the first block it does not
hold: the blocks after it are computed whatever the store holds. `lead s r` counts the leading
blocks of request `r` that the store `s` holds; `lead_spec` says that this is exactly that prefix.
A trace row of the first-touch dataset states `TouchAt`, with literals, for a request read from a
Mooncake trace.
-/

namespace Pycert.FirstTouch

/-- Whether the store `s` holds block `b`, by `Nat.beq` (which the kernel runs on GMP). -/
@[expose] public def holds (b : Nat) : List Nat → Bool
  | [] => false
  | x :: s => Nat.beq b x || holds b s

public theorem holds_iff (b : Nat) : ∀ s : List Nat, holds b s = true ↔ b ∈ s
  | [] => ⟨(fun h => nomatch h), (fun h => nomatch h)⟩
  | x :: s => by
    have ih := holds_iff b s
    show (Nat.beq b x || holds b s) = true ↔ b ∈ x :: s
    constructor
    · intro h
      cases hb : Nat.beq b x
      · rw [hb, Bool.false_or] at h
        exact List.Mem.tail x (ih.1 h)
      · rw [Nat.eq_of_beq_eq_true hb]; exact List.Mem.head s
    · intro h
      cases h with
      | head => rw [Nat.beq_refl, Bool.true_or]
      | tail _ h => rw [ih.2 h, Bool.or_true]

/-- How many leading blocks of request `r` the store `s` holds. -/
@[expose] public def lead (s : List Nat) : List Nat → Nat
  | [] => 0
  | b :: r => if holds b s then lead s r + 1 else 0

/-- `lead s r` is the length of the longest prefix of `r` whose every block `s` holds: `r` splits into
such a prefix of that length and a rest whose first block, if any, `s` does not hold. It says nothing
about the blocks after that first one (a prefix cache computes them whatever the store holds). -/
public theorem lead_spec (s : List Nat) : ∀ r : List Nat, ∃ pre rest, r = pre ++ rest ∧ pre.length = lead s r ∧
    (∀ b, b ∈ pre → b ∈ s) ∧ ∀ b tail, rest = b :: tail → ¬ b ∈ s
  | [] => ⟨[], [], rfl, rfl, (fun _ h => nomatch h), (fun _ _ h => nomatch h)⟩
  | b :: r => by
    cases hb : holds b s
    · refine ⟨[], b :: r, rfl, ?_, (fun _ h => nomatch h), ?_⟩
      · show 0 = lead s (b :: r)
        simp only [lead, hb]; rfl
      · intro c tail h hc
        injection h with e _
        rw [← e] at hc
        rw [(holds_iff b s).2 hc] at hb
        cases hb
    · obtain ⟨pre, rest, e, hl, hpre, hrest⟩ := lead_spec s r
      refine ⟨b :: pre, rest, by rw [e]; rfl, ?_, ?_, hrest⟩
      · show pre.length + 1 = lead s (b :: r)
        simp only [lead, hb, if_true, hl]
      · intro c hc
        cases hc with
        | head => exact (holds_iff b s).1 hb
        | tail _ hc => exact hpre c hc

/-- **The headline of a trace row of the first-touch dataset.** A store holding the blocks `prev`
serves, of an `n`-token request whose blocks of `b` tokens (the last one partial when `b` does not
divide `n`) are `req`, the leading `m` blocks it holds (`lead prev req = m`, see `lead_spec`) and, in
whole blocks only, `served = b * min m (n / b)` tokens. It says nothing about where `prev` and `req`
come from (pycert reads them off a trace) nor about how a real engine counts. -/
@[expose] public def TouchAt (prev req : List Nat) (b n m served : Nat) : Prop :=
  req.length = (n + b - 1) / b ∧ lead prev req = m ∧ served = b * min m (n / b)

/-- Served and still-to-prefill tokens of a trace row: at most the prompt is served. -/
public theorem served_le {prev req : List Nat} {b n m served : Nat} (h : TouchAt prev req b n m served) :
    served ≤ n := by
  obtain ⟨_, _, hs⟩ := h
  have h1 : min m (n / b) ≤ n / b := by omega
  have h2 : b * min m (n / b) ≤ b * (n / b) := Nat.mul_le_mul_left b h1
  have h3 := Nat.div_add_mod n b
  omega

end Pycert.FirstTouch
