"""What-if sweeps of the parallel-plan model: one workload and catalogue planned at many points
(throughput floor R samples/s, price scale s), each point's plan a type sequence over segments
(`planners.completion`) completed exactly: the cheapest cuts, t, d and micro-batch that keep every
layer on its segment's type.

A point sets the job's floor to R and multiplies the $/hour of the scaled types (all types
unless named) by s; links keep their prices. The points share work through three facts of the
model, each exact:
- a stage table depends on neither the floor nor the prices (`SharedTables`);
- a plan's cost does not depend on the floor, and a higher floor only removes plans: a
  sequence's proven completion at floor R₁ whose plan runs at ≥ R samples/s is its proven
  completion at every R in [R₁, that throughput], and a sequence proven to have no feasible plan
  at R₁ has none at any higher floor;
- prices do not change feasibility: a sequence, or a whole point, proven to have no plan at
  floor R₁ under one price scale has none at any floor ≥ R₁ under any scale;
- a completion offered the point's best plan so far as its incumbent either beats it or proves
  that no plan of the sequence does (the solver's result does not depend on the incumbent);
- a plan that meets a floor meets every lower one at the same cost, and prices do not change
  feasibility: the best plans of the points before, scored at the point, are its first incumbent
  (floors are planned highest first), and where none of them meets the floor, the cheapest here
  of every point's plan that runs fast enough, whatever its price scale; a point left without a
  plan is planned again at the end from the plans found after it.

Per point the candidate sequences are, in order: the best sequences of the points planned
before (most recent first); the proposals given (a trained policy's), least work bound first,
within `PROPOSAL_SHARE` of the point's time, at the first `PROPOSAL_TRIALS` points and past them
only once one of them has given a point's best plan; where none of them has
a plan, the sequence of the exact solver's best plan after `seed_seconds` (at most half the
point's time left); then run moves around the best sequence (`run_moves`, least work bound
(`WorkBound`) first); then every one-type and two-run sequence, least bound first, skipping
those whose bound reaches the best cost; then run moves again. A sequence whose bound reaches
the best cost is not completed. Each completion runs at most `completion_seconds`, each point at
most `point_seconds` (`first_seconds` while no point before it has a plan).
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from hps.contract.types import Budget, Plan, PlanResult, PlanScore
from hps.costmodel.parallel.problem import FLOOR_TOLERANCE, ParallelProblem
from hps.costmodel.parallel.score import score_plan
from hps.methods.exact_parallel.solver import solve_parallel
from hps.methods.exact_parallel.table import SharedTables
from hps.methods.sequence.completion import PRUNE_SLACK, Sequence, WorkBound, run_moves, segments

PROPOSAL_SHARE = 0.5
"""The most of a point's time that proposals (a policy's sequences) may take before the search's
own candidates: a policy that proposes poorly leaves the rest of the time to them."""
PROPOSAL_TRIALS = 3
"""Points at which proposals are tried; past them, only while one of them has given some point's
best plan."""


@dataclasses.dataclass(frozen=True)
class SweepPoint:
    """One point's answer: floor (samples/s), price_scale, the planner's result there (the plan,
    None where none was found; evaluations: the completions the point ran, reused ones not
    counted; seconds: its wall time; bound: inf where it is proven that no plan meets the floor,
    else nan) and the plan's type sequence over segments."""

    floor: float
    price_scale: float
    result: PlanResult
    sequence: Sequence | None

    @property
    def plan(self) -> Plan | None:
        return self.result.plan

    @property
    def cost(self) -> float:
        return self.result.cost

    @property
    def feasible(self) -> bool:
        return self.result.feasible


def point_problem(
    base: ParallelProblem,
    floor: float,
    price_scale: float,
    scaled: tuple[str, ...] | None = None,
    budget_per_hour: float | None = None,
) -> ParallelProblem:
    """`base` with its floor set to `floor` samples/s, the $/hour of the types named in `scaled`
    (None: every type) times `price_scale`, and its job's budget_per_hour set to that given."""
    scale = lambda r: dataclasses.replace(r, price_per_hour=r.price_per_hour * price_scale)  # noqa: E731
    resources = tuple(scale(r) if scaled is None or r.name in scaled else r for r in base.catalog.resources)
    catalog = dataclasses.replace(base.catalog, resources=resources)
    job = dataclasses.replace(base.job, throughput=float(floor), budget_per_hour=budget_per_hour)
    return base.repriced(catalog, job)


def two_run_sequences(types: int, count: int) -> np.ndarray:
    """(N, count) int: every one-type sequence, then every sequence of two runs (type a on the
    first k segments, b ≠ a on the rest)."""
    rows = [np.full((types, count), np.arange(types)[:, None])]
    if count > 1:
        a, b, k = np.meshgrid(np.arange(types), np.arange(types), np.arange(1, count), indexing="ij")
        keep = a != b
        a, b, k = a[keep], b[keep], k[keep]
        rows.append(np.where(np.arange(count)[None] < k[:, None], a[:, None], b[:, None]))
    return np.concatenate(rows).astype(np.int64)


def bounds_of(bound: WorkBound, sequences: np.ndarray) -> np.ndarray:
    """(N,) `WorkBound` of each row of `sequences` (N, K), vectorised: work plus egress, inf where
    a type's needed units pass its pooled cap."""
    n, count = sequences.shape
    k = np.arange(count)[None]
    types = len(bound.caps)
    rows = np.repeat(np.arange(n), count)
    needed = np.zeros((n, types))
    held = np.zeros((n, types))
    np.add.at(needed, (rows, sequences.ravel()), bound.units[k, sequences].ravel())
    np.add.at(held, (rows, sequences.ravel()), bound.held[k, sequences].ravel())
    over = (np.maximum(needed, held) > bound.caps[None]).any(axis=1)
    total = bound.work[k, sequences].sum(axis=1)
    if count > 1:
        total = total + bound.egress[k[:, :-1], sequences[:, :-1], sequences[:, 1:]].sum(axis=1)
    return np.where(over, np.inf, total)


@dataclasses.dataclass(frozen=True)
class _Done:
    """A sequence's completion at one point: its plan (None: none feasible), score, cost, and
    proven (every plan of the sequence checked)."""

    plan: Plan | None
    score: PlanScore | None
    cost: float
    proven: bool


class Sweep:
    """Plans points of one base problem, sharing stage tables and completions between them."""

    def __init__(
        self,
        base: ParallelProblem,
        scaled: tuple[str, ...] | None = None,
        *,
        completion_seconds: float = 1.0,
        point_seconds: float = 5.0,
        first_seconds: float = 30.0,
        seed_seconds: float = 5.0,
        moves: int = 64,
    ):
        self.base, self.scaled, self.first_seconds, self.seed_seconds = base, scaled, first_seconds, seed_seconds
        self.completion_seconds, self.point_seconds, self.moves = completion_seconds, point_seconds, moves
        self.segments = segments(base)
        lengths = [last - first + 1 for first, last in self.segments]
        self.layer_segment = np.repeat(np.arange(len(self.segments)), lengths)
        self.tables = SharedTables()
        self.heuristic = two_run_sequences(base.num_types, len(self.segments))
        self.done: dict[tuple[Sequence, float], list[tuple[float, _Done]]] = {}
        self.known: dict[Sequence, Plan] = {}
        self.recent: list[Sequence] = []
        self.plans: list[Plan] = []
        # every point's best plan: its samples/s (throughput is price-independent)
        self.found: dict[Plan, float] = {}
        # prices do not change feasibility: the least floor at which a sequence (or the whole
        # problem) is proven to have no plan, at any price scale
        self.no_plan: dict[Sequence, float] = {}
        self.no_plan_from = math.inf
        # points at which proposals were tried, and at which one of them gave the best plan
        self.proposal_points = self.proposal_wins = 0

    def _reused(self, sequence: Sequence, floor: float, scale: float) -> _Done | None:
        """A proven completion of `sequence` at a lower floor (same scale) that holds at `floor`,
        or its proven lack of a plan at a floor no higher (any scale)."""
        if floor >= self.no_plan.get(sequence, math.inf):
            return _Done(None, None, math.inf, True)
        for lower, done in self.done.get((sequence, scale), ()):
            if lower > floor or not done.proven:
                continue
            if done.plan is None or done.score.throughput >= floor * (1 - FLOOR_TOLERANCE):
                return done
        return None

    def _incumbent(self, problem: ParallelProblem, sequence: Sequence, best: _Done | None):
        """The cheapest of the point's best plan and the sequence's plan from another point,
        scored at this point: (plan, cost), or None."""
        offers = [] if best is None or best.plan is None else [(best.plan, best.cost)]
        if sequence in self.known:
            plan = self.known[sequence]
            score = score_plan(problem, plan.stages, plan.micro_batch)
            if score.feasible:
                offers.append((plan, score.cost))
        return min(offers, key=lambda o: o[1]) if offers else None

    def _complete(self, problem, floor, scale, sequence: Sequence, best: _Done | None, deadline: float):
        """(the sequence's completion or None where the offered incumbent was not beaten, solved)."""
        reused = self._reused(sequence, floor, scale)
        if reused is not None:
            return reused, False
        allowed = np.eye(problem.num_types, dtype=bool)[np.array(sequence)[self.layer_segment]]
        offer = self._incumbent(problem, sequence, best)
        seconds = max(0.0, min(self.completion_seconds, deadline - time.perf_counter()))
        incumbent = None if offer is None else offer[0]
        found = solve_parallel(problem.restricted(allowed), seconds=seconds, incumbent=incumbent, tables=self.tables)
        foreign = offer is not None and best is not None and offer[0] is best.plan
        if foreign and found.plan is not None and found.plan.stages == offer[0].stages:
            return None, True  # no plan of the sequence beats the point's best (or none found in time)
        proven = found.gap == 0.0
        done = _Done(found.plan, found.score, found.cost, proven)
        if done.plan is not None:
            self.known[sequence] = done.plan
        elif proven:
            self.no_plan[sequence] = min(floor, self.no_plan.get(sequence, math.inf))
        self.done.setdefault((sequence, scale), []).append((floor, done))
        return done, True

    def sequence_of(self, plan: Plan) -> Sequence:
        """The type of each segment in `plan` (of the stage holding its first layer)."""
        names = self.base.catalog.names
        owner = np.zeros(self.base.num_layers, np.int64)
        for stage in plan.stages:
            owner[stage.first : stage.last + 1] = names.index(stage.type)
        return tuple(int(owner[first]) for first, _ in self.segments)

    def _descend(self, bound, offer, best, best_sequence, deadline: float) -> None:
        """Run moves around the best sequence, least bound first (at most `moves` a round), while
        a round improves and time is left."""
        while best_sequence() is not None and time.perf_counter() < deadline:
            start = best_sequence()
            moves = np.array(run_moves(start, self.base.num_types), np.int64).reshape(-1, len(self.segments))
            order = bounds_of(bound, moves)
            for row in np.argsort(order, kind="stable")[: self.moves]:
                if order[row] >= best().cost * (1 + PRUNE_SLACK) or not offer(tuple(moves[row].tolist()), False):
                    break
            if best_sequence() == start:
                return

    def plan_point(self, floor: float, scale: float, proposals: list[Sequence] = ()) -> SweepPoint:
        """The best plan found at (floor, scale); `proposals` are completed right after the best
        sequences of the points before."""
        started = time.perf_counter()
        if floor >= self.no_plan_from:  # proven at a floor no higher: no plan meets it
            return SweepPoint(
                floor, scale, PlanResult("sequence", None, None, math.inf, time.perf_counter() - started, 0), None
            )
        deadline = started + (self.first_seconds if not self.recent else self.point_seconds)
        problem = point_problem(self.base, floor, scale, self.scaled)
        bound = WorkBound(problem, self.segments)
        best, best_sequence, completions = None, None, 0
        for plan in self.plans:  # the plans of the points before, as found: feasible here or not
            score = score_plan(problem, plan.stages, plan.micro_batch)
            if score.feasible and (best is None or score.cost < best.cost):
                best, best_sequence = _Done(plan, score, score.cost, False), self.sequence_of(plan)
        if best is None:  # any point's plan fast enough for this floor, at any price scale
            best = self._cheapest_found(problem)
            best_sequence = None if best is None else self.sequence_of(best.plan)

        def offer(sequence: Sequence, check_bound: bool) -> bool:
            """Complete `sequence` unless its bound reaches the best; False once out of time."""
            nonlocal best, best_sequence, completions
            if time.perf_counter() >= deadline:
                return False
            cost = math.inf if best is None else best.cost
            if check_bound and bound(sequence) >= cost * (1 + PRUNE_SLACK):
                return True
            done, solved = self._complete(problem, floor, scale, sequence, best, deadline)
            completions += solved
            if done is not None and done.plan is not None and done.cost < cost:
                best, best_sequence = done, sequence
            return True

        for sequence in self.recent[::-1]:
            if not offer(sequence, check_bound=True):
                break
        fresh = [s for s in dict.fromkeys(tuple(int(y) for y in s) for s in proposals) if s not in self.recent]
        if not (self.proposal_points < PROPOSAL_TRIALS or self.proposal_wins):
            fresh = []  # they have not paid: the point's time goes to the search's own sequences
        if fresh:  # least bound first, within their share of the point's time
            self.proposal_points += 1
            share = started + PROPOSAL_SHARE * (deadline - started)
            for row in np.argsort(bounds_of(bound, np.array(fresh, np.int64)), kind="stable"):
                if time.perf_counter() >= share or not offer(fresh[row], check_bound=True):
                    break
        if best is None and self.seed_seconds > 0:  # the exact solver's first plan seeds the search
            # at most half the time left: the one-type sequences below often find a plan sooner
            seconds = max(0.0, min(self.seed_seconds, (deadline - time.perf_counter()) / 2))
            found = solve_parallel(problem, seconds=seconds, tables=self.tables)
            if found.plan is not None:
                offer(self.sequence_of(found.plan), check_bound=False)
            elif found.gap == 0.0:  # proven: no plan at this floor, nor at any higher one
                self.no_plan_from = min(self.no_plan_from, floor)
        self._descend(bound, offer, lambda: best, lambda: best_sequence, deadline)
        order = bounds_of(bound, self.heuristic)
        types = problem.num_types
        ranked = [*np.argsort(order[:types], kind="stable"), *(types + np.argsort(order[types:], kind="stable"))]
        for row in ranked:
            if not math.isfinite(order[row]) or (best is not None and order[row] >= best.cost * (1 + PRUNE_SLACK)):
                if row < types:
                    continue
                break
            if not offer(tuple(self.heuristic[row].tolist()), check_bound=False):
                break
        self._descend(bound, offer, lambda: best, lambda: best_sequence, deadline)
        self.proposal_wins += best_sequence is not None and best_sequence in fresh
        if best_sequence is not None:
            self.recent = [s for s in self.recent if s != best_sequence][-7:] + [best_sequence]
            self.plans = [p for p in self.plans if p != best.plan][-7:] + [best.plan]
            self.found[best.plan] = best.score.throughput
        return _point(floor, scale, best, best_sequence, completions, time.perf_counter() - started)

    def run(self, floors, scales, proposals: list[Sequence] = (), on_point=None) -> list[SweepPoint]:
        """Every (floor, scale) point: first the lowest floor at the first scale (without the
        proposals, so that they compete with the search's plan from then on), then per scale
        floors descending (a plan meeting a floor meets every lower one, so each point starts
        from a feasible incumbent; the first point is planned again in turn); then once more each
        point left without a plan (and not proven to have none) that a plan found at another
        point runs fast enough for; each point ends with the cheapest of its plan and every
        found plan that meets its floor. Returned in the order of `scales`, then `floors`, as given.
        on_point(point) is called with each point's answer as soon as it has one, and again each
        time it improves (so a caller stopped midway keeps every finished point)."""
        notify = on_point or (lambda point: None)
        out = {}
        start = (min(floors), scales[0])  # the likeliest to have a plan: its sequence seeds the rest
        out[start] = self.plan_point(*start)  # by the search alone: proposals then compete with its plan
        notify(out[start])
        for scale in scales:
            for floor in sorted(floors, reverse=True):
                point = self.plan_point(floor, scale, proposals)
                if (floor, scale) in out:  # the start, again with the plans of higher floors
                    point = self._merged(out[(floor, scale)], point)
                out[(floor, scale)] = point
                notify(point)
        for (floor, scale), point in out.items():
            reachable = any(t >= floor * (1 - FLOOR_TOLERANCE) for t in self.found.values())
            if point.plan is None and floor < self.no_plan_from and reachable:
                point = self._merged(point, self.plan_point(floor, scale, proposals))
            problem = point_problem(self.base, floor, scale, self.scaled)
            found = self._cheapest_found(problem)
            if found is not None and found.cost < point.cost:
                result = dataclasses.replace(point.result, plan=found.plan, score=found.score)
                point = dataclasses.replace(point, result=result, sequence=self.sequence_of(found.plan))
            if point is not out[(floor, scale)]:
                out[(floor, scale)] = point
                notify(point)
        return [out[(floor, scale)] for scale in scales for floor in floors]

    def _cheapest_found(self, problem: ParallelProblem) -> _Done | None:
        """The cheapest at `problem`'s prices of the plans found at every point that run fast
        enough for its floor (unproven), or None."""
        floor, best = problem.job.throughput, None
        for plan, throughput in self.found.items():
            if throughput < floor * (1 - FLOOR_TOLERANCE):
                continue
            score = score_plan(problem, plan.stages, plan.micro_batch)
            if score.feasible and (best is None or score.cost < best.cost):
                best = _Done(plan, score, score.cost, False)
        return best

    @staticmethod
    def _merged(first: SweepPoint, second: SweepPoint) -> SweepPoint:
        """The cheaper of two plans of one point, with the completions and time of both."""
        best = second if second.cost < first.cost else first
        a, b = first.result, second.result
        total = dataclasses.replace(
            best.result, evaluations=a.evaluations + b.evaluations, seconds=a.seconds + b.seconds
        )
        return dataclasses.replace(best, result=total)


def _point(floor: float, scale: float, best: _Done | None, sequence, completions: int, seconds: float) -> SweepPoint:
    """A point's answer from its best completion (None: no plan found)."""
    plan, score = (None, None) if best is None else (best.plan, best.score)
    return SweepPoint(floor, scale, PlanResult("sequence", plan, score, math.nan, seconds, completions), sequence)


def certify(base: ParallelProblem, point: SweepPoint, scaled: tuple[str, ...] | None, seconds: float) -> PlanResult:
    """The exact solver at the point, warm-started with the point's plan, within `seconds`."""
    problem = point_problem(base, point.floor, point.price_scale, scaled)
    return solve_parallel(problem, seconds=seconds, incumbent=point.plan)


def policy_plan(base: ParallelProblem, proposals: list[Sequence], seconds: float) -> PlanResult:
    """One problem planned as a sweep point (its own floor, list prices) from `proposals` (a
    policy's sequences) without the exact solver's seed, within `seconds`: the policy's best
    sequence completed exactly and refined by run moves, e.g. as the exact solver's warm start.
    Each completion may take what is left of `seconds`, as in every planner's contract."""
    sweep = Sweep(base, point_seconds=seconds, first_seconds=seconds, seed_seconds=0.0, completion_seconds=seconds)
    return sweep.plan_point(base.job.throughput, 1.0, proposals).result


def sequence(problem, budget: Budget) -> PlanResult:
    """The planner contract: `problem` planned as one sweep point (its floor, list prices) by the
    point search alone within budget.seconds (`policy_plan` with no proposals)."""
    return policy_plan(problem.parallel_problem, [], budget.seconds)
