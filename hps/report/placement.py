"""The `hps evaluate` JSON report from the placement model's output."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from hps.config.types import Catalog, Job, Workload
from hps.placement.model import REASONS, build_params, evaluate_schedules
from hps.report.tables import format_table

_evaluate = jax.jit(evaluate_schedules)


def _finite_or_none(value: float):
    return value if math.isfinite(value) else None


def schedule_report(workload: Workload, catalog: Catalog, job: Job, schedule: list[int]) -> dict:
    """Evaluate one schedule (type index per layer) and return the `hps evaluate` JSON keys.

    reason: null when feasible, else the reason code name plus the failing stage's first layer
    (e.g. "memory at stage starting at layer 0 (embedding)"). cost is null when infeasible.
    """
    params = build_params(workload, catalog, job)
    result = _evaluate(params, jnp.asarray([schedule], jnp.int32))
    row = jax.tree.map(lambda x: np.asarray(x)[0], result)
    stages = [
        {
            "type": catalog.names[schedule[end]],
            "first_layer": int(row.stage_first[end]),
            "last_layer": int(end),
            "replicas": int(row.replicas[end]),
            "time": float(row.stage_time[end]),
        }
        for end in np.flatnonzero(row.stage_end)
    ]
    reason = None
    if not row.feasible:
        layer = int(row.failed_layer)
        failed = next(stage for stage in stages if stage["first_layer"] == layer)
        why = infeasible_because(REASONS[int(row.reason)], failed, stages, catalog, job)
        reason = (
            f"{REASONS[int(row.reason)]} at the stage starting at layer {layer} ({workload.layers[layer].name}): {why}"
        )
    return {
        "feasible": bool(row.feasible),
        "reason": reason,
        "reason_code": REASONS[int(row.reason)],
        "throughput": float(row.throughput),
        "dollars_per_hour": float(row.dollars_per_hour),
        "cost": _finite_or_none(float(row.cost)),
        "stages": stages,
        "schedule": [catalog.names[t] for t in schedule],
    }


def infeasible_because(code: str, stage: dict, stages: list[dict], catalog: Catalog, job: Job) -> str:
    """Why the provisioning of `stage` (a `schedule_report` stage row) failed, in figures."""
    if stage["type"] not in catalog.names:
        return f"resource type {stage['type']!r} is not in catalogue {catalog.name!r}"
    resource = catalog.resources[catalog.index(stage["type"])]
    units = f"all {resource.max_units} units of {resource.name} (its max_units)"
    if code == "throughput":
        reached = job.batch / stage["time"] if stage["time"] > 0 else math.inf
        return f"{units} reach {reached:,.0f} samples/s, below the floor of {job.throughput:,g} samples/s"
    if code == "memory":
        return f"it does not fit in {resource.memory / 2**30:g} GiB per unit even on {units}"
    if code == "pooled_cap":
        pooled = sum(s["replicas"] for s in stages if s["type"] == stage["type"])
        return (
            f"the stages on {resource.name} together need {pooled} units, above its max_units of {resource.max_units}"
        )
    return f"{resource.name} cannot run this stage"


def format_report(report: dict, workload: Workload) -> str:
    """Human-readable summary and per-stage table of a `schedule_report`."""
    rows = [
        [
            i,
            s["type"],
            f"{s['first_layer']}-{s['last_layer']}",
            f"{workload.layers[s['first_layer']].name} .. {workload.layers[s['last_layer']].name}",
            s["replicas"],
            s["time"],
        ]
        for i, s in enumerate(report["stages"])
    ]
    table = format_table(["stage", "type", "layers", "names", "replicas", "time_s"], rows)
    status = "feasible" if report["feasible"] else f"INFEASIBLE: {report['reason']}"
    cost = "-" if report["cost"] is None else f"${report['cost']:,.2f}"
    return (
        f"{table}\n\n{status}\nthroughput  {report['throughput']:,.0f} samples/s\n"
        f"price       ${report['dollars_per_hour']:,.2f}/hour\ncost        {cost}"
    )
