"""Running a plan from Python: real sharded JAX training of a plan on this machine's
devices, measured stage by stage against the model's prediction (docs/executor.md)."""

from __future__ import annotations

import dataclasses
import math

from hps.api.checks import check_count, check_flag, check_positive, check_seed
from hps.api.planning import Problem, checked_parallel_plan, checked_problem, plan_of
from hps.contract.types import Plan, PlanResult
from hps.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class Execution:
    """A plan run for real: measured_step_time (s), measured_throughput and predicted_throughput
    (samples/s), losses (one per step), equivalent (parameters equal to single-device training,
    None without the check), max_param_rel_diff, and report: the JSON document `hps execute
    --json` prints (per stage: devices, measured and predicted times, synced bytes)."""

    measured_step_time: float
    measured_throughput: float
    predicted_throughput: float
    losses: tuple[float, ...]
    equivalent: bool | None
    max_param_rel_diff: float | None
    report: dict


def _runnable(problem: Problem, plan: Plan) -> Plan:
    """`plan` checked against `problem`: in the parallel-plan model as a plan file is (under the
    plan's micro-batch, else the job's), in the schedule model its stages' types and layers."""
    if problem.parallel:
        micro_batch = problem.job.micro_batch if plan.micro_batch is None else plan.micro_batch
        return checked_parallel_plan(problem, plan.stages, micro_batch)
    from hps.costmodel.schedule.plan import check_plan

    for j, stage in enumerate(plan.stages):
        if stage.type not in problem.catalog.names:
            raise ConfigError("plan", f"stages[{j}].type", f"unknown type {stage.type!r} in {problem.catalog.name}")
    spans = tuple((s.first, s.last, problem.catalog.index(s.type)) for s in plan.stages)
    check_plan(spans, len(problem.workload.layers), len(problem.catalog.names), "plan", "stages")
    return plan


def execute(
    plan: PlanResult | Plan,
    problem: Problem,
    devices: str | None = None,
    steps: int = 5,
    check: bool = False,
    *,
    learning_rate: float | None = None,
    seed: int = 0,
    micro_batches: int | None = None,
) -> Execution:
    """Train `problem`'s model as `plan` (hps.plan's result, or a Plan) places it, for `steps`
    steps on device pools per resource type (`devices`, e.g.
    "cpu=0-3,v100=4-7"; None: GPU types on GPUs, CPU types on CPUs) and measure it; `check`: also
    train on one device and compare parameters. The workload must be one the zoo builds a model
    for (hps.models)."""
    from hps.config.limits import MAX_EXECUTE_STEPS
    from hps.executor.plan import ExecuteOptions, execute_plan
    from hps.models.registry import build_model

    plan = plan_of(plan, "execute")
    if not isinstance(plan, Plan):
        raise ConfigError("plan", "", f"must be a PlanResult (hps.plan) or a Plan, got {type(plan).__name__}")
    problem = checked_problem(problem)
    steps = check_count(steps, "steps", 1, MAX_EXECUTE_STEPS)
    seed = check_seed(seed)
    if learning_rate is not None:
        learning_rate = check_positive(learning_rate, "learning_rate")
    if micro_batches is not None:
        micro_batches = check_count(micro_batches, "micro_batches")
    if devices is not None and not isinstance(devices, str):
        raise ConfigError("devices", "", f"must be pools like 'cpu=0-3,v100=4-7' or None, got {devices!r}")
    workload, job = problem.workload, problem.job
    if job.batch != int(job.batch) or not math.isfinite(job.batch):
        raise ConfigError("plan", "job.batch", f"executing needs a whole number of samples, got {job.batch:g}")
    plan = _runnable(problem, plan)
    model = build_model(workload.name, seed=seed, source="plan", **problem.overrides)
    options = ExecuteOptions(
        steps=steps,
        micro_batches=micro_batches,
        devices=devices,
        learning_rate=learning_rate,
        seed=seed,
        check=check_flag(check, "check"),
    )
    report = execute_plan(model, problem, plan, options)
    return Execution(
        measured_step_time=report["measured_step_time"],
        measured_throughput=report["measured_throughput"],
        predicted_throughput=report["predicted_throughput"],
        losses=tuple(report["losses"]),
        equivalent=report["equivalent"],
        max_param_rel_diff=report["max_param_rel_diff"],
        report=report,
    )
