"""Device check: does the executor hold on this machine's accelerator? The quickstart, then
`hps execute --check` on every model workload with one stage and with two, at tensor-parallel
degree 1 and 2 where the stage's device pool has 2 devices, each a few steps at a small batch.

One item per run; a run that ends in an hps error (diverged, refused) is recorded as such and
the check goes on. Each execution records whether its parameters equal single-device training
(at matmul precision "highest", the reference on the first stage's device), the largest
relative and absolute differences and the parameter, and the measured step time (median of the
steps after the first, at that precision). Stages run on GPU-kind types of the catalogue (t4,
then v100), so on a GPU machine they run on the GPU(s) and the reference too; on a CPU-only
machine every type shares the host devices. The times are measurements: results.json varies
between runs and machines.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from hps.errors import ConfigError, HpsError
from hps.studies.base import ExperimentConfig, Summary, register_experiment_kind

QUICKSTART = "quickstart"


@dataclass(frozen=True, kw_only=True)
class DeviceCheckConfig(ExperimentConfig):
    """workloads: zoo workloads with a Flax model; types: the catalogue's types of the first and
    second stage; batch: samples per step; steps: per execution; tensor: degrees tried (each
    only where its pool has that many devices); quickstart: also run the quickstart (its run
    folder `quickstart_out`, its policy training `quickstart_chunks` chunks)."""

    name: str = "device_check"
    workloads: tuple[str, ...] = ("mlp", "ctr-dnn-small", "dlrm-small", "matchnet-small", "transformer-small")
    catalog: str = "cloud-2024"
    types: tuple[str, str] = ("t4", "v100")
    batch: int = 32
    steps: int = 5
    tensor: tuple[int, ...] = (1, 2)
    quickstart: bool = True
    quickstart_out: str = "runs/device_check/quickstart"
    quickstart_chunks: int = 14

    def check(self) -> None:
        if self.batch < 2 or self.steps < 2:
            raise ValueError(f"batch and steps must be at least 2, got {self.batch} and {self.steps}")


def _catalog(config: DeviceCheckConfig):
    from hps.config.loaders import load_catalog
    from hps.config.paths import resolve_topology

    catalog = load_catalog(resolve_topology(config.catalog, "catalogs", "catalog"))
    for name in config.types:
        if name not in catalog.names:
            raise ConfigError("config()", "types", f"{name!r} is not in {catalog.name} ({', '.join(catalog.names)})")
    return catalog


def _schedules(layers: int, types: tuple[str, str]) -> dict[int, list[str]]:
    """{stages: type per layer}: all on the first type; the first half on it, the rest on the second."""
    cut = max(1, layers // 2)
    return {1: [types[0]] * layers, 2: [types[0]] * cut + [types[1]] * (layers - cut)}


def items(config: DeviceCheckConfig):
    from hps.executor.devices import device_pools
    from hps.models.registry import model_workloads
    from hps.workloads import build_workload

    catalog = _catalog(config)
    pools = device_pools(catalog, list(config.types))
    found = []
    for name in config.workloads:
        if name not in model_workloads():
            raise ConfigError("config()", "workloads", f"{name!r} has no Flax model ({', '.join(model_workloads())})")
        layers = len(build_workload(name).layers)
        for stages in _schedules(layers, config.types):
            for t in config.tensor:
                if all(len(pools[n]) >= t for n in config.types[:stages]):
                    found.append((f"{name}-s{stages}-t{t}", ("execute", name, stages, t)))
    return ([(QUICKSTART, (QUICKSTART,))] if config.quickstart else []) + found


def run_item(config: DeviceCheckConfig, params) -> dict:
    import jax

    start = time.perf_counter()
    if params[0] == QUICKSTART:
        from hps.studies.quickstart import QuickstartConfig, run_quickstart

        summary = run_quickstart(
            QuickstartConfig(out=config.quickstart_out, train_chunks=config.quickstart_chunks, seed=config.seed)
        )
        execution = summary["unseen"]["execution"]
        return {
            "kind": QUICKSTART,
            "workload": summary["unseen"]["workload"],
            "stages": len(execution["stages"]),
            "tensor": 1,
            "result": _verdict(execution),
            "step_ms": execution["measured_step_time"] * 1e3,
            "seconds": time.perf_counter() - start,
            "device": str(jax.devices()[0]),
        }
    _, name, stages, t = params
    try:
        report = _execute(config, name, stages, t)
    except HpsError as error:  # a diverged or refused run is a finding of the check, not its end
        return {"kind": "execute", "workload": name, "stages": stages, "tensor": t, "error": str(error)}
    return {
        "kind": "execute",
        "workload": name,
        "stages": stages,
        "tensor": t,
        "result": _verdict(report),
        "step_ms": report["measured_step_time"] * 1e3,
        "seconds": time.perf_counter() - start,
        "device": report["reference_device"],
    }


def _verdict(report: dict) -> dict:
    keys = ("equivalent", "max_param_rel_diff", "max_param_abs_diff", "worst_parameter", "matmul_precision")
    return {key: report.get(key) for key in keys}


def _execute(config: DeviceCheckConfig, name: str, stages: int, tensor: int) -> dict:
    from hps.config.types import Job
    from hps.executor.plan import ExecuteOptions, execute_schedule
    from hps.models.registry import build_model_and_workload

    catalog = _catalog(config)
    model, workload = build_model_and_workload(name, seed=config.seed)
    schedule = [catalog.index(t) for t in _schedules(len(workload.layers), config.types)[stages]]
    job = Job(batch=float(config.batch), throughput=1.0, samples=1e6, chunks=4)
    options = ExecuteOptions(
        steps=config.steps, seed=config.seed, check=True, replicas=(1,) * stages, tensor=(tensor,) * stages
    )
    return execute_schedule(model, workload, catalog, job, schedule, options)


def summarize(config: DeviceCheckConfig, results: dict[str, dict]) -> Summary:
    headers = ["run", "workload", "stages", "t", "equal", "max rel diff", "max abs diff", "worst parameter"]
    headers += ["step ms", "s", "device"]
    rows = []
    for key, r in results.items():
        if "error" in r:
            rows.append([key, r["workload"], r["stages"], r["tensor"], "error", "-", "-", r["error"], "-", "-", "-"])
            continue
        v = r["result"]
        rows.append(
            [
                key,
                r["workload"],
                r["stages"],
                r["tensor"],
                v["equivalent"],
                f"{v['max_param_rel_diff']:.1e}",
                f"{v['max_param_abs_diff']:.1e}" if v["max_param_abs_diff"] is not None else "-",
                v["worst_parameter"] or "-",
                f"{r['step_ms']:.1f}",
                f"{r['seconds']:.0f}",
                r["device"],
            ]
        )
    passed = sum(bool(r.get("result", {}).get("equivalent")) for r in results.values())
    text = (
        f"{passed} of {len(results)} runs equal to single-device training (max relative difference per "
        f"parameter <= 1e-5, matmul precision highest); batch {config.batch}, {config.steps} steps, stages on "
        f"{' then '.join(config.types)} of {config.catalog}."
    )
    return Summary(
        results={
            "runs": results,
            "passed": passed,
            "total": len(results),
            "quickstart_out": str(Path(config.quickstart_out)),
        },
        headers=headers,
        rows=rows,
        markdown=text,
        title="Device check: the quickstart and the executor's check on this machine",
    )


register_experiment_kind(DeviceCheckConfig, items=items, run_item=run_item, summarize=summarize)
