"""Fixed-shape observation features of a placement instance, log-scaled to roughly [−2, 2].

Each scaled feature is (log10(x + 1) − center) / scale with constants fitted to the generators'
ranges (the zoo and cloud-2024). Padded layers and types get all-zero rows; masks say which rows
are real. Logs make products linear: log t(l, t) = log flops − log peak − log efficiency, so a
small network combines a layer's and a type's features into times and unit counts.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from hps.costmodel.schedule.cost import FEASIBLE, provision

# (center, scale) of log10(x + 1) per feature
LAYER_SCALES = {
    "flops": (6.0, 3.0),  # FLOP per sample
    "mem_bytes": (5.0, 2.5),  # bytes per sample
    "io_bytes": (1.5, 2.0),
    "act_bytes": (4.0, 2.0),
    "dense_param_bytes": (4.0, 3.0),
    "sparse_param_bytes": (5.0, 6.0),
}
TYPE_SCALES = {
    "price_per_hour": (0.5, 0.5),  # $ per unit-hour
    "peak_flops": (13.5, 1.0),  # FLOP/s
    "mem_bw": (11.5, 0.5),  # bytes/s
    "io_bw": (8.5, 1.0),
    "nic_bw": (10.3, 0.5),
    "memory": (10.7, 1.0),  # bytes
    "max_units": (1.3, 0.5),
}
TIME_SCALE = (-7.0, 3.0)  # log10 seconds per sample of a layer on one unit
ALPHA_SCALE = (-10.0, 1.0)  # log10 s/byte of an All-Reduce at full allocation
BETA_SCALE = (-4.5, 1.0)  # log10 s
JOB_SCALES = {"batch": (3.5, 0.5), "throughput": (5.0, 1.5)}  # samples, samples/s

N_LAYER_FEATURES = len(LAYER_SCALES) + 3  # + sparse kind, relative position, mask
N_TYPE_FEATURES = len(TYPE_SCALES) + 8  # + efficiencies, alpha, beta, single-type plan (3), mask
N_JOB_FEATURES = len(JOB_SCALES)
N_PAIR_FEATURES = 4  # log time of each layer and of the layers from it to the end; 2 stage costs


def scaled_log(x, center_scale):
    """(log10(x + 1) − center) / scale, elementwise."""
    center, scale = center_scale
    return (jnp.log10(jnp.maximum(x, 0.0) + 1.0) - center) / scale


def layer_features(params) -> jnp.ndarray:
    """(L, N_LAYER_FEATURES) float32: scaled logs of flops, mem, io, act, dense and sparse
    parameter bytes; sparse kind; position / layer count; mask. Padded rows are zero."""
    mask = params.layer_mask
    n_layers = jnp.maximum(jnp.sum(mask), 1)
    columns = [scaled_log(getattr(params, name), cs) for name, cs in LAYER_SCALES.items()]
    columns += [
        params.layer_sparse.astype(jnp.float32),
        jnp.arange(params.max_layers) / n_layers,
        mask.astype(jnp.float32),
    ]
    return jnp.where(mask[:, None], jnp.stack(columns, axis=-1), 0.0)


COST_RANGE = (-3.0, 2.0)  # log10 cost / cost_scale, clipped; the top also marks "cannot be provisioned"
FEATURE_GRID = np.sort(np.concatenate([2 ** np.arange(12), 3 * 2 ** np.arange(11)]))  # replicas 1, 2, 3, 4, 6, 8, 12, …


def _span_sums(values, first, last):
    """Σ values[first..last] along axis 0 for every span, by prefix sums: (S…, …)."""
    sums = jnp.concatenate([jnp.zeros_like(values[:1]), jnp.cumsum(values, axis=0)])
    return sums[last + 1] - sums[first]


def span_log_costs(instance, first, last, grid=None):
    """Stages of layers first..last (int arrays of one shape S), each run alone on every type:
    (log10 of its cost / cost_scale clipped to COST_RANGE, its top when it cannot be
    provisioned; feasible; replicas), each (S…, T). The cost model's provisioning (`provision`), over
    every replica count 1..K, or over `grid` (static, ascending) only: a slight over-count
    of the replicas at a fraction of the work, which is all a feature needs."""
    params = instance.placement
    real = params.layer_mask
    alpha, beta = instance.alpha, instance.beta
    if grid is not None:
        grid = grid[grid <= params.max_replicas]
        alpha, beta = alpha[:, grid - 1], beta[:, grid - 1]
        params = params.replace(unit_grid=jnp.asarray(grid, jnp.float32))
    column = lambda x: _span_sums(jnp.where(real, x, 0.0), first, last)[..., None]  # noqa: E731
    n_layers = jnp.sum(real)
    act_in = jnp.where(first > 0, params.act_bytes[jnp.maximum(first - 1, 0)], 0.0)
    act_out = jnp.where(last < n_layers - 1, params.act_bytes[last], 0.0)
    time_sum = _span_sums(jnp.where(real[:, None], instance.layer_time, 0.0), first, last)  # (S…, T)
    index, time, reason = provision(
        params,
        time_sum,
        (act_in + act_out)[..., None],
        column(params.dense_param_bytes),
        column(params.sparse_param_bytes),
        column(params.act_bytes),
        alpha,
        beta,
    )
    replicas = params.unit_grid[index - 1]  # provision counts grid positions from 1
    feasible = (reason == FEASIBLE) & params.type_mask
    cost = replicas * params.price_per_hour * (params.samples * time / params.batch) / 3600.0
    log_ratio = jnp.clip(jnp.log10(cost / instance.cost_scale), *COST_RANGE)
    return jnp.where(feasible, log_ratio, COST_RANGE[1]), feasible, replicas


def single_type_plans(instance):
    """The single-type plan on each type t, (T,) each: log10 of its cost / cost_scale (clipped
    to COST_RANGE; its top when infeasible), feasible (0/1), log2(replicas / max_units) / 3."""
    params = instance.placement
    last = jnp.sum(params.layer_mask).astype(jnp.int32) - 1
    log_ratio, feasible, replicas = span_log_costs(instance, jnp.int32(0), last)
    share = jnp.log2(replicas / jnp.maximum(params.max_units, 1)) / 3.0
    return log_ratio, feasible.astype(jnp.float32), share


def stage_costs(instance) -> jnp.ndarray:
    """(L, T, 2): `span_log_costs` / 2 (on FEATURE_GRID: at most 1.5x the replicas) of two
    stages at each layer l on type t: layers l..last (the rest of the model) and 0..l (all so
    far). A plan of few stages costs about the sum of its stages' costs, so these let the
    policy weigh where to switch type."""
    params = instance.placement
    layers = jnp.arange(params.max_layers)
    last = jnp.maximum(jnp.sum(params.layer_mask).astype(jnp.int32) - 1, layers)
    first = jnp.stack([layers, jnp.zeros_like(layers)])
    last = jnp.stack([last, layers])
    log_ratio = span_log_costs(instance, first, last, FEATURE_GRID)[0]  # (2, L, T)
    return jnp.moveaxis(log_ratio, 0, -1) / 2.0


def type_features(instance) -> jnp.ndarray:
    """(T, N_TYPE_FEATURES) float32: scaled logs of price, peak, mem/io/nic bandwidth, memory,
    max_units; dense and sparse efficiency; All-Reduce alpha and beta at max_units; the
    single-type plan on the type (`single_type_plans`); mask."""
    params, alpha, beta = instance.placement, instance.alpha, instance.beta
    mask = params.type_mask
    columns = [scaled_log(getattr(params, name).astype(jnp.float32), cs) for name, cs in TYPE_SCALES.items()]
    full = jnp.clip(params.max_units - 1, 0, alpha.shape[-1] - 1)[:, None]
    alpha_full = jnp.take_along_axis(alpha, full, axis=-1)[:, 0]
    beta_full = jnp.take_along_axis(beta, full, axis=-1)[:, 0]
    columns += [
        params.efficiency_dense,
        params.efficiency_sparse * 10.0,
        (jnp.log10(alpha_full + 1e-15) - ALPHA_SCALE[0]) / ALPHA_SCALE[1],
        (jnp.log10(beta_full + 1e-9) - BETA_SCALE[0]) / BETA_SCALE[1],
        *single_type_plans(instance),
        mask.astype(jnp.float32),
    ]
    return jnp.where(mask[:, None], jnp.stack(columns, axis=-1), 0.0)


def pair_features(instance) -> jnp.ndarray:
    """(L, T, N_PAIR_FEATURES): scaled log10 seconds per sample on one unit of type t of layer l
    (the cost model's t(l, t)) and of layers l..L−1 together, then `stage_costs`; zero where the layer or
    type is padding."""
    params = instance.placement
    mask = params.layer_mask[:, None] & params.type_mask[None, :]
    real_time = jnp.where(mask, instance.layer_time, 0.0)
    remaining = jnp.cumsum(real_time[::-1], axis=0)[::-1]
    scaled = lambda t: (jnp.log10(t + 1e-12) - TIME_SCALE[0]) / TIME_SCALE[1]  # noqa: E731
    columns = jnp.concatenate([jnp.stack([scaled(real_time), scaled(remaining)], axis=-1), stage_costs(instance)], -1)
    return jnp.where(mask[..., None], columns, 0.0)


def job_features(params) -> jnp.ndarray:
    """(N_JOB_FEATURES,): scaled logs of the batch (samples/iteration) and the floor (samples/s)."""
    return jnp.stack([scaled_log(getattr(params, name), cs) for name, cs in JOB_SCALES.items()])
