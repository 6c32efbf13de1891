"""Exact cache figures of a trace: LRU and Belady/MIN at every capacity, the offload report, the plot."""
