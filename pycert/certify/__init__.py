"""Certificates: the schema, provenance, offline verification and the HTML report."""
