"""Single-type plans: every layer on one resource type, one plan per real type; the best wins."""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp

from hps.placement.model.cost import SegmentTable
from hps.placement.model.params import PlacementParams
from hps.placement.search.result import SearchResult
from hps.placement.search.scoring import (
    Scored,
    batch_best,
    prepare,
    prepare_table,
    real_sizes,
    score,
    to_result,
)


def single_type_schedules(params: PlacementParams) -> jnp.ndarray:
    """(T, L) int32: row t puts every layer on type t (rows of padded types included)."""
    types = jnp.arange(params.max_types, dtype=jnp.int32)
    return jnp.broadcast_to(types[:, None], (params.max_types, params.max_layers))


def score_single_types(table: SegmentTable, params: PlacementParams) -> Scored:
    """Scores (T,) of the single-type plans; padded types are not candidates."""
    return score(table, params, single_type_schedules(params), valid=params.type_mask)


@jax.jit
def _best_single(table: SegmentTable, params: PlacementParams) -> Scored:
    return batch_best(score_single_types(table, params))


def single(
    params: PlacementParams,
    *,
    key=None,
    budget=None,
    table: SegmentTable | None = None,
    warmup: bool = False,
) -> SearchResult:
    """The cheapest feasible single-type plan (or the least-bad one). key and budget are unused;
    evaluations = the number of real types."""
    del key, budget
    started = time.perf_counter()
    n_layers, n_types = real_sizes(params)
    make_table = prepare_table(params, warmup=warmup)
    search = prepare(_best_single, params, warmup=warmup)
    if warmup:
        started = time.perf_counter()
    table = make_table(params) if table is None else table
    return to_result("single", search(table, params), n_layers, n_types, started)
