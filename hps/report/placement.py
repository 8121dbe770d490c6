"""The `hps evaluate` JSON report of one plan, from the numpy placement model (no compile)."""

from __future__ import annotations

import math

from hps.config.types import Catalog, Job, Workload
from hps.contract.types import PlanScore, StageScore
from hps.costmodel.schedule.plan import IndexPlan, evaluate_plan, failed_stage, schedule_plan
from hps.costmodel.schedule.provisioning import Instance, build_instance, fastest_fitting, stage_cap
from hps.report.tables import dollars, format_table, require_finite


def plan_report(inst: Instance, plan: IndexPlan, score: PlanScore | None = None) -> dict:
    """Score one plan ((first layer, last layer, type index) per stage) and return the `hps
    evaluate` JSON keys: feasible, reason (null when feasible, else the reason and the failing
    stage, e.g. "memory at the stage starting at layer 0 (embedding): ..."), reason_code,
    throughput, dollars_per_hour, cost (null when infeasible), stages (type, first_layer,
    last_layer, replicas, time, mode, dollars_per_hour) and schedule (type name per layer).
    score: the plan's `evaluate_plan`, when the caller has it already."""
    workload, catalog = inst.workload, inst.catalog
    score = evaluate_plan(inst, plan) if score is None else score
    stages = [stage_row(stage) for stage in score.stages]
    reason, code = None, score.reason or "feasible"
    if not score.feasible:
        failed = stages[failed_stage(score)]
        layer = failed["first_layer"]
        why = infeasible_because(code, failed, stages, inst, inst.bubble(len(plan)))
        reason = f"{code} at the stage starting at layer {layer} ({workload.layers[layer].name}): {why}"
    report = {
        "feasible": score.feasible,
        "reason": reason,
        "reason_code": code,
        "throughput": score.throughput,
        "dollars_per_hour": score.dollars_per_hour,
        "cost": score.cost if score.feasible else None,  # an infeasible plan has no cost
        "stages": stages,
        "schedule": [catalog.names[t] for first, last, t in plan for _ in range(first, last + 1)],
    }
    return require_finite(report, "the plan's report")


def closest_plan(inst) -> IndexPlan:
    """The single-type plan of the highest throughput: what a report shows when no plan is
    feasible (the plan nearest the floor, and why it fails)."""
    n = inst.num_layers
    plans = [((0, n - 1, t),) for t in range(inst.num_types)]
    return max(plans, key=lambda plan: evaluate_plan(inst, plan).throughput)


def stage_row(stage: StageScore) -> dict:
    """A schedule-model stage as `hps evaluate` prints it: type, first_layer, last_layer,
    replicas, time (s per iteration), mode and dollars_per_hour."""
    entry = stage.stage
    return {
        "type": entry.type,
        "first_layer": entry.first,
        "last_layer": entry.last,
        "replicas": entry.dp,
        "time": stage.time_per_microbatch_s,
        "mode": stage.mode,
        "dollars_per_hour": stage.dollars_per_hour,
    }


def schedule_report(workload: Workload, catalog: Catalog, job: Job, schedule: list[int]) -> dict:
    """`plan_report` of a schedule (type index per layer): its maximal runs are its stages."""
    return plan_report(build_instance(workload, catalog, job), schedule_plan(schedule))


def infeasible_because(code: str, stage: dict, stages: list[dict], inst: Instance, bubble: float) -> str:
    """Why the provisioning of `stage` (a `plan_report` stage row) failed, in figures; bubble:
    the plan's pipeline bubble factor. A throughput failure names the fastest provisioning over
    every unit count that fits memory, which need not be all the units (the All-Reduce can
    outgrow the compute more units save)."""
    catalog, job = inst.catalog, inst.job
    if stage["type"] not in catalog.names:
        return f"resource type {stage['type']!r} is not in catalogue {catalog.name!r}"
    resource = catalog.resources[catalog.index(stage["type"])]
    cap = int(stage_cap(inst, catalog.index(stage["type"])))
    if cap < resource.max_units:  # the micro-batch's samples bound the replicas, not the type's units
        plural = "s" if cap > 1 else ""
        units = f"{cap} unit{plural} of {resource.name} (a replica runs whole samples: {cap} a micro-batch)"
    else:
        units = f"all {resource.max_units} units of {resource.name} (its max_units)"
    if code == "throughput":
        floor = f"below the floor of {job.throughput:,g} samples/s"
        fastest = fastest_fitting(inst, stage["first_layer"], stage["last_layer"], catalog.index(stage["type"]))
        if fastest is None or fastest[0] == cap:
            seconds = stage["time"] if fastest is None else fastest[1]
            reached = job.batch / (bubble * seconds) if seconds > 0 else math.inf
            return f"{units} reach {samples_per_second(reached)} samples/s, {floor}"  # the cap is the limit
        k, seconds = fastest
        reached = job.batch / (bubble * seconds) if seconds > 0 else math.inf
        return (
            f"its fastest provisioning, {k} of the {cap} units of {resource.name} it may use, reaches "
            f"{samples_per_second(reached)} samples/s, {floor}; more units are slower (their All-Reduce "
            "outgrows the compute they save)"
        )
    if code == "memory":
        return f"it does not fit in {resource.memory / 2**30:g} GiB per unit even on {units}"
    if code == "pooled_cap":
        pooled = sum(s["replicas"] for s in stages if s["type"] == stage["type"])
        return (
            f"the stages on {resource.name} together need {pooled} units, above its max_units of {resource.max_units}"
        )
    return f"{resource.name} cannot run this stage"


def _names(workload: Workload, first: int, last: int) -> str:
    """ "fc1 .. fc3" for a stage of several layers, "fc1" for one."""
    names = workload.layers[first].name, workload.layers[last].name
    return names[0] if first == last else f"{names[0]} .. {names[1]}"


def samples_per_second(rate: float) -> str:
    """A throughput in text: whole samples/s with separators, 3 significant digits below 1."""
    return f"{rate:,.0f}" if rate >= 1 else f"{rate:.3g}"


def format_report(report: dict, workload: Workload) -> str:
    """Human-readable summary and per-stage table of a `schedule_report`."""
    rows = [
        [
            i,
            s["type"],
            f"{s['first_layer']}-{s['last_layer']}",
            _names(workload, s["first_layer"], s["last_layer"]),
            s["replicas"],
            s["mode"],
            s["time"],
            s["dollars_per_hour"],
        ]
        for i, s in enumerate(report["stages"])
    ]
    table = format_table(["stage", "type", "layers", "names", "replicas", "state", "time_s", "$_per_hour"], rows)
    status = "feasible" if report["feasible"] else f"INFEASIBLE: {report['reason']}"
    cost = "-" if report["cost"] is None else dollars(report["cost"], 2)
    return (
        f"{table}\n\n{status}\nthroughput  {samples_per_second(report['throughput'])} samples/s\n"
        f"price       {dollars(report['dollars_per_hour'], 2)}/hour\ncost        {cost}"
    )
