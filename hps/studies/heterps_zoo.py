"""HeterPS across the zoo: the learned placement policy against the exact solver's optimum and
single-type, greedy, random, genetic and exhaustive placement, for several throughput floors
on one catalogue.

One item per workload × floor (the floor is the workload's default scaled by each of
`floor_scales`), plus a first item that trains the policy when `policy_dir` holds none. Reports
cost relative to the best plan found (the exact solver's optimum where proven), and the
HeterPS-style ratios per workload (`headline_ratios`): cost at equal throughput vs the GPU-only
plan, and throughput at equal budget vs the CPU-only plan. Figure: $/hour vs floor per method.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hps.config.loaders import load_catalog
from hps.config.paths import resolve_topology
from hps.errors import ConfigError
from hps.io.figures import plt, save_figure
from hps.studies import placement
from hps.studies.base import Summary, register_experiment_kind
from hps.workloads import build_workload

SHOWN = (
    "policy",
    "policy_refined",
    "ppo",
    "ppo_refined",
    "exact",
    "exhaustive",
    "genetic",
    "gradient",
    "random",
    "greedy",
    "single",
)


@dataclass(frozen=True, kw_only=True)
class HeterpsZooConfig(placement.PolicyComparisonConfig):
    """workloads: zoo names; catalog: shipped name or file; floor_scales: multiples of each
    workload's default floor; the policies as `PolicyComparisonConfig` says."""

    name: str = "heterps_zoo"
    workloads: tuple[str, ...] = ("ctr-dnn", "wide-deep", "deepfm", "dlrm", "matchnet", "word2vec-nce")
    catalog: str = "cloud-2024"
    floor_scales: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0, 8.0)


def items(config: HeterpsZooConfig):
    for name in config.workloads:
        build_workload(name)  # ConfigError on an unknown name, before any file is written
    if not config.floor_scales or min(config.floor_scales) <= 0:
        raise ConfigError("config()", "floor_scales", "must be positive numbers")
    units = placement.training_items(config)
    units += [(f"{w}_x{s:g}", (w, s)) for w in config.workloads for s in sorted(config.floor_scales)]
    return units


def run_item(config: HeterpsZooConfig, params) -> dict:
    if isinstance(params, str):
        return placement.run_training_item(config, params)
    name, scale = params
    catalog = load_catalog(resolve_topology(config.catalog, "catalogs", "catalog"))
    workload = build_workload(name)
    job = placement.default_job(workload, scale)
    compared = placement.compare_on_instance(
        placement.load_policies(config),
        workload,
        catalog,
        job,
        plans=config.plans,
        seed=config.seed,
        pad_layers=placement.deepest(config.workloads),
    )
    return {
        "workload": name,
        "floor_scale": scale,
        "floor": job.throughput,
        "catalog": catalog.name,
        "cpu_types": [r.name for r in catalog.resources if r.kind == "cpu"],
        "gpu_types": [r.name for r in catalog.resources if r.kind == "gpu"],
        **compared,
    }


def _best_of(methods: dict, prefix_types: list[str]) -> dict | None:
    rows = [methods[f"only:{t}"] for t in prefix_types if methods.get(f"only:{t}", {}).get("cost") is not None]
    return min(rows, key=lambda r: r["cost"]) if rows else None


def headline_ratios(rows: list[dict]) -> dict:
    """Per workload (rows of its floors), means over floors of: the best GPU-only plan's cost
    over the best plan's at the same floor (cost at equal throughput vs GPU-only), and the best
    plan's throughput per $/hour over the best CPU-only plan's (throughput at equal budget vs
    CPU-only, with replicas scaling linearly in the budget; it equals CPU-only cost / best cost)."""
    gpu_ratios, cpu_ratios = [], []
    for row in rows:
        if not row["best_cost"]:
            continue
        gpu = _best_of(row["methods"], row["gpu_types"])
        cpu = _best_of(row["methods"], row["cpu_types"])
        if gpu is not None:
            gpu_ratios.append(gpu["cost"] / row["best_cost"])
        if cpu is not None:
            cpu_ratios.append(cpu["cost"] / row["best_cost"])
    mean = lambda xs: float(np.mean(xs)) if xs else None  # noqa: E731
    return {"gpu_only_cost_ratio": mean(gpu_ratios), "throughput_at_cpu_budget_ratio": mean(cpu_ratios)}


def summarize(config: HeterpsZooConfig, results: dict[str, dict]) -> Summary:
    training = placement.pop_training(results)
    by_workload = {w: [r for r in results.values() if r["workload"] == w] for w in config.workloads}
    for rows in by_workload.values():
        rows.sort(key=lambda r: r["floor"])
    methods = [m for m in SHOWN if any(m in r["methods"] for r in results.values())]
    mean_ratio = {m: _mean([r["methods"][m]["ratio"] for r in results.values() if m in r["methods"]]) for m in methods}
    ratios = {w: headline_ratios(rows) for w, rows in by_workload.items()}
    table = []
    for key, r in results.items():
        table.append(
            [
                key,
                r["layers"],
                "yes" if r["optimum_known"] else "no",
                _fmt(r["best_cost"], "{:,.0f}"),
                *(_fmt(r["methods"].get(m, {}).get("ratio"), "{:.3f}") for m in methods),
            ]
        )
    table.append(["mean", "", "", "", *(_fmt(mean_ratio[m], "{:.3f}") for m in methods)])
    policy_within = [
        r["methods"]["policy"]["ratio"]
        for r in results.values()
        if r["optimum_known"] and r["methods"]["policy"]["ratio"] is not None
    ]
    document = {
        "training": training,
        "instances": results,
        "mean_ratio": mean_ratio,
        "heterps_ratios": ratios,
        "policy_vs_optimum": {
            "instances": len(policy_within),
            "mean": _mean(policy_within),
            "within_3_percent": int(sum(x <= 1.03 for x in policy_within)),
        },
    }
    lines = [
        f"Catalogue {config.catalog}; floors {', '.join(f'{s:g}x' for s in config.floor_scales)} of each "
        f"workload's default; policy from {config.policy_dir} (step {training['policy']['step']})"
        + (f", PPO policy from {config.ppo_dir} (step {training['ppo']['step']})" if training["ppo"] else "")
        + f"; each the best of {config.plans} plans + greedy. Ratio = cost / best plan found (the exact "
        "solver's optimum where proven).",
        "",
        "| workload | GPU-only cost / best (same floor) | throughput at the CPU-only budget / CPU-only's |",
        "|---|---|---|",
    ]
    lines += [
        f"| {w} | {_fmt(v['gpu_only_cost_ratio'], '{:.2f}x')} "
        f"| {_fmt(v['throughput_at_cpu_budget_ratio'], '{:.2f}x')} |"
        for w, v in ratios.items()
    ]
    pv = document["policy_vs_optimum"]
    lines += [
        "",
        f"Policy vs the optimum on the {pv['instances']} instances where the exact solver proved the optimum: "
        f"mean {_fmt(pv['mean'], '{:.3f}')}x, within 3 % on {pv['within_3_percent']}.",
    ]
    return Summary(
        results=document,
        headers=["instance", "layers", "optimum", "best $", *methods],
        rows=table,
        figures=[("pareto.png", lambda path: pareto_figure(by_workload, methods, path))],
        markdown="\n".join(lines),
        title="HeterPS placement across the zoo",
    )


def pareto_figure(by_workload: dict[str, list[dict]], methods: list[str], path) -> None:
    """Per workload, $/hour of each method's plan vs the throughput floor (log-log)."""
    n = len(by_workload)
    cols = min(3, n)
    fig, axes = plt.subplots(
        (n + cols - 1) // cols, cols, figsize=(4.2 * cols, 3.4 * ((n + cols - 1) // cols)), squeeze=False
    )
    for ax, (workload, rows) in zip(axes.flat, by_workload.items()):
        for method in [*methods, "only:cpu"]:
            points = [
                (r["floor"], r["methods"][method]["dollars_per_hour"])
                for r in rows
                if method in r["methods"] and r["methods"][method]["dollars_per_hour"]
            ]
            if points:
                ax.plot(*zip(*points), "o-" if method == "policy" else ".--", label=method, ms=4)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(workload, fontsize=9)
        ax.set_xlabel("throughput floor (samples/s)", fontsize=8)
        ax.set_ylabel("$ / hour", fontsize=8)
        ax.grid(True, which="both", linewidth=0.3)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path)


def _mean(values):
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else None


def _fmt(value, pattern: str) -> str:
    return "-" if value is None else pattern.format(value)


register_experiment_kind(HeterpsZooConfig, items=items, run_item=run_item, summarize=summarize)
