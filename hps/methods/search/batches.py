"""Fixed-size batches of schedules scored inside one jitted loop, with a running best carried along."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from hps.costmodel.schedule.cost import SegmentTable
from hps.costmodel.schedule.params import PlacementParams
from hps.methods.search.scoring import (
    RANK_FEASIBLE,
    Scored,
    batch_best,
    merge,
    nothing,
    score,
)

# make_batch(batch, index) -> schedules (B, L) int32 of batch number `batch`, whose schedules
# have the running numbers index (B,) int32 = batch · B + 0..B−1
MakeBatch = Callable[[jnp.ndarray, jnp.ndarray], jnp.ndarray]


def best_over_batches(
    table: SegmentTable, params: PlacementParams, make_batch: MakeBatch, batch_size: int, count
) -> Scored:
    """The best of schedules 0..count−1, made `batch_size` at a time (count traced: one compile
    serves all); the rows of the last batch past `count` are not candidates."""
    offsets = jnp.arange(batch_size, dtype=jnp.int32)

    def body(batch, best):
        index = batch * batch_size + offsets
        valid = index < count
        scored = score(table, params, make_batch(batch, index), valid, penalty_needed=best.rank != RANK_FEASIBLE)
        return merge(best, batch_best(scored))

    n_batches = (count + batch_size - 1) // batch_size
    return jax.lax.fori_loop(0, n_batches, body, nothing(params.max_layers))
