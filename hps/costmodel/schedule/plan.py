"""Explicit pipeline plans and their scores under the general placement model, in numpy.

A plan is a list of stages (first layer, last layer, type index), contiguous and covering every
layer in order; adjacent stages may share a type. `parse_stages` reads the command-line form
`FIRST-LAST:TYPE,...`; `evaluate_plan` scores one plan (no compile: numpy float64, see
hps.costmodel.schedule.provisioning) with every key of the `hps evaluate` JSON.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from hps.config.types import Catalog, ParallelStage, stage_spans
from hps.contract.types import Plan, PlanResult, PlanScore, StageScore, training_cost
from hps.costmodel.schedule.provisioning import (
    FEASIBLE,
    INVALID_TYPE,
    MODES,
    POOLED_CAP,
    Instance,
    provision,
)
from hps.errors import ConfigError

REASONS = ("feasible", "invalid_type", "memory", "throughput", "pooled_cap")
IndexPlan = tuple[tuple[int, int, int], ...]
"""(first layer, last layer, type index) per stage, in layer order; layers count from 0."""


def schedule_plan(schedule: Sequence[int]) -> IndexPlan:
    """The plan of a schedule (one type index per layer): its maximal runs."""
    return tuple(stage_spans(list(schedule)))


def check_plan(plan: IndexPlan, num_layers: int, num_types: int, source: str = "stages", field: str = "") -> None:
    """ConfigError (naming source and field) unless the stages cover layers 0..num_layers−1 in
    order, without gaps or overlaps, each on a type index below num_types."""
    if not plan:
        raise ConfigError(source, field, "a plan needs at least one stage")
    expected = 0
    for i, (first, last, t) in enumerate(plan):
        where = f"stage {i + 1} ({first}-{last})"
        if first != expected:
            problem = "overlaps the stage before" if first < expected else f"leaves layers {expected}-{first - 1} out"
            raise ConfigError(source, field, f"{where} {problem}; stages must cover the layers in order")
        if last < first:
            raise ConfigError(source, field, f"{where} ends before it starts")
        if not 0 <= t < num_types:
            raise ConfigError(source, field, f"{where} has type index {t}, not in 0..{num_types - 1}")
        expected = last + 1
    if expected != num_layers:
        raise ConfigError(source, field, f"the stages end at layer {expected - 1}, the workload has {num_layers}")


def parse_stages(text: str, catalog: Catalog, num_layers: int, source: str = "stages") -> IndexPlan:
    """`FIRST-LAST:TYPE,...` (layers from 0, inclusive; TYPE a catalogue name) -> a checked IndexPlan."""
    field, plan = "", []
    for item in text.split(","):
        span, _, name = item.strip().partition(":")
        first, dash, last = span.partition("-")
        if not (first.strip().isdigit() and (not dash or last.strip().isdigit()) and name.strip()):
            raise ConfigError(source, field, f"{item.strip()!r} is not FIRST-LAST:TYPE")
        if name.strip() not in catalog.names:
            choices = ", ".join(catalog.names)
            raise ConfigError(
                source, field, f"unknown type {name.strip()!r} in {catalog.name}; choose one of {choices}"
            )
        first_layer = int(first)
        plan.append((first_layer, int(last) if dash else first_layer, catalog.index(name.strip())))
    check_plan(tuple(plan), num_layers, len(catalog.resources), source)
    return tuple(plan)


def evaluate_plan(inst: Instance, plan: IndexPlan) -> PlanScore:
    """The plan's score; its reason is the first stage's that fails on its own (else the first
    over its type's pooled cap), its detail names that stage's first layer."""
    check_plan(plan, inst.num_layers, inst.num_types, "plan", "stages")
    first, last, types = (np.array(column, np.int64) for column in zip(*plan))
    stages = provision(inst, first, last, types, len(plan))
    units = np.bincount(types, weights=stages.replicas, minlength=inst.num_types)
    reason = stages.reason.copy()
    reason[(reason == FEASIBLE) & (units[types] > inst.max_units[types])] = POOLED_CAP
    failed = np.flatnonzero(reason != FEASIBLE)
    own = failed[reason[failed] != POOLED_CAP]
    first_failed = (own if own.size else failed)[:1]
    dollars = float(np.sum(stages.replicas * inst.price[types]))
    iteration = inst.bubble(len(plan)) * float(np.max(stages.time))
    throughput = inst.job.batch / iteration
    feasible = first_failed.size == 0
    resources, batch = inst.catalog.resources, inst.job.batch
    scores = tuple(
        StageScore(
            stage=ParallelStage(int(f), int(e), resources[t].name, 1, int(k)), site=resources[t].site,
            replica_micro_batch=batch / k, time_per_microbatch_s=float(s), tail_s=0.0,
            memory_per_device_bytes=float(mem), memory_limit_bytes=float(inst.memory[t]), units=int(k),
            dollars_per_hour=float(k * inst.price[t]), mode=MODES[m], reason=None if r == FEASIBLE else REASONS[r],
        )
        for f, e, t, k, s, m, r, mem in zip(
            first, last, types, stages.replicas, stages.time, stages.mode, reason, stages.memory
        )
    )  # fmt: skip
    peak = sum(score.units * resources[t].peak_flops for score, t in zip(scores, types))
    return PlanScore(
        feasible=feasible,
        reason=None if feasible else REASONS[int(reason[first_failed[0]])],
        detail="" if feasible else f"the stage starting at layer {int(first[first_failed[0]])}",
        micro_batch=None,
        micro_batches=inst.job.micro_batches,
        iteration_s=iteration,
        bottleneck_s=float(np.max(stages.time)),
        throughput=throughput,
        dollars_per_hour=dollars,
        egress_dollars=0.0,
        cost=training_cost(dollars, inst.job.samples, throughput) if feasible else math.inf,
        mfu=inst.model_flops * throughput / peak,
        stages=scores,
    )


def provisioned(inst: Instance, plan: IndexPlan) -> Plan:
    """`plan` as a Plan of tp-1 stages whose dp is the replicas the schedule model provisions."""
    return Plan(tuple(stage.stage for stage in evaluate_plan(inst, plan).stages))


def planned(
    planner: str, inst: Instance, plan: IndexPlan, bound: float, seconds: float, evaluations: int | None
) -> PlanResult:
    """A schedule-model planner's result: `plan` scored by `evaluate_plan`, as a Plan of tp-1
    stages whose dp is the replicas provisioned."""
    score = evaluate_plan(inst, plan)
    return PlanResult(planner, Plan(tuple(stage.stage for stage in score.stages)), score, bound, seconds, evaluations)


def failed_layer(score: PlanScore) -> int:
    """The first layer of the stage a schedule-model score's reason comes from (-1 when feasible)."""
    return -1 if score.feasible else score.stages[failed_stage(score)].stage.first


def index_plan(plan, catalog: Catalog) -> IndexPlan:
    """The (first layer, last layer, type index) stages of a `hps.contract.types.Plan`."""
    return tuple((stage.first, stage.last, catalog.index(stage.type)) for stage in plan.stages)


def failed_stage(score: PlanScore) -> int | None:
    """The index of the stage a schedule-model score's reason comes from (None when feasible):
    the first stage failing for that reason."""
    if score.feasible:
        return None
    return next(j for j, stage in enumerate(score.stages) if stage.reason == score.reason)


__all__ = [
    "INVALID_TYPE",
    "REASONS",
    "IndexPlan",
    "check_plan",
    "evaluate_plan",
    "failed_layer",
    "failed_stage",
    "index_plan",
    "parse_stages",
    "planned",
    "provisioned",
    "schedule_plan",
]
