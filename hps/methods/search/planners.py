"""The jnp searches of the schedule model behind the planner contract: each searches padded
schedules on the jnp model, and its best schedule is scored by the numpy model every planner is
scored by."""

from __future__ import annotations

import math
from functools import partial

from hps.contract.problem import Problem
from hps.contract.types import Budget, NotApplicable, PlanResult
from hps.costmodel.schedule.plan import planned, schedule_plan


def searched(method: str, problem: Problem, budget: Budget) -> PlanResult:
    """The schedule `method` (a key of `hps.methods.search.METHODS`) finds within budget.evaluations
    (None: its default), seeded by budget.seed; seconds: its wall time with compiles excluded."""
    import jax

    from hps.methods.search.methods import run_search

    if not problem.job.schedule_model:
        why = "the baselines score HeterPS schedules only (micro-batches inf, state sharding none)"
        raise NotApplicable(method, why)
    params, table = problem.search_arrays
    found = run_search(
        method, params, key=jax.random.key(budget.seed), budget=budget.evaluations, warmup=True, table=table
    )
    plan = schedule_plan(found.schedule)
    return planned(method, problem.instance, plan, math.nan, found.wall_seconds, found.evaluations)


single = partial(searched, "single")
greedy = partial(searched, "greedy")
random_search = partial(searched, "random")
genetic = partial(searched, "genetic")
gradient = partial(searched, "gradient")
exhaustive = partial(searched, "exhaustive")
