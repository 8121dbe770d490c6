"""The JSON documents of a planner's result and of a scored plan, in either cost model: what
`hps search --json` and `hps evaluate --json` print, and what the API's `report` returns."""

from __future__ import annotations

import math

from hps.contract.types import PlanResult, PlanScore, gap_of
from hps.methods.problem import Problem
from hps.report.tables import finite


def score_report(problem: Problem, score: PlanScore) -> dict:
    """The `hps evaluate --json` document of a scored plan."""
    if problem.parallel:
        from hps.report.parallel import parallel_report

        return parallel_report(score)
    from hps.costmodel.schedule.plan import IndexPlan
    from hps.report.placement import plan_report

    names = problem.catalog.names
    spans: IndexPlan = tuple((s.stage.first, s.stage.last, names.index(s.stage.type)) for s in score.stages)
    return plan_report(problem.instance, spans, score)


def status_of(feasible: bool, gap: float | None) -> str:
    """optimal (a plan, proven cheapest), feasible (a plan, no proof), infeasible (proven: no
    plan meets the floor) or unknown (no plan, no proof)."""
    if feasible:
        return "optimal" if gap == 0.0 else "feasible"
    return "infeasible" if gap == 0.0 else "unknown"


def result_report(problem: Problem, result: PlanResult) -> dict:
    """The `hps search --json` document of one planner's result: the plan's `score_report` (in
    the parallel-plan model "none_found" where no plan was found; in the schedule model the
    closest single-type plan and why it fails), method and status (`status_of`); with a proven
    bound, bound, gap and search_seconds (the parallel-plan model also evaluations and the
    objective: cost, or throughput within the job's budget_per_hour; and where the search stopped
    short, open: what holds the bound and what would close it); without one
    (the schedule model's searches), evaluations and wall_seconds. In the parallel-plan model a
    result without a feasible plan also gives max_throughput: the most any plan within the caps
    can reach (samples/s, a certified upper bound; `hps.methods.exact_parallel.reach`)."""
    if problem.parallel:
        report = {"feasible": False, "reason": "none_found", "stages": []}
        if result.score is not None:
            report = score_report(problem, result.score)
        report.update(
            method=result.planner,
            objective=result.objective,
            status=result.status,
            bound=finite(result.bound),
            gap=result.gap,
            search_seconds=result.seconds,
            evaluations=result.evaluations,
        )
        if result.open is not None:
            report["open"] = result.open
        if not result.feasible:
            from hps.methods.exact_parallel.reach import max_throughput

            reach = max(max_throughput(variant.parallel_problem) for variant in problem.variants())
            report["max_throughput"] = finite(reach)
        if result.plan is not None and result.plan.choices:
            report["choices"] = dict(result.plan.choices)
        return report
    from hps.report.placement import closest_plan, plan_report

    if result.score is not None:
        report = score_report(problem, result.score)
    else:
        report = plan_report(problem.instance, closest_plan(problem.instance))
    if math.isnan(result.bound):
        report.update(method=result.planner, evaluations=result.evaluations, wall_seconds=result.seconds)
        report["status"] = status_of(report["feasible"], None)
        return report
    gap = result.gap if result.plan is not None else None
    if result.plan is None and report["feasible"]:  # time ran out, yet the closest plan is feasible: it is
        gap = gap_of(report["cost"], result.bound, True)  # the incumbent, so verdict and gap agree
    report.update(bound=finite(result.bound), gap=gap, search_seconds=result.seconds, method=result.planner)
    proven_none = result.plan is None and not report["feasible"] and math.isinf(result.bound)
    report["status"] = "infeasible" if proven_none else status_of(report["feasible"], gap)
    return report
