"""Incremental scoring of a schedule as it is built, one layer per step.

Each step provisions one stage — the open stage, from its first layer through the layer just
placed — with the cost model's `provision` (the same function `evaluate_schedules` uses), and
keeps it pending. The next step commits the pending stage to running totals when the type
changes (the stage is then complete), and the last layer commits its own. A whole schedule costs
O(L·K) once instead of being re-scored at every step, and the totals at the last layer
equal a direct evaluation of the full schedule (the env tests pin this).

Reward of a finished schedule (docs/environments.md):
  feasible:    −min(cost / cost_scale, RATIO_CAP)          (cost_scale = the reference cost)
  infeasible:  −(INFEASIBLE_BASE + min(penalty, PENALTY_CAP)), penalty > 0 the sum of
               ln(R / throughput) where below the floor R, the fraction of layers in stages that
               cannot be provisioned (memory or throughput), and Σ_t units over the pooled cap of
               type t / that cap — the same graded terms the search baselines rank by.
Every infeasible plan scores below −INFEASIBLE_BASE < −RATIO_CAP ≤ every feasible plan, and an
infeasible plan scores higher the closer it is to feasible. The cap is needed for that order
(cost ratios are unbounded); it sits at 10 because random feasible plans of generated instances
have a median ratio near 6, so the cap flattens only the worst of them.
"""

from __future__ import annotations

import jax.numpy as jnp
from flax import struct

from hps.costmodel.schedule.cost import FEASIBLE, provision

RATIO_CAP = 10.0
INFEASIBLE_BASE = 11.0
PENALTY_CAP = 4.0


@struct.dataclass
class Totals:
    """Running totals over the closed stages of a schedule: units (T,) replicas per type,
    dollars_per_hour ($/h), throughput (samples/s, min over stages; +inf before any stage),
    failing_layers (layers in stages that cannot be provisioned)."""

    units: jnp.ndarray
    dollars_per_hour: jnp.ndarray
    throughput: jnp.ndarray
    failing_layers: jnp.ndarray

    @classmethod
    def empty(cls, max_types: int) -> Totals:
        return cls(
            units=jnp.zeros((max_types,), jnp.float32),
            dollars_per_hour=jnp.float32(0.0),
            throughput=jnp.float32(jnp.inf),
            failing_layers=jnp.int32(0),
        )


@struct.dataclass
class ProvisionedStage:
    """A provisioned stage: replicas (float), time (s per iteration at those replicas), reason
    (int32 code, FEASIBLE when provisionable)."""

    replicas: jnp.ndarray
    time: jnp.ndarray
    reason: jnp.ndarray


@struct.dataclass
class StageSums:
    """Sums over the open stage's layers, kept as the stage grows so that a step costs O(1) in
    the layer count: time (s/sample on the stage's type), dense, sparse and act (bytes)."""

    time: jnp.ndarray
    dense: jnp.ndarray
    sparse: jnp.ndarray
    act: jnp.ndarray

    @classmethod
    def empty(cls) -> StageSums:
        zero = jnp.float32(0.0)
        return cls(time=zero, dense=zero, sparse=zero, act=zero)


def extend_sums(sums: StageSums, instance, layer, type_index, restart) -> StageSums:
    """The sums with `layer` (on `type_index`) added; where `restart`, the sums of a stage that
    begins at `layer`."""
    params = instance.placement
    grow = lambda total, value: jnp.where(restart, 0.0, total) + value  # noqa: E731
    return StageSums(
        time=grow(sums.time, instance.layer_time[layer, type_index]),
        dense=grow(sums.dense, params.dense_param_bytes[layer]),
        sparse=grow(sums.sparse, params.sparse_param_bytes[layer]),
        act=grow(sums.act, params.act_bytes[layer]),
    )


def provision_stage(instance, first, last, type_index, sums: StageSums) -> ProvisionedStage:
    """Provision the stage of layers first..last (int32 scalars) on type `type_index`, whose
    sums over its layers are `sums`."""
    params = instance.placement
    n_layers = jnp.sum(params.layer_mask)
    act_in = jnp.where(first > 0, params.act_bytes[jnp.maximum(first - 1, 0)], 0.0)
    act_out = jnp.where(last < n_layers - 1, params.act_bytes[last], 0.0)
    replicas, time, reason = provision(
        params,
        sums.time,
        act_in + act_out,
        sums.dense,
        sums.sparse,
        sums.act,
        instance.alpha,
        instance.beta,
        type_index,
    )
    return ProvisionedStage(replicas.astype(jnp.float32), time, reason)


def commit(totals: Totals, instance, stage: ProvisionedStage, first, last, type_index, flag) -> Totals:
    """The totals with `stage` (layers first..last on `type_index`) added where `flag`."""
    params = instance.placement
    replicas = jnp.where(flag, stage.replicas, 0.0)
    failing = flag & (stage.reason != FEASIBLE)
    return Totals(
        units=totals.units + jnp.where(jnp.arange(params.max_types) == type_index, replicas, 0.0),
        dollars_per_hour=totals.dollars_per_hour + replicas * params.price_per_hour[type_index],
        throughput=jnp.where(flag, jnp.minimum(totals.throughput, params.batch / stage.time), totals.throughput),
        failing_layers=totals.failing_layers + jnp.where(failing, last - first + 1, 0),
    )


@struct.dataclass
class Outcome:
    """A finished schedule: feasible, cost ($, +inf when infeasible), cost_ratio (cost /
    cost_scale, +inf when infeasible), penalty (≥ 0 graded infeasibility, 0 when feasible),
    throughput (samples/s), dollars_per_hour, reward."""

    feasible: jnp.ndarray
    cost: jnp.ndarray
    cost_ratio: jnp.ndarray
    penalty: jnp.ndarray
    throughput: jnp.ndarray
    dollars_per_hour: jnp.ndarray
    reward: jnp.ndarray


def outcome(totals: Totals, instance) -> Outcome:
    """Feasibility, cost and reward (module docstring) of a schedule whose stages are all added."""
    params = instance.placement
    cap = params.max_units.astype(jnp.float32)
    overflow = jnp.sum(jnp.where(params.type_mask, jnp.maximum(totals.units - cap, 0.0) / jnp.maximum(cap, 1.0), 0.0))
    over_cap = jnp.any(totals.units > cap)
    feasible = (totals.failing_layers == 0) & ~over_cap
    shortfall = jnp.maximum(jnp.log(params.throughput / totals.throughput), 0.0)
    layers = jnp.maximum(jnp.sum(params.layer_mask), 1)
    penalty = jnp.nan_to_num(shortfall, nan=0.0, posinf=PENALTY_CAP) + totals.failing_layers / layers + overflow
    cost = totals.dollars_per_hour * (params.samples / totals.throughput) / 3600.0
    cost = jnp.where(feasible, cost, jnp.inf)
    ratio = cost / instance.cost_scale
    reward = jnp.where(
        feasible,
        -jnp.minimum(ratio, RATIO_CAP),
        -(INFEASIBLE_BASE + jnp.minimum(penalty, PENALTY_CAP)),
    )
    return Outcome(
        feasible=feasible,
        cost=cost,
        cost_ratio=ratio,
        penalty=jnp.where(feasible, 0.0, penalty),
        throughput=totals.throughput,
        dollars_per_hour=totals.dollars_per_hour,
        reward=reward.astype(jnp.float32),
    )
