"""Generalization: one placement policy, trained once on generated instances and reloaded from
its checkpoint, plans zoo workloads on shipped catalogues it never saw, against the exact
solver's optimum and per-instance search (greedy, the genetic algorithm, the gradient search,
exhaustive search where it fits) in cost and in planning time; a PPO-trained policy beside
it. One item per workload × catalogue, after the training items (which train a policy only
when its folder holds none)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hps.config.loaders import load_catalog
from hps.config.paths import resolve_topology
from hps.studies import placement
from hps.studies.base import Summary, register_experiment_kind
from hps.studies.figures import grouped_bars
from hps.workloads import build_workload

METHODS = ("exact", "greedy", "genetic", "gradient", "exhaustive")


@dataclass(frozen=True, kw_only=True)
class GeneralizationConfig(placement.PolicyComparisonConfig):
    """workloads × catalogs (zoo names × shipped names or files), each at the workload's default
    job; the policies as `PolicyComparisonConfig` says."""

    name: str = "generalization"
    workloads: tuple[str, ...] = (
        "ctr-dnn",
        "deepfm",
        "dlrm",
        "matchnet",
        "resnet50",
        "bert-base",
        "transformer",
        "dlrm-small",
        "transformer-small",
    )
    catalogs: tuple[str, ...] = ("cloud-2024", "small")


def items(config: GeneralizationConfig):
    for name in config.workloads:
        build_workload(name)
    for catalog in config.catalogs:
        resolve_topology(catalog, "catalogs", "catalogs")
    pairs = [(f"{w}_on_{c}", (w, c)) for c in config.catalogs for w in config.workloads]
    return [*placement.training_items(config), *pairs]


def run_item(config: GeneralizationConfig, params) -> dict:
    if isinstance(params, str):
        return placement.run_training_item(config, params)
    name, catalog_name = params
    catalog = load_catalog(resolve_topology(catalog_name, "catalogs", "catalogs"))
    workload = build_workload(name)
    compared = placement.compare_on_instance(
        placement.load_policies(config),
        workload,
        catalog,
        placement.default_job(workload),
        plans=config.plans,
        seed=config.seed,
        methods=METHODS,
        pad_layers=placement.deepest(config.workloads),
    )
    for key in [k for k in compared["methods"] if k.startswith("only:")]:
        del compared["methods"][key]
    return {"workload": name, "catalog": catalog.name, **compared}


def summarize(config: GeneralizationConfig, results: dict[str, dict]) -> Summary:
    training = placement.pop_training(results)
    shown = ["policy", "policy_refined", *(["ppo", "ppo_refined"] if training["ppo"] else []), *METHODS]
    rows, ratio, seconds = [], {m: [] for m in shown}, {m: [] for m in shown}
    for r in results.values():
        methods = r["methods"]
        for m in shown:
            if m in methods and methods[m]["ratio"] is not None:
                ratio[m].append(methods[m]["ratio"])
            if m in methods:
                seconds[m].append(methods[m]["seconds"])
        rows.append(
            [
                r["workload"],
                r["catalog"],
                r["layers"],
                "yes" if r["optimum_known"] else "no",
                *(_ratio(methods.get(m)) for m in shown),
                *(_ms(methods.get(m)) for m in ("policy", "genetic")),
            ]
        )
    mean_ratio = {m: float(np.mean(v)) if v else None for m, v in ratio.items()}
    median_seconds = {m: float(np.median(v)) if v else None for m, v in seconds.items()}
    rows.append(
        [
            "mean",
            "",
            "",
            "",
            *(f"{mean_ratio[m]:.3f}" if mean_ratio[m] else "-" for m in shown),
            f"{median_seconds['policy'] * 1e3:.1f} (median)",
            f"{median_seconds['genetic'] * 1e3:.0f} (median)",
        ]
    )
    document = {
        "training": training,
        "instances": results,
        "mean_ratio": mean_ratio,
        "median_seconds": median_seconds,
        "feasible": {m: len(v) for m, v in ratio.items()},
    }
    ppo = f" and a PPO-trained one (from {config.ppo_dir}, step {training['ppo']['step']})" if training["ppo"] else ""
    step = training["policy"]["step"]
    text = (
        f"One policy (from {config.policy_dir}, step {step}){ppo}, reloaded from its checkpoint, on "
        f"{len(results)} workload × catalogue pairs it never trained on. Ratio = cost / best plan found (the "
        "exact solver's optimum where proven); times are wall seconds per instance, compile excluded. The policy's "
        f"median planning time is {median_seconds['policy'] * 1e3:.1f} ms against "
        f"{median_seconds['genetic'] * 1e3:.0f} ms for the genetic algorithm (51,200 evaluations)."
    )

    figure = grouped_bars(
        "generalization.png",
        [f"{r['workload']}\n{r['catalog']}" for r in results.values()],
        {m: [r["methods"].get(m, {}).get("ratio") or 0.0 for r in results.values()] for m in shown},
        ylabel="cost / best plan found",
        hline=1.0,
        title="one reused policy vs per-instance search (0 = infeasible or not run)",
    )
    return Summary(
        results=document,
        headers=["workload", "catalog", "layers", "optimum", *shown, "policy ms", "genetic ms"],
        rows=rows,
        figures=[figure],
        markdown=text,
        title="Generalization of one placement policy",
    )


def _ratio(row) -> str:
    return "-" if not row or row["ratio"] is None else f"{row['ratio']:.3f}"


def _ms(row) -> str:
    return "-" if not row else f"{row['seconds'] * 1e3:.1f}"


register_experiment_kind(GeneralizationConfig, items=items, run_item=run_item, summarize=summarize)
