"""What the placement experiments share: the trained policies they use, and one instance's
comparison of every search method, each single-type plan and the policies.

The policies come from checkpoints (`hps train` run folders): the default recipe's (REINFORCE
with imitation, in policy_dir) and a PPO-trained one (in ppo_dir, unless that is empty). When a
folder holds none, the experiment trains it there first (`ensure_policy`, its own item),
resumable like any `hps train` run, so an experiment is one command on a fresh machine.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

import jax

from hps.config.types import Catalog, Job, Workload
from hps.costmodel.schedule import build_params
from hps.methods.registry import planner_names
from hps.report.placement import schedule_report
from hps.studies.base import ExperimentConfig
from hps.workloads import build_workload

DEFAULT_POLICY_DIR = "runs/placement-policy"
"""Where `hps train` (no experiment) writes the default general placement policy."""
DEFAULT_PPO_DIR = "runs/placement-ppo"
TRAIN_ITEM, TRAIN_PPO_ITEM = "train-policy", "train-ppo-policy"
SCHEDULE_PLANNERS = planner_names("schedule")
"""Every schedule-model planner that plans without options, the exact solver first."""


@dataclass(frozen=True, kw_only=True)
class PolicyComparisonConfig(ExperimentConfig):
    """The policies a placement experiment compares: the default recipe's in policy_dir
    (trained there for train_minutes when it holds none) and a PPO-trained one in ppo_dir
    (ppo_minutes; "" leaves PPO out); plans: samples per planning call."""

    policy_dir: str = DEFAULT_POLICY_DIR
    train_minutes: float = 10.0
    ppo_dir: str = DEFAULT_PPO_DIR
    ppo_minutes: float = 5.0
    plans: int = 64

    AT_LEAST = {"ppo_dir": 0, "train_minutes": 0.0, "ppo_minutes": 0.0}


def training_items(config: PolicyComparisonConfig) -> list[tuple[str, str]]:
    """The experiment's first items: train (or find) each policy."""
    return [(TRAIN_ITEM, "reinforce"), *([(TRAIN_PPO_ITEM, "ppo")] if config.ppo_dir else [])]


def run_training_item(config: PolicyComparisonConfig, algorithm: str) -> dict:
    """A training item: the default recipe's policy, or the PPO one."""
    if algorithm == "ppo":
        return ensure_policy(config.ppo_dir, config.ppo_minutes, config.seed, algorithm="ppo")
    return ensure_policy(config.policy_dir, config.train_minutes, config.seed)


def pop_training(results: dict) -> dict:
    """{"policy": …, "ppo": … or None}: the training items' results, taken out of `results`."""
    return {"policy": results.pop(TRAIN_ITEM), "ppo": results.pop(TRAIN_PPO_ITEM, None)}


def load_policies(config: PolicyComparisonConfig) -> dict:
    """{"policy": (functions, params), "ppo": …}: the trained policies, as compare_on_instance takes them."""
    folders = {"policy": config.policy_dir, "ppo": config.ppo_dir}
    return {name: load_placement_policy(folder)[:2] for name, folder in folders.items() if folder}


def ensure_trained(policy_dir: str, train_config, minutes: float) -> dict:
    """Train `train_config` (a placement TrainConfig or a CollectiveTrainConfig) in policy_dir
    for at most `minutes` on one device, unless policy_dir already holds a checkpoint.
    Returns {"trained_now", "step"}."""
    from hps.rl.checkpoint import open_manager

    checkpoints = Path(policy_dir) / "checkpoints"
    if checkpoints.is_dir():
        step = open_manager(checkpoints, read_only=True).latest_step()
        if step is not None:
            return {"trained_now": False, "step": int(step)}
    from hps.rl.session import train_session

    state, _ = train_session(train_config, policy_dir, minutes=minutes, devices=jax.devices()[:1])
    return {"trained_now": True, "step": int(jax.device_get(state.step))}


def ensure_policy(
    policy_dir: str,
    train_minutes: float,
    seed: int = 0,
    algorithm: str = "reinforce",
    split=None,
    demonstrations: int | None = None,
) -> dict:
    """The default placement policy in policy_dir, trained there first if it holds none;
    algorithm "ppo": the same recipe trained by PPO (without imitation, which is REINFORCE's).
    split: the InstanceSplit it trains on (None: the recipe's); demonstrations: labelled
    instances (None: the recipe's)."""
    from hps.config.limits import UNBOUNDED_CHUNKS
    from hps.placement.agent.train import default_placement_config

    config = dataclasses.replace(default_placement_config(), num_chunks=UNBOUNDED_CHUNKS, seed=seed)
    if split is not None:
        config = dataclasses.replace(config, split=split)
    if demonstrations is not None:
        config = dataclasses.replace(config, demonstrations=demonstrations)
    if algorithm == "ppo":
        config = dataclasses.replace(config, algorithm="ppo", demonstrations=0)
    return ensure_trained(policy_dir, config, train_minutes)


def load_placement_policy(policy_dir: str):
    """(policy functions, params, spec) of the placement policy saved in policy_dir."""
    from hps.placement.agent.checkpoint import load_policy

    return load_policy(policy_dir)


def compare_on_instance(
    policies: dict,
    workload: Workload,
    catalog: Catalog,
    job: Job,
    *,
    plans: int = 64,
    seed: int = 0,
    methods=SCHEDULE_PLANNERS,
    pad_layers: int | None = None,
) -> dict:
    """The exact solver's HeterPS optimum ("exact", with its certificate), every search method
    (skipping exhaustive, the independent check, where the space is too large), every
    single-type plan ("only:TYPE") and each policy of `policies` ({name: (functions, params)};
    its best of `plans` samples + greedy as "NAME", then refined by stage moves as
    "NAME_refined") on one instance. Per entry: cost ($, None if infeasible), dollars_per_hour,
    throughput, evaluations (the exact solver: stages it provisioned), seconds (search wall
    time, compile excluded; the policy's plan_seconds), and ratio = cost / the best cost found,
    which is the proven optimum when optimum_known. pad_layers: pad the instance to this many
    layers (masked), so instances of different depths share the searches' compiles."""
    from hps.contract.types import Budget
    from hps.costmodel.schedule.provisioning import build_instance
    from hps.methods.compare import compare
    from hps.methods.problem import Problem
    from hps.placement.agent.planner import plan

    inst = build_instance(workload, catalog, job)
    params = build_params(workload, catalog, job, max_layers=pad_layers or len(workload.layers))
    problem = Problem.of_instance(inst, (params, None))
    compared = compare(problem, methods, Budget(seed=seed), options={"exact": {"heterps": True}})
    rows, proven = {}, False
    for result in compared.results:
        if result.planner == "exact":  # its HeterPS optimum, with its certificate
            rows["exact"], proven = _exact_row(inst, result)
        else:
            schedule = _schedule(result, catalog)
            rows[result.planner] = _row(workload, catalog, job, schedule, result.evaluations, result.seconds)
    for t, name in enumerate(catalog.names):
        rows[f"only:{name}"] = _row(workload, catalog, job, [t] * len(workload.layers), 1, 0.0)
    for name, (policy, params) in policies.items():
        planned = plan(policy, params, workload, catalog, job, samples=plans, seed=seed, polish=True)
        rows[name] = _row(
            workload,
            catalog,
            job,
            planned.sampled_schedule,
            planned.candidates,
            planned.plan_seconds - planned.refine_seconds,
        )
        rows[f"{name}_refined"] = _row(
            workload,
            catalog,
            job,
            planned.schedule,
            planned.candidates + planned.refine_evaluations,
            planned.plan_seconds,
        )
    costs = [r["cost"] for r in rows.values() if r["cost"] is not None]
    best = min(costs) if costs else None
    for row in rows.values():
        row["ratio"] = row["cost"] / best if best and row["cost"] is not None else None
    return {"layers": len(workload.layers), "optimum_known": proven, "best_cost": best, "methods": rows}


def _schedule(result, catalog: Catalog) -> list[int]:
    """The type index per layer of a schedule-model PlanResult's plan (empty without one)."""
    if result.plan is None:
        return []
    return [catalog.index(stage.type) for stage in result.plan.stages for _ in range(stage.first, stage.last + 1)]


def _exact_row(inst, found) -> tuple[dict, bool]:
    """The exact solver's row (its HeterPS optimum, bound and gap) and whether it is proven."""
    schedule = _schedule(found, inst.catalog)
    stages = inst.num_layers * (inst.num_layers + 1) // 2 * inst.num_types
    if not schedule:
        row = {"cost": None, "dollars_per_hour": None, "throughput": None, "schedule": None}
        row |= {"evaluations": stages, "seconds": found.seconds}
    else:
        row = _row(inst.workload, inst.catalog, inst.job, schedule, stages, found.seconds)
    gap = math.inf if found.gap is None else found.gap  # no plan, and none proven impossible
    return row | {"bound": found.bound, "gap": gap}, found.gap == 0.0


def _row(workload, catalog, job, schedule, evaluations, seconds) -> dict:
    report = schedule_report(workload, catalog, job, schedule)
    feasible = report["feasible"]
    return {
        "cost": report["cost"],
        "dollars_per_hour": report["dollars_per_hour"] if feasible else None,
        "throughput": report["throughput"] if feasible else None,
        "evaluations": int(evaluations),
        "seconds": float(seconds),
        "schedule": report["schedule"],
    }


def deepest(workload_names) -> int:
    """The most layers among zoo workloads `workload_names` (a shared padding for their searches)."""
    return max(len(build_workload(name).layers) for name in workload_names)


def default_job(workload: Workload, floor_scale: float = 1.0) -> Job:
    """The workload's default job with its throughput floor scaled."""
    d = workload.defaults
    return Job(batch=d.batch, throughput=d.throughput * floor_scale, samples=d.samples)
