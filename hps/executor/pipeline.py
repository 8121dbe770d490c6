"""Pipelined training of an executed plan: micro-batches through the stages, then the planned
gradient All-Reduce and an optax step per stage.

One training step on a global batch of B samples split into M micro-batches, each stage's
forwards F(s, m) and backwards B(s, m) dispatched in the 1F1B order (`one_f_one_b`): stage s runs
min(S − 1 − s, M) forwards, then alternates one forward and one backward, then the remaining
backwards (PipeDream-Flush / Megatron's non-interleaved schedule, the placement model's).
- F(s, m): micro-batch m's activation moves to stage s's mesh (`hps.executor.transfer.hand_off`:
  `jax.device_put` within a process, a collective over both meshes across processes), and stage s
  runs its forward. Dispatch is asynchronous, so stages on different devices overlap.
- B(s, m): the last stage starts from dloss = 1/B per example (the loss is the mean over the B
  samples); each stage applies its stored vjp and its input gradient moves back. Each stage sums
  its devices' local gradients over the micro-batches.
Then per stage: the hierarchical All-Reduce of the summed gradients and the optax update.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import optax

from hps.executor.stages import Stage, compile_stage, split_float
from hps.executor.transfer import hand_off


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
            x = run(term, piece, hand_off, x, piece.stage.batch_sharding)
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
            dy = run("transfer", piece, hand_off, dy, piece.stage.batch_sharding)
            grads, dy = run("compute", piece, piece.backward, residuals[m][s], dy)
            totals[s] = grads if totals[s] is None else run("compute", piece, piece.accumulate, totals[s], grads)
    return totals


def stage_order(stage: int, stages: int, micro_batches: int) -> list[tuple[str, int]]:
    """Stage `stage`'s 1F1B sequence of ("F", m) and ("B", m) over M micro-batches."""
    warmup = min(stages - 1 - stage, micro_batches)
    order = [("F", m) for m in range(warmup)]
    for m in range(micro_batches - warmup):
        order += [("F", warmup + m), ("B", m)]
    return order + [("B", m) for m in range(micro_batches - warmup, micro_batches)]


def one_f_one_b(stages: int, micro_batches: int) -> list[tuple[str, int, int]]:
    """A dispatch order of every (kind, stage, micro-batch) that keeps each stage's 1F1B
    sequence and every dependency (F(s, m) after F(s−1, m); B(s, m) after F(s, m) and
    B(s+1, m)): clock ticks in which each stage, first to last, runs its next op if ready."""
    orders = [stage_order(s, stages, micro_batches) for s in range(stages)]
    done, position, dispatched = set(), [0] * stages, []
    while len(dispatched) < 2 * stages * micro_batches:
        ready = []
        for s in range(stages):
            if position[s] == len(orders[s]):
                continue
            kind, m = orders[s][position[s]]
            needs = [("F", s - 1, m)] if kind == "F" and s > 0 else []
            if kind == "B":
                needs = [("F", s, m)] + ([("B", s + 1, m)] if s + 1 < stages else [])
            if all(n in done for n in needs):
                ready.append((kind, s, m))
        if not ready:
            raise RuntimeError("1F1B order stuck")  # unreachable: 1F1B has no cycles
        for op in ready:
            done.add(op)
            position[op[1]] += 1
        dispatched += ready
    return dispatched


def train_step(pipeline: list[CompiledStage], batch: dict, micro_batches: int) -> jax.Array:
    """One step on the global `batch` in the 1F1B order: updates every stage's params in place;
    returns the mean loss over the batch (a scalar on the last stage's mesh)."""
    global_batch = next(iter(batch.values())).shape[0]
    micro = split_batch(batch, micro_batches)
    inputs, residuals, losses, grads_in = {}, {}, {}, {}
    totals = [None] * len(pipeline)
    for kind, s, m in one_f_one_b(len(pipeline), micro_batches):
        piece = pipeline[s]
        if kind == "F":
            x = hand_off(inputs.pop((s, m), micro[m]), piece.stage.batch_sharding)
            y, y_other, residuals[s, m] = piece.forward(piece.stage.params, *split_float(x))
            if s + 1 < len(pipeline):
                inputs[s + 1, m] = {**y, **y_other} if isinstance(y, dict) else y
            else:
                losses[m] = y
            continue
        if s + 1 == len(pipeline):
            dy = jax.tree.map(lambda v: jnp.full_like(v, 1.0 / global_batch), losses[m])
        else:
            dy = grads_in.pop((s, m))
        dy = hand_off(dy, piece.stage.batch_sharding)
        grads, dx = piece.backward(residuals.pop((s, m)), dy)
        totals[s] = grads if totals[s] is None else piece.accumulate(totals[s], grads)
        if s > 0:
            grads_in[s - 1, m] = dx
    for piece, local in zip(pipeline, totals):
        stage = piece.stage
        stage.params, stage.opt_state = piece.update(stage.params, stage.opt_state, piece.sync(local))
    return jnp.mean(jnp.concatenate([losses[m] for m in range(micro_batches)]))
