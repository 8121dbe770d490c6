"""A trained parallel-plan policy, zero-shot, against certified optima: generated held-out
instances whose exact optimum was proven (a JSON file of certified instances kept with the
experiment), each planned by the policy (`hps.placement.agent.parallel_planner`: the best of
`samples` sampled plans and the greedy one), its plan's cost over the proven optimum and its
planning time (compile excluded), beside the best single-type plan where the file gives one.

One item per certified instance. The certified file (`hps.studies.mixing_optima.certified_set`)
holds {"split", "instances": [{"seed", "status", "cost", …}]}; only instances of status
"optimal" are planned.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hps.studies.base import ExperimentConfig, Summary, register_experiment_kind
from hps.studies.files import json_ready


@dataclass(frozen=True, kw_only=True)
class ParallelPolicyConfig(ExperimentConfig):
    """checkpoint: the policy's run folder (`hps train --kind parallel --out`); certified: the
    JSON file of certified instances; count: how many of its optimal instances (0: all);
    samples: sampled plans per instance besides the greedy one."""

    name: str = "parallel_policy"
    checkpoint: str = "runs/parallel-policy"
    certified: str = "tests/data/mixing_held_out.json"
    count: int = 0
    samples: int = 64

    AT_LEAST = {"count": 0}


def certified_instances(path: str) -> list[dict]:
    """The instances of the certified file at `path` whose optimum is proven."""
    document = json.loads(Path(path).read_text())
    return [dict(i, split=document["split"]) for i in document["instances"] if i.get("status") == "optimal"]


def items(config: ParallelPolicyConfig) -> list[tuple[str, dict]]:
    found = certified_instances(config.certified)
    found = found[: config.count] if config.count else found
    return [(f"{i['split']}-{i['seed']}", i) for i in found]


def run_item(config: ParallelPolicyConfig, instance: dict) -> dict:
    from hps.placement.agent.checkpoint import load_planning_policy
    from hps.placement.agent.parallel_planner import plan_with_policy
    from hps.placement.env.parallel_generator import SPLITS, generate
    from hps.placement.env.parallel_instance import base_catalog

    functions, params, document = load_planning_policy(config.checkpoint)
    problem = generate(SPLITS[instance["split"]], int(instance["seed"]), base_catalog()).problem
    stages = int(document["train"]["max_stages"])
    found = plan_with_policy(functions, params, problem, max_stages=stages, samples=config.samples)
    cost = math.inf
    if found.feasible:
        from hps.costmodel.parallel.score import score_plan

        cost = score_plan(problem, found.plan.stages, found.plan.micro_batch).cost
    return json_ready(
        {
            "split": instance["split"],
            "seed": instance["seed"],
            "optimum": instance["cost"],
            "feasible": found.feasible,
            "cost": cost if found.feasible else None,
            "ratio": cost / instance["cost"] if found.feasible else None,
            "plan_seconds": found.plan_seconds,
            "compile_seconds": found.compile_seconds,
            "stages": None if found.plan is None else len(found.plan.stages),
            "types": None if found.plan is None else len({s.type for s in found.plan.stages}),
            "checkpoint_step": document["step"],
        }
    )


def figures_of(results: list[dict]) -> dict:
    """Feasible share, mean / p95 / worst cost over the optimum (feasible plans), median ms."""
    ratios = [r["ratio"] for r in results if r["feasible"]]
    return {
        "instances": len(results),
        "feasible": sum(r["feasible"] for r in results) / max(len(results), 1),
        "mean": statistics.fmean(ratios) if ratios else None,
        "p95": float(np.percentile(ratios, 95)) if ratios else None,
        "worst": max(ratios) if ratios else None,
        "plan_ms": 1e3 * statistics.median(r["plan_seconds"] for r in results) if results else None,
    }


def summarize(config: ParallelPolicyConfig, results: dict[str, dict]) -> Summary:
    rows = [
        [key, r["optimum"], r["cost"], r["ratio"], r["feasible"], r["stages"], r["types"], 1e3 * r["plan_seconds"]]
        for key, r in results.items()
    ]
    figures = figures_of(list(results.values()))
    shown = lambda x: "–" if x is None else f"{x:.3f}"  # noqa: E731
    text = (
        f"The policy in {config.checkpoint}, zero-shot on {figures['instances']} certified instances "
        f"({config.samples} sampled plans + greedy): feasible {figures['feasible']:.1%}, cost / optimum mean "
        f"{shown(figures['mean'])}, p95 {shown(figures['p95'])}, worst {shown(figures['worst'])}; "
        f"median {shown(figures['plan_ms'])} ms a plan after compile."
    )
    return Summary(
        results={"figures": figures, "instances": results},
        headers=["instance", "optimum_$", "policy_$", "x_optimum", "feasible", "stages", "types", "plan_ms"],
        rows=rows,
        markdown=text,
    )


register_experiment_kind(ParallelPolicyConfig, items=items, run_item=run_item, summarize=summarize)
