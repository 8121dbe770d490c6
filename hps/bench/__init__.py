"""Benchmarks: the jitted, batched model vs the plain-Python reference, side by side in one run."""
