module

prelude
public import Pycert.SortedAdmission
import Init.Omega

/-!
# Running counts the kernel computes: a curve of capacities in one instance

An instance of `Pycert.SortedTrace` packs, checks and sorts a trace once; each capacity then adds a cut
plane and a witness per cache model (`Pycert.SortedOptimum`, `Pycert.SortedAdmission`), and each of
those is tested against its running count (`cutsOK`). Written out as literals, the running counts
were most of what a capacity added to an instance (dozens of planes of `2 ^ M` bits, each elaborated
from its digits); here the kernel computes them instead, so that one instance can hold many
capacities:

* `runP M w c`: the running count of the bits of `c`, in `w` planes, by `M` rounds of doubling
  (Kogge–Stone: round `k` adds the planes shifted by `2 ^ k` places), one ripple-carry sum a round.

What this file does not say: that `runP` counts. Nothing rests on it: every use is tested by `cutsOK`
like a literal, and a wrong count (too few planes, a wrong round) fails that test.
-/

namespace Pycert.Curve
open Pycert.SortedOptimum

/-- `rounds ones k r P`: `r` rounds of doubling from round `k` on, each adding to the planes `P` the same
planes moved `2 ^ k` places up, kept below the places of `ones`. -/
@[expose] public noncomputable def rounds (ones : Nat) : Nat → Nat → List Nat → List Nat
  | _, 0, P => P
  | k, r + 1, P => rounds ones (k + 1) r (addP P (P.map fun p => (p <<< 2 ^ k) &&& ones) 0).1

/-- The running count of `c` on `2 ^ M` places, in `w` planes: at place `t`, the bits of `c` below `t`
(after `M` rounds the planes hold the count at and below each place; moved one place up, below it).
The places run to `2 ^ M` itself, which a trace of exactly `2 ^ M` references reads. The masks are
shifts, not powers: the kernel computes `2 ^ e` only for `e ≤ 2 ^ 24` (DEVELOPERS.md). -/
@[expose] public noncomputable def runP (M w c : Nat) : List Nat :=
  (rounds ((1 <<< (2 ^ M + 1)) - 1) 0 M (c :: List.replicate (w - 1) 0)).map
    fun p => (p <<< 1) &&& ((1 <<< (2 ^ M + 1)) - 1)

end Pycert.Curve
