"""LLM plans: every large language model of the zoo on a catalogue at several throughput floors,
planned in the parallel-plan model (docs/parallel-plans.md) by its exact solver, with the proven
bound and gap; beside it the best single-type plan (the same solver with one type allowed on
every layer). Per workload the cost–floor Pareto front, and each plan's stages as a strip per
floor labelled with type, t and d.

One item per (workload, floor). The job is the workload's defaults (batch, samples, micro-batch,
precision, ZeRO level, recompute), as `hps search --parallel` builds it, with the floor scaled.
A solve that finds no plan within its time is recorded as such (reason "none_found", with the
bound it proved), not left out.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from hps.config.loaders import load_catalog
from hps.config.paths import resolve_topology
from hps.config.types import Job, Workload
from hps.report.parallel import parallel_report
from hps.studies.base import ExperimentConfig, Summary, register_experiment_kind
from hps.studies.files import json_ready
from hps.workloads import build_workload

LLMS = ("gpt3-175b", "llama3-70b", "llama3-405b", "transformer-1t")
GIB = 2.0**30


@dataclass(frozen=True, kw_only=True)
class LlmPlansConfig(ExperimentConfig):
    """Plans of large models at multiples of their default floors."""

    name: str = "llm_plans"
    workloads: tuple[str, ...] = LLMS
    catalog: str = "cloud-2026"
    floor_scales: tuple[float, ...] = (0.5, 1.0, 2.0)
    """Each workload's default throughput floor times these."""
    seconds: float = 60.0
    """The exact solver's time limit per plan; past it, the best plan found and its proven gap."""
    single_seconds: float = 5.0
    """The time limit of each single-type plan (the solver with one type allowed)."""


def items(config: LlmPlansConfig) -> list[tuple[str, tuple[str, float]]]:
    load_catalog(resolve_topology(config.catalog, "catalogs", "config().catalog"))
    return [(f"{w}+floor{s:g}x", (w, s)) for w in config.workloads for s in config.floor_scales]


def job_at(workload: Workload, scale: float) -> Job:
    """The workload's default job with its floor times `scale`, and the parallel-plan fields
    (micro-batch, precision, ZeRO, recompute) from its defaults, as `hps search --parallel`
    takes them when no flag is given."""
    from hps.config.validation import with_parallel_fields

    d = workload.defaults
    job = Job(d.batch, d.throughput * scale, d.samples, micro_batches=d.micro_batches, state_sharding=d.state_sharding)
    return with_parallel_fields(job, d, {}, source=f"{workload.name} defaults")


def plan_record(result) -> dict:
    """One solve as JSON: feasible, reason ("none_found" where no plan was found in time), cost,
    bound, gap, seconds, evaluations, micro_batch, iteration_s, throughput, mfu, clock,
    throughput_range, $/hour, egress
    and per stage type, site, first, last, tp, dp, units, replica_micro_batch,
    time_per_microbatch_s, memory_per_device_bytes and memory_limit_bytes."""
    record = {
        "bound": result.bound,
        "gap": result.gap if result.plan is not None else None,
        "seconds": result.seconds,
        "evaluations": result.evaluations,
    }
    score = result.score
    if score is None:
        return json_ready({**record, "feasible": False, "reason": "none_found", "cost": None, "stages": []})
    stages = parallel_report(score)["stages"]
    return json_ready(
        {
            **record,
            "feasible": score.feasible,
            "reason": score.reason,
            "cost": score.cost,
            "micro_batch": score.micro_batch,
            "micro_batches": score.micro_batches,
            "iteration_s": score.iteration_s,
            "throughput": score.throughput,
            "mfu": score.mfu,
            "clock": score.clock,
            "throughput_range": None if score.throughput_range is None else list(score.throughput_range),
            "dollars_per_hour": score.dollars_per_hour,
            "egress_dollars": score.egress_dollars,
            "stages": stages,
        }
    )


def run_item(config: LlmPlansConfig, params: tuple[str, float]) -> dict:
    from hps.costmodel.parallel.problem import ParallelProblem
    from hps.methods.exact_parallel.solver import solve_parallel

    name, scale = params
    workload = build_workload(name)
    catalog = load_catalog(resolve_topology(config.catalog, "catalogs", "config().catalog"))
    job = job_at(workload, scale)
    problem = ParallelProblem(workload, catalog, job)
    singles, best = {}, None
    for t, resource in enumerate(catalog.resources):  # every stage on this one type
        allowed = np.zeros((problem.num_layers, problem.num_types), bool)
        allowed[:, t] = True
        found = solve_parallel(problem.restricted(allowed), seconds=config.single_seconds)
        singles[resource.name] = plan_record(found)
        if found.plan is not None and (best is None or found.score.cost < best.score.cost):
            best = found
    # a single-type plan is a plan of the whole problem: it only prunes, the optimum is the same
    incumbent = best.plan if best is not None else None
    exact = plan_record(solve_parallel(problem, seconds=config.seconds, incumbent=incumbent))
    return json_ready(
        {
            "workload": name,
            "catalog": config.catalog,
            "layers": problem.num_layers,
            "floor": job.throughput,
            "floor_scale": scale,
            "job": dataclasses.asdict(job),  # micro_batches inf is null
            "plan": exact,
            "single": singles,
        }
    )


def stage_text(stage: dict) -> str:
    """`type@site t×d [first-last] m=per-replica`."""
    where = f"@{stage['site']}" if stage["site"] else ""
    layers = f"[{stage['first']}-{stage['last']}]"
    return f"{stage['type']}{where} {stage['tp']}×{stage['dp']} {layers} m={stage['replica_micro_batch']}"


def _number(x, fmt: str):
    return "–" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, fmt)


def summarize(config: LlmPlansConfig, results: dict[str, dict]) -> Summary:
    from hps.studies.llm_figures import best_single, pareto_figure, stages_figure

    by_workload: dict[str, list[dict]] = {}
    for result in results.values():
        by_workload.setdefault(result["workload"], []).append(result)
    rows, published = [], best_published_mfu()
    for name, points in by_workload.items():
        points.sort(key=lambda p: p["floor"])
        for p in points:
            plan = p["plan"]
            single = best_single(p)
            ratio = single[1]["cost"] / plan["cost"] if single and plan["cost"] else None
            rows.append(
                [
                    name,
                    p["floor"],
                    plan["cost"] if plan["feasible"] else f"none found (bound {_number(plan['bound'], ',.0f')})",
                    _number(plan["gap"], ".3g"),
                    _number(plan["seconds"], ".1f"),
                    _number(plan.get("mfu"), ".1%"),
                    single[0] if single else "none found",
                    _number(ratio, ".3f"),
                    plan.get("micro_batch", "–"),
                    len(plan["stages"]),
                    "; ".join(stage_text(s) for s in plan["stages"]),
                    mfu_beside_published(plan, published, "fp8" if p["job"].get("fp8") else "bf16"),
                ]
            )
    figures = []
    for name, points in by_workload.items():
        figures.append(pareto_figure(f"llm_plans-{name}-pareto.png", name, points))
        figures.append(stages_figure(f"llm_plans-{name}-stages.png", name, points))
    return Summary(
        results={"catalog": config.catalog, "workloads": by_workload},
        headers=[
            "workload",
            "floor_per_s",
            "cost_$",
            "gap",
            "solve_s",
            "mfu",
            "best_single_type",
            "its_cost/plan",
            "b",
            "stages",
            "stages (type@site t×d [layers] m=per replica)",
            "MFU beside the best published run on its main type",
        ],
        rows=rows,
        figures=figures,
        title=f"LLM plans on {config.catalog} (parallel-plan model) at {len(config.floor_scales)} floors",
    )


def best_published_mfu() -> dict[tuple[str, str], tuple[float, str]]:
    """{(type, matmul precision "bf16" or "fp8"): (the best MFU of a published run on it, the
    run's key)}: each run's MFU as the parallel-plan model counts it (model FLOPs over the units'
    BF16 peak) at its published throughput, the model's MFU over its predicted / published ratio."""
    from hps.studies.published_runs import score_run
    from hps.studies.published_table import RUNS

    best: dict[tuple[str, str], tuple[float, str]] = {}
    for run in RUNS:
        score = score_run(run)
        mfu = score["mfu"] / score["ratio"]
        if mfu > best.get((run.type, run.compute), (0.0, ""))[0]:
            best[(run.type, run.compute)] = (mfu, run.key)
    return best


def mfu_beside_published(plan: dict, published: dict[tuple[str, str], tuple[float, str]], compute: str) -> str:
    """The plan's MFU beside the best published MFU of runs at its matmul precision `compute` on
    the type holding most of its units, and where it is above it, by how much and whether the
    clock's held-out errors on the type cover it."""
    if not plan.get("feasible") or not plan["stages"]:
        return "–"
    units: dict[str, int] = {}
    for stage in plan["stages"]:
        units[stage["type"]] = units.get(stage["type"], 0) + stage["units"]
    main = max(units, key=units.get)
    if (main, compute) not in published:
        return f"{main}: no published {compute.upper()} run"
    best, key = published[(main, compute)]
    text = f"{main}: {best:.1%} ({key})"
    if plan["mfu"] > best:
        low, high = plan.get("throughput_range") or (None, None)
        covered = low is not None and plan["mfu"] * low / plan["throughput"] <= best
        why = (
            "within the clock's held-out errors"
            if covered
            else "beyond the clock's held-out errors: a prediction to check"
        )
        text += f"; above it by {100 * (plan['mfu'] - best):.1f} points ({why})"
    return text


register_experiment_kind(LlmPlansConfig, items=items, run_item=run_item, summarize=summarize)
