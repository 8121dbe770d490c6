"""Planning from Python: a problem (workload, catalogue, job) built once, planned by any
registered planner, and any plan scored, with the same numbers `hps search` and `hps evaluate`
print.

A problem is planned in one of two models (docs/parallel-plans.md, docs/placement-model.md):
the parallel-plan model (stages with tensor- and data-parallel degrees, integer micro-batches,
sites and links), the default for jobs that name a micro-batch count or size (the zoo's LLMs);
and the schedule model (one type per layer, replicas provisioned per stage, no bubble), the
default otherwise. `parallel=True` plans any workload in the parallel-plan model.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from functools import cached_property

from hps.api.checks import check_choice, check_count, check_seconds, check_seed, renamed
from hps.api.loading import default_job, load_catalog, load_workload
from hps.config.types import Catalog, Job, ParallelStage, PlanFile, Workload
from hps.errors import ConfigError

GAP_ROUNDING = 1e-12
"""Relative slack when a bound meets a cost computed in another order (as the exact solver's)."""
SCHEDULE_METHODS = ("exact", "single", "greedy", "random", "genetic", "gradient", "exhaustive")
"""The schedule model's planners: its exact solver and the jnp searches (`hps.planners.search`)."""
RENAMED = {"--method": "method", "--budget": "evaluations", "--seconds": "seconds", "--seed": "seed"}


class Problem:
    """A workload on a catalogue under a job, built once and planned or scored any number of times.

    workload: a zoo name, a workload TOML path or a `Workload`; overrides: zoo hyperparameters
    (e.g. {"layers": 8}); catalog: a shipped name, a catalogue TOML path or a `Catalog`; job: a
    `Job`, or None for the workload's own (`default_job`); parallel: plan in the parallel-plan
    model (None: when the job names a finite micro-batch count or a micro-batch size)."""

    def __init__(
        self,
        workload: str | Workload,
        catalog: str | Catalog,
        job: Job | None = None,
        *,
        overrides: dict | None = None,
        parallel: bool | None = None,
    ):
        self.workload = load_workload(workload, source="workload", **(overrides or {}))
        self.catalog = load_catalog(catalog, source="catalog")
        self.overrides = dict(overrides or {})
        self.workload_source = workload if isinstance(workload, str) else self.workload.name
        """What a plan file names as the workload: the name or path given, else the workload's name."""
        self.catalog_source = catalog if isinstance(catalog, str) else self.catalog.name
        if job is None:
            job = default_job(self.workload)
        elif not isinstance(job, Job):
            raise ConfigError("job", "", f"must be a hps.Job or None, got {type(job).__name__}")
        else:
            from hps.config.validation import validate_job

            validate_job(job, source="job")
        self.job = job
        if parallel is None:
            parallel = math.isfinite(job.micro_batches) or job.micro_batch is not None
        self.parallel = bool(parallel)

    def __repr__(self) -> str:
        model = "parallel-plan" if self.parallel else "schedule"
        return f"Problem({self.workload.name!r} on {self.catalog.name!r}, {model} model, {self.job})"

    def with_job(self, **changes) -> Problem:
        """The same workload and catalogue (and model) under the job with `changes` (e.g.
        throughput=500.0); its tables are built anew on first use."""
        from hps.config.validation import validate_job

        unknown = sorted(set(changes) - set(Job.__dataclass_fields__))
        if unknown:
            raise ConfigError("with_job", unknown[0], "not a job field")
        job = dataclasses.replace(self.job, **changes)
        validate_job(job, source="with_job")
        changed = copy.copy(self)
        changed.__dict__.pop("parallel_problem", None)
        changed.__dict__.pop("instance", None)
        changed.job = job
        return changed

    @cached_property
    def parallel_problem(self):
        """The parallel-plan model's `ParallelProblem` (its numpy tables built on first use)."""
        from hps.costmodel.parallel.problem import ParallelProblem

        return ParallelProblem(self.workload, self.catalog, self.job)

    @cached_property
    def instance(self):
        """The schedule model's `Instance` (its provisioning tables built on first use)."""
        from hps.costmodel.schedule.provisioning import build_instance

        return build_instance(self.workload, self.catalog, self.job)


@dataclasses.dataclass(frozen=True)
class PlanOutcome:
    """A planner's answer. stages: the plan in pipeline order (for the schedule model, tp 1 and
    dp the replicas it provisions), empty when no plan was found; micro_batch: samples per
    micro-batch (parallel-plan model); cost ($, inf unless feasible), throughput (samples/s),
    bound ($, a proven lower bound on every plan's cost; nan where the planner proves none),
    gap ((cost − bound)/bound: 0 proven optimal; None unproven), seconds (the planner's wall
    time), evaluations (its own count: plans, type sequences or schedules scored); report: the
    JSON document `hps search --json` prints for this plan."""

    problem: Problem
    planner: str
    stages: tuple[ParallelStage, ...]
    micro_batch: int | None
    feasible: bool
    cost: float
    throughput: float
    bound: float
    gap: float | None
    seconds: float
    evaluations: int | None
    report: dict
    schedule: tuple[str, ...] | None = None
    """The schedule model's type per layer (None in the parallel-plan model)."""

    def plan_file(self) -> PlanFile:
        """The plan as a plan file (hps-plan/2) to write with `hps.write_plan` (parallel-plan model)."""
        problem = self.problem
        if not problem.parallel or not self.stages:
            raise ConfigError("plan_file", "", "only a parallel-plan model plan that was found has a plan file")
        if problem.overrides:
            raise ConfigError("plan_file", "", "a plan file names a zoo workload or a file: save an overridden "
                              "workload as TOML (hps workload export) and plan that file")  # fmt: skip
        job = dataclasses.replace(problem.job, micro_batch=float(self.micro_batch))
        return PlanFile(problem.workload_source, problem.catalog_source, job, self.stages)


def planners(parallel: bool = True) -> tuple[str, ...]:
    """The names `plan(problem, method=...)` accepts: the parallel-plan model's registered
    planners (`hps.planners.sequence.PLANNERS`), or with parallel=False the schedule model's."""
    if not parallel:
        return SCHEDULE_METHODS
    from hps.planners.sequence import PLANNERS

    return tuple(PLANNERS)


def plan(
    problem: Problem, method: str = "exact", seconds: float = 60.0, evaluations: int | None = None, seed: int = 0
) -> PlanOutcome:
    """Plan `problem` with the planner `method` (see `planners`) within `seconds` of wall time
    (the exact solver stops there with its best plan and proven gap) and `evaluations` (the
    planner's own count; None: its default); `seed` of the random planners."""
    if not isinstance(problem, Problem):
        raise ConfigError("problem", "", f"must be a hps.Problem, got {type(problem).__name__}")
    check_choice(method, planners(problem.parallel), "method")
    seconds = check_seconds(seconds, "seconds")
    evaluations = None if evaluations is None else check_count(evaluations, "evaluations")
    seed = check_seed(seed, "seed")
    with renamed(RENAMED):
        return solve(problem, method, seconds, evaluations, seed)


def solve(
    problem: Problem, method: str, seconds: float, evaluations: int | None, seed: int, incumbent=None
) -> PlanOutcome:
    """`plan` on checked arguments; its errors name the command line's flags (--method, --budget),
    which `plan` renames to its arguments. incumbent: (stages, micro-batch) the parallel-plan
    model's exact solver starts from (a warm start)."""
    if problem.parallel:
        return _plan_parallel(problem, method, seconds, evaluations, seed, incumbent)
    if method == "exact":
        return _plan_exact_schedule(problem, seconds)
    return _plan_search(problem, method, evaluations, seed)


def gap_of(cost: float, bound: float, found: bool) -> float | None:
    """(cost − bound)/bound under a proven bound: 0 when it proves the plan optimal (or, with no
    plan found, that none is feasible), None where nothing is proven."""
    if math.isnan(bound):
        return None
    if not found:
        return 0.0 if math.isinf(bound) else None
    if bound >= cost * (1 - GAP_ROUNDING):
        return 0.0
    gap = (cost - bound) / bound if bound > 0 else math.inf
    return gap if math.isfinite(gap) else None


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _plan_parallel(problem: Problem, method: str, seconds: float, evaluations, seed: int, incumbent=None):
    from hps.planners.sequence import Budget, run_planner
    from hps.planners.sequence.basic import exact
    from hps.report.parallel import parallel_report

    budget = Budget(seconds, evaluations, seed)
    if incumbent is not None and method == "exact":
        result = exact(problem.parallel_problem, budget, incumbent)
    else:
        result = run_planner(method, problem.parallel_problem, budget)
    gap = gap_of(result.cost, result.bound, result.plan is not None)
    report = {"feasible": False, "reason": "none_found", "stages": []}
    if result.score is not None:
        report = parallel_report(result.score)
    report.update(
        method=result.planner,
        bound=_finite(result.bound),
        gap=gap,
        search_seconds=result.seconds,
        evaluations=result.evaluations,
    )
    score = result.score
    return PlanOutcome(
        problem=problem,
        planner=result.planner,
        stages=result.plan or (),
        micro_batch=result.micro_batch,
        feasible=result.feasible,
        cost=result.cost,
        throughput=score.throughput if score is not None else 0.0,
        bound=result.bound,
        gap=gap,
        seconds=result.seconds,
        evaluations=result.evaluations,
        report=report,
    )


def schedule_outcome(problem: Problem, planner: str, report: dict, bound: float, gap, seconds, evaluations):
    """The PlanOutcome of a schedule-model `plan_report` document."""
    stages = tuple(
        ParallelStage(s["first_layer"], s["last_layer"], s["type"], 1, int(s["replicas"]))
        for s in report["stages"]
        if report["feasible"]
    )
    return PlanOutcome(
        problem=problem,
        planner=planner,
        stages=stages,
        micro_batch=None,
        feasible=report["feasible"],
        cost=report["cost"] if report["feasible"] else math.inf,
        throughput=report["throughput"],
        bound=bound,
        gap=gap,
        seconds=seconds,
        evaluations=evaluations,
        report=report,
        schedule=tuple(report["schedule"]),
    )


def exact_schedule_report(problem: Problem, seconds: float) -> dict:
    """The `hps search --method exact --json` document of the schedule model: the optimal plan's
    `hps evaluate` report (the closest plan, and why it fails, when none is feasible) with the
    certificate (bound, gap, search_seconds)."""
    from hps.planners.exact_schedule import solve_exact
    from hps.report.placement import closest_plan, plan_report

    inst = problem.instance
    found = solve_exact(inst, seconds=seconds)
    plan = found.plan if found.plan is not None else closest_plan(inst)
    report = plan_report(inst, plan, found.score if found.plan is not None else None)
    gap = found.gap if found.plan is not None else None
    if found.plan is None and report["feasible"]:  # time ran out, yet the closest plan is feasible: it is
        gap = gap_of(report["cost"], found.bound, True)  # the incumbent, so verdict and gap agree
    report.update(bound=_finite(found.bound), gap=gap, search_seconds=found.seconds)
    return report


def _plan_exact_schedule(problem: Problem, seconds: float) -> PlanOutcome:
    report = exact_schedule_report(problem, seconds)
    bound = math.nan if report["bound"] is None else report["bound"]
    report["method"] = "exact"
    return schedule_outcome(problem, "exact", report, bound, report["gap"], report["search_seconds"], None)


def _plan_search(problem: Problem, method: str, evaluations, seed: int) -> PlanOutcome:
    import jax

    from hps.planners.search import run_search
    from hps.planners.search.arrays import search_arrays
    from hps.report.placement import schedule_report

    if not problem.job.schedule_model:
        raise ConfigError("method", "", f"{method} scores schedules with micro_batches inf and state sharding none")
    params, table = search_arrays(problem.workload, problem.catalog, problem.job)
    found = run_search(method, params, key=jax.random.key(seed), budget=evaluations, warmup=True, table=table)
    report = schedule_report(problem.workload, problem.catalog, problem.job, list(found.schedule))
    report.update(method=method, evaluations=found.evaluations, wall_seconds=found.wall_seconds)
    return schedule_outcome(problem, method, report, math.nan, None, found.wall_seconds, found.evaluations)


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """One plan scored: feasible, reason (None when feasible), cost ($, inf unless feasible),
    throughput (samples/s), iteration_s (parallel-plan model; None in the schedule model), mfu
    (likewise), report: the JSON document `hps evaluate --json` prints."""

    feasible: bool
    reason: str | None
    cost: float
    throughput: float
    iteration_s: float | None
    mfu: float | None
    report: dict


def evaluate(problem: Problem, plan) -> Evaluation:
    """Score `plan` on `problem`: a PlanOutcome, a PlanFile, a sequence of ParallelStage (the
    parallel-plan model, under the job's micro_batch), or for the schedule model a sequence of
    type names, one per layer. ConfigError naming the stage field a plan gets wrong."""
    if not isinstance(problem, Problem):
        raise ConfigError("problem", "", f"must be a hps.Problem, got {type(problem).__name__}")
    micro_batch = problem.job.micro_batch
    if isinstance(plan, PlanOutcome):
        micro_batch = plan.micro_batch
        plan = plan.stages if problem.parallel else plan.schedule
    elif isinstance(plan, PlanFile):
        micro_batch = plan.job.micro_batch
        plan = plan.stages
    if problem.parallel:
        return _evaluate_parallel(problem, plan, micro_batch)
    return _evaluate_schedule(problem, plan)


def _evaluate_parallel(problem: Problem, stages, micro_batch) -> Evaluation:
    import json

    from hps.config.planfile import check_plan_against, parse_plan_file, plan_file_json
    from hps.costmodel.parallel.score import score_plan
    from hps.report.parallel import parallel_report

    if isinstance(stages, str) or not stages or not all(isinstance(stage, ParallelStage) for stage in stages):
        raise ConfigError("plan", "", "must be a non-empty sequence of hps ParallelStage (or a PlanOutcome, PlanFile)")
    if micro_batch is None:
        raise ConfigError("plan", "micro_batch", "scoring a parallel plan needs a micro-batch: set the job's")
    job = dataclasses.replace(problem.job, micro_batch=float(micro_batch))
    holder = PlanFile(problem.workload.name, problem.catalog.name, job, tuple(stages))
    checked = parse_plan_file(json.loads(json.dumps(plan_file_json(holder, "plan"))), "plan")
    check_plan_against(checked, problem.workload, problem.catalog, "plan")
    score = score_plan(problem.parallel_problem, checked.stages, int(micro_batch))
    report = parallel_report(score)
    return Evaluation(score.feasible, score.reason, score.cost, score.throughput, score.iteration_s, score.mfu, report)


def _evaluate_schedule(problem: Problem, schedule) -> Evaluation:
    from hps.config.loaders import parse_schedule
    from hps.costmodel.schedule.plan import schedule_plan
    from hps.report.placement import plan_report

    if isinstance(schedule, str) or not schedule or not all(isinstance(name, str) for name in schedule):
        raise ConfigError("plan", "", "must be a sequence of resource type names, one per layer (or a PlanOutcome)")
    types = parse_schedule(",".join(schedule), problem.catalog, len(problem.workload.layers), source="plan")
    report = plan_report(problem.instance, schedule_plan(types))
    cost = report["cost"] if report["feasible"] else math.inf
    return Evaluation(report["feasible"], report["reason"], cost, report["throughput"], None, None, report)
