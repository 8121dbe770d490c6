"""Measured times of an executed plan: per stage compute, transfer and collective, and the
pipelined step.

The per-stage terms are measured one piece at a time, each blocked until ready, over every
micro-batch of one global batch (the terms of the placement model's time_j, per iteration):
compute = the stage's forwards + backwards (the first stage's also reading the input batch onto
its devices: the model's io term), transfer = moving its inputs in and its output gradients back
in (the boundary term), sync = its planned All-Reduce. This pass does not apply
updates, so it leaves the training untouched. The step time is the wall time of whole pipelined
training steps, where stages on different devices overlap.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import jax
import jax.numpy as jnp

from hps.executor.pipeline import CompiledStage, split_batch
from hps.executor.stages import split_float


@dataclass
class StageTimes:
    """Seconds per iteration of one stage, by term."""

    compute: float = 0.0
    transfer: float = 0.0
    sync: float = 0.0

    @property
    def time(self) -> float:
        return self.compute + self.transfer + self.sync


def _timed(fn, *args):
    start = time.perf_counter()
    out = jax.block_until_ready(fn(*args))
    return out, time.perf_counter() - start


def measure_stage_terms(pipeline: list[CompiledStage], batch: dict, micro_batches: int) -> list[StageTimes]:
    """One global batch through the stages, piece by piece, each blocked; no update applied."""
    times = [StageTimes() for _ in pipeline]
    global_batch = next(iter(batch.values())).shape[0]
    kept, losses = [], []
    for x in split_batch(batch, micro_batches):
        residuals = []
        for piece, spent in zip(pipeline, times):
            x, seconds = _timed(jax.device_put, x, piece.stage.batch_sharding)
            if piece is pipeline[0]:
                spent.compute += seconds  # reading the input: the model's io term, inside t(l, t)
            else:
                spent.transfer += seconds
            x_float, x_other = split_float(x)
            (y, y_other, res), seconds = _timed(piece.forward, piece.stage.params, x_float, x_other)
            spent.compute += seconds
            residuals.append(res)
            x = {**y, **y_other} if isinstance(y, dict) else y
        kept.append(residuals)
        losses.append(y)
    totals = [None] * len(pipeline)
    for m in reversed(range(len(kept))):
        dy = jax.tree.map(lambda v: jnp.full_like(v, 1.0 / global_batch), losses[m])
        for s in reversed(range(len(pipeline))):
            piece, spent = pipeline[s], times[s]
            dy, seconds = _timed(jax.device_put, dy, piece.stage.batch_sharding)
            spent.transfer += seconds
            (grads, dy), seconds = _timed(piece.backward, kept[m][s], dy)
            spent.compute += seconds
            if totals[s] is not None:
                grads, seconds = _timed(piece.accumulate, totals[s], grads)
                spent.compute += seconds
            totals[s] = grads
    for piece, spent, local in zip(pipeline, times, totals):
        _, spent.sync = _timed(piece.sync, local)
    return times


def median_stage_terms(pipeline, batch, micro_batches, repeats: int = 3) -> list[StageTimes]:
    """Per-term medians over `repeats` measurements (after one unmeasured pass that compiles)."""
    measure_stage_terms(pipeline, batch, micro_batches)
    runs = [measure_stage_terms(pipeline, batch, micro_batches) for _ in range(repeats)]
    median = lambda values: sorted(values)[len(values) // 2]  # noqa: E731
    return [
        StageTimes(*(median([getattr(run[s], term) for run in runs]) for term in ("compute", "transfer", "sync")))
        for s in range(len(pipeline))
    ]
