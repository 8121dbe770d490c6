"""The deterministic planners: exact (the solver), single (the best one-type plan), greedy
(steepest descent over range moves from the best single type) and exhaustive (every type
sequence of segments)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

from hps.contract.types import Budget, Plan, PlanResult, SpaceTooLarge
from hps.methods.exact_parallel.dual import solve_max_throughput
from hps.methods.exact_parallel.solver import solve_parallel
from hps.methods.problem import Problem
from hps.methods.sequence.completion import Completions, Sequence, range_moves, single_type

IMPROVES = 1e-12
"""A move improves when it lowers the cost by more than this fraction (costs summed in another
order differ by rounding)."""
EXHAUSTIVE_LIMIT = 1024
"""The most type sequences exhaustive completes when the budget names no evaluations."""


def exact(problem: Problem, budget: Budget, incumbent: Plan | None = None) -> PlanResult:
    """The exact solver within budget.seconds; bound is its certificate. incumbent: a plan it
    prunes against from the start (a warm start: the same answer, sooner). Under the objective
    "throughput" (a job with budget_per_hour), the most throughput within that budget."""
    if problem.objective == "throughput":
        return solve_max_throughput(problem.parallel_problem, seconds=budget.seconds, incumbent=incumbent)
    return solve_parallel(problem.parallel_problem, seconds=budget.seconds, incumbent=incumbent)


def best_single(completions: Completions) -> Sequence:
    """Complete every one-type sequence; the cheapest (the first type when none is feasible)."""
    starts = single_type(completions.num_types, completions.num_segments)
    costs = [completions.cost(s) for s in starts]
    return starts[min(range(len(starts)), key=lambda i: (costs[i], i))]


def descend(completions: Completions, start: Sequence, moves: Callable[[Sequence, int], list[Sequence]]) -> Sequence:
    """Steepest descent: complete every move of the current sequence and take the cheapest while
    it improves (an infeasible start takes any feasible move); stops at a local optimum or when
    the budget is spent (then with the best move seen)."""
    current, cost = start, completions.cost(start)
    while True:
        best, best_cost = None, cost
        for moved in moves(current, completions.num_types):
            value = completions.cost(moved)
            if value < best_cost and (math.isinf(best_cost) or value < best_cost * (1 - IMPROVES)):
                best, best_cost = moved, value
            if completions.exhausted() and moved not in completions.cache:
                break
        if best is None:
            return current
        current, cost = best, best_cost


def single(problem: Problem, budget: Budget) -> PlanResult:
    """The cheapest plan on one type: each type's all-that-type sequence completed."""
    completions = Completions(problem.parallel_problem, budget)
    best_single(completions)
    return completions.result("single")


def greedy(problem: Problem, budget: Budget) -> PlanResult:
    """From the best single type, repeatedly give one contiguous range of segments another type,
    taking the best improving move, until none improves or the budget is spent. A round completes
    up to K(K+1)/2·(T−1) sequences (K segments, T types)."""
    completions = Completions(problem.parallel_problem, budget)
    descend(completions, best_single(completions), range_moves)
    return completions.result("greedy")


def exhaustive(problem: Problem, budget: Budget) -> PlanResult:
    """Complete every type sequence of segments (T^K of them): the optimum, with the least
    completion bound as its certificate. SpaceTooLarge (a ConfigError naming evaluations) when T^K
    exceeds the evaluation budget (EXHAUSTIVE_LIMIT when it names none)."""
    limit = EXHAUSTIVE_LIMIT if budget.evaluations is None else budget.evaluations
    completions = Completions(problem.parallel_problem, budget, limit)
    types, count = completions.num_types, completions.num_segments
    space = types**count
    if space > limit:
        raise SpaceTooLarge(
            f"exhaustive would complete {space:,} type sequences ({types} types over {count} segments), "
            f"more than the budget of {limit:,}; raise --evaluations or choose another method"
        )
    bound = math.inf
    for sequence in itertools.product(range(types), repeat=count):
        done = completions.complete(sequence)
        if done is None:  # out of time: no certificate
            bound = math.nan
            break
        bound = min(bound, done.bound)
    return completions.result("exhaustive", bound)
