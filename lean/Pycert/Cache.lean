module

prelude
public import Init.Data.List.Basic

/-!
# The cache model: demand-fetch caches under any policy

A demand-fetch cache: on a reference to block `x` it hits iff `x` is cached; on a miss `x` is
inserted. What is evicted is up to the policy, which sees the cache and the whole history; the
capacity is any bound or none. Nothing is ever prefetched: a block enters the cache only by missing.
The hit ceiling (`Pycert.Ceiling`) and the pooling wall (`Pycert.Pooling`) are theorems about it.

The names live in namespace `Pycert.Ceiling`, where they were declared before this file was split
out: the instance files the committed certificates name (and hash) refer to `Pycert.Ceiling.hits`
and `Pycert.Ceiling.Policy`.
-/

namespace Pycert.Ceiling

/-- A demand-fetch cache policy: an optional capacity and an arbitrary eviction rule. -/
public structure Policy where
  /-- `none`: unbounded; `some k`: after a miss at most `k` blocks stay cached. -/
  cap : Option Nat
  /-- On a miss of `x` with cache `c` and history `h` (most recent first), `keep c h x y` says whether
  the cached block `y` stays. Any function: eviction is arbitrary. -/
  keep : List Nat → List Nat → Nat → Nat → Bool

/-- Truncate to the capacity, if there is one. -/
@[expose] public noncomputable def bound : Option Nat → List Nat → List Nat
  | none, l => l
  | some k, l => l.take k

/-- The cache after a miss of `x`: `x` in front of the blocks the policy keeps, cut to capacity. -/
@[expose] public noncomputable def admit (P : Policy) (c h : List Nat) (x : Nat) : List Nat :=
  bound P.cap (x :: c.filter (P.keep c h x))

/-- Hits of policy `P` on the trace `r`, starting from cache `c` and history `h`. -/
@[expose] public noncomputable def runHits (P : Policy) : List Nat → List Nat → List Nat → Nat
  | _, _, [] => 0
  | c, h, x :: xs => if x ∈ c then runHits P c (x :: h) xs + 1 else runHits P (admit P c h x) (x :: h) xs

/-- Hits of policy `P` on the trace `r`, from a cold cache. -/
@[expose] public noncomputable def hits (P : Policy) (r : List Nat) : Nat := runHits P [] [] r

/-- Misses of policy `P` on the trace `r`, from a cold cache. -/
@[expose] public noncomputable def misses (P : Policy) (r : List Nat) : Nat := r.length - hits P r

/-- The unbounded cache: no capacity, never evicts. -/
@[expose] public noncomputable def unbounded : Policy := ⟨none, fun _ _ _ _ => true⟩

end Pycert.Ceiling
