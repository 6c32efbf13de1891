module

prelude
public import Pycert.Lists
public import Pycert.Digits
public import Pycert.Pigeonhole
public import Pycert.Cache
public import Pycert.Count
public import Pycert.CacheSteps
public import Pycert.Capacity
public import Pycert.Realise
public import Pycert.Admission
public import Pycert.PrefixCache
public import Pycert.AdmissionOptimum
public import Pycert.Pieces
public import Pycert.Ceiling
public import Pycert.Pooling
public import Pycert.Isolation
public import Pycert.FirstTouch
public import Pycert.FirstTouchTrace
public import Pycert.Packed
public import Pycert.Route
public import Pycert.PackedTrace
public import Pycert.Shards
public import Pycert.Bits
public import Pycert.Transpose
public import Pycert.Planes
public import Pycert.SortedTrace
public import Pycert.SortedOptimum
public import Pycert.SortedAdmission
public import Pycert.Curve
public import Pycert.KeyedTrace
public import Pycert.IsolationCost
public import Pycert.Joints
public import Pycert.SortedJoints
public import Pycert.Fleet

/-!
# pycert: the theorem library

The root of `lean_lib Pycert`: importing it imports every file. The list facts and the cache model
come first, then one file per family of claims, then the packed vectors a whole-trace instance
rests on, the shards a trace too big for one Lean process is checked in (`Shards`), the sorted trace at a
capacity, many capacities to one instance (`Curve`), and last what a per-tenant salt costs at a capacity
(`IsolationCost`), stated on two sorted instances, the second a trace keyed by tenant (`KeyedTrace`); then a trace in pieces both ways, the open pairs
carried across each joint (`Joints`, `SortedJoints`); last, a fleet of caches behind a router (`Fleet`: the union bound
and the routed optimum, stated on capacity instances). It is a `prelude` file, so it adds no import of all of `Init` beyond what the files
themselves import (without it, `pycert audit` loaded all 517 modules of the toolchain, not 100).
-/
