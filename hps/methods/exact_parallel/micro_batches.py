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

from hps.costmodel.parallel.problem import ParallelProblem


def work_floor(problem: ParallelProblem, b: int | None = None) -> float:
    """work(b) ($): a lower bound on the cost of every plan under micro-batch b (None: under any
    micro-batch): each layer's least price · `least_unit_seconds(b)` over the types allowed to run
    it, times the samples."""
    dollars = problem.least_unit_seconds(b) * problem.price
    if problem.allowed is not None:
        dollars = np.where(problem.allowed, dollars, np.inf)
    return float(problem.job.samples / 3600 * dollars.min(axis=1).sum())


def ordered(problem: ParallelProblem, choices: list[int], seeds: int) -> tuple[list[tuple[float, int]], dict]:
    """([(work(b), b)] by work(b), then by the cheapest one-stage plan's cost, then as `choices`
    had them; {b: up to `seeds` one-stage plans of b, cheapest first, as (cost $, stages, b)}:
    every layer on one type, t·d units, d dividing b, within memory, the caps, the network and
    the floor (`hps.methods.uniform.uniform_plans`)."""
    from hps.methods.uniform import uniform_plans

    whole = [(0, problem.num_layers - 1)]
    types = list(range(problem.num_types))
    plans = {b: uniform_plans(problem, b, whole, types, seeds)[0] for b in choices}
    first = {b: plans[b][0][0] if plans[b] else math.inf for b in choices}
    works = {b: work_floor(problem, b) for b in choices}
    rank = {b: i for i, b in enumerate(choices)}
    order = sorted(choices, key=lambda b: (works[b], first[b], rank[b]))
    return [(works[b], b) for b in order], plans
