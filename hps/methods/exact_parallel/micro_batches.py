"""The order in which the exact solver takes the micro-batches, and what it knows of each before
building its stage table (docs/parallel-plans.md, "The exact solver").

For a micro-batch b (M = B/b micro-batches), every plan costs at least

    work(b) = (N / 3600) · Σ_l min over types y, degrees t and m dividing b of price_y · t · time_l(y, t, m) / m

since a stage of t·d devices running b = m·d samples a micro-batch takes r·τ ≥ b·Σ_l price·t·time_l/m,
and the iteration is at least M·τ of each stage (M·b = B). And the cheapest one-stage plan under b
(every layer on one type, t·d units, d dividing b) that meets memory, the caps and the floor is a
plan the solver may start from. Micro-batches are taken by work(b), least first, then by that
plan's cost; one whose work(b) reaches the best cost is closed without its table.
"""

from __future__ import annotations

import math

import numpy as np

from hps.config.types import ParallelStage
from hps.costmodel.parallel.problem import FLOOR_TOLERANCE, ParallelProblem, divisors
from hps.costmodel.parallel.stages import stage_arrays


def work_at(problem: ParallelProblem, b: int) -> float:
    """work(b): a lower bound ($) on the cost of every plan under micro-batch b."""
    least = np.full((problem.num_layers, problem.num_types), np.inf)
    for y in range(problem.num_types):
        for t in problem.tp_choices(y):
            for m in divisors(b):
                least[:, y] = np.minimum(least[:, y], t * problem.layer_times(y, t, m) / m)
    dollars = least * problem.price
    if problem.allowed is not None:
        dollars = np.where(problem.allowed, dollars, np.inf)
    return float(problem.job.samples / 3600 * dollars.min(axis=1).sum())


def one_stage_plans(problem: ParallelProblem, b: int) -> list[tuple[float, ParallelStage]]:
    """(cost $, stage) of the one-stage plans under micro-batch b that fit memory, the type's
    units and network, the allowed types and the floor, cheapest first."""
    rows = [
        (y, t, d)
        for y, resource in enumerate(problem.catalog.resources)
        for t in problem.tp_choices(y)
        for d in divisors(b)
        if t * d <= resource.max_units
    ]
    if not rows:
        return []
    types, tp, dp = (np.array(column, np.int64) for column in zip(*rows))
    last = problem.num_layers - 1
    first, lasts = np.zeros(len(rows), np.int64), np.full(len(rows), last)
    arrays = stage_arrays(problem, b, first, lasts, types, tp, dp)
    job = problem.job
    micro_batches = int(job.batch) // b
    iteration = problem.clock.bubble_slots(1, micro_batches) * arrays.time + arrays.tail
    limits = np.array([r.memory for r in problem.catalog.resources])[types]
    with np.errstate(invalid="ignore", divide="ignore"):
        fits = (
            (arrays.memory(np.ones(len(rows))) <= limits)
            & np.isfinite(iteration)
            & problem.span_allowed(first, lasts, types)
            & (job.batch / iteration >= job.throughput * (1 - FLOOR_TOLERANCE))
        )
    cost = job.samples / job.batch / 3600 * arrays.rate * iteration
    names = problem.catalog.names
    order = np.flatnonzero(fits)[np.argsort(cost[fits], kind="stable")]
    return [(float(cost[i]), ParallelStage(0, last, names[types[i]], int(tp[i]), int(dp[i]))) for i in order]


def ordered(problem: ParallelProblem, choices: list[int]) -> tuple[list[tuple[float, int]], dict]:
    """([(work(b), b)] by work(b), then by the cheapest one-stage plan's cost, then as `choices`
    had them; {b: the one-stage plans of b, cheapest first})."""
    seeds = {b: one_stage_plans(problem, b) for b in choices}
    first = {b: seeds[b][0][0] if seeds[b] else math.inf for b in choices}
    works = {b: work_at(problem, b) for b in choices}
    rank = {b: i for i, b in enumerate(choices)}
    order = sorted(choices, key=lambda b: (works[b], first[b], rank[b]))
    return [(works[b], b) for b in order], seeds
