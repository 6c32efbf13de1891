module

prelude
public import Pycert.Admission
import Init.Omega

/-!
# Prefix caches

vLLM, SGLang and the engines users run hit only the longest cached prefix of a request's blocks: once
one block of a request misses, the rest of the request is computed, cached or not. Here the trace's
references are grouped into requests by `first` (`first j`: reference `j` starts a request; reference
`0` always does), and a prefix cache is a cache of `C` blocks with bypass
(`Pycert.Admission.Run`) whose hits are counted that way (`PHit`): a reference hits when its block is
held and it starts its request or the reference before it hit. So every prefix cache of `C` blocks,
with or without bypass, is a cache of `C` blocks with bypass, and hits no more often
(`prefixHits_le`); every bound of `Pycert.Admission` bounds it.

What this file does not model: the cache's start state (empty), blocks of different sizes, and the
room a request's blocks need while it is computed. It does not say that the blocks of a request
form a path in a tree (prefix-closed traces); nothing here needs it.
-/

namespace Pycert.PrefixCache
open Pycert.Admission

/-- Reference `j` hits in the prefix cache that holds `K t` after `t` references, over the requests
that `first` starts: its block is held when it comes, and it starts its request or the reference
before it hit too. -/
@[expose] public def PHit (r : List Nat) (first : Nat → Bool) (K : Nat → List Nat) : Nat → Prop
  | 0 => nth r 0 ∈ K 0
  | j + 1 => nth r (j + 1) ∈ K (j + 1) ∧ (first (j + 1) = true ∨ PHit r first K j)

/-- The hits of a prefix cache: the references of `r` that `PHit` marks. -/
@[expose] public noncomputable def prefixHits (r : List Nat) (first : Nat → Bool) (K : Nat → List Nat) : Nat :=
  count (PHit r first K) r.length

theorem mem_of_phit {r : List Nat} {first : Nat → Bool} {K : Nat → List Nat} : ∀ {j : Nat},
    PHit r first K j → nth r j ∈ K j
  | 0, h => h
  | _ + 1, h => h.1

/-- **A prefix cache hits no more than the cache it is.** -/
public theorem prefixHits_le (r : List Nat) (first : Nat → Bool) (K : Nat → List Nat) :
    prefixHits r first K ≤ hits r K :=
  count_mono fun _ _ h => mem_of_phit h

/-- **Prefix hits, one reference after another.** If every reference in `E` has its block held and,
unless it starts its request, follows a reference in `E`, every reference in `E` is a prefix hit. -/
public theorem phit_of {r : List Nat} {first : Nat → Bool} {K : Nat → List Nat} (E : Nat → Prop)
    (held : ∀ j, E j → nth r j ∈ K j) (pre : ∀ j, E (j + 1) → first (j + 1) = true ∨ E j) :
    ∀ j, E j → PHit r first K j
  | 0, h => held 0 h
  | j + 1, h => ⟨held _ h, (pre j h).imp id (phit_of E held pre j)⟩

/-- **The optimum of a prefix cache, both ways.** The trace `r` has `n` references; no prefix cache of
`C` blocks over the requests that `first` starts, with or without bypass, hits more than
`h` times on it, and one hits exactly `h` times. It says nothing of a cache that starts non-empty or
holds blocks of different sizes, nor of the room a running request's blocks need; the cache reaching
`h` may read the whole trace (it is offline). -/
@[expose] public def PrefixOptimum (r : List Nat) (first : Nat → Bool) (n C h : Nat) : Prop :=
  r.length = n ∧ (∀ K : Nat → List Nat, Run r C K → prefixHits r first K ≤ h) ∧
    ∃ K : Nat → List Nat, Run r C K ∧ prefixHits r first K = h

end Pycert.PrefixCache
