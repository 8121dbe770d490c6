"""A feasible plan that mixes types, found without search: each type of an ordered list hosts at
most one stage, so no plan of it breaks a pooled cap (a stage holds at most its type's units).

For a micro-batch b and a largest stage time θ (s per micro-batch), the stages are laid greedily:
the next type of the order takes the longest run of layers from where the last stage ended that
one of its options (t, d) runs within θ and holds in its memory (less headroom) while keeping
min(K − j, M) micro-batches in flight, K the order's length and j the stage's place (1F1B: a
stage holds no more in any plan of at most K stages); a type that can take no layer there is
passed over. A bisection on θ finds the least θ at which the order covers every layer; every plan
it lays is scored exactly (`score_plan`) and the one of most throughput kept. It is a witness that
a floor is reachable, not an optimum: on 25 certified mixing instances the optimum cost 0.01–1.0
of it (median 0.65).
"""

from __future__ import annotations

import numpy as np

from hps.config.types import ParallelStage
from hps.contract.types import Plan
from hps.costmodel.parallel.problem import ParallelProblem, divisors
from hps.costmodel.parallel.score import score_plan
from hps.costmodel.parallel.stages import stage_arrays

BISECTIONS = 30
"""Halvings of the θ range per (order, micro-batch)."""


class _Options:
    """Every stage one type can run under micro-batch b: (span, t, d) candidates, flattened."""

    def __init__(self, problem: ParallelProblem, b: int, y: int):
        n = problem.num_layers
        cuts = np.flatnonzero(problem.cut_after[:-1])
        starts, ends = np.concatenate([[0], cuts + 1]), np.concatenate([cuts, [n - 1]])
        cap = problem.catalog.resources[y].max_units
        pairs = [
            (t, d) for t in problem.tp_choices(y) for d in divisors(b)
            if t * d <= cap and d <= len(problem.dp_allreduce(y, t)[0])
        ]  # fmt: skip
        first, last = np.meshgrid(starts, ends, indexing="ij")
        keep = first <= last
        count = len(pairs)
        self.first, self.last = np.repeat(first[keep], count), np.repeat(last[keep], count)
        self.tp = np.tile(np.array([t for t, _ in pairs], np.int64), int(keep.sum()))
        self.dp = np.tile(np.array([d for _, d in pairs], np.int64), int(keep.sum()))
        arrays = stage_arrays(problem, b, self.first, self.last, np.full(len(self.first), y), self.tp, self.dp)
        self.time = np.where(np.isfinite(arrays.tail), arrays.time, np.inf)
        self.arrays, self.limit = arrays, float(problem.memory_limit[y])

    def longest(self, first: int, theta: float, held: int) -> tuple[int, int, int] | None:
        """(last layer, t, d) of the longest stage from `first` within θ that holds `held`
        micro-batches in its memory (of those, the fastest); None where none fits."""
        fits = (self.first == first) & (self.time <= theta) & (self.arrays.memory(held) <= self.limit)
        if not fits.any():
            return None
        candidates = np.flatnonzero(fits)
        candidates = candidates[self.last[candidates] == self.last[candidates].max()]
        j = candidates[np.argmin(self.time[candidates])]
        return int(self.last[j]), int(self.tp[j]), int(self.dp[j])


def lay(problem: ParallelProblem, b: int, order: tuple[int, ...], options: dict, theta: float):
    """The stages the order lays within θ (s per micro-batch), or None where it leaves layers."""
    held_most, first, stages = int(problem.job.batch) // b, 0, []
    for j, y in enumerate(order):
        found = options[y].longest(first, theta, min(len(order) - j, held_most))
        if found is None:
            continue
        last, t, d = found
        stages.append(ParallelStage(first, last, problem.catalog.resources[y].name, t, d))
        first = last + 1
        if first == problem.num_layers:
            return tuple(stages)
    return None


def micro_batch_choices(problem: ParallelProblem, spread: float = 4.0) -> list[int]:
    """The job's micro-batch, or the divisors of the batch within `spread` of batch / micro_batches."""
    if problem.job.micro_batch is not None:
        return [int(problem.job.micro_batch)]
    hint = problem.job.batch / problem.job.micro_batches
    return [b for b in divisors(int(problem.job.batch)) if hint / spread <= b <= hint * spread]


def mixed_witness(problem: ParallelProblem, orders: list[tuple[int, ...]]) -> tuple[Plan | None, float]:
    """(the plan of most throughput the `orders` (type indices) lay, its samples/s; None, 0.0
    where none is feasible). The problem's floor is ignored; its caps, memory and links hold."""
    best, most = None, 0.0
    for b in micro_batch_choices(problem):
        options = {}
        for order in orders:
            for y in order:
                options.setdefault(y, _Options(problem, b, y))
            times = np.concatenate([options[y].time for y in order])
            low, high = 0.0, 2.0 * float(times[np.isfinite(times)].max(initial=0.0))
            for _ in range(BISECTIONS):
                middle = (low + high) / 2
                stages = lay(problem, b, order, options, middle)
                if stages is None:
                    low = middle
                    continue
                high = middle
                score = score_plan(problem, stages, b)
                if score.reason in (None, "throughput") and score.throughput > most:
                    best, most = Plan(stages, b), float(score.throughput)
    return best, most
