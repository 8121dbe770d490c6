"""Executor (docs/executor.md): a plan runs as real JAX training — stage meshes of data- and
tensor-parallel devices, embedding tables sharded by rows, micro-batches in 1F1B order, the
planned hierarchical All-Reduce of each stage's dense gradients, and measurements beside the
model's prediction."""
