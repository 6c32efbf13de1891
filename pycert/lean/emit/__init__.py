"""Lean instance files emitted from data: a whole trace as packed vectors, the pooling wall."""
