"""Placement search baselines (docs/placement-model.md, "Searches over the model"): single-type plans,
greedy per layer, random search, a genetic algorithm, exhaustive search over schedules, a gradient
search (straight-through Gumbel-softmax over schedule logits), and the exact solver over every plan
(`exact.solve_exact`, numpy: importing it imports no JAX).

Every jnp method is `method(params, *, key=None, budget=None, ...) -> SearchResult`; `methods`
(in hps.placement.search.methods) holds them by name.
"""

from hps.lazy import lazy_exports

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "methods": ("METHODS", "run_search"),
        "exhaustive": ("exhaustive", "search_space"),
        "genetic": ("genetic",),
        "gradient": ("gradient",),
        "greedy": ("greedy",),
        "random": ("random_search",),
        "result": ("SearchResult",),
        "single": ("single",),
        "exact": ("solve_exact",),
    },
)
