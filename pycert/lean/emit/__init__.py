"""Lean instance files emitted from data: a whole trace as packed vectors.

Every instance file's declarations live in ``INSTANCE_NAMESPACE.<Module>``, and its one headline
theorem, ``INSTANCE_NAMESPACE.<Module>.headline``, states a library predicate applied to literals
(:class:`pycert.families.base.Instance`)."""

INSTANCE_NAMESPACE = "Pycert.Instance"
