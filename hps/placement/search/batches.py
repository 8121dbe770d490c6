"""Fixed-size batches of schedules scored inside one jitted loop, with a running best carried along."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from hps.placement.model.cost import SegmentTable
from hps.placement.model.params import PlacementParams
from hps.placement.search.scoring import (
    RANK_FEASIBLE,
    Scored,
    batch_best,
    merge,
    nothing,
    score,
)

# make_batch(batch index) -> (schedules (B, L) int32, valid (B,) bool)
MakeBatch = Callable[[jnp.ndarray], tuple[jnp.ndarray, jnp.ndarray]]


def best_over_batches(table: SegmentTable, params: PlacementParams, make_batch: MakeBatch, n_batches) -> Scored:
    """The best schedule over batches 0..n_batches−1 (traced count: one compile serves all)."""

    def body(index, best):
        schedules, valid = make_batch(index)
        scored = score(table, params, schedules, valid, penalty_needed=best.rank != RANK_FEASIBLE)
        return merge(best, batch_best(scored))

    return jax.lax.fori_loop(0, n_batches, body, nothing(params.max_layers))
