"""Lean instance files emitted from data: a whole trace as packed vectors.

Every instance file's declarations live in ``INSTANCE_NAMESPACE.<Module>``, and its one headline
theorem, ``INSTANCE_NAMESPACE.<Module>.headline``, states a library predicate applied to literals
(:class:`pycert.families.base.Instance`)."""

INSTANCE_NAMESPACE = "Pycert.Instance"

PRELUDE = "prelude"
"""The header line of a trace's ceiling and capacity instances: without it Lean imports all of ``Init``
(517 modules) before the library, with it only what the library imports (about a hundred). Importing
is mostly waiting, not computing, on the wasm Lean (each file read goes through Node's main thread):
measured in a warm worker, a 3,000-reference ceiling file 1.6 s instead of 6.3 s, its capacity file at
two capacities 4.7 s instead of 9.5 s (docs/fixed-costs.md, the warm checker). Their headlines print the same."""

CAPACITY_ENCODING = "packed-sorted-cuts/1"
"""A capacity instance (:mod:`pycert.lean.emit.capacity`) stating the bound for caches that store every
missed block (``Pycert.Capacity.Bounded``). The layouts are named here, with no numpy, so that reading
a certificate does not import the emitter."""
CAPACITY_OPTIMUM_ENCODING = "packed-sorted-cuts-witness/1"
"""The same with Belady's hit pairs as a witness: ``Pycert.Capacity.Optimum``."""
CAPACITY_OPTIMA_ENCODING = "packed-sorted-optima/1"
"""Both cache models, each both ways: ``Pycert.Admission.Optima``, or ``Pycert.Admission.PrefixOptima`` with
the requests' first references and the prefix test."""
CAPACITY_PIECES_ENCODING = "packed-sorted-cuts-pieces/1"
"""A trace in pieces split at cuts, one module each, and their composition (:mod:`pycert.lean.emit.pieces`)."""
CAPACITY_JOINTS_ENCODING = "packed-sorted-joints/1"
"""A trace in pieces that follow one another, after references that are cuts of the bound with bypass,
each carrying the witness's pairs open across its joints (:mod:`pycert.lean.emit.joints`): the optimum with
bypass both ways, ``Pycert.Admission.OptimumA``."""
CAPACITY_CURVE_ENCODING = "packed-sorted-curve/1"
"""Many capacities in one instance (:mod:`pycert.lean.emit.curve`): the trace sorted once, both models both ways
at each capacity, each under its own headline ``<Module>.C<C>.headline``."""
