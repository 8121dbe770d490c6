"""Greedy per layer: from the best single-type plan, sweep the layers in order and give each the
type that ranks best with the rest fixed; repeat sweeps until one changes nothing."""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp

from hps.costmodel.schedule.cost import SegmentTable, segment_table
from hps.costmodel.schedule.params import PlacementParams
from hps.errors import ConfigError
from hps.methods.search.scoring import (
    Scored,
    SearchCall,
    batch_best,
    found,
    merge,
    prepare,
    prepare_table,
    real_sizes,
    score,
    search_method,
)
from hps.methods.search.single import score_single_types

MAX_SWEEPS = 16


@jax.jit
def _start(table: SegmentTable, params: PlacementParams) -> Scored:
    """The best single-type plan, feasible or (by the graded penalty) not."""
    return batch_best(score_single_types(table, params))


@jax.jit
def _sweep(table: SegmentTable, params: PlacementParams, current: Scored, n_layers) -> tuple[Scored, jnp.ndarray]:
    """One pass over layers 0..n_layers−1, each scoring all T types for that layer in one batch.
    Returns the new best and whether it differs from `current`."""
    types = jnp.arange(params.max_types, dtype=jnp.int32)

    def per_layer(layer, best):
        candidates = jnp.broadcast_to(best.schedule, (params.max_types, params.max_layers))
        candidates = candidates.at[:, layer].set(types)
        return merge(best, batch_best(score(table, params, candidates, valid=params.type_mask)))

    best = jax.lax.fori_loop(0, n_layers, per_layer, current)
    return best, jnp.any(best.schedule != current.schedule)


@search_method
def greedy(params: PlacementParams, call: SearchCall, *, max_sweeps: int = MAX_SWEEPS):
    """Greedy per-layer search. budget (optional) caps evaluations: a sweep (T·L of them) starts
    only if it fits. evaluations = T (single-type start) + T·L per sweep run. key is unused."""
    started, budget, warmup = call.started, call.budget, call.warmup
    n_layers, n_types = real_sizes(params)
    if budget is not None and budget < n_types:
        problem = f"the greedy search needs at least {n_types} evaluations (its single-type starts), got {budget}"
        raise ConfigError("evaluations", "", problem)
    layers = jnp.int32(n_layers)
    make_table = prepare_table(params, warmup=warmup) if call.table is None else None
    start = prepare(_start, params, warmup=warmup, table=call.table)
    sweep = _sweep
    if warmup:
        shape = jax.eval_shape(segment_table, params) if call.table is None else call.table
        placeholder = jax.eval_shape(_start, shape, params)
        sweep = prepare(_sweep, params, placeholder, layers, warmup=True, table=call.table)
        started = time.perf_counter()
    table = make_table(params) if call.table is None else call.table

    best = start(table, params)
    evaluations = n_types
    per_sweep = n_types * n_layers
    for _ in range(max_sweeps):
        if budget is not None and evaluations + per_sweep > budget:
            break
        best, changed = sweep(table, params, best, layers)
        evaluations += per_sweep
        if not bool(changed):
            break
    return found("greedy", best, n_layers, evaluations, started)
