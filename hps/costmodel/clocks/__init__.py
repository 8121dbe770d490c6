"""Clocks of the parallel-plan model: seconds per layer on one device of a tensor-parallel group."""
