"""Hard generated instances of the parallel-plan model (`hps.placement.env.parallel_generator`):
every planner against the exact solver's proven optimum, or against its certified lower bound
where it proves none, and the solver warm-started with the sequence search's plan.

One item per instance. Per instance: the exact solver cold within `seconds` (the yardstick: its
cost, bound and time to certificate); each planner within `planner_seconds` (the sweep's point
search `sequence`, and `single`, `greedy`, `refine` of `hps.methods.sequence`); the exact
solver's best plan after the sequence search's own wall time (`exact_same_time`); and, where the
cold solver took at least `warm_from` seconds or proved nothing, the solver again within
`seconds` from the sequence search's plan, whose time to certificate counts the search's time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hps.studies.base import ExperimentConfig, Summary, register_experiment_kind
from hps.studies.figures import grouped_bars
from hps.studies.files import json_ready

PLANNERS = {
    "policy": "policy's sequences, completed exactly and refined",
    "sequence": "sequence search (the sweep's point search)",
    "single": "best single type",
    "greedy": "greedy range moves",
    "refine": "refine (iterated run moves)",
    "exact_same_time": "exact solver, same wall time as sequence search",
}


@dataclass(frozen=True, kw_only=True)
class ParallelHardConfig(ExperimentConfig):
    """split: a name of `instances.SPLITS`; seeds: the instances `first_seed` ..
    `first_seed + count − 1`; catalog: the catalogue the types are drawn from; seconds: the exact
    solver's limit per solve (cold and warm); planner_seconds: each planner's; warm_from: the
    least cold time (s) at which the warm solve runs (0: on every instance); checkpoint: a
    placement policy whose `samples` sampled schedules and greedy one, as type sequences, the
    point search completes first (`policy`; None: no policy planner)."""

    name: str = "parallel_hard"
    split: str = "held-out"
    count: int = 24
    first_seed: int = 0
    catalog: str = "cloud-2026"
    seconds: float = 60.0
    planner_seconds: float = 5.0
    warm_from: float = 10.0
    checkpoint: str | None = None
    samples: int = 64

    AT_LEAST = {"first_seed": 0, "warm_from": 0.0}

    def check(self) -> None:
        from hps.placement.env.parallel_generator import SPLITS

        if self.split not in SPLITS:
            raise ValueError(f"split: must be one of {', '.join(SPLITS)}, got {self.split!r}")


def items(config: ParallelHardConfig) -> list[tuple[str, int]]:
    seeds = range(config.first_seed, config.first_seed + config.count)
    return [(f"{config.split}-{seed}", seed) for seed in seeds]


def _cost(score) -> float | None:
    return None if score is None or not score.feasible else float(score.cost)


def _solve(instance, seconds: float, incumbent=None) -> dict:
    from hps.methods.exact_parallel.solver import solve_parallel

    found = solve_parallel(instance.problem, seconds=seconds, incumbent=incumbent)
    return {
        "cost": _cost(found.score),
        "bound": float(found.bound),
        "proven": found.gap == 0.0,
        "seconds": found.seconds,
    }


def run_item(config: ParallelHardConfig, seed: int) -> dict:
    from hps.config.loaders import load_catalog
    from hps.config.paths import resolve_topology
    from hps.contract.types import Budget
    from hps.methods.compare import compare
    from hps.methods.problem import Problem
    from hps.placement.env.parallel_generator import SPLITS, generate

    base = load_catalog(resolve_topology(config.catalog, "catalogs", "catalog"))
    instance = generate(SPLITS[config.split], seed, base)
    exact = _solve(instance, config.seconds)
    names = ["sequence", "single", "greedy", "refine"]
    options = {}
    if config.checkpoint is not None:
        names.insert(0, "policy")
        options["policy"] = {"checkpoint": config.checkpoint, "samples": config.samples}
    problem = Problem(instance.workload, instance.catalog, instance.job, model="parallel")
    budget = Budget(seconds=config.planner_seconds, evaluations=None, seed=seed)
    compared = compare(problem, names, budget, options=options)
    planners = {r.planner: {"cost": _cost(r.score), "seconds": r.seconds} for r in compared.results}
    sequence = next(r for r in compared.results if r.planner == "sequence")
    same = _solve(instance, sequence.seconds)
    planners["exact_same_time"] = {"cost": same["cost"], "seconds": same["seconds"]}
    warm = None
    if sequence.plan is not None and (not exact["proven"] or exact["seconds"] >= config.warm_from):
        warm = _solve(instance, config.seconds, incumbent=sequence.plan)
        warm["to_certificate"] = warm["seconds"] + sequence.seconds
    return json_ready(
        {
            "seed": seed,
            "workload": instance.workload.name,
            "layers": len(instance.workload.layers),
            "types": len(instance.catalog.resources),
            "floor": instance.job.throughput,
            "reach": instance.reach,
            "exact": exact,
            "planners": planners,
            "warm": warm,
        }
    )


def _figures(values: list[float]) -> dict:
    if not values:
        return {"mean": None, "p95": None, "worst": None}
    a = np.array(values)
    return {"mean": float(a.mean()), "p95": float(np.percentile(a, 95)), "worst": float(a.max())}


def planner_table(results: list[dict]) -> dict[str, dict]:
    """Per planner: cost over the proven optimum on the certified instances (`optimum`), over the
    solver's bound on the rest where both are finite (`bound`), the fraction of the instances
    with a known plan where it found one, and its median seconds."""
    out = {}
    planned = [r for r in results if r["exact"]["cost"] is not None or any(p["cost"] for p in r["planners"].values())]
    names = [n for n in PLANNERS if all(n in r["planners"] for r in results)]
    for name in names:
        over_optimum, over_bound, found, seconds = [], [], 0, []
        for r in planned:
            mine, exact = r["planners"][name], r["exact"]
            seconds.append(mine["seconds"])
            if mine["cost"] is None:
                continue
            found += 1
            if exact["proven"] and exact["cost"] is not None:
                over_optimum.append(mine["cost"] / exact["cost"])
            elif exact["bound"] is not None and 0 < exact["bound"] < math.inf:
                over_bound.append(mine["cost"] / exact["bound"])
        out[name] = {
            "optimum": _figures(over_optimum),
            "bound": _figures(over_bound),
            "feasible": found / len(planned) if planned else None,
            "seconds": float(np.median(seconds)) if seconds else None,
        }
    return out


def warm_table(results: list[dict], low: float = 10.0, high: float = 300.0) -> dict:
    """The warm start on the instances the cold solver certified in [low, high] s: median time
    to certificate cold and warm (the search's time counted), and the certificates only warm."""
    cold, warm, only_warm = [], [], 0
    for r in results:
        w = r["warm"]
        if w is None:
            continue
        if r["exact"]["proven"] and low <= r["exact"]["seconds"] <= high:
            cold.append(r["exact"]["seconds"])
            warm.append(w["to_certificate"] if w["proven"] else math.inf)
        only_warm += (not r["exact"]["proven"]) and w["proven"]
    median = lambda xs: float(np.median(xs)) if xs else None  # noqa: E731
    return {"instances": len(cold), "cold": median(cold), "warm": median(warm), "only_warm": only_warm}


def _fmt(value) -> str:
    return "-" if value is None or value != value else f"{value:.3f}"


def summarize(config: ParallelHardConfig, results: dict[str, dict]) -> Summary:
    rows_in = list(results.values())
    table = planner_table(rows_in)
    warm = warm_table(rows_in)
    certified = sum(r["exact"]["proven"] for r in rows_in)
    headers = ["planner", "mean / opt", "p95 / opt", "worst / opt", "mean / bound", "worst / bound", "feasible", "s"]
    rows = []
    for name, t in table.items():
        label = PLANNERS[name]
        o, b = t["optimum"], t["bound"]
        figures = (o["mean"], o["p95"], o["worst"], b["mean"], b["worst"], t["feasible"], t["seconds"])
        rows.append([label, *map(_fmt, figures)])
    seconds = [r["exact"]["seconds"] for r in rows_in if r["exact"]["proven"]]
    text = (
        f"{len(rows_in)} instances of split {config.split} (seeds {config.first_seed}..), types from "
        f"{config.catalog}; the exact solver certified {certified} within {config.seconds:g} s"
        + (f" (median {np.median(seconds):.1f} s)" if seconds else "")
        + f". Planners had {config.planner_seconds:g} s each. / opt: over the proven optimum (certified "
        "instances); / bound: over the solver's certified lower bound (the rest; not a gap to the optimum).\n\n"
        f"Warm start (the solver given the sequence search's plan; its time counted): on {warm['instances']} "
        f"instances certified cold in 10-300 s, median time to certificate {_fmt(warm['cold'])} s cold, "
        f"{_fmt(warm['warm'])} s warm; {warm['only_warm']} instances certified only warm."
    )
    series = {
        n.replace("_", " "): [table[n]["optimum"]["mean"] or 0.0, table[n]["bound"]["mean"] or 0.0]
        for n in table
        if table[n]["optimum"]["mean"] is not None or table[n]["bound"]["mean"] is not None
    }
    figure = grouped_bars(
        "parallel_hard.png", ["over the optimum", "over the bound"], series, ylabel="mean cost ratio", hline=1.0,
        title=config.name,
    )  # fmt: skip
    summary = {"planners": table, "warm": warm, "certified": certified}
    return Summary(
        results={"instances": results, "summary": summary}, headers=headers, rows=rows, figures=[figure],
        markdown=text, title="Hard parallel-plan instances",
    )  # fmt: skip


register_experiment_kind(ParallelHardConfig, items=items, run_item=run_item, summarize=summarize)
