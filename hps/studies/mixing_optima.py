"""Certified optima of generated instances where mixing hardware pays (`parallel_generator`'s mixing
splits): the exact cost solver on each instance within `seconds`, and whether its plan mixes.

One item per instance. Per instance: the draw (rows, types, hardware, batch, micro-batch, floor)
and what the floor was set from (each hardware alone, the witness); the exact solver's status
(`PlanResult.status`: optimal, feasible, infeasible or unknown), cost ($), certified lower bound
($), gap and seconds (its time to certificate where optimal), started from the generator's
witness (`warm`) or from nothing; its plan's stages (type, tp, dp, first, last) and micro-batch;
and how many distinct catalogue types and distinct hardware (a second pool of a type is the
same hardware) the plan holds. The summary's `certified_set` is the file kept with the tests
(tests/data/mixing_held_out.json).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from hps.studies.base import ExperimentConfig, Summary, register_experiment_kind
from hps.studies.files import json_ready


@dataclass(frozen=True, kw_only=True)
class MixingOptimaConfig(ExperimentConfig):
    """split: a mixing split of `parallel_generator.SPLITS`; seeds `first_seed` .. `first_seed +
    count − 1`; catalog: the catalogue the types are drawn from; seconds: the exact solver's limit
    per instance; warm: start the solver from the generator's witness (its answer does not
    depend on it, only its time)."""

    name: str = "mixing_optima"
    split: str = "mixing-held-out"
    count: int = 40
    first_seed: int = 0
    catalog: str = "cloud-2026"
    seconds: float = 300.0
    warm: bool = True

    AT_LEAST = {"first_seed": 0}

    def check(self) -> None:
        from hps.placement.env.parallel_generator import SPLITS

        mixing = [name for name, split in SPLITS.items() if split.mixing]
        if self.split not in mixing:
            raise ValueError(f"split: must be one of {', '.join(mixing)}, got {self.split!r}")
        if not isinstance(self.warm, bool):
            raise ValueError(f"warm: must be true or false, got {self.warm!r}")


def items(config: MixingOptimaConfig) -> list[tuple[str, int]]:
    seeds = range(config.first_seed, config.first_seed + config.count)
    return [(f"{config.split}-{seed}", seed) for seed in seeds]


def plan_mix(stages: list[dict]) -> tuple[int, int]:
    """(distinct catalogue types, distinct hardware) of a plan's stages (dicts with "type")."""
    from hps.methods.exact_parallel.hardware_reach import hardware_of

    names = {s["type"] for s in stages}
    return len(names), len({hardware_of(n) for n in names})


def run_item(config: MixingOptimaConfig, seed: int) -> dict:
    from hps.config.loaders import load_catalog
    from hps.config.paths import resolve_topology
    from hps.costmodel.parallel.score import score_plan
    from hps.methods.exact_parallel.hardware_reach import hardware_of
    from hps.methods.exact_parallel.solver import solve_parallel
    from hps.placement.env.parallel_generator import SPLITS, generate

    started = time.perf_counter()
    base = load_catalog(resolve_topology(config.catalog, "catalogs", "catalog"))
    instance = generate(SPLITS[config.split], seed, base)
    generated = time.perf_counter() - started
    problem = instance.problem
    witness = instance.witness
    found = solve_parallel(problem, seconds=config.seconds, incumbent=witness if config.warm else None)
    stages = [] if found.plan is None else [
        {"type": s.type, "tp": s.tp, "dp": s.dp, "first": s.first, "last": s.last} for s in found.plan.stages
    ]  # fmt: skip
    types, hardware = plan_mix(stages)
    witness_score = score_plan(problem, witness.stages, witness.micro_batch)
    return json_ready(
        {
            "seed": seed,
            "workload": instance.workload.name,
            "rows": len(instance.workload.layers),
            "types": len(instance.catalog.resources),
            "hardware": len({hardware_of(n) for n in instance.catalog.names}),
            "batch": instance.job.batch,
            "micro_batch": instance.job.micro_batch,
            "floor": instance.job.throughput,
            "reach": instance.reach,
            "alone": [
                {
                    "hardware": h.hardware,
                    "units": h.units,
                    "throughput": h.throughput,
                    "bound": h.bound,
                    "certified": h.certified,
                }
                for h in instance.hardware
            ],
            "witness": {"throughput": instance.witness_throughput, "cost": witness_score.cost},
            "generate_seconds": generated,
            "exact": {
                "status": found.status,
                "cost": found.cost,
                "bound": found.bound,
                "gap": found.gap,
                "seconds": found.seconds,
                "warm": config.warm,
                "micro_batch": None if found.plan is None else found.plan.micro_batch,
                "stages": stages,
                "distinct_types": types,
                "distinct_hardware": hardware,
            },
        }
    )


def certified_set(config: MixingOptimaConfig, results: list[dict]) -> dict:
    """The certified instances in the compact form kept with the tests: per instance its seed,
    size, floor, what each hardware reaches alone, and the optimum (status, cost, bound, seconds
    to certificate, stages, micro-batch, distinct types and hardware)."""
    exact_keys = ("status", "cost", "bound", "seconds", "micro_batch", "stages", "distinct_types", "distinct_hardware")
    instances = [
        {
            **{key: r[key] for key in ("seed", "rows", "types", "floor")},
            "alone": [{key: a[key] for key in ("hardware", "throughput", "bound")} for a in r["alone"]],
            **{key: r["exact"][key] for key in exact_keys},
        }
        for r in results
        if r["exact"]["status"] == "optimal"
    ]
    return {
        "split": config.split, "catalog": config.catalog, "seconds": config.seconds, "warm": config.warm,
        "tried": len(results), "instances": instances,
    }  # fmt: skip


def figures(results: list[dict], seconds: float) -> dict:
    """Instances tried and certified; of the certified, the fraction whose optimum holds two
    hardware or more (and two catalogue types or more); median and p90 seconds to certificate."""
    certified = [r for r in results if r["exact"]["status"] == "optimal"]
    times = np.array([r["exact"]["seconds"] for r in certified], np.float64)
    share = lambda key: (sum(r["exact"][key] >= 2 for r in certified) / len(certified)) if certified else None  # noqa: E731
    statuses = {}
    for r in results:
        statuses[r["exact"]["status"]] = statuses.get(r["exact"]["status"], 0) + 1
    return {
        "tried": len(results),
        "certified": len(certified),
        "statuses": statuses,
        "mixing_hardware": share("distinct_hardware"),
        "mixing_types": share("distinct_types"),
        "median_seconds": float(np.median(times)) if len(times) else None,
        "p90_seconds": float(np.percentile(times, 90)) if len(times) else None,
        "within_seconds": seconds,
    }


def _fmt(value, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def summarize(config: MixingOptimaConfig, results: dict[str, dict]) -> Summary:
    rows_in = list(results.values())
    shown = figures(rows_in, config.seconds)
    headers = ["seed", "rows", "types", "hardware", "floor", "best alone", "status", "cost", "gap", "s", "mix"]
    rows = []
    for r in rows_in:
        e = r["exact"]
        best = max(a["bound"] for a in r["alone"])
        mix = f"{e['distinct_hardware']} hw / {e['distinct_types']} types" if e["stages"] else "-"
        figures_row = (r["floor"], best)
        rows.append([
            str(r["seed"]), str(r["rows"]), str(r["types"]), str(r["hardware"]), *(_fmt(v, 2) for v in figures_row),
            e["status"], _fmt(e["cost"], 0), _fmt(e["gap"], 3), _fmt(e["seconds"]), mix,
        ])  # fmt: skip
    mixing = shown["mixing_hardware"]
    text = (
        f"{shown['tried']} instances of split {config.split} (seeds {config.first_seed}..), types from "
        f"{config.catalog}; the exact solver{' from the witness' if config.warm else ''} certified "
        f"{shown['certified']} within {config.seconds:g} s (median {_fmt(shown['median_seconds'])} s, p90 "
        f"{_fmt(shown['p90_seconds'])} s). Of the certified optima "
        f"{'-' if mixing is None else f'{100 * mixing:.0f} %'} hold two hardware or more "
        "(a second pool of a type is the same hardware). Floor: above every hardware's certified "
        "reach alone (best alone), below the generator's mixed witness."
    )
    summary = {"figures": shown, "certified_set": certified_set(config, rows_in)}
    return Summary(
        results={"instances": results, "summary": summary}, headers=headers, rows=rows, figures=[],
        markdown=text, title="Certified optima where mixing hardware pays",
    )  # fmt: skip


register_experiment_kind(MixingOptimaConfig, items=items, run_item=run_item, summarize=summarize)
