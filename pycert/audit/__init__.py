"""The axiom audit of what the kernel accepted: the .olean reader, the audit, #print axioms, SARIF."""
