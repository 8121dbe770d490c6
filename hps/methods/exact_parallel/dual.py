"""The exact solver's dual: the most throughput within a budget in dollars per hour
(docs/parallel-plans.md, "The most throughput within a budget").

A plan of S stages under micro-batch b (M = B/b micro-batches) runs an iteration in
T = (M + (S − 1)/v)·θ + φ (θ its largest time per micro-batch, links included; φ its largest
tail) and rents its units for Σ r $/hour. The solver finds the least T, so the most throughput
B/T, among plans with Σ r ≤ the budget (and B/T at or above the floor), on the same stage tables
and least-rate program as the cost solver:

- For a region of plans whose every τ ≤ θ̄ and φ ≤ φ̄, the program's least Σ r is over the budget:
  no plan of the region is affordable and it is closed.
- Every plan of the region has T ≥ (M + (S − 1)/v)·max(θ_lo, θ_lb, W_S/budget) + φ_lb, where θ_lb
  and φ_lb are the least τ and φ of any allowed stage covering the worst-covered layer and W_S is
  the least Σ r·τ of S stages (Σ r·τ ≤ Σ r·θ ≤ budget·θ). A region whose bound does not beat the
  best plan is closed.
- Otherwise the least-rate plan P (affordable) is scored; every plan with θ ≥ θ_P and φ ≥ φ_P
  has T ≥ T_P, so two regions are left: θ < θ_P, and φ < φ_P. A region whose θ range is wide is
  halved first, so that each half is bounded by its own least θ (a bisection on θ).
- Where P breaks a pooled cap, the region is halved while wide, then searched plan by plan.

Before its table is built, micro-batch b is bounded by B/T ≤ budget·N / (3600·work(b))
(`micro_batches.work_floor`: Σ r ≥ R·Σ_l least price·device-seconds per sample), by the linear
program that holds the caps and that budget row together (`reach.max_throughput_within`), and
every plan by the reach of the caps (`reach.max_throughput`).
"""

from __future__ import annotations

import heapq
import math
import time

import numpy as np

from hps.contract.types import GAP_ROUNDING as ROUNDING
from hps.contract.types import Plan, PlanResult
from hps.costmodel.parallel.problem import FLOOR_TOLERANCE, ParallelProblem
from hps.costmodel.parallel.score import score_plan
from hps.methods.exact_parallel.micro_batches import work_floor
from hps.methods.exact_parallel.reach import max_throughput, max_throughput_within
from hps.methods.exact_parallel.solver import SPLIT, Deadline, Left, _below, _Best, _Micro, regions_open, unsearched
from hps.methods.exact_parallel.table import SharedTables, TableUnfinished

LP_SLACK = 1e-7
"""Relative slack on the linear program's optimum (the solver's tolerance), so that its bound
never cuts a plan it admits."""


class _Search:
    """The search under one micro-batch: regions of each stage count, least iteration bound first."""

    def __init__(self, micro: _Micro, best: _Best, budget: float):
        self.micro, self.best, self.budget = micro, best, budget
        self.batch = micro.problem.job.batch
        self.deferred = []  # (iteration bound, stages, θ_lo, θ̄, φ̄) left to the plan-by-plan search

    def slots(self, stages) -> np.ndarray:
        return self.micro.problem.bubble_slots_of(self.micro.table.micro_batches, stages)

    def count_bound(self, stages) -> np.ndarray:
        """The least iteration (s) of any affordable plan of `stages` stages: slots·W_S/budget."""
        return self.slots(stages) * self.micro.work[stages] / self.budget

    def beats(self, iteration: float) -> bool:
        """Whether a plan of this iteration (s) could beat the best and meet the floor."""
        return iteration < self.best.value * (1 - ROUNDING) and iteration <= self.micro.limit

    def stage_count(self, stages: int, deadline: Deadline) -> float:
        """Close every region of plans of `stages` stages; the least iteration bound (s) left open
        (inf when all are closed)."""
        micro, m = self.micro, float(self.slots(stages))
        top = micro.limit / micro.table.micro_batches
        floor_theta = float(micro.work[stages]) / self.budget
        heap, seen, open_bound = [(0.0, 0.0, top, micro.limit)], set(), math.inf
        while heap:
            _, lo, theta, phi = heapq.heappop(heap)
            if (lo, theta, phi) in seen or lo > theta:
                continue
            seen.add((lo, theta, phi))
            least, solved, (theta_lb, phi_lb) = micro.solve(theta, phi, stages)
            rate = least[stages] if stages < len(least) else math.inf
            if not rate <= self.budget * (1 + FLOOR_TOLERANCE):
                continue
            low = max(lo, theta_lb)
            bound = m * max(low, floor_theta) + phi_lb
            if not self.beats(bound):
                continue
            if deadline.passed():
                open_bound = min([open_bound, bound, *(b for b, *_ in heap)])
                break
            score = self.best.offer(micro.problem, micro.to_plan(micro.table.plan_of(stages, solved)), micro.b)
            theta_p, phi_p = score.bottleneck_s, max(s.tail_s for s in score.stages)
            best = self.best.value
            within = min(theta, (best - phi_lb) / m)  # a plan of larger θ is no faster than the best
            if low > 0 and within > low * (1 + SPLIT):  # wide: halve, each half bounded by its own θ
                middle = math.sqrt(low * within)
                heapq.heappush(heap, (bound, lo, _below(middle), phi))
                heapq.heappush(heap, (m * max(middle, floor_theta) + phi_lb, middle, within, phi))
                continue
            if score.reason == "pooled_cap":  # P bounds nothing: search the region plan by plan
                self.deferred.append((bound, stages, lo, within, phi))
                continue
            # plans with θ ≥ θ_P and φ ≥ φ_P take at least P's iteration (or miss the floor as P does)
            children = [
                (max(lo, theta_p), within, min(_below(phi_p), best - m * low)),
                (lo, min(_below(theta_p), within), phi),
            ]
            for child in children:
                heapq.heappush(heap, (bound, *child))
        return open_bound

    def search_deferred(self, deadline: Deadline, left: Left) -> None:
        """Search the deferred regions plan by plan, least bound first; the throughput bounds
        left open go to `left`."""
        from hps.methods.exact_parallel.dual_dfs import search_region

        for bound, stages, lo, theta, phi in sorted(self.deferred):
            if not self.beats(bound):
                break
            if deadline.passed():
                left.add(self.batch / bound, regions_open(stages, self.micro.b, by_plan=True))
                break
            found, rest = search_region(self, stages, lo, theta, phi, deadline)
            for entries in found:
                self.best.offer(self.micro.problem, self.micro.to_plan(entries), self.micro.b)
            left.add(self.batch / rest, regions_open(stages, self.micro.b, by_plan=True))


def solve_max_throughput(
    problem: ParallelProblem,
    *,
    seconds: float = math.inf,
    incumbent: Plan | None = None,
    tables: SharedTables | None = None,
) -> PlanResult:
    """The plan of `problem` with the most throughput whose units rent for at most the job's
    budget_per_hour (and that meets the floor), and its certificate: the result's bound is a
    proven upper bound on the throughput of every such plan (0: none exists), within `seconds`.
    incumbent: a plan to prune against from the start; tables: as `solve_parallel`'s."""
    started = time.perf_counter()
    deadline = Deadline(started + seconds)
    budget, batch = float(problem.job.budget_per_hour), float(problem.job.batch)
    reach = max_throughput(problem)

    def done(left: Left, best: _Best) -> PlanResult:
        score = score_plan(problem, best.plan, best.b) if best.plan is not None else None
        plan = None if best.plan is None else Plan(tuple(best.plan), best.b)
        found = score.throughput if score is not None and score.feasible else 0.0
        bound = min(max(found, left.bound), max(reach, found))
        held = left.what if bound > found * (1 + ROUNDING) else None
        seconds_taken = time.perf_counter() - started
        return PlanResult("exact", plan, score, bound, seconds_taken, best.evaluations, "throughput", held)

    best, left = _Best("iteration_s"), Left(least=False)
    if problem.job.throughput > reach * (1 + FLOOR_TOLERANCE):  # proven: no plan meets the floor
        return done(left, best)
    if incumbent is not None:
        best.offer(problem, incumbent.stages, incumbent.micro_batch)
    samples = problem.job.samples

    def reach_of(b: int) -> float:
        """The most samples/s any affordable plan under b can run: the budget over its least $ per
        sample, and the linear program of the caps and the budget together (`max_throughput_within`)."""
        work = work_floor(problem, b)
        alone = math.inf if work <= 0 else budget * samples / (3600 * work)
        return min(alone, max_throughput_within(problem, b, budget) * (1 + LP_SLACK))

    floor = problem.job.throughput * (1 - FLOOR_TOLERANCE)
    choices = sorted(((reach_of(b), b) for b in problem.micro_batch_choices()), key=lambda c: -c[0])
    for index, (most, b) in enumerate(choices):
        if most < floor or most <= batch / best.value * (1 + ROUNDING):
            continue
        micro = None
        if not deadline.passed():
            try:
                micro = _Micro(problem, b, best, tables, deadline)
            except TableUnfinished:
                pass
        if micro is None:  # out of time before or while building its table: this and those left
            rest = [c for m, c in choices[index:] if m >= floor and m > batch / best.value * (1 + ROUNDING)]
            left.add(most, unsearched(rest))
            break
        search = _Search(micro, best, budget)
        counts = np.arange(1, micro.table.max_stages + 1)
        first = search.count_bound(counts)
        for stages in counts[np.argsort(first, kind="stable")]:
            bound = float(search.count_bound(stages))
            if not search.beats(bound):
                continue
            if deadline.passed():
                left.add(batch / bound, regions_open(int(stages), b))
                break
            left.add(batch / search.stage_count(int(stages), deadline), regions_open(int(stages), b))
        search.search_deferred(deadline, left)
    return done(left, best)
