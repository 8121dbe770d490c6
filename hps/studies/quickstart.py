"""`hps quickstart`: the whole product in a few minutes on 2 CPU cores.

1. train a small general placement policy (the default recipe, a short budget, one device);
2. compare it on zoo workloads over a real catalogue with every search baseline, as cost over
   the exact solver's proven optimum (its time beside it);
3. reload the saved checkpoint and plan a workload it never saw, in milliseconds;
4. execute that plan as real sharded JAX training on the available devices, beside the cost
   model's prediction, checked against single-device training.

`hps quickstart` runs the steps in one flow (`run_quickstart`: summary.json and comparison.png);
`hps run experiments/quickstart.py` runs them as an experiment kind (an item per step and
workload, resumable). Both train in out/policy, so each reuses the other's finished policy.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass
from pathlib import Path

import jax
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FuncFormatter

from hps.config.files import atomic_write_text
from hps.config.loaders import load_catalog
from hps.config.paths import resolve_topology
from hps.config.types import Catalog
from hps.errors import ConfigError
from hps.io.figures import save_figure
from hps.io.runfolder import stop
from hps.io.runfolder.folder import run_folder
from hps.io.runfolder.manifest import MANIFEST_NAME
from hps.report.placement import schedule_report
from hps.studies.base import ExperimentConfig, Summary, register_experiment_kind
from hps.studies.files import json_ready
from hps.studies.placement import SCHEDULE_PLANNERS, compare_on_instance, deepest, default_job
from hps.workloads import build_workload

STEPS = ("train", "compare", "plan and execute")


@dataclass(frozen=True, kw_only=True)
class QuickstartConfig(ExperimentConfig):
    """The quickstart: train a placement policy, compare it with every search method on the zoo
    workloads, then plan an unseen workload with the reloaded policy and execute that plan."""

    name: str = "quickstart"
    out: str = "runs/quickstart"
    """The quickstart folder; the policy trains in out/policy."""
    catalog: str = "cloud-2024"
    workloads: tuple[str, ...] = ("ctr-dnn", "wide-deep", "dlrm", "matchnet")
    """Zoo workloads compared on `catalog`, each at its default job."""
    unseen: str = "ctr-dnn-small"
    """Planned from the reloaded checkpoint and executed: a zoo workload with a Flax model."""
    train_chunks: int = 14
    """Training chunks of 10 updates each, of num_envs environments. A fixed amount of work, never
    a wall-clock budget: a busy or slow machine prints the same table, only later."""
    num_envs: int = 4096
    demonstrations: int = 1024
    """Teacher-labelled instances imitated, at most num_envs: fewer than the default recipe's, as
    labelling counts in the quickstart's time."""
    plans: int = 64
    """Sampled plans per planning call."""
    execute_steps: int = 5

    AT_LEAST = {"num_envs": 16, "demonstrations": 0}

    def check(self) -> None:
        if self.num_envs % 16:
            raise ValueError(f"num_envs: must be a multiple of 16, got {self.num_envs!r}")


def train_policy(config: QuickstartConfig, on_chunk=None, on_notice=None, command=None, allow_changes=False):
    """The default placement recipe for exactly config.train_chunks chunks on one device (no
    time limit), in out/policy (resumed, or reused when already complete). Returns the metrics records.
    on_notice(line): the session's notices (a stale lock taken over, damaged steps moved);
    command, allow_changes: as `train_session` takes them."""
    from hps.placement.agent.train import default_placement_config
    from hps.rl.session import train_session

    demonstrations = min(config.demonstrations, config.num_envs)
    train = dataclasses.replace(
        default_placement_config(),
        num_chunks=config.train_chunks,
        num_envs=config.num_envs,
        demonstrations=demonstrations,
        seed=config.seed,
    )
    _, records = train_session(
        train,
        Path(config.out) / "policy",
        devices=jax.devices()[:1],
        on_chunk=on_chunk,
        on_notice=on_notice,
        command=command,
        allow_changes=allow_changes,
    )
    return records


def compare_zoo_workload(
    policy, params, catalog: Catalog, workload_name: str, *, plans: int, seed: int, pad_layers: int | None = None
) -> dict:
    """Every search method, each single-type plan and the policy on one zoo workload at its
    default job (`hps.studies.placement.compare_on_instance`)."""
    workload = build_workload(workload_name)
    compared = compare_on_instance(
        {"policy": (policy, params)},
        workload,
        catalog,
        default_job(workload),
        plans=plans,
        seed=seed,
        pad_layers=pad_layers,
    )
    return {"workload": workload_name, **compared}


def plan_and_execute(config: QuickstartConfig, catalog: Catalog) -> dict:
    """Reload the policy from its checkpoint, plan config.unseen, execute the plan."""
    from hps.executor.plan import ExecuteOptions, execute_schedule
    from hps.models.registry import build_model_and_workload
    from hps.placement.agent.checkpoint import load_policy
    from hps.placement.agent.planner import plan

    policy, params, spec = load_policy(Path(config.out) / "policy")
    model, workload = build_model_and_workload(config.unseen, seed=config.seed)
    job = default_job(workload)
    planned = plan(policy, params, workload, catalog, job, samples=config.plans, seed=config.seed)
    report = schedule_report(workload, catalog, job, planned.schedule)
    executed = execute_schedule(
        model,
        workload,
        catalog,
        job,
        planned.schedule,
        ExecuteOptions(steps=config.execute_steps, seed=config.seed, check=True),
    )
    return {
        "workload": config.unseen,
        "checkpoint_step": spec["step"],
        "plan": report,
        "plan_seconds": planned.plan_seconds,
        "compile_seconds": planned.compile_seconds,
        "execution": executed,
        "devices": [str(d) for d in jax.devices()],
    }


def comparison_figure(comparisons: list[dict], path: Path) -> None:
    """Grouped bars: cost / best found per workload (x) and method (bars); infeasible omitted."""
    methods = [m for m in ORDER if any(m in c["methods"] for c in comparisons)]
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(comparisons)), 3.6))
    width = 0.8 / len(methods)
    for j, method in enumerate(methods):
        ratios = [c["methods"].get(method, {}).get("ratio") for c in comparisons]
        xs = [i + (j - len(methods) / 2 + 0.5) * width for i in range(len(comparisons))]
        ax.bar(xs, [r if r is not None else np.nan for r in ratios], width, label=method)
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_xticks(range(len(comparisons)), [c["workload"] for c in comparisons])
    ax.set_ylabel("cost / best plan found")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))  # 1.4, not 1.4 x 10^0
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    ax.legend(ncol=1, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the bars, not over them
    ax.set_title("placement cost on cloud-2024 (lower is better)")
    fig.tight_layout()
    save_figure(fig, path)


def run_quickstart(
    config: QuickstartConfig,
    progress=lambda step: None,
    on_chunk=None,
    on_notice=None,
    *,
    command: list[str] | None = None,
    allow_changes: bool = False,
) -> dict:
    """All four steps in the held folder out (`hps.io.runfolder.folder.run_folder`: RunFolderBusy
    when another run holds it); writes out/summary.json and out/comparison.png, each recorded in
    out/manifest.json with this run's id, and trains in out/policy. Returns the summary.
    on_notice, command, allow_changes: as `train_session` takes them."""
    catalog = load_catalog(resolve_topology(config.catalog, "catalogs", "catalog"))
    for name in config.workloads:  # fail on a bad name now, not after minutes of training
        build_workload(name)
    with run_folder(config.out, command) as folder:
        return _run_quickstart(config, catalog, folder, progress, on_chunk, on_notice, command, allow_changes)


def _run_quickstart(config, catalog, folder, progress, on_chunk, on_notice, command, allow_changes) -> dict:
    """run_quickstart's steps in the held folder."""
    from hps.placement.agent.checkpoint import load_policy

    out = folder.path
    seconds, trained = {}, []
    start = time.perf_counter()
    progress("train")

    def counted(record):
        trained.append(record["chunk"])
        if on_chunk is not None:
            on_chunk(record)

    records = train_policy(config, counted, on_notice, command, allow_changes)
    seconds["train"] = time.perf_counter() - start
    progress("compare")
    policy, params, _ = load_policy(out / "policy")
    depth = deepest(config.workloads)  # one compile of each search serves every workload
    comparisons = [
        compare_zoo_workload(policy, params, catalog, name, plans=config.plans, seed=config.seed, pad_layers=depth)
        for name in config.workloads
    ]
    with stop.deferred():
        comparison_figure(comparisons, out / "comparison.png")
        folder.wrote(out / "comparison.png")
    seconds["compare"] = time.perf_counter() - start - seconds["train"]
    progress("plan and execute")
    unseen = plan_and_execute(config, catalog)
    seconds["plan_and_execute"] = time.perf_counter() - start - seconds["train"] - seconds["compare"]
    summary = {
        "config": _config_document(config),
        "training": training_summary(records),
        "chunks_trained_now": len(trained),
        "comparisons": comparisons,
        "unseen": unseen,
        "seconds": seconds,
        "run_id": folder.manifest.run_id,
        "files": {
            "summary": str(out / "summary.json"),
            "comparison": str(out / "comparison.png"),
            "manifest": str(out / MANIFEST_NAME),
            **policy_files(config),
        },
    }
    with stop.deferred():
        _write_json(out / "summary.json", summary)
        folder.wrote(out / "summary.json")
    return summary


def training_summary(records: list[dict]) -> dict:
    """{"updates", "last"}: the training run's update count and last metrics record."""
    return {"updates": records[-1]["step"] if records else 0, "last": records[-1] if records else None}


def policy_files(config: QuickstartConfig) -> dict:
    """Where the training run keeps its learning curve and checkpoints."""
    policy = Path(config.out) / "policy"
    return {"learning_curve": str(policy / "learning_curve.png"), "checkpoint": str(policy / "checkpoints")}


def _config_document(config: QuickstartConfig) -> dict:
    """The config as summary.json records it (its fields, seed last; the experiment name left out)."""
    document = dataclasses.asdict(config)
    del document["name"]
    document["seed"] = document.pop("seed")
    return document


def _write_json(path: Path, payload: dict) -> None:
    atomic_write_text(path, json.dumps(json_ready(payload), indent=2, allow_nan=False) + "\n")


# ---------------------------------------------------------------- the summary's text


COMPARISON_CAPTION = (
    "cost / best plan found, which is the exact solver's optimum where proven (exhaustive: the independent "
    "check; policy = best of 64 distinct sampled plans + greedy; policy_refined = that plan after stage moves, "
    "hps plan --refine):"
)
ORDER = (*SCHEDULE_PLANNERS, "policy", "policy_refined")
"""The methods' order in the table and figure."""


def _cost(value) -> str:
    if value is None:
        return "infeasible"
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _ratio(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def comparison_table(comparisons: list[dict]) -> tuple[list[str], list[list[str]]]:
    """(headers, rows): the best cost and each method's cost / best found, per workload; the
    methods in ORDER (also where a JSON reading sorted the keys). No wall times: the table is
    the same on any machine (`timing_line` has them)."""
    found = list(dict.fromkeys(m for c in comparisons for m in c["methods"] if not m.startswith("only:")))
    known = [m for m in ORDER if m in found]
    methods = known + [m for m in found if m not in known]
    rows = [
        [c["workload"], _cost(c["best_cost"]), *(_ratio(c["methods"].get(m, {}).get("ratio")) for m in methods)]
        for c in comparisons
    ]
    return ["workload", "best $", *methods], rows


def timing_line(comparisons: list[dict]) -> str:
    """Every planner's wall time per workload, in ms, the exact solver's first: the time it
    took to prove the optimum stands beside each cheaper or costlier way to a plan (the
    policy's is plan_seconds)."""
    parts = []
    for c in comparisons:
        times = {m: c["methods"].get(m, {}).get("seconds") for m in ORDER}
        shown = ", ".join(f"{m} {t * 1e3:.1f}" for m, t in times.items() if t is not None)
        parts.append(f"{c['workload']}: {shown}")
    return "planning time, ms (compile excluded): " + "; ".join(parts)


def unseen_lines(unseen: dict) -> list[str]:
    """The unseen workload's plan from the checkpoint, and its execution beside the prediction."""
    execution, plan = unseen["execution"], unseen["plan"]
    stages = ", ".join(f"{s['type']} x{s['replicas']}" for s in execution["stages"])
    return [
        f"unseen workload {unseen['workload']}: planned from the checkpoint in {unseen['plan_seconds'] * 1e3:.1f} ms "
        f"-> {','.join(plan['schedule'])} ({'feasible' if plan['feasible'] else plan['reason']}, "
        f"${_cost(plan['cost'])})",
        f"executed on {len(unseen['devices'])} device(s), stages {stages}: measured "
        f"{execution['measured_throughput']:,.0f} samples/s (predicted {execution['predicted_throughput']:,.0f} "
        f"for the catalogue's {'/'.join(dict.fromkeys(s['type'] for s in execution['stages']))}, not for this "
        "machine's host devices: `hps profile` measures those); "
        f"same parameters as single-device training: {execution['equivalent']} "
        f"(max relative difference {execution['max_param_rel_diff']:.1e})",
    ]


# ---------------------------------------------------------------- the experiment kind

TRAIN, EXECUTE = "train", "plan-and-execute"


def items(config: QuickstartConfig):
    """The steps as items: train, compare each workload, plan and execute the unseen one."""
    from hps.models.registry import model_workloads

    load_catalog(resolve_topology(config.catalog, "catalogs", "catalog"))
    for name in config.workloads:
        build_workload(name)
    if config.unseen not in model_workloads():
        raise ConfigError(
            "config()",
            "unseen",
            f"{config.unseen!r} has no Flax model; models exist for {', '.join(model_workloads())}",
        )
    compares = [(f"compare-{name}", ("compare", name)) for name in config.workloads]
    return [(TRAIN, ("train",)), *compares, (EXECUTE, ("execute",))]


def run_item(config: QuickstartConfig, params) -> dict:
    from hps.placement.agent.checkpoint import load_policy

    if params[0] == "train":
        return json_ready(training_summary(train_policy(config)))
    catalog = load_catalog(resolve_topology(config.catalog, "catalogs", "catalog"))
    if params[0] == "execute":
        return json_ready(plan_and_execute(config, catalog))
    policy, weights, _ = load_policy(Path(config.out) / "policy")
    compared = compare_zoo_workload(
        policy,
        weights,
        catalog,
        params[1],
        plans=config.plans,
        seed=config.seed,
        pad_layers=deepest(config.workloads),
    )
    return json_ready(compared)


def summarize(config: QuickstartConfig, results: dict[str, dict]) -> Summary:
    training, unseen = results[TRAIN], results[EXECUTE]
    comparisons = [results[f"compare-{name}"] for name in config.workloads]
    headers, rows = comparison_table(comparisons)
    files = policy_files(config)
    text = "\n\n".join(
        [
            f"Policy: {training['updates']} updates (checkpoint {files['checkpoint']}, learning curve "
            f"{files['learning_curve']}). Table: {COMPARISON_CAPTION.removesuffix(':')}.",
            timing_line(comparisons),
            *unseen_lines(unseen),
        ]
    )
    return Summary(
        results={"training": training, "comparisons": comparisons, "unseen": unseen, "files": files},
        headers=headers,
        rows=rows,
        figures=[("comparison.png", lambda path: comparison_figure(comparisons, path))],
        markdown=text,
        title="Quickstart: train, compare, plan and execute",
    )


register_experiment_kind(QuickstartConfig, items=items, run_item=run_item, summarize=summarize)
