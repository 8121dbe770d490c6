"""Pipelined training of an executed plan: micro-batches through the stages, then the planned
gradient All-Reduce and an optax step per stage.

One training step on a global batch of B samples split into M micro-batches:
1. forward, in pipeline order (micro-batch m through stage 0, 1, …): each stage's output moves to
   the next stage's mesh with `jax.device_put`. Dispatch is asynchronous, so stage s works on
   micro-batch m+1 while stage s+1 works on m when they sit on different devices.
2. backward, in reverse: the last stage starts from dloss = 1/B per example (the loss is the mean
   over the B samples), each stage applies its stored vjp, and its input gradient moves back.
   Each stage sums its devices' local gradients over the micro-batches.
3. per stage: the hierarchical All-Reduce of the summed gradients, then the optax update.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import optax

from hps.executor.stages import Stage, compile_stage, split_float


@dataclass
class CompiledStage:
    """A Stage with its jitted forward, backward, sync, update and accumulate."""

    stage: Stage
    forward: object
    backward: object
    sync: object
    update: object
    accumulate: object


def compile_pipeline(stages: list[Stage], optimizer: optax.GradientTransformation) -> list[CompiledStage]:
    return [CompiledStage(stage, *compile_stage(stage, optimizer)) for stage in stages]


def split_batch(batch: dict, micro_batches: int) -> list[dict]:
    """The global batch dict as `micro_batches` equal consecutive slices."""
    n = next(iter(batch.values())).shape[0]
    size = n // micro_batches
    return [jax.tree.map(lambda v, i=i: v[i * size : (i + 1) * size], batch) for i in range(micro_batches)]


def call(term: str, piece: CompiledStage, fn, *args):
    """How the passes run each piece: plainly (asynchronous dispatch). `hps.executor.measure`
    passes a timing `call` instead; `term` says what the piece is: "input" (the first stage
    reading the batch), "transfer" (moving activations or their gradients between meshes) or
    "compute"."""
    return fn(*args)


def forward_pass(pipeline: list[CompiledStage], micro: list[dict], run=call):
    """Forward of every micro-batch through every stage. Returns (residuals[m][s], losses[m]):
    the per-device vjp residuals and the per-example losses (on the last stage's mesh)."""
    residuals, losses = [], []
    for x in micro:
        kept = []
        for piece in pipeline:
            term = "input" if piece is pipeline[0] else "transfer"
            x = run(term, piece, jax.device_put, x, piece.stage.batch_sharding)
            x_float, x_other = split_float(x)
            y, y_other, res = run("compute", piece, piece.forward, piece.stage.params, x_float, x_other)
            kept.append(res)
            x = {**y, **y_other} if isinstance(y, dict) else y
        residuals.append(kept)
        losses.append(y)  # the last stage's differentiable output: the per-example loss
    return residuals, losses


def backward_pass(pipeline: list[CompiledStage], residuals, losses, global_batch: int, run=call):
    """Backward of every micro-batch, last first. Returns each stage's device-local gradient
    sums (stacked along a leading device axis), not yet All-Reduced."""
    totals = [None] * len(pipeline)
    for m in reversed(range(len(residuals))):
        dy = jax.tree.map(lambda v: jnp.full_like(v, 1.0 / global_batch), losses[m])
        for s in reversed(range(len(pipeline))):
            piece = pipeline[s]
            dy = run("transfer", piece, jax.device_put, dy, piece.stage.batch_sharding)
            grads, dy = run("compute", piece, piece.backward, residuals[m][s], dy)
            totals[s] = grads if totals[s] is None else run("compute", piece, piece.accumulate, totals[s], grads)
    return totals


def train_step(pipeline: list[CompiledStage], batch: dict, micro_batches: int) -> jax.Array:
    """One step on the global `batch`: updates every stage's params in place; returns the mean
    loss over the batch (a scalar on the last stage's mesh)."""
    global_batch = next(iter(batch.values())).shape[0]
    residuals, losses = forward_pass(pipeline, split_batch(batch, micro_batches))
    totals = backward_pass(pipeline, residuals, losses, global_batch)
    for piece, local in zip(pipeline, totals):
        stage = piece.stage
        stage.params, stage.opt_state = piece.update(stage.params, stage.opt_state, piece.sync(local))
    return jnp.mean(jnp.concatenate(losses))
