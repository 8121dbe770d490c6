"""The pipeline schedule of a parallel plan: 1F1B, plain or interleaved (docs/parallel-plans.md,
"The pipeline schedule"): how many stage times an iteration takes, and how many micro-batches'
activations each stage holds at its peak.
"""

from __future__ import annotations

import numpy as np


def bubble_slots(stages: int, micro_batches: int, virtual_stages: int = 1) -> float:
    """Stage times per iteration of a 1F1B pipeline: M + (S − 1)/v, v model chunks a device
    (Megatron-LM's interleaved schedule, Narayanan et al. 2021, Sec. 2.2.2; v = 1: plain 1F1B)."""
    return micro_batches + (stages - 1) / virtual_stages


def in_flight_chunks(position, stages: int, micro_batches: int, virtual_stages: int = 1):
    """Model chunks of micro-batches whose activations the stage at `position` (0-based, scalar
    or array) of `stages` holds at its peak, in units of 1/v of a micro-batch. Plain 1F1B (v = 1):
    min(S − p, M) micro-batches. Interleaved (v > 1): Megatron-LM's warm-up of
    2(S − p − 1) + (v − 1)S forward chunks, then one more in the steady state, at most all M·v
    chunks (megatron/core/pipeline_parallel/schedules.py, forward_backward_pipelining_with_
    interleaving; for p = 0 it is S + (S − 1)/v micro-batches, Korthikanti et al. 2022, Sec. 4.2.3)."""
    position = np.asarray(position)
    if virtual_stages == 1:
        return np.minimum(stages - position, micro_batches)
    warm = 2 * (stages - position - 1) + (virtual_stages - 1) * stages + 1
    return np.minimum(warm, micro_batches * virtual_stages)
