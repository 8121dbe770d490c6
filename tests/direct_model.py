"""The placement model for one schedule per instance, without a segment table.

`segment_table` pays O(L²·T·K) once per instance to score millions of schedules of it. When
each instance sees only a few schedules (reinforcement learning over thousands of instances),
provisioning just the stages a schedule has, O(L·(L + K)), is far cheaper. Same equations,
same `provision` and `score_stages`, so both paths agree.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hps.costmodel.schedule.allreduce import allreduce_table
from hps.costmodel.schedule.cost import (
    FEASIBLE,
    ScheduleScores,
    _stage_structure,
    layer_time,
    provision_modes,
    score_stages,
)
from hps.costmodel.schedule.params import PlacementParams


def stage_values(params: PlacementParams, alpha, beta, types, first, general: bool = False, bubble=1.0):
    """Provision the stage that would end at each layer l (layers first[l]..l on types[l]).

    types, first: (N, L) int. alpha, beta: (T, K) from `allreduce_table`. general: also the
    sharded mode (where params.shard) at `bubble` ((N, 1), the plans' 1 + (S−1)/M). Returns
    replicas, time (s per iteration), throughput (samples/s), $/hour, reason and sharded, each
    (N, L)."""
    idx = jnp.arange(params.max_layers)
    inside = (first[..., None] <= idx) & (idx <= idx[:, None])  # (N, L, L')
    own_type_time = layer_time(params).T[types]  # (N, L, L'): time of layer l' on types[l]
    time_sum = jnp.sum(inside * own_type_time, axis=-1)
    stage_sum = lambda values: inside.astype(jnp.float32) @ values  # noqa: E731
    n_layers = jnp.sum(params.layer_mask)
    act_in = jnp.where(first > 0, params.act_bytes[jnp.maximum(first - 1, 0)], 0.0)
    act_out = jnp.where(idx < n_layers - 1, params.act_bytes, 0.0)
    dense_max = jnp.max(jnp.where(inside, params.dense_param_bytes, 0.0), axis=-1) if general else None
    replicas, time, reason, sharded = provision_modes(
        params,
        time_sum,
        act_in + act_out,
        stage_sum(params.dense_param_bytes),
        stage_sum(params.sparse_param_bytes),
        stage_sum(params.act_bytes),
        alpha,
        beta,
        types,
        dense_max,
        bubble,
    )
    price = params.price_per_hour[types]
    return replicas.astype(jnp.float32), time, params.batch / (bubble * time), replicas * price, reason, sharded


def evaluate_direct(params: PlacementParams, schedules, alpha=None, beta=None) -> ScheduleScores:
    """Score schedules (N, L) of one instance under the schedule model (bubble 1, replicated
    states); pass (alpha, beta) = allreduce_table(params) to reuse them across calls."""
    if alpha is None:
        alpha, beta = allreduce_table(params)
    schedules = schedules.astype(jnp.int32)
    n_types = params.max_types
    bad_type = params.layer_mask & ((schedules < 0) | (schedules >= n_types))
    types = jnp.clip(schedules, 0, n_types - 1)
    first, ends = _stage_structure(types, params.layer_mask)
    stages = stage_values(params, alpha, beta, types, first)
    return score_stages(params, types, first, ends, bad_type, *stages)


def evaluate_plans(params: PlacementParams, types, ends, alpha=None, beta=None) -> ScheduleScores:
    """Score explicit plans under the general model (docs/pipeline-plans.md): types (N, L) the
    type of each layer's stage, ends (N, L) bool where a stage ends (adjacent stages may share
    a type; a stage ends at the last real layer whatever ends says there). The bubble is
    1 + (S − 1)/M for a plan of S stages; states may be sharded where params.shard."""
    if alpha is None:
        alpha, beta = allreduce_table(params)
    types = types.astype(jnp.int32)
    n_types, idx = params.max_types, jnp.arange(params.max_layers)
    bad_type = params.layer_mask & ((types < 0) | (types >= n_types))
    types = jnp.clip(types, 0, n_types - 1)
    ends = params.layer_mask & (ends | (idx == jnp.sum(params.layer_mask) - 1))
    starts = jnp.concatenate([jnp.ones_like(ends[:, :1]), ends[:, :-1]], axis=1)
    first = jax.lax.cummax(jnp.where(starts, idx, 0), axis=1)
    count = jnp.sum(ends, axis=1, keepdims=True).astype(jnp.float32)
    bubble = jnp.where(jnp.isinf(params.micro_batches), 1.0, 1.0 + (count - 1.0) / params.micro_batches)
    stages = stage_values(params, alpha, beta, types, first, general=True, bubble=bubble)
    return score_stages(params, types, first, ends, bad_type, *stages)


__all__ = ["FEASIBLE", "evaluate_direct", "evaluate_plans", "stage_values"]
