"""pycert: Lean-backed proofs and checkable certificates for claims about LLM inference caches."""

__version__ = "0.1.0"
