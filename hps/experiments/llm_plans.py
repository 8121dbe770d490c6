"""LLM plans: every large language model of the zoo on a catalogue at several throughput floors,
planned by the exact solver (with its certificate) and by every baseline that models the job;
per workload the cost–floor Pareto front, and each plan's stages as a strip per floor.

One item per (workload, floor). The baselines score schedules under the schedule model, so a
job with finite micro-batches or sharded states reports them as skipped, with the reason.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from hps.config.loaders import load_catalog
from hps.config.paths import resolve_topology
from hps.config.types import Job
from hps.experiments.base import ExperimentConfig, Summary, register_experiment_kind
from hps.experiments.files import json_ready
from hps.workloads import build_workload

LLMS = ("gpt3-175b", "llama3-70b", "llama3-405b", "transformer-1t")


@dataclass(frozen=True, kw_only=True)
class LlmPlansConfig(ExperimentConfig):
    """Plans of large models at multiples of their default floors."""

    name: str = "llm_plans"
    workloads: tuple[str, ...] = LLMS
    catalog: str = "cloud-2026"
    floor_scales: tuple[float, ...] = (0.5, 1.0, 2.0)
    """Each workload's default throughput floor times these."""
    seconds: float = 60.0
    """The exact solver's time limit per plan; past it, the best plan and its proven gap."""
    single_seconds: float = 2.0
    """The time limit of each single-type plan (the exact solver on a one-type catalogue)."""


def items(config: LlmPlansConfig) -> list[tuple[str, tuple[str, float]]]:
    load_catalog(resolve_topology(config.catalog, "catalogs", "config().catalog"))
    return [(f"{w}+floor{s:g}x", (w, s)) for w in config.workloads for s in config.floor_scales]


def job_at(workload, scale: float) -> Job:
    d = workload.defaults
    return Job(d.batch, d.throughput * scale, d.samples, micro_batches=d.micro_batches, state_sharding=d.state_sharding)


def run_item(config: LlmPlansConfig, params: tuple[str, float]) -> dict:
    from hps.placement.exact import solve_exact
    from hps.placement.model.provisioning import build_instance

    name, scale = params
    workload = build_workload(name)
    catalog = load_catalog(resolve_topology(config.catalog, "catalogs", "config().catalog"))
    job = job_at(workload, scale)
    found = solve_exact(build_instance(workload, catalog, job), seconds=config.seconds)
    methods = {"exact": _row(found)}
    for resource in catalog.resources:  # the best homogeneous plan: every stage on one type
        alone = dataclasses.replace(catalog, resources=(resource,))
        methods[f"only:{resource.name}"] = _row(
            solve_exact(build_instance(workload, alone, job), seconds=config.single_seconds)
        )
    skipped = (
        {}
        if job.schedule_model
        else {"searches": "the jnp searches score schedules only (micro_batches inf, state_sharding none)"}
    )
    return json_ready(
        {
            "workload": name,
            "floor": job.throughput,
            "floor_scale": scale,
            "job": dataclasses.asdict(job),  # micro_batches inf is null
            "methods": methods,
            "skipped": skipped,
            "stages": found.score["stages"] if found.score else [],
        }
    )


def _row(found) -> dict:
    score = found.score or {}
    return {
        "feasible": bool(score.get("feasible")),
        "cost": score.get("cost") if score.get("feasible") else None,
        "dollars_per_hour": score.get("dollars_per_hour"),
        "throughput": score.get("throughput"),
        "bound": found.bound if found.bound != float("inf") else None,
        "gap": found.gap if found.plan is not None else None,
        "seconds": found.seconds,
    }


def _best_single(methods: dict) -> tuple[str, dict] | None:
    """(type, row) of the cheapest feasible single-type plan, or None."""
    rows = [(k.removeprefix("only:"), r) for k, r in methods.items() if k.startswith("only:") and r["feasible"]]
    return min(rows, key=lambda item: item[1]["cost"]) if rows else None


def summarize(config: LlmPlansConfig, results: dict[str, dict]) -> Summary:
    from hps.experiments.llm_figures import pareto_figure

    by_workload: dict[str, list[dict]] = {}
    for result in results.values():
        by_workload.setdefault(result["workload"], []).append(result)
    rows = []
    for name, points in by_workload.items():
        for p in sorted(points, key=lambda p: p["floor"]):
            exact = p["methods"]["exact"]
            types = sorted({s["type"] for s in p["stages"]})
            why = "; ".join(f"{s['type']} x{s['replicas']} ${s['dollars_per_hour']:,.0f}/h" for s in p["stages"])
            single = _best_single(p["methods"])
            over = single[1]["cost"] / exact["cost"] if single and exact["cost"] else None
            rows.append(
                [
                    name,
                    p["floor"],
                    exact["cost"],
                    exact["gap"],
                    single[0] if single else "none feasible",
                    over,
                    len(p["stages"]),
                    ",".join(types),
                    why,
                ]
            )
    figures = [pareto_figure(f"{name}_pareto.png", name, points) for name, points in by_workload.items()]
    return Summary(
        results={"catalog": config.catalog, "workloads": by_workload},
        headers=[
            "workload",
            "floor_per_s",
            "cost_$",
            "gap",
            "best_single_type",
            "its_cost/exact",
            "stages",
            "types",
            "stages (type x units, $/h)",
        ],
        rows=rows,
        figures=figures,
        title=f"LLM plans on {config.catalog}: the exact solver's optimum at {len(config.floor_scales)} floors",
    )


register_experiment_kind(LlmPlansConfig, items=items, run_item=run_item, summarize=summarize)
