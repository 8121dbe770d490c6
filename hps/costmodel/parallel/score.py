"""One parallel plan's score: feasibility and its reason, iteration time, throughput, $/hour,
egress, cost and MFU (docs/parallel-plans.md, "A plan's score")."""

from __future__ import annotations

import math

import numpy as np

from hps.config.types import ParallelStage
from hps.contract.types import PlanScore, StageScore
from hps.costmodel.clocks.base import throughput_range
from hps.costmodel.parallel.pipeline import bubble_slots
from hps.costmodel.parallel.problem import FLOOR_TOLERANCE, ParallelProblem
from hps.costmodel.parallel.stages import stage_arrays


def score_plan(problem: ParallelProblem, stages: tuple[ParallelStage, ...], b: int | None = None) -> PlanScore:
    """Score `stages` (contiguous, covering every layer, dp dividing b) under micro-batch b (the
    job's when None)."""
    job, catalog = problem.job, problem.catalog
    b = int(job.micro_batch if b is None else b)
    index = {name: i for i, name in enumerate(catalog.names)}
    types = [index[s.type] if s.type in index else catalog.index(s.type) for s in stages]
    arrays = stage_arrays(
        problem, b, [s.first for s in stages], [s.last for s in stages], types, [s.tp for s in stages],
        [s.dp for s in stages],
    )  # fmt: skip
    num, micro_batches = len(stages), int(job.batch) // b
    memory = arrays.memory(problem.in_flight(num, micro_batches))
    reason, detail = None, ""
    firsts, lasts = np.array([s.first for s in stages]), np.array([s.last for s in stages])
    outside = np.flatnonzero(~problem.span_allowed(firsts, lasts, np.array(types)))
    if len(outside):
        j = int(outside[0])
        no_fp8 = problem.fp8 and catalog.resources[types[j]].fp8_peak_flops is None
        why = "has no FP8 peak (the job computes in FP8)" if no_fp8 else f"may not run layers {firsts[j]}..{lasts[j]}"
        reason, detail = "not_allowed", f"stage {j}: {stages[j].type} {why}"
    unsplit = np.flatnonzero(~problem.splits(firsts, lasts))
    if len(unsplit) and reason is None:
        j = int(unsplit[0])
        units = int(problem.span_units(firsts[j], lasts[j]))
        reason = "virtual_stages"
        detail = f"stage {j}: {units} pipeline units cannot be split into {problem.virtual_stages} model chunks"
    unreachable = np.flatnonzero(np.isnan(arrays.tail))
    if len(unreachable) and reason is None:
        j = int(unreachable[0])
        reason = "network"
        detail = (
            f"stage {j}: {stages[j].dp} replicas of {stages[j].tp}-way groups do not fit the network of "
            f"{stages[j].type} (or its max_units)"
        )
    limits = [float(problem.memory_limit[t]) for t in types]
    for j, (used, limit) in enumerate(zip(memory, limits)):
        if used > limit and reason is None:
            reason = "memory"
            detail = (
                f"stage {j} needs {used / 2**30:.1f} GiB per device of the {limit / 2**30:.1f} GiB "
                "it may use (memory less headroom)"
            )
            break
    bandwidth, latency, price = problem.link_matrix()
    sites = problem.type_site[types]
    hops, egress = [], 0.0
    for j in range(num - 1):
        a, c = sites[j], sites[j + 1]
        if a == c:
            continue
        if bandwidth[a, c] == 0:
            reason = reason or "no_link"
            detail = (
                detail or f"no link between sites {problem.sites[a]!r} and {problem.sites[c]!r} (stages {j}, {j + 1})"
            )
            continue
        nbytes = problem.act_bytes[stages[j].last]
        hops.append(b * nbytes / bandwidth[a, c] + latency[a, c])
        egress += 2 * job.batch * nbytes * price[a, c]
    if reason is None:
        for t in sorted(set(types)):
            used = sum(s.tp * s.dp for s, u in zip(stages, types) if u == t)
            cap = int(problem.pooled_caps[t])
            if used > cap:
                reason, detail = "pooled_cap", f"{catalog.resources[t].name}: {used} units of {cap}"
                break
    slowest = max([*arrays.time.tolist(), *hops])
    iteration = bubble_slots(num, micro_batches, problem.virtual_stages) * slowest + float(arrays.tail.max())
    throughput = job.batch / iteration
    if reason is None and throughput < job.throughput * (1 - FLOOR_TOLERANCE):
        reason, detail = "throughput", f"{throughput:.6g} samples/s below the floor {job.throughput:.6g}"
    dollars = float(arrays.rate.sum())
    if reason is None and job.budget_per_hour is not None and dollars > job.budget_per_hour * (1 + FLOOR_TOLERANCE):
        reason, detail = "budget", f"${dollars:,.6g} per hour over the budget ${job.budget_per_hour:,.6g}"
    iterations = job.samples / job.batch
    egress_total = egress * iterations
    cost = (dollars * iteration / 3600) * iterations + egress_total if reason is None else math.inf
    peak = sum(s.tp * s.dp * catalog.resources[t].peak_flops for s, t in zip(stages, types))
    scores = tuple(
        StageScore(
            stage=s, site=problem.sites[sites[j]], replica_micro_batch=b // s.dp,
            time_per_microbatch_s=float(arrays.time[j]), tail_s=float(arrays.tail[j]),
            memory_per_device_bytes=float(memory[j]), memory_limit_bytes=limits[j], units=s.tp * s.dp,
            dollars_per_hour=float(arrays.rate[j]),
            time_source=problem.time_sources(types[j], s.tp, b // s.dp, s.first, s.last),
            boundary_s=float(arrays.boundary[j]), sync_s=float(arrays.sync[j]),
        )
        for j, s in enumerate(stages)
    )  # fmt: skip
    return PlanScore(
        feasible=reason is None,
        reason=reason,
        detail=detail,
        micro_batch=b,
        micro_batches=micro_batches,
        iteration_s=iteration,
        bottleneck_s=slowest,
        throughput=throughput,
        dollars_per_hour=dollars,
        egress_dollars=egress_total,
        cost=cost,
        mfu=problem.model_flops * throughput / peak,
        stages=scores,
        clock=problem.clock.name,
        throughput_range=plan_range(problem, types, throughput),
    )


def plan_range(problem: ParallelProblem, types: list[int], throughput: float) -> tuple[float, float]:
    """The plan's `throughput_range`: by the widest band of the clock's residuals on its types."""
    bands = [problem.clock.residuals(problem.catalog.resources[t], problem.fp8) for t in set(types)]
    return throughput_range(throughput, min(low for low, _ in bands), max(high for _, high in bands))
