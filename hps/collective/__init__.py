"""Collective model: hierarchical All-Reduce on multi-dimensional networks (Themis)."""
