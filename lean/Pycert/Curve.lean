module

prelude
public import Pycert.SortedAdmission

/-!
# Running counts the kernel computes: a curve of capacities in one instance

An instance of `Pycert.SortedTrace` packs, checks and sorts a trace once; each capacity then adds a cut
plane and a witness per cache model (`Pycert.SortedOptimum`, `Pycert.SortedAdmission`), and each of
those is tested against its running count (`cutsOK`). Written out as literals, the running counts
were most of what a capacity added to an instance (dozens of planes of `2 ^ M` bits, each elaborated
from its digits); here the kernel computes them instead, so that one instance can hold many
capacities:

* `runP M w c`: the running count of the bits of `c`, in `w` planes, one plane at a time: each bit of
  the count is the parity of the carries into it before each place, a prefix XOR (`M` rounds of
  doubling, three operations on whole planes a round).

A curve's instance imports this file alone: it brings the whole sorted-trace library with it.

What this file does not say: that `runP` counts. Nothing rests on it: every use is tested by `cutsOK`
like a literal, and a wrong count (too few planes, a wrong round) fails that test.
-/

namespace Pycert.Curve

/-- Prefix XOR from round `k` on, `r` rounds: each XORs into `x` the same plane moved `2 ^ k` places up,
kept below the places of `ones`; after rounds `0 … M - 1`, place `t` holds the XOR of the places
`t - 2 ^ M < u ≤ t`. -/
@[expose] public noncomputable def pxor (ones : Nat) : Nat → Nat → Nat → Nat
  | _, 0, x => x
  | k, r + 1, x => pxor ones (k + 1) r (x ^^^ ((x <<< 2 ^ k) &&& ones))

/-- The planes of a running count from one bit up: `d` marks the places whose own bit carries into this
bit. The bit at `t` is the parity of the carries before `t` (the prefix XOR moved one place up), and the
places that carry on into the next bit are those of `d` where this bit is already set. -/
@[expose] public noncomputable def runFrom (M ones : Nat) : Nat → Nat → List Nat
  | 0, _ => []
  | w + 1, d => (fun E => E :: runFrom M ones w (d &&& E)) ((pxor ones 0 M d <<< 1) &&& ones)

/-- The running count of `c` on `2 ^ M` places, in `w` planes: at place `t`, the number of bits of `c`
below `t`, bit by bit (bit 0 is the parity of the bits before `t`; a bit of `c` carries into bit `b + 1`
where bits `0 … b` of the count are all set). The places run to `2 ^ M` itself, which a trace of
exactly `2 ^ M` references reads. The masks are shifts, not powers: the kernel computes `2 ^ e` only for
`e ≤ 2 ^ 24` (DEVELOPERS.md). -/
@[expose] public noncomputable def runP (M w c : Nat) : List Nat :=
  runFrom M ((1 <<< (2 ^ M + 1)) - 1) w c

end Pycert.Curve
