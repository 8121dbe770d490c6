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

from hps.config.types import Catalog, stage_spans
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
Plan = tuple[tuple[int, int, int], ...]
"""(first layer, last layer, type index) per stage, in layer order; layers count from 0."""


def schedule_plan(schedule: Sequence[int]) -> Plan:
    """The plan of a schedule (one type index per layer): its maximal runs."""
    return tuple(stage_spans(list(schedule)))


def check_plan(plan: Plan, num_layers: int, num_types: int, source: str = "--stages", field: str = "") -> None:
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


def parse_stages(text: str, catalog: Catalog, num_layers: int, source: str = "--stages") -> Plan:
    """`FIRST-LAST:TYPE,...` (layers from 0, inclusive; TYPE a catalogue name) -> a checked Plan."""
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


def evaluate_plan(inst: Instance, plan: Plan) -> dict:
    """The plan's score: feasible, reason (None when feasible), failed_layer, throughput
    (samples/s), dollars_per_hour, cost ($), stages [{type, first_layer, last_layer, replicas,
    time (s per iteration), mode, reason, dollars_per_hour}]."""
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
    throughput = inst.job.batch / (inst.bubble(len(plan)) * float(np.max(stages.time)))
    feasible = first_failed.size == 0
    names = inst.catalog.names
    return {
        "feasible": feasible,
        "reason": None if feasible else REASONS[int(reason[first_failed[0]])],
        "failed_layer": -1 if feasible else int(first[first_failed[0]]),
        "throughput": throughput,
        "dollars_per_hour": dollars,
        "cost": dollars * (inst.job.samples / throughput) / 3600 if feasible else math.inf,
        "stages": [
            {
                "type": names[t],
                "first_layer": int(f),
                "last_layer": int(e),
                "replicas": int(k),
                "time": float(s),
                "mode": MODES[m],
                "reason": REASONS[r],
                "dollars_per_hour": float(k * inst.price[t]),
            }
            for f, e, t, k, s, m, r in zip(first, last, types, stages.replicas, stages.time, stages.mode, reason)
        ],
    }


__all__ = ["INVALID_TYPE", "REASONS", "Plan", "check_plan", "evaluate_plan", "parse_stages", "schedule_plan"]
