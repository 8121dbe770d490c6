"""Executor (docs/executor.md): a plan runs as real JAX training — stage meshes, the planned
hierarchical All-Reduce of each stage's gradients, and measurements beside the model's prediction."""
