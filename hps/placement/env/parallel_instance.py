"""Parallel-plan instances as env params: a problem's padded `PlanParams`, its packed tables, and
what the parallel environment reads beside them (where a stage may end, which tensor-parallel
degrees each type takes, the work profile, the reference cost).

Built on the host once per instance (`parallel_instance`), stacked on a leading instance axis
(`stack_instances`) and run under float64 (`jax.enable_x64`), as the batched scorer is.
"""

from __future__ import annotations

import functools

import numpy as np
from flax import struct

from hps.costmodel.parallel.batched import Packed, pack
from hps.costmodel.parallel.batched_params import Bucket, PlanParams, bucket_for, plan_params, stack
from hps.costmodel.parallel.problem import ParallelProblem

SECONDS_PER_HOUR = 3600.0
POOL_CATALOG = "cloud-2026"
"""The catalogue generated instances draw their types from."""


@struct.dataclass
class ParallelInstance:
    """One instance of the parallel environment (a leading instance axis when stacked).

    params: the padded `PlanParams`; packed: `batched.pack(params)`; cut_ok (L,) bool: a stage may
    end after layer i (a cut is allowed there, or i is the last real layer); tp_ok (T, P) bool:
    type y takes t = 2^level; work (L + 1,) the prefix of each layer's share of the model's
    compute (0 .. 1; mean over the real types of its seconds per sample at t = 1); reference ()
    $: the cost a plan's reward is measured against (`cost_lower_bound`, or a known optimum);
    micro_batch_ok (D,) bool: the divisor slots a plan's micro-batch may take (only the job's
    where the job fixes it)."""

    params: PlanParams
    packed: Packed
    micro_batch_ok: np.ndarray
    cut_ok: np.ndarray
    tp_ok: np.ndarray
    work: np.ndarray
    reference: np.ndarray


def cost_lower_bound(problem: ParallelProblem) -> float:
    """$ no plan of `problem` costs less: every sample's every layer on the type where it costs
    least (price × least device-seconds per sample), with no bubble, sync or cap."""
    seconds = problem.least_unit_seconds()  # (L, T) device-seconds per sample
    if problem.allowed is not None:
        seconds = np.where(problem.allowed, seconds, np.inf)
    dollars = np.where(np.isfinite(seconds), seconds * problem.price[None, :], np.inf).min(axis=1)
    return float(problem.job.samples * dollars.sum() / SECONDS_PER_HOUR)


def parallel_instance(problem: ParallelProblem, bucket: Bucket, reference: float | None = None) -> ParallelInstance:
    """`problem` as a ParallelInstance padded to `bucket`; `reference` defaults to
    `cost_lower_bound`. ValueError where the problem is past the bucket or has measured times."""
    params = plan_params(problem, bucket)
    n = problem.num_layers
    cut_ok = np.zeros(bucket.layers, bool)
    cut_ok[:n] = problem.cut_after
    cut_ok[n - 1] = True
    tp_ok = np.zeros((bucket.types, bucket.tp_levels), bool)
    for y in range(problem.num_types):
        for t in problem.tp_choices(y):
            level = int(t).bit_length() - 1
            if level < bucket.tp_levels:
                tp_ok[y, level] = True
    per_sample = params.compute_slope[: problem.num_types, 0, :].mean(axis=0)  # (L,) s per sample at t = 1
    per_sample = np.where(params.layer_mask, np.maximum(per_sample, 0.0), 0.0)
    prefix = np.concatenate([[0.0], np.cumsum(per_sample)])
    work = prefix / max(prefix[-1], 1e-30)
    value = cost_lower_bound(problem) if reference is None else float(reference)
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"reference cost must be positive and finite, got {value!r}")
    divisors = np.asarray(params.divisors)
    fixed = problem.job.micro_batch
    micro_batch_ok = divisors <= problem.job.batch if fixed is None else divisors == int(fixed)
    return ParallelInstance(
        params=params,
        packed=_packed(params),
        micro_batch_ok=micro_batch_ok,
        cut_ok=cut_ok,
        tp_ok=tp_ok,
        work=work,
        reference=np.float64(value),
    )


def _packed(params: PlanParams) -> Packed:
    import jax

    with jax.enable_x64(True):
        return jax.tree.map(np.asarray, pack(jax.tree.map(np.asarray, params)))


def stack_instances(instances: list[ParallelInstance]) -> ParallelInstance:
    """Instances of one bucket stacked on a leading instance axis."""
    return ParallelInstance(
        params=stack([i.params for i in instances]),
        packed=Packed(
            **{name: np.stack([getattr(i.packed, name) for i in instances]) for name in Packed.__dataclass_fields__}
        ),
        micro_batch_ok=np.stack([i.micro_batch_ok for i in instances]),
        cut_ok=np.stack([i.cut_ok for i in instances]),
        tp_ok=np.stack([i.tp_ok for i in instances]),
        work=np.stack([i.work for i in instances]),
        reference=np.stack([i.reference for i in instances]),
    )


@functools.cache
def base_catalog():
    """The catalogue generated instances draw their types from (POOL_CATALOG), loaded once."""
    from hps.config.loaders import load_catalog
    from hps.config.paths import resolve_topology

    return load_catalog(resolve_topology(POOL_CATALOG, "catalogs", "parallel policy"))


@functools.cache
def instance_pool(split: str, first_seed: int, count: int):
    """(problems, stacked `ParallelInstance`s) of instances first_seed .. first_seed + count − 1
    of `split`, padded to the bucket of the split's largest sizes, as numpy arrays."""
    from hps.placement.env.parallel_generator import SPLITS, generate

    problems = tuple(
        generate(SPLITS[split], seed, base_catalog()).problem for seed in range(first_seed, first_seed + count)
    )
    bucket = bucket_for(*problems)
    return problems, stack_instances([parallel_instance(p, bucket) for p in problems])
