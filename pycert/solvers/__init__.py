"""The optimisation side of the pooling family: instances, exact CP-SAT and HiGHS models, a replay
simulator and graph views.

:mod:`pycert.families.pooling` runs them on the committed instance (``certificates/inputs/committed.json``):
the pooled optimum, the per-instance misses under the committed routing, the best any routing can do,
and the capacitated cases where the pool is smaller than the working set (:mod:`pycert.solvers.optima`). No
single solver is trusted: CP-SAT and HiGHS solve the same models, a plain simulator replays every
schedule, networkx gives an independent matching optimum where the routing problem is a matching,
and the Lean kernel proves the lower bounds.
"""
