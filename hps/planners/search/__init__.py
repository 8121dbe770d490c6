"""Placement search baselines over schedules (docs/placement-model.md, "Searches over the model"):
single-type plans, greedy per layer, random search, a genetic algorithm, exhaustive search, and a
gradient search (straight-through Gumbel-softmax over schedule logits). The optimum over every
plan is the exact solver's, `hps.planners.exact_schedule`.

Every method is `method(params, *, key=None, budget=None, ...) -> SearchResult`.
"""

from __future__ import annotations

from hps.planners.search.exhaustive import exhaustive, search_space
from hps.planners.search.genetic import genetic
from hps.planners.search.gradient import gradient
from hps.planners.search.greedy import greedy
from hps.planners.search.methods import METHODS, run_search
from hps.planners.search.random import random_search
from hps.planners.search.result import SearchResult
from hps.planners.search.single import single

__all__ = [
    "METHODS",
    "SearchResult",
    "exhaustive",
    "genetic",
    "gradient",
    "greedy",
    "random_search",
    "run_search",
    "search_space",
    "single",
]
