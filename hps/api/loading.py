"""Loading what hps plans with: workloads (a TOML file or a zoo name), catalogues, networks, jobs
and plan files, as Python objects. The command line resolves its flags through these.

Every function raises a typed `hps.ConfigError` naming the argument (or the file and field) that
is wrong; none prints or exits.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from hps.config.types import Catalog, Job, Network, PlanFile, Workload
from hps.errors import ConfigError

PathLike = str | os.PathLike


def load_workload(name_or_path: PathLike | Workload, *, source: str = "name_or_path", **overrides: object) -> Workload:
    """The workload `name_or_path` names: a workload TOML file, else a zoo entry (`hps workload
    list`) built with `overrides` of its hyperparameters (e.g. layers=8, hidden=1024). A
    `Workload` is returned as it is. ConfigError naming `source` for a missing file, an unknown
    name, an override the entry does not have, or layer figures out of range."""
    from hps.config.ranges import check_workload
    from hps.workloads import ZOO, resolve_workload

    if isinstance(name_or_path, Workload):
        if overrides:
            raise ConfigError(source, "overrides", "apply only to a zoo name, not to a loaded Workload")
        return name_or_path
    spec = _text(name_or_path, source)
    is_file = Path(spec).is_file()
    if not is_file and spec not in ZOO:
        if spec.endswith(".toml") or os.sep in spec:
            raise ConfigError(source, "", f"no such workload file {spec!r}")
        raise ConfigError(source, "", f"unknown workload {spec!r}; give a TOML file or a zoo name: {', '.join(ZOO)}")
    workload = resolve_workload(spec, overrides, source="overrides" if source == "name_or_path" else source)
    if not is_file:  # a zoo entry: its hyperparameters set the layers' numbers
        check_workload(workload, "overrides" if overrides else source)
    return workload


def load_catalog(name_or_path: PathLike | Catalog, *, source: str = "name_or_path") -> Catalog:
    """The catalogue `name_or_path` names: a catalogue TOML file or a shipped name (`cloud-2024`,
    `cloud-2026`, …, the files of topologies/catalogs/). A `Catalog` is returned as it is."""
    from hps.config.loaders import load_catalog as parse_file
    from hps.config.paths import resolve_topology

    if isinstance(name_or_path, Catalog):
        return name_or_path
    return parse_file(resolve_topology(_text(name_or_path, source), "catalogs", source))


def load_network(name_or_path: PathLike | Network, *, source: str = "name_or_path") -> Network:
    """The network `name_or_path` names: a network TOML file or a shipped name (the files of
    topologies/networks/, e.g. `3d-torus-4x4x4`). A `Network` is returned as it is."""
    from hps.config.loaders import load_network as parse_file
    from hps.config.paths import resolve_topology

    if isinstance(name_or_path, Network):
        return name_or_path
    return parse_file(resolve_topology(_text(name_or_path, source), "networks", source))


def default_job(workload: Workload, *, source: str = "job", **fields: object) -> Job:
    """The workload's own job (its `[defaults]`: batch, floor, samples, micro-batches, state
    sharding, and the parallel-plan fields micro_batch, precision, zero, recompute), with `fields`
    replacing any of them (e.g. throughput=500.0). ConfigError naming `source` when the workload
    has no defaults and batch, throughput or samples are not given, or a value is out of its domain."""
    from hps.api.checks import plain_job
    from hps.config.validation import PARALLEL_JOB_FIELDS, validate_job, with_parallel_fields

    if not isinstance(workload, Workload):
        raise ConfigError("workload", "", f"must be a hps Workload (hps.load_workload), got {type(workload).__name__}")
    known = {name for name in Job.__dataclass_fields__}
    unknown = sorted(set(fields) - known)
    if unknown:
        raise ConfigError(source, unknown[0], f"not a job field; the fields are {', '.join(sorted(known))}")
    defaults = workload.defaults
    values: dict[str, object] = {}
    for name in ("batch", "throughput", "samples"):
        if name in fields:
            values[name] = fields[name]
        elif defaults is None:
            raise ConfigError(source, name, f"workload {workload.name!r} has no default; give {name}=...")
        else:
            values[name] = getattr(defaults, name)
    values["micro_batches"] = fields.get("micro_batches", math.inf if defaults is None else defaults.micro_batches)
    values["state_sharding"] = fields.get("state_sharding", "none" if defaults is None else defaults.state_sharding)
    for name in ("collective", "chunks"):
        if name in fields:
            values[name] = fields[name]
    job = plain_job(Job(**values))
    validate_job(job, source=source)
    given = {name: fields.get(name) for name in PARALLEL_JOB_FIELDS}
    return plain_job(with_parallel_fields(job, defaults, given, source=source))


def read_plan(path: PathLike) -> PlanFile:
    """A plan file (format hps-plan/3, or /2: workload, catalogue, clock, job and stages) as a
    `PlanFile`; ConfigError naming the file and the field that is wrong, or a recorded workload or
    catalogue file that has changed since the plan was written."""
    from hps.api.checks import check_path
    from hps.config.planfile import check_recorded_data, read_plan_file

    plan = read_plan_file(check_path(path, "path"))
    check_recorded_data(plan, str(path))
    return plan


def write_plan(plan: PlanFile, path: PathLike) -> None:
    """Write `plan` as a plan file (hps-plan/3), atomically."""
    from hps.api.checks import check_path
    from hps.config.planfile import write_plan_file

    if not isinstance(plan, PlanFile):
        raise ConfigError("plan", "", f"must be a hps PlanFile (Problem.plan_file(result)), got {type(plan).__name__}")
    write_plan_file(plan, check_path(path, "path"))


def derive_workload(model, batch: int = 64, *, name: str | None = None, seed: int = 0) -> Workload:
    """The layer table of a Flax `LayeredModel` (hps.models.base), each layer's FLOPs, bytes and
    activations measured by XLA's cost analysis at `batch` samples. The table has no job
    defaults: give a job to plan it."""
    from hps.models.base import LayeredModel
    from hps.models.derive import derive_workload as derive

    if not isinstance(model, LayeredModel):
        raise ConfigError("model", "", f"must be a hps LayeredModel (hps.models.base), got {type(model).__name__}")
    from hps.api.checks import check_count

    batch = check_count(batch, "batch")
    name = name or getattr(model, "name", None) or "derived"
    description = f"derived by XLA cost analysis at batch {batch}"
    return derive(model, batch=batch, name=name, description=description, seed=seed)


def _text(value: object, source: str) -> str:
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if not isinstance(value, str) or not value:
        raise ConfigError(source, "", f"must be a name or a path, got {value!r}")
    return value
