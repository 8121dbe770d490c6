"""The jnp search methods by name, and running one by name."""

from __future__ import annotations

from hps.costmodel.schedule.params import PlacementParams
from hps.errors import ConfigError
from hps.methods.search.exhaustive import exhaustive
from hps.methods.search.genetic import genetic
from hps.methods.search.gradient import gradient
from hps.methods.search.greedy import greedy
from hps.methods.search.random import random_search
from hps.methods.search.result import SearchResult
from hps.methods.search.single import single

METHODS = {
    "single": single,
    "greedy": greedy,
    "random": random_search,
    "genetic": genetic,
    "gradient": gradient,
    "exhaustive": exhaustive,
}


def run_search(method: str, params: PlacementParams, *, key=None, budget: int | None = None, **options) -> SearchResult:
    """Run one named method. budget: evaluations for random (default 51,200), genetic
    (generations = budget // population; default 1024 × 50) and gradient (restarts × steps;
    default 64 × 800), an evaluation cap for greedy,
    the space limit for exhaustive (default 2^24); single ignores it. options go to the method."""
    if method not in METHODS:
        choices = ", ".join(METHODS)
        raise ConfigError("method", "", f"unknown search method {method!r}; choose one of {choices}")
    return METHODS[method](params, key=key, budget=budget, **options)
