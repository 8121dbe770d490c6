"""Placement search baselines over schedules (docs/placement-model.md, "Searches over the model"):
single-type plans, greedy per layer, random search, a genetic algorithm, exhaustive search, and a
gradient search (straight-through Gumbel-softmax over schedule logits). The optimum over every
plan is the exact solver's, `hps.methods.exact_schedule`.

Every method is `method(params, *, key=None, budget=None, ...) -> SearchResult`.
"""

from __future__ import annotations

from hps.methods.search.exhaustive import exhaustive, search_space
from hps.methods.search.genetic import genetic
from hps.methods.search.gradient import gradient
from hps.methods.search.greedy import greedy
from hps.methods.search.methods import METHODS, run_search
from hps.methods.search.random import random_search
from hps.methods.search.result import SearchResult
from hps.methods.search.single import single

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
