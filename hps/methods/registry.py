"""The one list of planner names: each name's planner per cost model, imported on first use (so
that `hps --help` and `import hps` import no planner).

Every target is `plan(problem: Problem, budget: Budget, **options) -> PlanResult`. Adding a
planner is one module with that function and one line here.
"""

from __future__ import annotations

import importlib

from hps.contract.types import Budget, NotApplicable, Planner, PlanResult
from hps.errors import ConfigError
from hps.methods.problem import MODELS, Problem

PLANNERS: dict[str, dict[str, str]] = {
    "exact": {"schedule": "hps.methods.exact_schedule.solver:plan", "parallel": "hps.methods.sequence.basic:exact"},
    "single": {"schedule": "hps.methods.search.single:single", "parallel": "hps.methods.sequence.basic:single"},
    "greedy": {"schedule": "hps.methods.search.greedy:greedy", "parallel": "hps.methods.sequence.basic:greedy"},
    "random": {
        "schedule": "hps.methods.search.random:random_search",
        "parallel": "hps.methods.sequence.stochastic:random_search",
    },
    "genetic": {
        "schedule": "hps.methods.search.genetic:genetic",
        "parallel": "hps.methods.sequence.stochastic:genetic",
    },
    "gradient": {"schedule": "hps.methods.search.gradient:gradient"},
    "refine": {"parallel": "hps.methods.sequence.stochastic:refine"},
    "sequence": {"parallel": "hps.methods.sequence.sweep:sequence"},
    "exhaustive": {
        "schedule": "hps.methods.search.exhaustive:exhaustive",
        "parallel": "hps.methods.sequence.basic:exhaustive",
    },
    "uniform": {"parallel": "hps.methods.uniform:plan"},
    "policy": {
        "schedule": "hps.placement.agent.policy_planner:policy",
        "parallel": "hps.placement.agent.policy_planner:policy",
    },
}
"""name -> {model: "module:function"}. `exact` is every comparison's yardstick; `policy` needs
the option checkpoint (a trained placement policy's folder); `uniform` takes the option
framework (megatron, maxtext or torchtitan: only the types it runs)."""
OBJECTIVES = {"exact": ("cost", "throughput")}
"""Planners that optimise more than cost (`hps.contract.types.OBJECTIVES`); the rest: cost only."""
NEEDS_OPTIONS = {"policy": ("checkpoint",)}
"""Planners that plan only with these options given."""
NOT_PLANNERS = {
    ("gradient", "parallel"): "gradient relaxes the schedule model's one type per layer into a smooth cost; the "
    "parallel-plan model's cuts, t, d and micro-batch are integer choices with no such relaxation",
    ("sequence", "schedule"): "sequence is the parallel-plan model's point search (type sequences completed exactly)",
    ("uniform", "schedule"): "uniform plans (one type, t and d for every stage) are the parallel-plan model's",
}
"""Why a name has no planner in a model."""


def planner_names(model: str | None = None, *, with_options: bool = False) -> tuple[str, ...]:
    """The names with a planner in `model` (every name when None), in registry order; those
    that need options only with with_options."""
    return tuple(
        name
        for name, targets in PLANNERS.items()
        if (model is None or model in targets) and (with_options or name not in NEEDS_OPTIONS)
    )


def planner(name: str, model: str) -> Planner:
    """The planner `name` of `model`; ConfigError naming the field "method" for an unknown name
    or one with no planner in that model."""
    if model not in MODELS:
        raise ConfigError("model", "", f"must be one of {', '.join(MODELS)}, got {model!r}")
    if name not in PLANNERS:
        choices = ", ".join(planner_names(model, with_options=True))
        raise ConfigError("method", "", f"unknown planner {name!r}; choose one of {choices}")
    if model not in PLANNERS[name]:
        why = NOT_PLANNERS.get((name, model), f"{name} plans in the {'/'.join(PLANNERS[name])} model only")
        choices = ", ".join(planner_names(model, with_options=True))
        raise ConfigError("method", "", f"{name} has no planner in the {model} model ({why}); choose one of {choices}")
    module, _, function = PLANNERS[name][model].partition(":")
    return getattr(importlib.import_module(module), function)


def run(name: str, problem: Problem, budget: Budget, **options) -> PlanResult:
    """Plan `problem` with the planner `name` of its model within `budget`."""
    missing = [option for option in NEEDS_OPTIONS.get(name, ()) if options.get(option) is None]
    if missing:
        raise ConfigError("method", missing[0], f"{name} plans only with a {missing[0]} given")
    if problem.objective not in OBJECTIVES.get(name, ("cost",)):
        raise NotApplicable(
            name, f"{name} minimises cost under the floor; the most throughput within a budget is planned by exact"
        )
    variants = problem.variants()
    if len(variants) == 1:
        return planner(name, problem.model)(problem, budget, **options)
    return best_of_variants(name, variants, budget, options)


def best_of_variants(name: str, variants: list[Problem], budget: Budget, options: dict) -> PlanResult:
    """The planner `name` on each of `variants` (the job's open schedule choices made, each given
    an equal share of the seconds): the cheapest plan, its choices recorded, and the least bound
    (every plan is a plan of one variant)."""
    import dataclasses
    import math
    import time

    from hps.config.plan_space import OPEN_FIELDS

    started, function = time.perf_counter(), planner(name, variants[0].model)
    share = dataclasses.replace(budget, seconds=budget.seconds / len(variants))
    results = []
    for variant in variants:
        result = function(variant, share, **options)
        if result.plan is not None:
            chosen = tuple((field, getattr(variant.job, field)) for field in OPEN_FIELDS)
            result = dataclasses.replace(result, plan=dataclasses.replace(result.plan, choices=chosen))
        results.append(result)
    best = results[0]
    for result in results[1:]:
        best = result if result.better_than(best) else best
    bounds = [r.bound for r in results]
    least_or_most = max if best.objective == "throughput" else min  # every plan is a plan of one variant
    bound = math.nan if any(math.isnan(b) for b in bounds) else least_or_most(bounds)
    counts = [r.evaluations for r in results]
    evaluations = None if None in counts else sum(counts)
    return dataclasses.replace(best, bound=bound, seconds=time.perf_counter() - started, evaluations=evaluations)
