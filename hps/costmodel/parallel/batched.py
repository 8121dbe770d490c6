"""Many parallel plans of many instances scored in one jitted call: the JAX twin of `score_plan`
(docs/parallel-plans.md, "A plan's score"), equal to it to rounding.

`score_plans(params, plans)` takes `PlanParams` stacked over I instances (leading axis) and
`Plans` (I, N, S) and returns per plan (I, N) and per stage (I, N, S) arrays, float64. Inside
one jit: per instance the table of layer-time prefix sums (T, P, D, L + 1), at every divisor m
of the batch, from the affine coefficients of `batched_params` (T·P·D·(L + 1) floats an
instance: 0.9 MB at 64 layers, 8 types, 32 divisors); then per plan and stage a few gathers.
Precision: float64 under `jax.enable_x64` (the repository's JAX runs in float32 elsewhere; the
context is entered only around this call).

Reasons (`REASONS`, code = index; 0: feasible), first failing reported, as score_plan:
not_allowed, virtual_stages, network, memory, no_link, pooled_cap, throughput, budget. A plan must be
well formed (its stages contiguous from layer 0 to the last, b dividing the batch, each d
dividing b, each t a power of two within the bucket's levels, the real stages first);
`well_formed` says which are, and the other figures of a plan that is not are meaningless.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct
from jax import lax

from hps.costmodel.parallel.batched_params import PlanParams, Plans
from hps.costmodel.parallel.problem import (
    BUCKET_BYTES,
    FLOOR_TOLERANCE,
    FP8_WEIGHT_BYTES,
    ZERO3_GATHER,
    ZERO3_REDUCE,
)

REASONS = (None, "not_allowed", "virtual_stages", "network", "memory", "no_link", "pooled_cap", "throughput", "budget")
"""Reason codes of `score_plans`: the index of score_plan's reason (0: feasible)."""


def time_prefix(params: PlanParams) -> jnp.ndarray:
    """(T, P, D, L + 1) seconds: prefix sums over layers of the layer times per micro-batch on
    (type, level, m = divisors[k]) (0 at padded divisors)."""
    m = jnp.where(params.divisors <= params.batch, params.divisors, 0).astype(jnp.float64)[None, None, :, None]
    at = lambda x: x[:, :, None, :]  # noqa: E731
    compute = at(params.compute_slope) * m + at(params.compute_fixed)
    times = jnp.maximum(compute, at(params.memory_slope) * m) + at(params.other_slope) * m + at(params.other_fixed)
    zero = jnp.zeros(times.shape[:-1] + (1,), times.dtype)
    return jnp.concatenate([zero, jnp.cumsum(times, axis=-1)], axis=-1)


@struct.dataclass
class Packed:
    """One instance's figures packed so that a stage gathers whole rows: `times` (T, P, D, L + 1)
    `time_prefix`; `layers` (L + 1, 5) at layer boundary i: the SPAN_COLUMNS prefix sums and
    act_bytes of layer i − 1 (0 at i = 0); `types` (T, 8): 1/nic_bw, 1/mem_bw, price,
    memory_limit, peak_flops, call_s, residual_low, residual_high; `allreduce` (T, P, D, 2):
    alpha, beta; `links` (T, T, 4) between two types' sites: bandwidth, latency, price, whether
    the sites differ; `divisors` (D,) float64."""

    times: jnp.ndarray
    layers: jnp.ndarray
    types: jnp.ndarray
    allreduce: jnp.ndarray
    links: jnp.ndarray
    divisors: jnp.ndarray


def pack(params: PlanParams) -> Packed:
    """The Packed tables of one instance (unstacked `params`)."""
    input_act = jnp.concatenate([jnp.zeros(1), params.act_bytes])[:, None]
    layers = jnp.concatenate([params.span_prefix, input_act], axis=1)
    columns = (1 / params.nic_bw, 1 / params.mem_bw, params.price, params.memory_limit, params.peak_flops)
    types = jnp.stack([*columns, params.call_s, params.residual_low, params.residual_high], axis=1)
    allreduce = jnp.stack([params.allreduce_alpha, params.allreduce_beta], axis=-1)
    pair = params.site[:, None], params.site[None, :]
    crosses = (params.site[:, None] != params.site[None, :]).astype(jnp.float64)
    links = jnp.stack([params.link_bandwidth[pair], params.link_latency[pair], params.link_price[pair], crosses], -1)
    divisors = params.divisors.astype(jnp.float64)
    return Packed(time_prefix(params), layers, types, allreduce, links, divisors)


def floor_log2(x: jnp.ndarray) -> jnp.ndarray:
    """⌊log2 x⌋ of positive integers."""
    return jnp.iinfo(x.dtype).bits - 1 - lax.clz(x)


def range_max(params: PlanParams, first: jnp.ndarray, last: jnp.ndarray) -> jnp.ndarray:
    """(S, len(MAX_COLUMNS)) max of each column over layers first..last, by the sparse table."""
    k = floor_log2(last - first + 1)
    return jnp.maximum(params.span_max[k, first], params.span_max[k, last - (1 << k) + 1])


def stage_memory(params: PlanParams, span, peaks, inv_tp, dp, m):
    """Per stage (S,): (static bytes per device, activation bytes per device per micro-batch in
    flight, bytes of parameter states per device), as `stages.stage_memory`: `span` (S, 4) the
    SPAN_COLUMNS sums over each stage's layers, `peaks` (S, 2) the MAX_COLUMNS maxima, inv_tp
    1/t, dp and m float."""
    parameters, sparse, kept = span[:, 0], span[:, 1], span[:, 2]
    peak_parameters, peak_recompute = peaks[:, 0], peaks[:, 1]
    p_bytes, g_bytes, o_bytes = params.state_bytes[0], params.state_bytes[1], params.state_bytes[2]
    inv_dp = 1 / dp
    shard = lambda level: jnp.where(params.zero >= level, inv_dp, 1.0)  # noqa: E731
    states = parameters * inv_tp * (p_bytes * shard(3) + g_bytes * shard(2) + o_bytes * shard(1))
    static = states + sparse * inv_tp * inv_dp
    static = static + jnp.where((params.zero >= 3) & (dp > 1), peak_parameters * p_bytes * inv_tp, 0.0)
    static = static + jnp.where(params.fp8, parameters * inv_tp * FP8_WEIGHT_BYTES, 0.0)
    static = static + jnp.where(params.recompute_full, m * peak_recompute * inv_tp, 0.0)
    return static, m * kept * inv_tp, states


def exposed_sync(params: PlanParams, grad_bytes, alpha, beta, dp, compute):
    """(S,) seconds of the gradient sync not hidden behind the last backward (an All-Reduce, a
    Reduce-Scatter under ZeRO-3; NaN where d replicas are past the network's reach and there are
    gradients)."""
    sync = jnp.where((dp > 1) & (grad_bytes > 0), grad_bytes * alpha + beta, 0.0)
    sync = jnp.where(params.zero >= 3, sync * ZERO3_REDUCE, sync)
    buckets = jnp.maximum(1.0, jnp.ceil(grad_bytes * (1.0 / BUCKET_BYTES)))
    return jnp.where(buckets == 1, sync, jnp.maximum(sync / buckets, sync - 2.0 / 3.0 * compute))


def zero3_gather(params: PlanParams, param_bytes, alpha, beta, dp):
    """(S,) seconds of ZeRO-3's parameter All-Gathers per micro-batch (0 below ZeRO-3 or d = 1)."""
    gather = jnp.where((dp > 1) & (param_bytes > 0), (param_bytes * alpha + beta) * ZERO3_GATHER, 0.0)
    return jnp.where(params.zero >= 3, gather, 0.0)


def bubble_slots(params: PlanParams, stages, micro_batches):
    """Stage times per iteration: M + (S − 1)/v."""
    return micro_batches + (stages - 1) / params.virtual_stages


def in_flight(params: PlanParams, position, stages, micro_batches):
    """Micro-batches whose activations the stage at `position` of `stages` holds at its peak
    (`pipeline.in_flight_chunks` / v): min(S − p, M) under plain 1F1B, else Megatron-LM's
    interleaved warm-up min(2(S − p − 1) + (v − 1)·S + 1, M·v) in chunks of 1/v."""
    v = params.virtual_stages
    warm = 2 * (stages - position - 1) + (v - 1) * stages + 1
    chunks = jnp.minimum(warm, micro_batches * v) / v
    return jnp.where(v == 1, jnp.minimum(stages - position, micro_batches), chunks)


def max_of(values, real):
    """The largest of `values` where `real`, NaN where a real value is: numpy's max."""
    return jnp.where(jnp.any(real & jnp.isnan(values)), jnp.nan, jnp.max(jnp.where(real, values, -jnp.inf)))


def whole(x: jnp.ndarray) -> jnp.ndarray:
    """Whether float x is a whole number (x = a/b of integers below 2^26 is one exactly when b
    divides a)."""
    return x == jnp.floor(x)


def well_formed(params: PlanParams, plan: Plans, count, m, micro_batches) -> jnp.ndarray:
    """() bool: the plan's stages are real-first, contiguous from layer 0 to the last, b divides
    the batch, every d divides b and every t is a power of two within the levels."""
    real, first, last, tp = plan.stage_mask, plan.first, plan.last, plan.tp
    j = jnp.arange(real.shape[0])
    levels = params.compute_slope.shape[1]
    types = params.type_mask.shape[0]
    next_first = jnp.concatenate([first[1:], first[:1]])
    ok = (plan.micro_batch >= 1) & whole(micro_batches) & (count >= 1) & jnp.all(real == (j < count))
    ok &= (first[0] == 0) & (jnp.sum(jnp.where(j == count - 1, last, 0)) == params.num_layers - 1)
    power = (tp >= 1) & ((tp & (tp - 1)) == 0) & (tp < (1 << levels))
    stage_ok = (plan.dp >= 1) & whole(m) & power & (first <= last) & (plan.types >= 0) & (plan.types < types)
    stage_ok &= params.type_mask[jnp.clip(plan.types, 0, types - 1)]
    stage_ok &= jnp.where(j + 1 < count, next_first == last + 1, True)
    return ok & jnp.all(stage_ok | ~real)


def score_plan_one(params: PlanParams, packed: Packed, plan: Plans) -> dict:
    """The score of one plan (stage arrays (S,)) of one instance packed as `packed`."""
    real = plan.stage_mask
    count = jnp.sum(real, dtype=jnp.int32)
    keep = lambda x, fill: jnp.where(real, x, fill)  # noqa: E731
    n_layers, n_types, levels = params.num_layers, params.type_mask.shape[0], params.compute_slope.shape[1]
    first = jnp.clip(keep(plan.first, 0), 0, n_layers - 1)
    last = jnp.clip(keep(plan.last, 0), first, n_layers - 1)
    y = jnp.clip(keep(plan.types, 0), 0, n_types - 1)
    tp = jnp.clip(keep(plan.tp, 1), 1, 1 << (levels - 1))
    dp = jnp.maximum(keep(plan.dp, 1), 1).astype(jnp.float64)
    b = jnp.maximum(plan.micro_batch, 1).astype(jnp.float64)
    batch = params.batch.astype(jnp.float64)
    m = b / dp  # exact where d divides b
    micro_batches = batch / b
    formed = well_formed(params, plan, count, m, micro_batches)
    micro_batches = jnp.floor(micro_batches)
    level = floor_log2(tp)
    inv_tp = 1 / tp.astype(jnp.float64)  # exact: t is a power of two
    mi = jnp.minimum(jnp.sum(packed.divisors[None, :] < m[:, None], axis=1), packed.divisors.shape[0] - 1)
    di = jnp.minimum(jnp.sum(packed.divisors[None, :] < dp[:, None], axis=1), packed.divisors.shape[0] - 1)

    low, high = packed.layers[first], packed.layers[last + 1]  # (S, 5) each
    inv_nic, inv_mem_bw, price, limit, peak_flops, call_s, res_low, res_high = (packed.types[y][:, c] for c in range(8))
    compute = packed.times[y, level, mi, last + 1] - packed.times[y, level, mi, first] + call_s
    a_out = jnp.where(last < n_layers - 1, high[:, 4], 0.0)
    boundary = m * 2 * (low[:, 4] + a_out) * inv_tp * inv_nic
    span = high[:, :4] - low[:, :4]
    static, activation, states = stage_memory(params, span, range_max(params, first, last), inv_tp, dp, m)
    alpha, beta = packed.allreduce[y, level, di, 0], packed.allreduce[y, level, di, 1]
    sync = exposed_sync(params, span[:, 0] * params.state_bytes[1] * inv_tp, alpha, beta, dp, compute)
    gather = zero3_gather(params, span[:, 0] * params.state_bytes[0] * inv_tp, alpha, beta, dp)
    time = jnp.maximum(compute, gather) + boundary  # NaN where the gather is
    tail = sync + 2 * states * inv_mem_bw
    units = tp.astype(jnp.float64) * dp
    j = jnp.arange(real.shape[0])
    memory = static + in_flight(params, j, count, micro_batches) * activation

    not_allowed = jnp.any(real & (params.banned_prefix[last + 1, y] != params.banned_prefix[first, y]))
    unsplit = jnp.any(real & (span[:, 3] < params.virtual_stages))
    network = jnp.any(real & jnp.isnan(tail))
    over_memory = jnp.any(real & (memory > limit))
    link = packed.links[y, jnp.concatenate([y[1:], y[:1]])]  # (S, 4) to the next stage's site
    crosses = (j + 1 < count) & (link[:, 3] > 0)
    no_link = jnp.any(crosses & (link[:, 0] == 0))
    linked = crosses & (link[:, 0] != 0)
    nbytes = high[:, 4]  # act_bytes of the stage's last layer
    hops = jnp.where(linked, b * nbytes / link[:, 0] + link[:, 1], -jnp.inf)
    iterations = params.samples / batch
    egress = jnp.sum(jnp.where(linked, 2 * batch * nbytes * link[:, 2], 0.0)) * iterations
    own = (y[:, None] == jnp.arange(n_types)[None, :]) & real[:, None]  # (S, T)
    pooled_cap = jnp.any(jnp.sum(jnp.where(own, units[:, None], 0.0), axis=0) > params.max_units)

    # score_plan's max over [times, hops] in Python: NaN where the first stage's time is, else
    # the largest number among them
    finite_max = jnp.maximum(jnp.max(jnp.where(real & ~jnp.isnan(time), time, -jnp.inf)), jnp.max(hops))
    slowest = jnp.where(jnp.isnan(time[0]), jnp.nan, finite_max)
    iteration = bubble_slots(params, count, micro_batches) * slowest + max_of(tail, real)
    throughput = batch / iteration
    below = throughput < params.throughput_floor * (1 - FLOOR_TOLERANCE)
    dollars = jnp.sum(jnp.where(real, units * price, 0.0))
    over_budget = dollars > params.budget_per_hour * (1 + FLOOR_TOLERANCE)
    failing = jnp.stack([not_allowed, unsplit, network, over_memory, no_link, pooled_cap, below, over_budget])
    reason = jnp.where(jnp.any(failing), jnp.argmax(failing) + 1, 0)
    feasible = reason == 0
    cost = jnp.where(feasible, (dollars * iteration / 3600) * iterations + egress, jnp.inf)
    peak = jnp.sum(jnp.where(real, units * peak_flops, 0.0))
    zeroed = lambda x: jnp.where(real, x, 0.0)  # noqa: E731
    return {
        "well_formed": formed,
        "feasible": feasible,
        "reason": reason.astype(jnp.int32),
        "micro_batches": micro_batches.astype(jnp.int32),
        "iteration_s": iteration,
        "bottleneck_s": slowest,
        "throughput": throughput,
        "dollars_per_hour": dollars,
        "egress_dollars": egress,
        "cost": cost,
        "mfu": params.model_flops * throughput / peak,
        "throughput_low": throughput / (1 + jnp.max(jnp.where(real, res_high, -jnp.inf))),
        "throughput_high": throughput / (1 + jnp.min(jnp.where(real, res_low, jnp.inf))),
        "stage_time_s": zeroed(time),
        "stage_tail_s": zeroed(tail),
        "stage_memory_bytes": zeroed(memory),
        "stage_memory_limit_bytes": zeroed(limit),
        "stage_boundary_s": zeroed(boundary),
        "stage_sync_s": zeroed(sync),
    }


CHUNK_PLANS = 2048
"""Plans scored at once (over all instances of a call): a chunk's intermediates, some forty (S,)
float64 arrays a plan, stay in cache; the chunks run in a scan."""


def score_instance(params: PlanParams, plans: Plans, chunk: int = CHUNK_PLANS) -> dict:
    """Scores of N plans (`Plans` (N, S)) of one instance (unstacked `params`), `chunk` plans a
    step."""
    packed = pack(params)
    count = plans.micro_batch.shape[0]
    return lax.map(lambda plan: score_plan_one(params, packed, plan), plans, batch_size=max(1, min(chunk, count)))


@jax.jit
def _score_batched(params: PlanParams, plans: Plans) -> dict:
    instances = plans.micro_batch.shape[0]
    return jax.vmap(lambda p, q: score_instance(p, q, max(1, CHUNK_PLANS // instances)))(params, plans)


def score_plans(params: PlanParams, plans: Plans) -> dict:
    """Scores of plans (I, N, S) of I instances (`params` stacked, `batched_params.stack`): a
    dict of (I, N) arrays (`well_formed`, `feasible`, `reason` a code of REASONS,
    `micro_batches`, `iteration_s`, `bottleneck_s` s per micro-batch, `throughput` samples/s,
    `dollars_per_hour`, `egress_dollars`, `cost` $ (inf where infeasible), `mfu`,
    `throughput_low` and `throughput_high` score_plan's `throughput_range`) and (I, N, S)
    per stage (`stage_time_s` s per micro-batch, `stage_tail_s` s, `stage_memory_bytes` and
    `stage_memory_limit_bytes` per device, `stage_boundary_s`, `stage_sync_s`; 0 past the real
    stages). One compile per bucket and (I, N, S); float64 (jax.enable_x64 around the call)."""
    with jax.enable_x64(True):
        return _score_batched(params, plans)


def to_device(tree):
    """`tree` (PlanParams or Plans of numpy arrays) on the default device at float64, so that
    repeated `score_plans` calls skip the host transfer."""
    with jax.enable_x64(True):
        return jax.device_put(tree)
