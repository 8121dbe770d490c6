"""Planners of the parallel-plan model behind one contract (docs/parallel-plans.md, "Planners"):

    plan(problem: ParallelProblem, budget: Budget) -> PlanResult

Every planner but `exact` searches type sequences over segments (runs of layers between allowed
cuts) and completes each exactly with the solver restricted to it (`completion`).

contract     Budget, PlanResult, the Planner signature, SpaceTooLarge
completion   segments, the cached completions, the moves between sequences
basic        exact, single, greedy, exhaustive
stochastic   random, genetic, refine (seeded)

The schedule model's `gradient` relaxes one-hot types per layer into a softmax over a smooth
cost; the parallel-plan model's cost is the integer program the solver completes, with no such
relaxation, so it has no planner here (`NOT_PLANNERS` says why).
"""

from __future__ import annotations

from hps.costmodel.parallel.problem import ParallelProblem
from hps.errors import ConfigError
from hps.plan.types import Budget, Planner, PlanResult, SpaceTooLarge
from hps.planners.sequence.basic import exact, exhaustive, greedy, single
from hps.planners.sequence.stochastic import genetic, random_search, refine

PLANNERS: dict[str, Planner] = {
    "exact": exact,
    "single": single,
    "greedy": greedy,
    "random": random_search,
    "genetic": genetic,
    "refine": refine,
    "exhaustive": exhaustive,
}

NOT_PLANNERS = {
    "gradient": "gradient relaxes the schedule model's one type per layer into a smooth cost; the parallel-plan "
    "model's cuts, t, d and micro-batch are integer choices with no such relaxation, so it has no gradient planner",
}


def run_planner(name: str, problem: ParallelProblem, budget: Budget) -> PlanResult:
    """Run the planner called `name`; ConfigError naming --method for an unknown one."""
    if name not in PLANNERS:
        why = f" ({NOT_PLANNERS[name]})" if name in NOT_PLANNERS else ""
        raise ConfigError("--method", "method", f"unknown planner {name!r}{why}; choose one of {', '.join(PLANNERS)}")
    return PLANNERS[name](problem, budget)


__all__ = ["PLANNERS", "Budget", "PlanResult", "Planner", "SpaceTooLarge", "run_planner"]
