"""Flax NNX models of zoo workloads, one module per layer-table row (see `base` for the contract)."""

from hps.models.base import LayeredModel, per_example_cross_entropy

__all__ = ["LayeredModel", "per_example_cross_entropy"]
