"""Type sequences over segments, completed exactly and cached.

A segment is a maximal run of layers between allowed cuts (`problem.cut_after`): a stage ends only
at a segment's end, so every plan runs each segment on one type, and a sequence of one type per
segment covers every plan there is. A sequence is completed by the exact solver on the problem
restricted to it (one type allowed per layer): the cheapest cuts, t, d and micro-batch that keep
every layer on its type.

Before completing, a sequence's work bound is checked against the best cost so far (`WorkBound`);
a sequence it cannot bring below the best is recorded as pruned, without a completion.
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from hps.contract.types import Budget, Plan, PlanResult, PlanScore
from hps.costmodel.parallel.problem import FLOOR_TOLERANCE, ParallelProblem
from hps.methods.exact_parallel.solver import solve_parallel

Sequence = tuple[int, ...]
"""One type index per segment."""
PRUNE_SLACK = 1e-9
"""A sequence is pruned when its work bound exceeds the best cost by more than this fraction
(the bound and the cost sum in different orders)."""
CAP_SLACK = 1e-9
"""A type's needed units must pass its cap by more than this fraction to rule a sequence out."""


def segments(problem: ParallelProblem) -> list[tuple[int, int]]:
    """(first, last) layer of each segment, in order."""
    ends = np.flatnonzero(problem.cut_after)
    starts = np.concatenate([[0], ends[:-1] + 1])
    return [(int(a), int(b)) for a, b in zip(starts, ends)]


class WorkBound:
    """A lower bound on the cost of every plan that keeps a sequence, from the work alone:

        cost ≥ (N/3600)·Σ_l price_y·w_l,y  +  Σ over site changes 2·N·a·dollars_per_byte

    with w_l,y the least device-seconds per sample of layer l on type y
    (`ParallelProblem.least_unit_seconds`, over t and the per-replica micro-batch m). A stage of
    rate r_j = t·d·price and time τ_j ≥ Σ (m/t)·w runs M micro-batches of m·d = b samples, so
    Σ_j r_j·M·θ ≥ B·Σ_l price·w; and a change of site between two segments is a stage boundary
    that pays egress (none possible without a link: inf).

    The bound is inf where the units a type needs pass its pooled cap U_y, in either of two ways:
    throughput ≤ B/(M·τ_j) ≤ t·d/Σ w for every stage, so the floor R needs t·d ≥ R·Σ w; and a
    stage's t·d devices hold at least its states once, t·d·memory ≥ P·(p + g + o) + Sp."""

    def __init__(self, problem: ParallelProblem, spans: list[tuple[int, int]]):
        seconds = problem.least_unit_seconds()
        resources = problem.catalog.resources
        samples = problem.job.samples
        starts = [first for first, _ in spans]
        self.work = samples / 3600 * np.add.reduceat(seconds * problem.price, starts, axis=0)  # (K, T)
        floor = problem.job.throughput * (1 - FLOOR_TOLERANCE)
        states = problem.parameters * sum(problem.precision_bytes) + problem.sparse_bytes
        memory = np.array([r.memory for r in resources])
        self.units = np.add.reduceat(floor * seconds, starts, axis=0)  # (K, T): units the floor needs
        self.held = np.add.reduceat(states[:, None] / memory, starts, axis=0)  # units that hold the states
        self.caps = np.array([r.max_units for r in resources], np.float64) * (1 + CAP_SLACK)
        bandwidth, _, price = problem.link_matrix()
        site = problem.type_site
        linked = bandwidth[site[:, None], site[None, :]] > 0
        act = problem.act_bytes[[last for _, last in spans[:-1]]]
        pair = np.where(linked, price[site[:, None], site[None, :]], np.inf)
        self.egress = 2 * samples * act[:, None, None] * pair[None]  # (K − 1, T, T)

    def __call__(self, sequence: Sequence) -> float:
        y = np.asarray(sequence)
        k = np.arange(len(y))
        types = len(self.caps)
        needed = np.maximum(
            np.bincount(y, self.units[k, y], minlength=types), np.bincount(y, self.held[k, y], minlength=types)
        )
        if (needed > self.caps).any():
            return math.inf
        return float(self.work[k, y].sum() + self.egress[k[:-1], y[:-1], y[1:]].sum())


@dataclasses.dataclass(frozen=True)
class Completion:
    """A sequence's cheapest plan (None: none feasible, or pruned) and its score, cost
    (inf without a plan), a lower bound on the cost of its plans (the solver's, or the work bound
    where pruned) and whether the completion is proven (gap 0)."""

    sequence: Sequence
    plan: Plan | None
    score: PlanScore | None
    cost: float
    bound: float
    proven: bool
    pruned: bool = False


class Completions:
    """Completes sequences within a budget, each at most once, and keeps the cheapest."""

    def __init__(self, problem: ParallelProblem, budget: Budget, default_evaluations: float = math.inf):
        self.problem, self.budget = problem, budget
        self.started = time.perf_counter()
        self.deadline = self.started + budget.seconds
        self.limit = default_evaluations if budget.evaluations is None else budget.evaluations
        self.segments = segments(problem)
        lengths = [last - first + 1 for first, last in self.segments]
        self.layer_segment = np.repeat(np.arange(len(self.segments)), lengths)
        self.work_bound = WorkBound(problem, self.segments)
        self.cache: dict[Sequence, Completion] = {}
        self.evaluations = 0
        self.best: Completion | None = None

    @property
    def num_segments(self) -> int:
        return len(self.segments)

    @property
    def num_types(self) -> int:
        return self.problem.num_types

    def exhausted(self) -> bool:
        """True once the evaluations or the seconds are spent."""
        return self.evaluations >= self.limit or time.perf_counter() >= self.deadline

    def complete(self, sequence: Sequence) -> Completion | None:
        """The sequence's completion (cached); pruned (no plan, cost inf) when its work bound reaches
        the best cost so far; None when it is neither cached nor pruned and the budget is spent."""
        sequence = tuple(int(y) for y in sequence)
        if sequence in self.cache:
            return self.cache[sequence]
        bound = self.work_bound(sequence)
        if bound >= self.best_cost() * (1 + PRUNE_SLACK):
            done = Completion(sequence, None, None, math.inf, bound, proven=True, pruned=True)
            self.cache[sequence] = done
            return done
        if self.exhausted():
            return None
        allowed = np.eye(self.num_types, dtype=bool)[np.array(sequence)[self.layer_segment]]
        left = self.deadline - time.perf_counter()
        found = solve_parallel(self.problem.restricted(allowed), seconds=max(left, 0.0))
        self.evaluations += 1
        cost = found.score.cost if found.plan is not None else math.inf
        done = Completion(sequence, found.plan, found.score, cost, found.bound, found.gap == 0.0)
        self.cache[sequence] = done
        if done.plan is not None and (self.best is None or cost < self.best.cost):
            self.best = done
        return done

    def cost(self, sequence: Sequence) -> float:
        """The sequence's completed cost; inf when infeasible or left uncompleted by the budget."""
        done = self.complete(sequence)
        return math.inf if done is None else done.cost

    def best_cost(self) -> float:
        return math.inf if self.best is None else self.best.cost

    def result(self, planner: str, bound: float = math.nan) -> PlanResult:
        """The PlanResult of the cheapest completion so far."""
        best = self.best
        return PlanResult(
            planner=planner,
            plan=None if best is None else best.plan,
            score=None if best is None else best.score,
            bound=bound,
            seconds=time.perf_counter() - self.started,
            evaluations=self.evaluations,
        )


def single_type(types: int, count: int) -> list[Sequence]:
    """Every one-type sequence of `count` segments."""
    return [(y,) * count for y in range(types)]


def runs(sequence: Sequence) -> list[tuple[int, int]]:
    """(first, last) segment of each maximal run of one type."""
    out, start = [], 0
    for k in range(1, len(sequence) + 1):
        if k == len(sequence) or sequence[k] != sequence[start]:
            out.append((start, k - 1))
            start = k
    return out


def retype(sequence: Sequence, first: int, last: int, y: int) -> Sequence:
    """The sequence with segments first..last on type y."""
    return sequence[:first] + (y,) * (last - first + 1) + sequence[last + 1 :]


def range_moves(sequence: Sequence, types: int) -> list[Sequence]:
    """Every sequence that differs by giving one contiguous range of segments one other type
    (ranges whose segments all have that type already are skipped)."""
    out, count = [], len(sequence)
    for first in range(count):
        for last in range(first, count):
            for y in range(types):
                moved = retype(sequence, first, last, y)
                if moved != sequence:
                    out.append(moved)
    return list(dict.fromkeys(out))


def run_moves(sequence: Sequence, types: int) -> list[Sequence]:
    """Run-level moves: retype a run's head or tail (with the neighbour's type, a boundary moves),
    retype a whole run, and swap the types of two adjacent runs."""
    out, spans = [], runs(sequence)
    for first, last in spans:
        for k in range(first, last + 1):
            for y in range(types):
                out.append(retype(sequence, k, last, y))
                out.append(retype(sequence, first, k, y))
    for (a, b), (c, d) in zip(spans, spans[1:]):
        out.append(retype(retype(sequence, a, b, sequence[c]), c, d, sequence[a]))
    return [s for s in dict.fromkeys(out) if s != sequence]


def random_sequence(rng: np.random.Generator, types: int, count: int, most_runs: int = 4) -> Sequence:
    """A sequence of 1..most_runs contiguous runs, each on a type drawn uniformly."""
    pieces = int(rng.integers(1, min(count, most_runs) + 1))
    cuts = sorted(rng.choice(np.arange(1, count), size=pieces - 1, replace=False).tolist()) if pieces > 1 else []
    bounds = [0, *cuts, count]
    out: list[int] = []
    for j in range(pieces):
        out += [int(rng.integers(types))] * (bounds[j + 1] - bounds[j])
    return tuple(out)
