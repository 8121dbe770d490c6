"""Executor calibration: the cost model's prediction error on executed plans, before and after
profiling (`hps profile` then `hps execute`, as library calls).

For each global batch B (one item each): every layer is timed on the device pools `devices`
names (by default two pools of 4 devices, named cpu and t4 of cloud-2024) at micro-batch B/2
(`hps.executor.profile`), then the plan `schedule` (by default embedding and concat on cpu, the
MLP on t4, 4 replicas each, 2 micro-batches, a 4-chunk Themis All-Reduce) is executed `runs`
times on the roofline table and `runs` times on the profiled table (`hps.executor.plan`), and
each stage's error (measured / predicted − 1) is reported. On a CPU `hps run` gives the process
8 host devices, so the default pools exist. The times are measurements: results.json varies
between runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hps.config.loaders import load_catalog, parse_schedule
from hps.config.paths import resolve_topology
from hps.config.types import Job
from hps.errors import ConfigError
from hps.studies.base import ExperimentConfig, Summary, register_experiment_kind
from hps.studies.figures import grouped_bars
from hps.workloads import resolve_workload

TABLES = ("roofline", "profiled")


@dataclass(frozen=True, kw_only=True)
class ExecutorCalibrationConfig(ExperimentConfig):
    """workload: zoo name or TOML file (with a Flax model); batches: global batches, one item
    each; runs: executions per table; repeats: measurements per profiled layer (the median is
    kept); devices: pools by index into jax.devices(); schedule: resource type per layer;
    replicas: per stage; chunks: of each stage's Themis All-Reduce; catalog: shipped name or
    file. `seed` seeds the models' parameters and data."""

    name: str = "executor_calibration"
    workload: str = "ctr-dnn-small"
    batches: tuple[int, ...] = (4096, 65536)
    runs: int = 3
    repeats: int = 7
    devices: str = "cpu=0-3,t4=4-7"
    schedule: tuple[str, ...] = ("cpu", "cpu", "t4", "t4", "t4", "t4")
    replicas: tuple[int, ...] = (4, 4)
    chunks: int = 4
    catalog: str = "cloud-2024"

    def check(self) -> None:
        if len(set(self.batches)) != len(self.batches):
            raise ValueError(f"batches: a batch repeats in {self.batches!r}")


def _instance(config: ExecutorCalibrationConfig):
    """(workload, catalog, schedule indices); ConfigError for a bad name or schedule."""
    workload = resolve_workload(config.workload, source="workload")
    catalog = load_catalog(resolve_topology(config.catalog, "catalogs", "catalog"))
    schedule = parse_schedule(",".join(config.schedule), catalog, len(workload.layers), source="schedule")
    return workload, catalog, schedule


def _pools(config: ExecutorCalibrationConfig, catalog):
    import jax

    from hps.executor.devices import device_pools, parse_device_map

    types = list(parse_device_map(config.devices, catalog, len(jax.devices())))
    return device_pools(catalog, types, config.devices)


def items(config: ExecutorCalibrationConfig):
    workload, catalog, _ = _instance(config)
    if workload.defaults is None:
        raise ConfigError("config()", "workload", f"{workload.name} has no default job")
    pools = _pools(config, catalog)  # ConfigError when the devices are missing
    for batch in config.batches:
        for name, pool in pools.items():
            micro_batch = batch // 2
            if micro_batch < len(pool) or micro_batch % len(pool):
                raise ConfigError(
                    "config()", "batches", f"micro-batch {micro_batch} of batch {batch} does not split over {name!r}"
                )
    return [(f"b{batch}", batch) for batch in config.batches]


def profile(config: ExecutorCalibrationConfig, workload, catalog, batch: int) -> dict:
    """{type: LayerProfile} of every layer on every pool, at micro-batch batch / 2 (`hps profile`)."""
    from hps.executor.profile import profile_passes
    from hps.models.registry import build_model

    model = build_model(workload.name, seed=config.seed)
    pools = _pools(config, catalog)
    return profile_passes(model, pools, batch // 2, repeats=config.repeats, seed=config.seed, micro_batches=2)


def execute(config: ExecutorCalibrationConfig, workload, catalog, schedule, batch: int) -> dict:
    """One execution of the plan at global batch `batch` (`hps execute`)."""
    from hps.config.validation import validate_job
    from hps.executor.plan import ExecuteOptions, execute_schedule
    from hps.models.registry import build_model

    defaults = workload.defaults
    job = Job(batch=float(batch), throughput=defaults.throughput, samples=defaults.samples, chunks=config.chunks)
    validate_job(job, source="config()")
    model = build_model(workload.name, seed=config.seed)
    options = ExecuteOptions(devices=config.devices, seed=config.seed, replicas=config.replicas)
    return execute_schedule(model, workload, catalog, job, schedule, options)


def run_item(config: ExecutorCalibrationConfig, batch: int) -> dict:
    from hps.executor.profile import with_profiles

    workload, catalog, schedule = _instance(config)
    profiles = profile(config, workload, catalog, batch)
    times = {name: p.per_sample for name, p in profiles.items()}
    tables = {"roofline": workload, "profiled": with_profiles(workload, profiles)}
    rows = []
    for label in TABLES:
        for run in range(config.runs):
            report = execute(config, tables[label], catalog, schedule, batch)
            stages = report["stages"]
            rows.append(
                {
                    "batch": batch,
                    "table": label,
                    "run": run,
                    "stages": [s["type"] for s in stages],
                    "errors": [s["error"] for s in stages],
                    "measured_ms": [s["measured_time"] * 1e3 for s in stages],
                    "predicted_ms": [s["predicted_time"] * 1e3 for s in stages],
                    "measured_throughput": report["measured_throughput"],
                    "predicted_throughput": report["predicted_throughput"],
                }
            )
    return {"batch": batch, "micro_batch": batch // 2, "seconds_per_sample": times, "rows": rows}


def _error(value) -> str:
    return "-" if value is None else f"{value:+.0%}"


def _percent(value) -> str:
    return "-" if value is None else f"{value:.0%}"


def summarize(config: ExecutorCalibrationConfig, results: dict[str, dict]) -> Summary:
    rows = [row for r in results.values() for row in r["rows"]]
    stages = rows[0]["stages"]
    mean_abs = {}
    for r in results.values():
        for label in TABLES:
            runs = [row["errors"] for row in r["rows"] if row["table"] == label]
            per_stage = [[abs(e[i]) for e in runs if e[i] is not None] for i in range(len(stages))]
            mean_abs[f"{r['batch']}/{label}"] = [float(np.mean(v)) if v else None for v in per_stage]
    document = {
        "rows": rows,
        "profiles": {str(r["batch"]): r["seconds_per_sample"] for r in results.values()},
        "mean_abs_error": mean_abs,
    }
    headers = ["batch", "table", "run"]
    for name in stages:
        headers += [f"{name} ms", f"{name} predicted ms", f"{name} error"]
    table = []
    for row in rows:
        cells = [row["batch"], row["table"], row["run"]]
        for m, p, e in zip(row["measured_ms"], row["predicted_ms"], row["errors"]):
            cells += [f"{m:.2f}", f"{p:.3f}", _error(e)]
        table.append(cells)
    text = (
        f"{config.workload} on {config.catalog}, schedule {','.join(config.schedule)}, pools {config.devices}, "
        f"replicas {','.join(map(str, config.replicas))}, a {config.chunks}-chunk Themis All-Reduce; each layer "
        f"profiled {config.repeats} times at micro-batch B/2. Error = measured / predicted - 1 per stage, "
        f"{config.runs} runs per table. Mean |error| per stage ({', '.join(stages)}):\n\n"
        + "\n".join(f"- B={key}: " + ", ".join(_percent(e) for e in errors) for key, errors in mean_abs.items())
    )

    groups = [f"B={key.replace('/', ' ')}" for key in mean_abs]
    series = {name: [errors[i] or 0.0 for errors in mean_abs.values()] for i, name in enumerate(stages)}
    ylabel, title = "mean |measured / predicted - 1|", "cost model error per stage, roofline vs profiled table"
    return Summary(
        results=document,
        headers=headers,
        rows=table,
        figures=[grouped_bars("calibration.png", groups, series, ylabel=ylabel, title=title)],
        markdown=text,
        title="Executor calibration: prediction error before and after profiling",
    )


register_experiment_kind(ExecutorCalibrationConfig, items=items, run_item=run_item, summarize=summarize)
