"""The placement model for one schedule per instance, without a segment table.

`segment_table` pays O(L²·T·K) once per instance to score millions of schedules of it. When
each instance sees only a few schedules (reinforcement learning over thousands of instances),
provisioning just the stages a schedule has, O(L·(L + K)), is far cheaper. Same equations,
same `provision` and `score_stages`, so both paths agree.
"""

from __future__ import annotations

import jax.numpy as jnp

from hps.placement.model.allreduce import allreduce_table
from hps.placement.model.cost import (
    FEASIBLE,
    ScheduleResult,
    _stage_structure,
    layer_time,
    provision,
    score_stages,
)
from hps.placement.model.params import PlacementParams


def stage_values(params: PlacementParams, alpha, beta, types, first):
    """Provision the stage that would end at each layer l (layers first[l]..l on types[l]).

    types, first: (N, L) int. alpha, beta: (T, K) from `allreduce_table`. Returns replicas, time
    (s per iteration), throughput (samples/s), $/hour and reason, each (N, L)."""
    idx = jnp.arange(params.max_layers)
    inside = ((first[..., None] <= idx) & (idx <= idx[:, None])).astype(jnp.float32)  # (N, L, L')
    own_type_time = layer_time(params).T[types]  # (N, L, L'): time of layer l' on types[l]
    time_sum = jnp.sum(inside * own_type_time, axis=-1)
    stage_sum = lambda values: inside @ values  # noqa: E731
    n_layers = jnp.sum(params.layer_mask)
    act_in = jnp.where(first > 0, params.act_bytes[jnp.maximum(first - 1, 0)], 0.0)
    act_out = jnp.where(idx < n_layers - 1, params.act_bytes, 0.0)
    replicas, time, reason = provision(
        params,
        time_sum,
        act_in + act_out,
        stage_sum(params.dense_param_bytes),
        stage_sum(params.sparse_param_bytes),
        stage_sum(params.act_bytes),
        alpha,
        beta,
        types,
    )
    price = params.price_per_hour[types]
    return replicas.astype(jnp.float32), time, params.batch / time, replicas * price, reason


def evaluate_direct(params: PlacementParams, schedules, alpha=None, beta=None) -> ScheduleResult:
    """Score schedules (N, L) of one instance; pass (alpha, beta) = allreduce_table(params) to
    reuse them across calls."""
    if alpha is None:
        alpha, beta = allreduce_table(params)
    schedules = schedules.astype(jnp.int32)
    n_types = params.max_types
    bad_type = params.layer_mask & ((schedules < 0) | (schedules >= n_types))
    types = jnp.clip(schedules, 0, n_types - 1)
    first, ends = _stage_structure(types, params.layer_mask)
    stages = stage_values(params, alpha, beta, types, first)
    return score_stages(params, types, first, ends, bad_type, *stages)


__all__ = ["FEASIBLE", "evaluate_direct", "stage_values"]
