"""Checks of the plumbing rather than of a model: the capability probe, the chaos run and the
masking audit."""
