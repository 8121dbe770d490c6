"""A trained placement policy behind the planner contract (registered as "policy")."""

from __future__ import annotations

import dataclasses
import math
import time

from hps.contract.types import Budget, PlanResult
from hps.costmodel.schedule.plan import planned, schedule_plan
from hps.placement.agent.checkpoint import load_policy
from hps.placement.agent.planner import Sampled, plan, policy_sequences


def policy(problem, budget: Budget, *, checkpoint, samples: int = 64, refine: bool = False) -> PlanResult:
    """The planner contract: a trained placement policy (the run folder `checkpoint`) plans
    `problem`. Schedule model: the best of `samples` sampled plans and the greedy one under the
    numpy model, with `refine` polished by stage moves. Parallel-plan model:
    its sampled schedules as type sequences, completed exactly and refined by the point search
    within what is left of budget.seconds. seconds counts loading and sampling too."""
    started = time.perf_counter()
    functions, params, _ = load_policy(checkpoint)
    workload, catalog, job = problem.workload, problem.catalog, problem.job
    if problem.parallel:
        from hps.methods.sequence.completion import segments
        from hps.methods.sequence.sweep import policy_plan

        base = problem.parallel_problem
        proposals = policy_sequences(
            functions, params, workload, catalog, job, segments(base), samples=samples, seed=budget.seed
        )
        found = policy_plan(base, proposals, max(budget.seconds - (time.perf_counter() - started), 0.0))
        return dataclasses.replace(found, planner="policy", seconds=time.perf_counter() - started)
    found = plan(functions, params, workload, catalog, job, samples=samples, seed=budget.seed, polish=refine)
    return dataclasses.replace(sampled_result(problem, found), seconds=time.perf_counter() - started)


def sampled_result(problem, found: Sampled) -> PlanResult:
    """The PlanResult of a policy's `plan` on `problem` (schedule model): its schedule scored by
    the numpy model; seconds: its planning time, compile excluded; evaluations: the schedules it
    scored (candidates and refinement)."""
    evaluations = found.candidates + found.refine_evaluations
    return planned("policy", problem.instance, schedule_plan(found.schedule), math.nan, found.plan_seconds, evaluations)
