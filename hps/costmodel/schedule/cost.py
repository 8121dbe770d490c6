"""The placement cost model (docs/placement-model.md) as pure jnp functions over padded arrays.

Everything about a stage depends only on (first layer, last layer, type), so
`segment_table(params)` provisions every segment once — the replica search is vectorised over
k = 1..K — and `evaluate_with_table` scores a batch of schedules with O(L) gathers each.
`evaluate_schedules` does both; it jits, and vmaps over schedules, workloads and catalogues.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from hps.costmodel.schedule.allreduce import allreduce_table
from hps.costmodel.schedule.params import PlacementParams

REASONS = ("feasible", "invalid_type", "memory", "throughput", "pooled_cap")
SHARDED_SYNC = 1.5  # a sharded stage's traffic in All-Reduces (docs/pipeline-plans.md)
FEASIBLE, INVALID_TYPE, MEMORY, THROUGHPUT, POOLED_CAP = range(len(REASONS))


@struct.dataclass
class SegmentTable:
    """Provisioned stage for every (first layer i, last layer j, type t), each (L, L, T):
    replicas k_j, stage time (s per iteration) at k_j, reason code (0 when provisionable)."""

    replicas: jnp.ndarray
    time: jnp.ndarray
    reason: jnp.ndarray


@struct.dataclass
class ScheduleScores:
    """Scores of a batch of N schedules. Scalars are (N,); per-stage arrays are (N, L), valid
    where `stage_end` (one entry per stage, at its last layer). cost is +inf when infeasible;
    failed_layer is the first layer of the stage that failed, −1 when feasible."""

    feasible: jnp.ndarray
    reason: jnp.ndarray
    failed_layer: jnp.ndarray
    throughput: jnp.ndarray  # samples/s
    dollars_per_hour: jnp.ndarray
    cost: jnp.ndarray  # dollars
    stage_end: jnp.ndarray
    stage_first: jnp.ndarray
    replicas: jnp.ndarray
    stage_time: jnp.ndarray  # seconds per iteration
    stage_sharded: jnp.ndarray  # bool: the stage shards its state


def layer_time(params: PlacementParams) -> jnp.ndarray:
    """t(l, t), (L, T) seconds per sample: max(compute, memory roofline) + input io, unless measured."""
    efficiency = jnp.where(params.layer_sparse[:, None], params.efficiency_sparse[None], params.efficiency_dense[None])
    compute_s = params.flops[:, None] / (params.peak_flops[None] * efficiency)
    memory_s = params.mem_bytes[:, None] / params.mem_bw[None]
    io_s = params.io_bytes[:, None] / params.io_bw[None]
    roofline = jnp.maximum(compute_s, memory_s) + io_s
    return jnp.where(params.measured_mask, params.measured_time, roofline)


def _segment_membership(params: PlacementParams) -> jnp.ndarray:
    """(L, L, L) float: [i, j, l] = 1 when layer l lies in segment i..j."""
    idx = jnp.arange(params.max_layers)
    inside = (idx[:, None, None] <= idx[None, None, :]) & (idx[None, None, :] <= idx[None, :, None])
    return inside.astype(jnp.float32)


def _boundary_bytes(params: PlacementParams) -> jnp.ndarray:
    """(L, L) bytes a_in + a_out of segment i..j: act of layer i−1 (0 for the first stage) and
    of layer j (0 when j is the last layer)."""
    n_layers = jnp.sum(params.layer_mask)
    idx = jnp.arange(params.max_layers)
    act_in = jnp.where(idx > 0, jnp.roll(params.act_bytes, 1), 0.0)
    act_out = jnp.where(idx < n_layers - 1, params.act_bytes, 0.0)
    return act_in[:, None] + act_out[None, :]


def stage_time(compute_s, boundary_s, sync_s):
    """time_j(k) = compute + boundary + sync, seconds per iteration."""
    return compute_s + boundary_s + sync_s


def stage_memory(dense_bytes, sparse_bytes, act_sum_bytes, replicas, per_replica_batch):
    """mem_j(k) = 4·W + sparse/k + (B/k)·Σ act, bytes per unit."""
    return 4.0 * dense_bytes + sparse_bytes / replicas + per_replica_batch * act_sum_bytes


def provision(params, time_sum, boundary, dense, sparse, act_sum, alpha, beta, types=slice(None)):
    """Provisioning of replicated stages at bubble 1 (the schedule model): `provision_modes`
    without the sharded mode. Returns (replicas, time s, reason), each S."""
    replicas, time, reason, _ = provision_modes(params, time_sum, boundary, dense, sparse, act_sum, alpha, beta, types)
    return replicas, time, reason


def provision_modes(
    params, time_sum, boundary, dense, sparse, act_sum, alpha, beta, types=slice(None), dense_max=None, bubble=1.0
):
    """Provisioning, vectorised over k = 1..K: k = the smallest k ≤ cap at which an allowed
    state mode fits memory and meets B/(bubble·time(k)) ≥ R (replicated where both do);
    otherwise k = cap and a reason code. cap = min(max_units, floor(B/M)): each replica runs at
    least one whole sample of a micro-batch (B with M = inf).

    Stage inputs broadcast to one shape S: time_sum (s/sample), boundary (a_in + a_out bytes),
    dense / sparse / act_sum (bytes), bubble (the plan's 1 + (S−1)/M). types: each stage's
    resource type (int, shape S), or by default every type (S = (..., T)); the type's NIC
    bandwidth, memory, max_units and mask come from params, its All-Reduce coefficients from
    alpha, beta (T, K). dense_max (bytes, the stage's largest layer), when given, allows the
    sharded mode where params.shard. Returns (replicas, time s, reason, sharded), each S.
    """
    nic_bw, memory_cap = params.nic_bw[types], params.memory[types]
    type_ok = params.type_mask[types]
    micro_batch = params.batch / jnp.where(jnp.isinf(params.micro_batches), 1.0, params.micro_batches)
    max_units = jnp.minimum(params.max_units[types], jnp.maximum(jnp.floor(micro_batch), 1.0).astype(jnp.int32))
    alpha, beta = alpha[types], beta[types]
    expand = lambda x: jnp.asarray(x)[..., None]  # noqa: E731
    k = params.unit_grid
    per_replica_batch = params.batch / k  # samples per replica per iteration
    compute_s = per_replica_batch * expand(time_sum)
    boundary_s = per_replica_batch * 2.0 * expand(boundary) / expand(nic_bw)
    dense = expand(dense)
    sync_s = jnp.where((k > 1) & (dense > 0), dense * alpha + beta, 0.0)
    time = stage_time(compute_s, boundary_s, sync_s)  # (S..., K)
    memory = stage_memory(dense, expand(sparse), expand(act_sum), k, per_replica_batch)

    bubble = expand(bubble)
    available = k <= expand(max_units)
    fits = available & (memory <= expand(memory_cap))
    ok = fits & (params.batch / (bubble * time) >= params.throughput)
    sharded_ok = jnp.zeros_like(ok)
    if dense_max is not None:
        sharded_time = stage_time(compute_s, boundary_s, SHARDED_SYNC * sync_s)
        sharded_memory = 4.0 * dense / k + expand(dense_max) + expand(sparse) / k + per_replica_batch * expand(act_sum)
        sharded_fits = available & (k > 1) & params.shard & (sharded_memory <= expand(memory_cap))
        sharded_ok = sharded_fits & ~ok & (params.batch / (bubble * sharded_time) >= params.throughput)
        time = jnp.where(sharded_ok, sharded_time, time)
        fits = fits | sharded_fits
    ok = ok | sharded_ok
    any_ok = jnp.any(ok, axis=-1)
    chosen = jnp.where(any_ok, jnp.argmax(ok, axis=-1), jnp.maximum(max_units - 1, 0))
    reason = jnp.where(any_ok, FEASIBLE, THROUGHPUT)
    reason = jnp.where(jnp.any(fits, axis=-1), reason, MEMORY)
    reason = jnp.where(type_ok, reason, INVALID_TYPE)
    chosen_time = jnp.take_along_axis(time, chosen[..., None], axis=-1)[..., 0]
    sharded = jnp.take_along_axis(sharded_ok, chosen[..., None], axis=-1)[..., 0] & any_ok
    return (chosen + 1).astype(jnp.int32), chosen_time, reason.astype(jnp.int32), sharded


def segment_table(params: PlacementParams) -> SegmentTable:
    """Provision every segment i..j on every type t: arrays (L, L, T)."""
    inside = _segment_membership(params)
    time_sum = jnp.einsum("ijl,lt->ijt", inside, layer_time(params))  # s/sample
    per_segment = lambda values: jnp.einsum("ijl,l->ij", inside, values)[..., None]  # noqa: E731
    alpha, beta = allreduce_table(params)  # (T, K)
    replicas, time, reason = provision(
        params,
        time_sum,
        _boundary_bytes(params)[..., None],
        per_segment(params.dense_param_bytes),
        per_segment(params.sparse_param_bytes),
        per_segment(params.act_bytes),
        alpha,
        beta,
    )
    return SegmentTable(replicas=replicas, time=time, reason=reason)


def _stage_structure(schedules, layer_mask):
    """Stage first layer (N, L) and stage-end mask (N, L) of each schedule."""
    idx = jnp.arange(schedules.shape[-1])
    n_layers = jnp.sum(layer_mask)
    previous = jnp.concatenate([jnp.full_like(schedules[:, :1], -1), schedules[:, :-1]], axis=1)
    following = jnp.concatenate([schedules[:, 1:], jnp.full_like(schedules[:, :1], -1)], axis=1)
    starts = (idx == 0) | (schedules != previous)
    first = jax.lax.cummax(jnp.where(starts, idx, 0), axis=1)
    ends = layer_mask & ((idx == n_layers - 1) | (schedules != following))
    return first, ends


def _packed_segments(table: SegmentTable, params: PlacementParams) -> jnp.ndarray:
    """5 flat (L·L·T,) float32 columns [replicas, time s, throughput samples/s, $/hour, reason
    code], entry (i·L + j)·T + t for the stage of layers i..j on type t."""
    price = params.price_per_hour[None, None, :]
    columns = [
        table.replicas.astype(jnp.float32),
        table.time,
        params.batch / table.time,
        table.replicas * price,
        table.reason.astype(jnp.float32),
    ]
    return [c.reshape(-1) for c in columns]


def evaluate_with_table(table: SegmentTable, params: PlacementParams, schedules) -> ScheduleScores:
    """Score schedules (N, L) int (type index per layer; padded layers ignored).

    The first failing stage is found with one min over keys first_layer·8 + reason (stages are
    in layer order), so no per-schedule branching or argmax is needed.
    """
    n_types, n_layers = params.max_types, params.max_layers
    schedules = schedules.astype(jnp.int32)
    layer_mask = params.layer_mask
    bad_type = layer_mask & ((schedules < 0) | (schedules >= n_types))
    types = jnp.clip(schedules, 0, n_types - 1)
    first, ends = _stage_structure(types, params.layer_mask)

    flat = (first * n_layers + jnp.arange(n_layers)) * n_types + types
    columns = _packed_segments(table, params)
    stages = [columns[c][flat] for c in range(5)]  # replicas, time, thr, $/hour, reason
    return score_stages(params, types, first, ends, bad_type, *stages)


def score_stages(
    params, types, first, ends, bad_type, replicas, time, stage_thr, stage_rate, stage_reason, stage_sharded=None
):
    """Plan-level scores from per-layer stage values (N, L), valid at stage ends: replicas,
    time (s), throughput (samples/s, the bubble included), $/hour, reason code and (optionally)
    whether the state is sharded, of the stage ending at each layer."""
    n_types, n_layers = params.max_types, params.max_layers
    replicas = jnp.where(ends, replicas, 0.0)
    stage_reason = jnp.where(ends, stage_reason.astype(jnp.int32), FEASIBLE)

    throughput = jnp.min(jnp.where(ends, stage_thr, jnp.inf), axis=1)
    dollars = jnp.sum(jnp.where(ends, stage_rate, 0.0), axis=1)
    over_cap = jnp.zeros(types.shape, bool)
    for t in range(n_types):
        of_type = types == t
        units = jnp.sum(jnp.where(of_type, replicas, 0.0), axis=1, keepdims=True)
        over_cap = over_cap | (of_type & (units > params.max_units[t]))

    no_stage = 8 * n_layers
    own_key = jnp.min(jnp.where(stage_reason != FEASIBLE, first * 8 + stage_reason, no_stage), axis=1)
    pooled_key = jnp.min(jnp.where(ends & over_cap, first * 8 + POOLED_CAP, no_stage), axis=1)
    bad_key = jnp.min(jnp.where(bad_type, first * 8 + INVALID_TYPE, no_stage), axis=1)
    key = jnp.where(own_key < no_stage, own_key, pooled_key)
    key = jnp.where(bad_key < no_stage, bad_key, key)
    feasible = key == no_stage
    reason = jnp.where(feasible, FEASIBLE, key % 8)
    failed = jnp.where(feasible, -1, key // 8)
    cost = jnp.where(feasible, dollars * (params.samples / throughput) / 3600.0, jnp.inf)
    return ScheduleScores(
        feasible=feasible,
        reason=reason,
        failed_layer=failed,
        throughput=throughput,
        dollars_per_hour=dollars,
        cost=cost,
        stage_end=ends,
        stage_first=first,
        replicas=replicas.astype(jnp.int32),
        stage_time=jnp.where(ends, time, 0.0),
        stage_sharded=jnp.zeros_like(ends) if stage_sharded is None else ends & stage_sharded,
    )


def single_type_schedules(max_types: int, max_layers: int) -> jnp.ndarray:
    """(T, L) int32: row t puts every layer on type t (rows of padded types included)."""
    return jnp.broadcast_to(jnp.arange(max_types, dtype=jnp.int32)[:, None], (max_types, max_layers))


def evaluate_schedules(params: PlacementParams, schedules) -> ScheduleScores:
    """The whole model: provision every segment, then score schedules (N, L)."""
    return evaluate_with_table(segment_table(params), params, schedules)
