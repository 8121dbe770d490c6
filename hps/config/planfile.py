"""Parallel plan files (format ``hps-plan/3``; ``hps-plan/2`` is read too): read, checked and written.

```json
{"format": "hps-plan/3", "workload": "gpt3-175b", "catalog": "cloud-2026", "clock": "kernel",
 "job": {"batch": 1536, "micro_batch": 12, "throughput": 60, "samples": 1.46e8,
         "precision": "bf16-adam", "zero": 1, "recompute": "selective",
         "virtual_stages": 2, "fp8": false, "memory_headroom": 0.1},
 "stages": [{"first": 0, "last": 44, "type": "h100", "tp": 8, "dp": 4}]}
```

hps-plan/2 has neither `clock` nor the job's virtual_stages, fp8 and memory_headroom (read as 1,
false and each type's own headroom), and no "selective" recompute. In hps-plan/3 `clock` and
memory_headroom are optional, virtual_stages and fp8 default to 1 and false.

Units: batch, micro_batch and samples in samples, throughput in samples/s; first and last are
0-based layer indices (both included), tp devices per tensor-parallel group, dp data-parallel
replicas. `read_plan_file` checks everything the file alone decides (types, signs, ranges, the
micro-batch dividing the batch and each stage's replicas, stages contiguous from layer 0);
`check_plan_against` what needs the workload and catalogue. Every problem raises
``ConfigError(file, field, problem)`` naming a field such as ``stages[2].tp``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from typing import Any

from hps.config.files import atomic_write_text
from hps.config.inputs import check_nesting, read_input_text
from hps.config.limits import MAX_CHUNKS, MAX_PLAN_FILE_BYTES, MAX_PLAN_FILE_DEPTH, MAX_WORKLOAD_LAYERS
from hps.config.plan_space import check_fp8, check_headroom, check_recompute, check_virtual_stages
from hps.config.ranges import check_in_range, is_power_of_two
from hps.config.types import (
    CLOCKS,
    COLLECTIVE_POLICIES,
    PLAN_FORMAT,
    PLAN_FORMATS,
    Catalog,
    Job,
    ParallelStage,
    PlanFile,
    Workload,
)
from hps.config.validation import check_keys, check_micro_batch, check_precision, check_zero, printable
from hps.errors import ConfigError

PLAN_KEYS = ("format", "workload", "catalog", "job", "stages")
PLAN_JOB_KEYS = ("batch", "micro_batch", "throughput", "samples", "precision", "zero", "recompute")
PLAN3_KEYS = ("clock", "workload_sha256", "catalog_sha256")
"""Optional top-level keys of hps-plan/3."""
PLAN3_JOB_KEYS = ("virtual_stages", "fp8", "memory_headroom", "collective", "chunks", "budget_per_hour")
"""Optional job keys of hps-plan/3."""
PLAN_STAGE_KEYS = ("first", "last", "type", "tp", "dp")
SCHEDULE_PLAN = (
    f"a schedule plan (what `hps plan --out` writes: a resource type per layer), not a parallel plan "
    f"({PLAN_FORMAT}); `hps execute PLAN.json` runs it, and `hps evaluate --schedule` scores its schedule"
)
"""What a plan file without a format that has a schedule or an instance (`hps plan --out`'s keys) is told."""


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type (``string``, ``integer``, ``boolean``, ``null`` ...)."""
    for python_type, name in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string")):
        if isinstance(value, python_type):
            return name
    return {list: "array", dict: "object", type(None): "null"}.get(type(value), type(value).__name__)


def _shown(value: Any) -> str:
    """How an offending value is shown in an error: ``'fast' (string)``."""
    text = repr(value)
    return f"{text[:57] + '...' if len(text) > 60 else text} ({json_type(value)})"


def _object(value: Any, source: str, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(source, path, f"must be an object, got {_shown(value)}")
    return value


def _string(table: dict[str, Any], key: str, source: str, path: str) -> str:
    value = table[key]
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(source, path, f"must be a non-empty string, got {_shown(value)}")
    return value


def _integer(table: dict[str, Any], key: str, minimum: int, source: str, path: str) -> int:
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(source, path, f"must be an integer, got {_shown(value)}")
    if value < minimum:
        raise ConfigError(source, path, f"must be >= {minimum}, got {value}")
    return value


def _positive(table: dict[str, Any], key: str, source: str, path: str) -> float:
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(source, path, f"must be a finite number, got {_shown(value)}")
    if value <= 0:
        raise ConfigError(source, path, f"must be > 0, got {value!r}")
    return check_in_range(float(value), key, source, path)


def parse_plan_job(data: Any, source: str, version: str = PLAN_FORMAT) -> Job:
    """The ``job`` object: batch (samples/iteration), micro_batch (samples, a divisor of batch),
    throughput (samples/s), samples (to train), precision, zero and recompute; in hps-plan/3 also
    virtual_stages (model chunks a device), fp8, memory_headroom (a fraction in [0, 1)) and
    budget_per_hour (dollars per hour, where the plan was the most throughput within it)."""
    job = _object(data, source, "job")
    third = version == "hps-plan/3"
    check_keys(job, PLAN_JOB_KEYS + (PLAN3_JOB_KEYS if third else ()), PLAN_JOB_KEYS, source, "job")
    recompute = check_recompute(job["recompute"], source, "job.recompute")
    if recompute == "selective" and not third:
        raise ConfigError(source, "job.recompute", f"'selective' needs format {PLAN_FORMAT} (this file is {version})")
    numbers = {key: _positive(job, key, source, f"job.{key}") for key in ("batch", "throughput", "samples")}
    micro = job["micro_batch"]
    if isinstance(micro, bool) or not isinstance(micro, int):
        raise ConfigError(source, "job.micro_batch", f"must be a positive integer (samples), got {_shown(micro)}")
    zero, budgeted = job["zero"], "budget_per_hour" in job
    if isinstance(zero, bool) or not isinstance(zero, int):
        raise ConfigError(source, "job.zero", f"must be an integer 0 to 3, got {_shown(zero)}")
    return Job(
        **numbers,
        micro_batch=check_micro_batch(micro, numbers["batch"], source, "job.micro_batch"),
        precision=check_precision(job["precision"], source, "job.precision"),
        zero=check_zero(zero, source, "job.zero"),
        recompute=recompute,
        virtual_stages=check_virtual_stages(job.get("virtual_stages", 1), source, "job.virtual_stages"),
        fp8=check_fp8(job.get("fp8", False), source, "job.fp8"),
        memory_headroom=check_headroom(job.get("memory_headroom"), source, "job.memory_headroom"),
        budget_per_hour=_positive(job, "budget_per_hour", source, "job.budget_per_hour") if budgeted else None,
        **_collective(job, source),
    )


def _collective(job: dict[str, Any], source: str) -> dict[str, Any]:
    """The job's collective policy and chunks where the file gives them."""
    fields: dict[str, Any] = {}
    if "collective" in job:
        if job["collective"] not in COLLECTIVE_POLICIES:
            shown = _shown(job["collective"])
            raise ConfigError(source, "job.collective", f"must be {' or '.join(COLLECTIVE_POLICIES)}, got {shown}")
        fields["collective"] = job["collective"]
    if "chunks" in job:
        fields["chunks"] = _integer(job, "chunks", 1, source, "job.chunks")
        if fields["chunks"] > MAX_CHUNKS:
            raise ConfigError(source, "job.chunks", f"must be at most {MAX_CHUNKS}, got {fields['chunks']}")
    return fields


def file_sha256(name: str) -> str | None:
    """The SHA-256 (hex) of the file `name` where it names a file, else None (a zoo or shipped name)."""
    if not os.path.isfile(name):
        return None
    digest = hashlib.sha256()
    with open(name, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_recorded_data(plan: PlanFile, source: str) -> None:
    """ConfigError naming `source` and the field where a workload or catalogue file the plan
    records a SHA-256 of has changed since (or is gone)."""
    for field, name, recorded in (
        ("workload_sha256", plan.workload, plan.workload_sha256),
        ("catalog_sha256", plan.catalog, plan.catalog_sha256),
    ):
        if recorded is None:
            continue
        now = file_sha256(name)
        if now != recorded:
            what = "is gone" if now is None else f"changed since the plan was written (now {now[:12]}...)"
            raise ConfigError(
                source, field, f"{name} {what}: re-plan it, or drop {field} from the plan file to score it anyway"
            )


def parse_plan_stage(data: Any, micro_batch: int, source: str, prefix: str) -> ParallelStage:
    """One ``stages`` entry: first and last layer (0-based, first <= last), type (a name), tp (a
    power of two) and dp (replicas, >= 1, dividing `micro_batch` samples among them)."""
    table = _object(data, source, prefix)
    check_keys(table, PLAN_STAGE_KEYS, PLAN_STAGE_KEYS, source, prefix)
    first = _integer(table, "first", 0, source, f"{prefix}.first")
    last = _integer(table, "last", 0, source, f"{prefix}.last")
    if last < first:
        raise ConfigError(source, f"{prefix}.last", f"must be at least first ({first}), got {last}")
    if last >= MAX_WORKLOAD_LAYERS:
        raise ConfigError(source, f"{prefix}.last", f"must be below {MAX_WORKLOAD_LAYERS} (layers), got {last}")
    type_name = printable(_string(table, "type", source, f"{prefix}.type"))
    tp = _integer(table, "tp", 1, source, f"{prefix}.tp")
    if not is_power_of_two(tp):
        raise ConfigError(source, f"{prefix}.tp", f"must be a power of two (1, 2, 4, 8, ...), got {tp}")
    check_in_range(tp, "tp", source, f"{prefix}.tp")
    dp = _integer(table, "dp", 1, source, f"{prefix}.dp")
    check_in_range(dp, "dp", source, f"{prefix}.dp")
    if micro_batch % dp:
        raise ConfigError(
            source,
            f"{prefix}.dp",
            f"micro-batch {micro_batch} is not divisible among {dp} replicas "
            f"({micro_batch}/{dp} samples each; every replica runs a whole number of samples)",
        )
    return ParallelStage(first=first, last=last, type=type_name, tp=tp, dp=dp)


def parse_plan_file(data: Any, source: str) -> PlanFile:
    """A plan file's JSON value (already parsed) as a PlanFile; ConfigError naming `source` and
    the field for anything the file alone shows to be wrong."""
    plan = _object(data, source, "")
    if "format" not in plan and ("schedule" in plan or "instance" in plan):
        raise ConfigError(source, "", SCHEDULE_PLAN)
    if "format" not in plan:
        raise ConfigError(source, "format", "required field is missing")
    version = plan["format"]
    if version not in PLAN_FORMATS:
        shown = version if isinstance(version, str) else _shown(version)
        raise ConfigError(
            source, "format", f"plan format {shown!r} is not supported; this hps reads {' and '.join(PLAN_FORMATS)}"
        )
    third = version == "hps-plan/3"
    check_keys(plan, PLAN_KEYS + (PLAN3_KEYS if third else ()), PLAN_KEYS, source, "")
    workload = _string(plan, "workload", source, "workload")
    catalog = _string(plan, "catalog", source, "catalog")
    clock = _clock(plan, source) if "clock" in plan else None
    hashes = {key: _hash(plan, key, source) for key in ("workload_sha256", "catalog_sha256") if key in plan}
    job = parse_plan_job(plan["job"], source, version)
    items = plan["stages"]
    if not isinstance(items, list) or not items:
        raise ConfigError(source, "stages", f"must be a non-empty array of stages, got {_shown(items)}")
    if len(items) > MAX_WORKLOAD_LAYERS:
        raise ConfigError(source, "stages", f"at most {MAX_WORKLOAD_LAYERS} stages allowed, got {len(items)}")
    micro = int(job.micro_batch)
    stages = tuple(parse_plan_stage(item, micro, source, f"stages[{j}]") for j, item in enumerate(items))
    expected = 0
    for j, stage in enumerate(stages):
        if stage.first != expected:
            where = "layer 0" if j == 0 else f"stages[{j - 1}].last + 1 = {expected}"
            raise ConfigError(
                source, f"stages[{j}].first", f"must be {where} (stages are contiguous), got {stage.first}"
            )
        expected = stage.last + 1
    return PlanFile(workload=workload, catalog=catalog, job=job, stages=stages, clock=clock, version=version, **hashes)


def _hash(plan: dict[str, Any], key: str, source: str) -> str:
    value = plan[key]
    if not isinstance(value, str) or len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
        raise ConfigError(source, key, f"must be a SHA-256 in 64 lowercase hex digits, got {_shown(value)}")
    return value


def _clock(plan: dict[str, Any], source: str) -> str:
    value = plan["clock"]
    if value not in CLOCKS:
        raise ConfigError(source, "clock", f"unknown clock {_shown(value)}; must be one of {', '.join(CLOCKS)}")
    return value


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for key, value in pairs:
        if key in table:
            raise ValueError(f"duplicate key {key!r}")
        table[key] = value
    return table


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def load_json_value(path: str | os.PathLike[str], source: str) -> Any:
    """The JSON value of the regular file at `path` (at most MAX_PLAN_FILE_BYTES, nested at most
    MAX_PLAN_FILE_DEPTH deep, a leading byte-order mark dropped, no NaN/Infinity, no repeated key
    in an object); ConfigError naming `source` otherwise."""
    text = read_input_text(path, source, limit_bytes=MAX_PLAN_FILE_BYTES, what="JSON plan file")
    check_nesting(text, source, MAX_PLAN_FILE_DEPTH, "json")
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except RecursionError:  # the scan above bounds the depth; this is a second line of defence
        raise ConfigError(source, "", f"nested deeper than {MAX_PLAN_FILE_DEPTH}") from None
    except ValueError as err:  # json.JSONDecodeError is a ValueError
        raise ConfigError(source, "", f"not valid JSON: {err}") from None


def read_plan_file(path: str | os.PathLike[str]) -> PlanFile:
    """Read and check a plan file (format hps-plan/2 or /3); ConfigError naming `path` and the field."""
    return parse_plan_file(load_json_value(path, str(path)), str(path))


def _number(value: float) -> int | float:
    """An integral float as an int (1536, not 1536.0), other numbers as they are."""
    return int(value) if float(value).is_integer() and abs(value) < 2**53 else value


def plan_file_json(plan: PlanFile, source: str = "plan") -> dict[str, Any]:
    """The plan file's JSON object (what `write_plan_file` writes and `read_plan_file` reads back);
    ConfigError naming `source` when the job has no micro-batch (a plan file needs one)."""
    job = plan.job
    if job.micro_batch is None:
        raise ConfigError(source, "job.micro_batch", "a plan file needs the micro-batch (samples); got None")
    for name in ("virtual_stages", "fp8", "recompute"):
        if getattr(job, name) is None:
            raise ConfigError(source, f"job.{name}", "a plan file records the plan's choice; got None (open)")
    extra = {"memory_headroom": job.memory_headroom} if job.memory_headroom is not None else {}
    if job.budget_per_hour is not None:
        extra["budget_per_hour"] = _number(job.budget_per_hour)
    hashes = {key: getattr(plan, key) for key in ("workload_sha256", "catalog_sha256") if getattr(plan, key)}
    return {
        "format": PLAN_FORMAT,
        "workload": plan.workload,
        "catalog": plan.catalog,
        **({"clock": plan.clock} if plan.clock is not None else {}),
        **hashes,
        "job": {
            "batch": _number(job.batch),
            "micro_batch": _number(job.micro_batch),
            "throughput": _number(job.throughput),
            "samples": _number(job.samples),
            "precision": job.precision,
            "zero": job.zero,
            "recompute": job.recompute,
            "virtual_stages": job.virtual_stages,
            "fp8": job.fp8,
            **extra,
            "collective": job.collective,
            "chunks": job.chunks,
        },
        "stages": [{"first": s.first, "last": s.last, "type": s.type, "tp": s.tp, "dp": s.dp} for s in plan.stages],
    }


def write_plan_file(plan: PlanFile, path: str | os.PathLike[str]) -> None:
    """Check, then write the plan file atomically (`hps.config.files.atomic_write_text`); an
    invalid plan raises ConfigError naming `path` and nothing is written."""
    data = plan_file_json(plan, str(path))
    parse_plan_file(json.loads(json.dumps(data)), str(path))
    atomic_write_text(path, json.dumps(data, indent=2) + "\n")


def check_plan_against(plan: PlanFile, workload: Workload, catalog: Catalog, source: str) -> None:
    """ConfigError naming `source` and the stage field when the plan does not fit `workload` and
    `catalog`: a type the catalogue lacks, FP8 on a type without an FP8 peak, a tp past the
    type's tensor-parallel limit, a stage past
    the last layer, a last stage that ends before it, or a stage that ends after a layer whose
    cut_after is false (inside a block)."""
    last_layer = len(workload.layers) - 1
    for j, stage in enumerate(plan.stages):
        if stage.type not in catalog.names:
            raise ConfigError(
                source,
                f"stages[{j}].type",
                f"unknown type {stage.type!r}; catalogue {catalog.name!r} has {', '.join(catalog.names)}",
            )
        resource = catalog.resources[catalog.index(stage.type)]
        if plan.job.fp8 and resource.fp8_peak_flops is None:
            raise ConfigError(
                source, f"stages[{j}].type", f"{stage.type!r} has no FP8 peak (fp8_peak_TFLOPs): an FP8 plan "
                "(job.fp8) runs only on types with one",
            )  # fmt: skip
        limit = resource.tensor_parallel_limit
        if stage.tp > limit:
            raise ConfigError(
                source,
                f"stages[{j}].tp",
                f"{stage.tp} exceeds the tensor-parallel limit {limit} of type {stage.type!r}",
            )
        if stage.last > last_layer:
            raise ConfigError(
                source,
                f"stages[{j}].last",
                f"layer {stage.last} is past the workload's last layer {last_layer} ({workload.name!r})",
            )
        layer = workload.layers[stage.last]
        if j < len(plan.stages) - 1 and not layer.cut_after:
            raise ConfigError(
                source,
                f"stages[{j}].last",
                f"layer {stage.last} {layer.name!r} has cut_after = false: a stage ending after it cuts inside a block",
            )
    if plan.stages[-1].last != last_layer:
        raise ConfigError(
            source,
            "stages[-1].last",
            f"must be the workload's last layer {last_layer}, got {plan.stages[-1].last}",
        )
