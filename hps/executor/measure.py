"""Measured times of an executed plan: per stage compute, transfer and collective, and the
pipelined step.

The per-stage terms are measured one piece at a time, each blocked until ready, over every
micro-batch of one global batch (the terms of the placement model's time_j, per iteration):
compute = the stage's forwards + backwards (the first stage's also reading the input batch onto
its devices: the model's io term), transfer = moving its inputs in and its output gradients back
in (the boundary term), sync = its planned All-Reduce. This pass does not apply
updates, so it leaves the training untouched. The step time is the wall time of whole pipelined
training steps, where stages on different devices overlap.

Every timing here and in `hps profile` is a median over rounds taken after WARM_PASSES unmeasured
ones: the first calls after a compile run slower than the rest while the host's allocator grows
its heap (docs/executor.md, "Warm rounds").
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import jax

from hps.executor.pipeline import (
    CompiledStage,
    backward_pass,
    forward_pass,
    split_batch,
)

WARM_PASSES = 5
"""Unmeasured passes before a timing's measured rounds (the first compiles). On host CPU devices
the first calls after a compile page-fault the buffers the allocator has just mapped and run
several times slower than later ones (docs/executor.md, "Warm rounds")."""


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
    """One global batch through the stages' forward and backward passes, each piece blocked and
    timed; no update applied."""
    times = {id(piece): StageTimes() for piece in pipeline}

    def timed(term, piece, fn, *args):
        out, seconds = _timed(fn, *args)
        spent = times[id(piece)]
        if term == "transfer":
            spent.transfer += seconds
        else:  # compute, and the first stage reading its input (the model's io term)
            spent.compute += seconds
        return out

    global_batch = next(iter(batch.values())).shape[0]
    residuals, losses = forward_pass(pipeline, split_batch(batch, micro_batches), timed)
    totals = backward_pass(pipeline, residuals, losses, global_batch, timed)
    for piece, local in zip(pipeline, totals):
        _, times[id(piece)].sync = _timed(piece.sync, local)
    return [times[id(piece)] for piece in pipeline]


def median_stage_terms(pipeline, batch, micro_batches, repeats: int = 3) -> list[StageTimes]:
    """Per-term medians over `repeats` measurements, after WARM_PASSES unmeasured ones (the first
    compiles)."""
    for _ in range(WARM_PASSES):
        measure_stage_terms(pipeline, batch, micro_batches)
    runs = [measure_stage_terms(pipeline, batch, micro_batches) for _ in range(repeats)]
    median = lambda values: sorted(values)[len(values) // 2]  # noqa: E731
    return [
        StageTimes(*(median([getattr(run[s], term) for run in runs]) for term in ("compute", "transfer", "sync")))
        for s in range(len(pipeline))
    ]
