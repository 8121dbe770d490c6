"""The seeded planners: random (random few-run sequences), genetic (a population of sequences)
and refine (iterated local search from greedy's result). Each draws from
numpy.random.default_rng(budget.seed), so a seed gives the same plan whenever the completions
finish within the seconds."""

from __future__ import annotations

import numpy as np

from hps.contract.types import Budget, PlanResult
from hps.methods.problem import Problem
from hps.methods.sequence.basic import best_single, descend
from hps.methods.sequence.completion import (
    Completions,
    Sequence,
    random_sequence,
    range_moves,
    retype,
    run_moves,
    single_type,
)

RANDOM_EVALUATIONS = 64
"""Sequences random completes when the budget names no evaluations."""
GENETIC_EVALUATIONS = 96
"""Sequences genetic completes when the budget names no evaluations."""
POPULATION = 12
"""Genetic's population."""
ELITE = 2
"""Genetic: the best sequences carried into the next generation unchanged."""
REFINE_EVALUATIONS = 48
"""Sequences refine completes past greedy's when the budget names no evaluations."""
STALE = 200
"""A seeded planner stops after this many draws (generations, kicks) in a row complete nothing new."""


def _space(completions: Completions) -> int:
    return completions.num_types**completions.num_segments


def _kick(rng: np.random.Generator, sequence: Sequence, types: int) -> Sequence:
    """Give one random range of segments a random type."""
    first, last = sorted(int(k) for k in rng.integers(len(sequence), size=2))
    return retype(sequence, first, last, int(rng.integers(types)))


def _tournament(rng: np.random.Generator, population: list[Sequence], fitness: list[float]) -> Sequence:
    """The cheaper of two members drawn uniformly."""
    a, b = (int(i) for i in rng.integers(len(population), size=2))
    return population[a] if fitness[a] <= fitness[b] else population[b]


def random_search(problem: Problem, budget: Budget) -> PlanResult:
    """Complete random sequences of one to four contiguous runs, each on a random type; the cheapest."""
    completions = Completions(problem.parallel_problem, budget, RANDOM_EVALUATIONS)
    rng = np.random.default_rng(budget.seed)
    types, count = completions.num_types, completions.num_segments
    stale = 0
    while not completions.exhausted() and len(completions.cache) < _space(completions) and stale < STALE:
        seen = completions.evaluations
        completions.complete(random_sequence(rng, types, count))
        stale = 0 if completions.evaluations > seen else stale + 1
    return completions.result("random")


def genetic(problem: Problem, budget: Budget) -> PlanResult:
    """A population of POPULATION sequences (every single type, then random few-run ones), fitness
    the completed cost; each generation keeps the ELITE best and fills up with children of two
    tournament winners: two-point crossover over segments, then one random range retyped."""
    completions = Completions(problem.parallel_problem, budget, GENETIC_EVALUATIONS)
    rng = np.random.default_rng(budget.seed)
    types, count = completions.num_types, completions.num_segments
    population = single_type(types, count)[:POPULATION]
    while len(population) < POPULATION:
        population.append(random_sequence(rng, types, count))
    fitness = [completions.cost(s) for s in population]
    stale = 0
    while not completions.exhausted() and len(completions.cache) < _space(completions) and stale < STALE:
        seen = completions.evaluations
        order = sorted(range(len(population)), key=lambda i: fitness[i])
        children = [population[i] for i in order[:ELITE]]

        while len(children) < POPULATION:
            mother, father = (_tournament(rng, population, fitness) for _ in range(2))
            first, last = sorted(int(k) for k in rng.integers(count + 1, size=2))
            child = mother[:first] + father[first:last] + mother[last:]
            children.append(_kick(rng, child, types))
        population = children
        fitness = [completions.cost(s) for s in population]
        stale = 0 if completions.evaluations > seen else stale + 1
    return completions.result("genetic")


def refine(problem: Problem, budget: Budget) -> PlanResult:
    """Greedy's descent from the best single type, then iterated local search: kick the best
    sequence (one or two random ranges retyped) and descend by run moves (retype a run's head,
    tail or whole, swap two adjacent runs), keeping the result where it is cheaper. Without an
    evaluation budget greedy runs to its end and refine completes REFINE_EVALUATIONS more."""
    completions = Completions(problem.parallel_problem, budget)
    rng = np.random.default_rng(budget.seed)
    types = completions.num_types
    current = descend(completions, best_single(completions), range_moves)
    current = descend(completions, current, run_moves)
    if budget.evaluations is None:
        completions.limit = completions.evaluations + REFINE_EVALUATIONS
    stale = 0
    while not completions.exhausted() and len(completions.cache) < _space(completions) and stale < STALE:
        seen = completions.evaluations
        kicked = current
        for _ in range(int(rng.integers(1, 3))):
            kicked = _kick(rng, kicked, types)
        found = descend(completions, kicked, run_moves)
        if completions.cost(found) < completions.cost(current):
            current = found
        stale = 0 if completions.evaluations > seen else stale + 1
    return completions.result("refine")
