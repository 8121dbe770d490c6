"""A trained placement policy behind the planner contract (registered as "policy")."""

from __future__ import annotations

import dataclasses
import math
import time

from hps.contract.types import Budget, PlanResult
from hps.costmodel.schedule.plan import planned, schedule_plan
from hps.errors import ConfigError
from hps.placement.agent.checkpoint import load_planning_policy
from hps.placement.agent.planner import Sampled, plan, policy_sequences


def policy(problem, budget: Budget, *, checkpoint, samples: int = 64, refine: bool = False) -> PlanResult:
    """The planner contract: a trained policy (the run folder `checkpoint`) plans `problem`.
    A parallel policy (`hps train --kind parallel`, parallel model only): the best of its
    `samples` sampled plans and its greedy one (`parallel_planner`). A placement policy, schedule
    model: the best of `samples` sampled plans and the greedy one under the numpy model, with
    `refine` polished by stage moves; parallel-plan model: its sampled schedules as type
    sequences, completed exactly and refined by the point search within what is left of
    budget.seconds. seconds counts loading and sampling too."""
    started = time.perf_counter()
    functions, params, document = load_planning_policy(checkpoint)
    workload, catalog, job = problem.workload, problem.catalog, problem.job
    if document["kind"] == "parallel":
        if not problem.parallel:
            raise ConfigError(str(checkpoint), "spec.kind", "a parallel policy plans the parallel model only")
        return parallel_policy_result(problem, functions, params, document, samples, budget.seed, started)
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


def parallel_policy_result(problem, functions, params, document, samples: int, seed: int, started: float) -> PlanResult:
    """The PlanResult of a parallel policy on `problem`: its chosen plan scored by `score_plan`;
    evaluations: the plans it laid out."""
    from hps.costmodel.parallel.score import score_plan
    from hps.placement.agent.parallel_planner import plan_with_policy

    base = problem.parallel_problem
    found = plan_with_policy(
        functions, params, base, max_stages=int(document["train"]["max_stages"]), samples=samples, seed=seed
    )
    score = None if found.plan is None else score_plan(base, found.plan.stages, found.plan.micro_batch)
    return PlanResult("policy", found.plan if score is not None else None, score, math.nan,
                      time.perf_counter() - started, found.candidates)  # fmt: skip


def policy_proposals(checkpoint, base, segments: list[tuple[int, int]], *, seed: int = 0, samples: int = 64):
    """(type sequences over `segments`, the checkpoint's step): what the trained policy in
    `checkpoint` proposes for the parallel problem `base`, for a sequence search to complete
    exactly (the sweep's proposals, `--warm-start`). A parallel policy: its laid-out plans'
    sequences, the best first (`parallel_planner.policy_type_sequences`); a placement policy:
    its sampled schedules' (`planner.policy_sequences`)."""
    functions, params, document = load_planning_policy(checkpoint)
    if document["kind"] == "parallel":
        from hps.placement.agent.parallel_planner import policy_type_sequences

        stages = int(document["train"]["max_stages"])
        found = policy_type_sequences(functions, params, base, segments, max_stages=stages, samples=samples, seed=seed)
    else:
        found = policy_sequences(
            functions, params, base.workload, base.catalog, base.job, segments, samples=samples, seed=seed
        )
    return found, document["step"]
