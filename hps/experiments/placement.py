"""What the placement experiments share: the trained policy they use, and one instance's
comparison of every search method, each single-type plan and the policy.

The policy comes from a checkpoint (a `hps train` run folder); when the folder holds none, the
experiment trains one there first with the default recipe (`ensure_policy`), resumable like any
`hps train` run, so an experiment is one command on a fresh machine.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax

from hps.config.types import Catalog, Job, Workload
from hps.errors import SearchSpaceTooLarge
from hps.placement import build_params
from hps.report.placement import schedule_report
from hps.search import METHODS, run_search
from hps.workloads import build_workload

DEFAULT_POLICY_DIR = "runs/placement-policy"
"""Where `hps train` (no experiment) writes the default general placement policy."""


def ensure_trained(policy_dir: str, train_config, minutes: float) -> dict:
    """Train `train_config` (a placement TrainConfig or a CollectiveTrainConfig) in policy_dir
    for at most `minutes` on one device, unless policy_dir already holds a checkpoint.
    Returns {"trained_now", "step"}."""
    from hps.agents.checkpoint import open_manager

    checkpoints = Path(policy_dir) / "checkpoints"
    if checkpoints.is_dir():
        step = open_manager(checkpoints, read_only=True).latest_step()
        if step is not None:
            return {"trained_now": False, "step": int(step)}
    from hps.agents.session import train_session

    state, _ = train_session(train_config, policy_dir, minutes=minutes, devices=jax.devices()[:1])
    return {"trained_now": True, "step": int(jax.device_get(state.step))}


def ensure_policy(policy_dir: str, train_minutes: float, seed: int = 0) -> dict:
    """The default placement policy in policy_dir, trained there first if it holds none."""
    from hps.agents.train import UNBOUNDED_CHUNKS, default_placement_config

    config = dataclasses.replace(default_placement_config(), num_chunks=UNBOUNDED_CHUNKS, seed=seed)
    return ensure_trained(policy_dir, config, train_minutes)


def load_placement_policy(policy_dir: str):
    """(policy functions, params, spec) of the placement policy saved in policy_dir."""
    from hps.agents.checkpoint import checkpoint_folder, load_policy

    return load_policy(checkpoint_folder(policy_dir), kind="placement")


def compare_on_instance(policy, params, workload: Workload, catalog: Catalog, job: Job, *, plans: int = 64,
                        seed: int = 0, methods=tuple(METHODS), pad_layers: int | None = None) -> dict:  # fmt: skip
    """Every search method (skipping exhaustive where the space is too large), every single-type
    plan ("only:TYPE") and the policy (best of `plans` samples + greedy; "policy"; then refined by
    stage moves, "policy_refined") on one
    instance. Per entry: cost ($, None if infeasible), dollars_per_hour, throughput, evaluations,
    seconds (search wall time, compile excluded; the policy's plan_seconds), and ratio = cost /
    the best cost found (the optimum when exhaustive ran). pad_layers: pad the instance to this
    many layers (masked), so instances of different depths share the searches' compiles."""
    exact = build_params(workload, catalog, job, max_layers=pad_layers or len(workload.layers))
    rows = {}
    for method in methods:
        try:
            result = run_search(method, exact, key=jax.random.key(seed), warmup=True)
        except SearchSpaceTooLarge:
            continue
        rows[method] = _row(workload, catalog, job, list(result.schedule), result.evaluations, result.wall_seconds)
    for t, name in enumerate(catalog.names):
        rows[f"only:{name}"] = _row(workload, catalog, job, [t] * len(workload.layers), 1, 0.0)
    if policy is not None:
        from hps.agents.planner import plan

        planned = plan(policy, params, workload, catalog, job, samples=plans, seed=seed, polish=True)
        rows["policy"] = _row(workload, catalog, job, planned.sampled_schedule, planned.candidates,
                              planned.plan_seconds - planned.refine_seconds)  # fmt: skip
        rows["policy_refined"] = _row(workload, catalog, job, planned.schedule,
                                      planned.candidates + planned.refine_evaluations, planned.plan_seconds)  # fmt: skip
    costs = [r["cost"] for r in rows.values() if r["cost"] is not None]
    best = min(costs) if costs else None
    for row in rows.values():
        row["ratio"] = row["cost"] / best if best and row["cost"] is not None else None
    return {"layers": len(workload.layers), "optimum_known": "exhaustive" in rows, "best_cost": best, "methods": rows}


def _row(workload, catalog, job, schedule, evaluations, seconds) -> dict:
    report = schedule_report(workload, catalog, job, schedule)
    feasible = report["feasible"]
    return {"cost": report["cost"], "dollars_per_hour": report["dollars_per_hour"] if feasible else None,
            "throughput": report["throughput"] if feasible else None, "evaluations": int(evaluations),
            "seconds": float(seconds), "schedule": report["schedule"]}  # fmt: skip


def deepest(workload_names) -> int:
    """The most layers among zoo workloads `workload_names` (a shared padding for their searches)."""
    return max(len(build_workload(name).layers) for name in workload_names)


def default_job(workload: Workload, floor_scale: float = 1.0) -> Job:
    """The workload's default job with its throughput floor scaled."""
    d = workload.defaults
    return Job(batch=d.batch, throughput=d.throughput * floor_scale, samples=d.samples)

