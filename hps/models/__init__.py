"""Flax NNX models of zoo workloads, one module per layer-table row (see `base` for the contract),
the registry from zoo names to them, and layer tables derived from any such model."""

from hps.models.base import LayeredModel, parameter_bytes, per_example_cross_entropy

__all__ = ["LayeredModel", "parameter_bytes", "per_example_cross_entropy"]
