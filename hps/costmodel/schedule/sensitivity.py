"""Sensitivity of one plan's cost to every catalogue and network figure, by `jax.grad`.

The plan is held fixed: its stages, their replica counts k_j, and the All-Reduce chunk orders
of each stage's (type, k) (the Themis orders are discrete choices). What remains is a smooth
function of the figures (docs/placement-model.md):

    t(l,t)   = max(flops / (peak_flops · efficiency[kind]), mem_bytes / mem_bw) + io_bytes / io_bw
    time_j   = (B/k)·Σ t(l,t) + (B/k)·2·(a_in + a_out)/nic_bw + [k > 1, W > 0]·(W·alpha + beta)
    alpha    = max_d Σ_chunks load_d(order, net_bandwidth)   (s/byte),  beta = Σ_d 2·steps_d·latency_d (s)
    cost     = Σ_j k_j·price_{t_j} · N / (B / max_j time_j) / 3600                        ($)

so d(cost)/d(figure) is exact where the plan's slowest stage, the roofline's bound and the
busiest network dimension are unique (elsewhere it is one of the one-sided derivatives).
Elasticity = d(cost)/d(p) · p / cost: the % change of cost per 1 % change of p.
Memory and max_units only decide provisioning, which is held fixed, so they are not listed.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from hps.collective.model.network import steps_per_phase_codes
from hps.collective.model.themis import chunk_loads, collective_orders, padded_chunks
from hps.config.types import Catalog
from hps.costmodel.schedule.allreduce import used_sizes
from hps.costmodel.schedule.cost import (
    REASONS,
    _stage_structure,
    evaluate_schedules,
    layer_time,
    stage_time,
)
from hps.costmodel.schedule.params import PlacementParams
from hps.errors import ConfigError

# (PlacementParams field, unit of its value) per resource type, arrays (T,)
TYPE_FIGURES = (
    ("price_per_hour", "$/unit-hour"),
    ("peak_flops", "FLOP/s"),
    ("efficiency_dense", "fraction of peak"),
    ("efficiency_sparse", "fraction of peak"),
    ("mem_bw", "B/s"),
    ("io_bw", "B/s"),
    ("nic_bw", "B/s"),
)
# per resource type and network dimension, arrays (T, D)
NETWORK_FIGURES = (("net_bandwidth", "B/s"), ("net_latency", "s per step"))
FIGURES = tuple(name for name, _ in TYPE_FIGURES + NETWORK_FIGURES)


@struct.dataclass
class FixedPlan:
    """One schedule's stages with provisioning held fixed, each (L,) per layer, valid at stage
    ends: types (int32), first layer of the stage, ends (bool), replicas k (float32, 1 off the
    ends) and used network sizes (L, D) int32; orders (L, R, D) int32 chunk orders, R the
    chunk bucket of the job's chunk count (256 rows up to 256 chunks, 1,024 up to 1,024)."""

    types: jnp.ndarray
    first: jnp.ndarray
    ends: jnp.ndarray
    replicas: jnp.ndarray
    used: jnp.ndarray
    orders: jnp.ndarray


def figures_of(params: PlacementParams) -> dict:
    """The differentiable figures of an instance, {field: (T,) or (T, D) float32}."""
    return {name: getattr(params, name) for name in FIGURES}


def fix_plan(
    params: PlacementParams, schedule, max_chunks: int | None = None
) -> tuple[FixedPlan, jnp.ndarray, jnp.ndarray, jnp.ndarray]:
    """(plan, feasible, cost $, reason code) of one schedule (L,) int under the exact model.

    max_chunks: the static rows R of the plan's chunk orders, at least params.chunks; None:
    the chunk bucket of params.chunks (read from the concrete params: 256 for a job of up to
    256 chunks, 1,024 up to 1,024; 256 when params is traced)."""
    return _fix_plan(params, schedule, padded_chunks(params.chunks, max_chunks))


@partial(jax.jit, static_argnames="max_chunks")
def _fix_plan(params: PlacementParams, schedule, max_chunks: int):
    """fix_plan with a resolved static max_chunks."""
    result = evaluate_schedules(params, schedule[None].astype(jnp.int32))
    types = jnp.where(params.layer_mask, schedule.astype(jnp.int32), 0)
    first, ends = _stage_structure(types[None], params.layer_mask)
    replicas = jnp.maximum(result.replicas[0], 1)
    used = jax.vmap(used_sizes)(params.net_size[types], replicas)

    def orders_of(used_sizes_, bandwidth):
        return collective_orders(
            used_sizes_, bandwidth, jnp.float32(1.0), params.chunks, params.use_themis, max_chunks
        )[0]

    orders = jax.vmap(orders_of)(used, params.net_bandwidth[types])
    plan = FixedPlan(types, first[0], ends[0], replicas.astype(jnp.float32), used, orders)
    return plan, result.feasible[0], result.cost[0], result.reason[0]


def allreduce_fixed_orders(orders, used, bandwidth, latency, algorithm, chunks):
    """(alpha s/byte, beta s) of one stage's network (D,) arrays with its chunk orders (R, D)
    fixed (rows ≥ chunks unused): alpha = max_d of the chunks' summed bandwidth time per byte,
    beta = Σ_d 2·steps_d·latency_d."""
    per_chunk = jax.vmap(chunk_loads, in_axes=(0, None, None, None))(orders, 1.0 / chunks, used, bandwidth)
    live = (jnp.arange(orders.shape[0]) < chunks)[:, None]
    alpha = jnp.max(jnp.sum(jnp.where(live, per_chunk, 0.0), axis=0))
    beta = jnp.sum(2.0 * steps_per_phase_codes(algorithm, used) * latency)
    return alpha, beta


def plan_cost(figures: dict, params: PlacementParams, plan: FixedPlan) -> jnp.ndarray:
    """Cost ($) of the fixed plan as a function of the figures ({field: array} as `figures_of`)."""
    p = params.replace(**figures)
    types, k = plan.types, plan.replicas
    idx = jnp.arange(p.max_layers)
    inside = ((plan.first[:, None] <= idx[None, :]) & (idx[None, :] <= idx[:, None])).astype(jnp.float32)
    time_sum = jnp.sum(inside * layer_time(p).T[types], axis=-1)  # s/sample of the stage ending at l
    n_layers = jnp.sum(p.layer_mask)
    act_in = jnp.where(plan.first > 0, p.act_bytes[jnp.maximum(plan.first - 1, 0)], 0.0)
    act_out = jnp.where(idx < n_layers - 1, p.act_bytes, 0.0)
    dense = inside @ p.dense_param_bytes
    alpha, beta = jax.vmap(allreduce_fixed_orders, in_axes=(0, 0, 0, 0, 0, None))(
        plan.orders, plan.used, p.net_bandwidth[types], p.net_latency[types], p.net_algorithm[types], p.chunks
    )
    per_replica_batch = p.batch / k
    sync = jnp.where((k > 1) & (dense > 0), dense * alpha + beta, 0.0)
    boundary = per_replica_batch * 2.0 * (act_in + act_out) / p.nic_bw[types]
    time = stage_time(per_replica_batch * time_sum, boundary, sync)
    slowest = jnp.max(jnp.where(plan.ends, time, 0.0))
    dollars_per_hour = jnp.sum(jnp.where(plan.ends, k * p.price_per_hour[types], 0.0))
    return dollars_per_hour * p.samples * slowest / p.batch / 3600.0


@jax.jit
def cost_and_gradients(params: PlacementParams, plan: FixedPlan) -> tuple[jnp.ndarray, dict]:
    """(cost $, {field: d cost / d field}) of a fixed plan, gradients shaped like the figures."""
    return jax.value_and_grad(plan_cost)(figures_of(params), params, plan)


def sensitivity(params: PlacementParams, catalog: Catalog, schedule) -> dict:
    """d(cost)/d(figure) and elasticity of every catalogue and network figure of one plan.

    schedule: type index per real layer. Returns {"cost": $ (the model's), "figures": [one dict
    per figure: "type", "figure", "dimension" (1-based; null for per-type figures), "unit",
    "value", "d_cost" ($ per unit of the figure), "elasticity", "in_plan" (the type is used)]}.
    Raises ConfigError when the plan is infeasible (its cost is not defined)."""
    padded = np.zeros((params.max_layers,), np.int32)
    padded[: len(schedule)] = schedule
    plan, feasible, model_cost, reason = fix_plan(params, jnp.asarray(padded))
    if not bool(feasible):
        reason = REASONS[int(reason)]
        raise ConfigError("schedule", "sensitivity", f"the plan is infeasible ({reason}); its cost has no gradient")
    _, grads = cost_and_gradients(params, plan)
    cost = float(model_cost)
    used_types = {int(t) for t in schedule}
    values = {name: np.asarray(v) for name, v in figures_of(params).items()}
    grads = {name: np.asarray(g) for name, g in grads.items()}
    units = dict(TYPE_FIGURES + NETWORK_FIGURES)
    rows = []
    for t, resource in enumerate(catalog.resources):
        cells = [(name, None, (t,)) for name, _ in TYPE_FIGURES]
        for d in range(len(resource.network.dimensions)):
            cells += [(name, d + 1, (t, d)) for name, _ in NETWORK_FIGURES]
        for name, dimension, at in cells:
            value, d_cost = float(values[name][at]), float(grads[name][at])
            rows.append(
                {
                    "type": resource.name,
                    "figure": name,
                    "dimension": dimension,
                    "unit": units[name],
                    "value": value,
                    "d_cost": d_cost,
                    "elasticity": d_cost * value / cost,
                    "in_plan": t in used_types,
                }
            )
    return {"cost": cost, "figures": rows}


__all__ = ["FIGURES", "FixedPlan", "cost_and_gradients", "fix_plan", "plan_cost", "sensitivity"]
