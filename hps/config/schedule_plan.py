"""Schedule plan files: the JSON `hps plan --out` writes and `hps execute PLAN.json` reads.

```json
{"schedule": ["cpu", "cpu", "a100", "a100"],
 "instance": {"workload": "mlp", "catalog": "cloud-2024", "batch": 256, "throughput": 1e4,
              "samples": 1e8, "collective": "themis", "chunks": 64, "micro_batches": "inf",
              "state_sharding": "none", "overrides": []},
 "stages": [{"type": "cpu", "first_layer": 0, "last_layer": 1, "replicas": 2, ...}, ...],
 "feasible": true, "cost": 0.01, ...}
```

Held to the standard of the TOML loaders: unknown keys are refused, every field is checked,
and each error names the file and the field (``instance.batch``, ``stages[1].replicas``, never
a command-line flag). `schedule` and `instance` are required; `stages`, when present, are what
`hps execute` must run exactly (`check_stages_match` refuses a plan whose stages differ from those
its schedule provisions). The other keys of the `hps plan` report (figures, timings) are only
type-checked: execution measures its own.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

from hps.config.limits import MAX_CHUNKS, MAX_UNITS, MAX_WORKLOAD_LAYERS
from hps.config.planfile import json_type, load_json_value
from hps.config.ranges import check_in_range
from hps.config.types import COLLECTIVE_POLICIES, STATE_SHARDINGS
from hps.config.validation import check_keys, check_micro_batches
from hps.errors import ConfigError

INSTANCE_KEYS = (
    "workload", "catalog", "batch", "throughput", "samples", "collective", "chunks", "micro_batches",
    "state_sharding", "overrides",
)  # fmt: skip
STAGE_KEYS = ("type", "first_layer", "last_layer", "replicas", "time", "mode", "dollars_per_hour")
REPORT_KEYS = {  # key -> accepted JSON types of the figures `hps plan` adds beside the plan
    "feasible": (bool,),
    "reason": (str, type(None)),
    "reason_code": (str,),
    "throughput": (int, float),
    "dollars_per_hour": (int, float),
    "cost": (int, float, type(None)),
    "plan_seconds": (int, float),
    "compile_seconds": (int, float),
    "plans": (int,),
    "feasible_plans": (int,),
    "refine_evaluations": (int,),
    "checkpoint_step": (int,),
}
PLAN_KEYS = ("schedule", "instance", "stages", *REPORT_KEYS)


@dataclass(frozen=True)
class SchedulePlan:
    """A schedule plan file: schedule (a resource type name per layer), instance (the checked
    fields the file gives, micro_batches as a float, inf for "inf"), stages (the stage rows it
    records, or None)."""

    schedule: tuple[str, ...]
    instance: dict[str, Any]
    stages: tuple[dict[str, Any], ...] | None


def _shown(value: Any, typed: bool = True) -> str:
    """How a value of the file is shown in an error: its repr, cut past 60 characters, and
    (typed) its JSON type: ``'fast' (string)``."""
    text = repr(value)
    text = text[:57] + "..." if len(text) > 60 else text
    return f"{text} ({json_type(value)})" if typed else text


class _Checker:
    """Field checks of one file, each error naming it and the field."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, field: str, problem: str):
        raise ConfigError(self.source, field, problem)

    def shown(self, value: Any) -> str:
        return _shown(value)

    def string(self, value: Any, field: str) -> str:
        if not isinstance(value, str) or not value.strip():
            self.fail(field, f"must be a non-empty string, got {self.shown(value)}")
        return value

    def number(self, value: Any, field: str, name: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            self.fail(field, f"must be a number > 0, got {self.shown(value)}")
        return check_in_range(float(value), name, self.source, field)

    def integer(self, value: Any, field: str, low: int, high: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(field, f"must be an integer, got {self.shown(value)}")
        if not low <= value <= high:
            self.fail(field, f"must be in {low}..{high:,}, got {value}")
        return value


def parse_instance(data: Any, check: _Checker) -> dict[str, Any]:
    """The ``instance`` object: the workload, catalogue and job `hps plan` planned for."""
    if not isinstance(data, dict):
        check.fail("instance", "not a plan written by `hps plan --out` (needs 'instance' and 'schedule')")
    check_keys(data, INSTANCE_KEYS, (), check.source, "instance")
    values: dict[str, Any] = {}
    for key, value in data.items():
        field = f"instance.{key}"
        if key in ("workload", "catalog", "collective", "state_sharding"):
            values[key] = check.string(value, field)
        elif key in ("batch", "throughput", "samples"):
            values[key] = check.number(value, field, key)
        elif key == "chunks":
            values[key] = check.integer(value, field, 1, MAX_CHUNKS)
        elif key == "micro_batches":
            count = math.inf if value == "inf" else value
            values[key] = check_in_range(check_micro_batches(count, check.source, field), key, check.source, field)
        elif key == "overrides":
            if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
                check.fail(field, f"must be a list of NAME=VALUE strings, got {check.shown(value)}")
            values[key] = list(value)
    for key, choices in (("collective", COLLECTIVE_POLICIES), ("state_sharding", STATE_SHARDINGS)):
        if values.get(key, choices[0]) not in choices:
            check.fail(f"instance.{key}", f"must be one of {', '.join(choices)}, got {check.shown(values[key])}")
    return values


def parse_schedule_names(data: Any, check: _Checker) -> tuple[str, ...]:
    """The ``schedule``: one resource type name per layer, each non-empty and without a comma
    (a name holding one would read back as two entries)."""
    if not isinstance(data, list) or not data or not all(isinstance(name, str) for name in data):
        check.fail("schedule", f"must be a non-empty list of resource type names, got {check.shown(data)}")
    if len(data) > MAX_WORKLOAD_LAYERS:
        check.fail("schedule", f"at most {MAX_WORKLOAD_LAYERS} entries (layers) allowed, got {len(data)}")
    for i, name in enumerate(data):
        if not name.strip() or "," in name or name != name.strip():
            problem = f"must be a resource type name (no commas or surrounding spaces), got {check.shown(name)}"
            check.fail(f"schedule[{i}]", problem)
    return tuple(data)


def parse_stage_rows(data: Any, check: _Checker) -> tuple[dict[str, Any], ...]:
    """The ``stages`` rows: type, first_layer, last_layer and replicas checked (the figures
    time and dollars_per_hour only as numbers)."""
    if not isinstance(data, list) or not data:
        check.fail("stages", f"must be a non-empty array of stages, got {check.shown(data)}")
    if len(data) > MAX_WORKLOAD_LAYERS:
        check.fail("stages", f"at most {MAX_WORKLOAD_LAYERS} stages allowed, got {len(data)}")
    rows = []
    for j, row in enumerate(data):
        prefix = f"stages[{j}]"
        if not isinstance(row, dict):
            check.fail(prefix, f"must be an object, got {check.shown(row)}")
        check_keys(row, STAGE_KEYS, ("type", "first_layer", "last_layer", "replicas"), check.source, prefix)
        check.string(row["type"], f"{prefix}.type")
        for key in ("first_layer", "last_layer"):
            check.integer(row[key], f"{prefix}.{key}", 0, MAX_WORKLOAD_LAYERS - 1)
        check.integer(row["replicas"], f"{prefix}.replicas", 1, MAX_UNITS)
        for key in ("time", "dollars_per_hour"):
            if key in row and (isinstance(row[key], bool) or not isinstance(row[key], (int, float))):
                check.fail(f"{prefix}.{key}", f"must be a number, got {check.shown(row[key])}")
        rows.append(dict(row))
    return tuple(rows)


def parse_schedule_plan(data: Any, source: str) -> SchedulePlan:
    """A schedule plan file's JSON value (already parsed); ConfigError naming `source` and the
    field for anything the file alone shows to be wrong."""
    check = _Checker(source)
    if not isinstance(data, dict) or "instance" not in data or "schedule" not in data:
        check.fail("instance", "not a plan written by `hps plan --out` (needs 'instance' and 'schedule')")
    check_keys(data, PLAN_KEYS, ("schedule", "instance"), source, "")
    for key, types in REPORT_KEYS.items():
        if key in data and (not isinstance(data[key], types) or (bool not in types and isinstance(data[key], bool))):
            check.fail(key, f"must be {' or '.join(t.__name__ for t in types)}, got {check.shown(data[key])}")
    schedule = parse_schedule_names(data["schedule"], check)
    instance = parse_instance(data["instance"], check)
    stages = parse_stage_rows(data["stages"], check) if "stages" in data else None
    return SchedulePlan(schedule=schedule, instance=instance, stages=stages)


def read_schedule_plan(path: str | os.PathLike[str]) -> SchedulePlan:
    """Read and check the schedule plan file at `path`; ConfigError naming it and the field."""
    return parse_schedule_plan(load_json_value(path, str(path)), str(path))


def check_stages_match(plan: SchedulePlan, provisioned: list[dict[str, Any]], source: str) -> None:
    """ConfigError naming `source` and the stage field when the file's stages differ from
    `provisioned` (the stage rows its schedule gives under its catalogue and job): an edited
    stage is never silently replaced by a recomputed one."""
    if plan.stages is None:
        return
    if len(plan.stages) != len(provisioned):
        raise ConfigError(
            source,
            "stages",
            f"the file lists {len(plan.stages)} stages but its schedule has {len(provisioned)}; "
            "hps execute runs a plan's stages exactly, or not at all",
        )
    for j, (row, want) in enumerate(zip(plan.stages, provisioned)):
        for key in ("type", "first_layer", "last_layer", "replicas"):
            if row[key] != want[key]:
                raise ConfigError(
                    source,
                    f"stages[{j}].{key}",
                    f"the file says {_shown(row[key], False)} but its schedule, catalogue and job give "
                    f"{_shown(want[key], False)}; "
                    "hps execute runs a plan's stages exactly, or not at all"
                    + (" (give --replicas to run other replica counts)" if key == "replicas" else ""),
                )
