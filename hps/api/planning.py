"""Planning from Python: a problem (workload, catalogue, job) built once, planned by any
registered planner, and any plan scored, with the same documents `hps search` and `hps evaluate`
print (the command line calls these functions).

A problem is planned in one of two models (docs/parallel-plans.md, docs/placement-model.md):
the parallel-plan model (stages with tensor- and data-parallel degrees, integer micro-batches,
sites and links), the default for jobs that name a micro-batch count or size (the zoo's LLMs);
and the schedule model (one type per layer, replicas provisioned per stage, no bubble), the
default otherwise. `parallel=True` plans any workload in the parallel-plan model.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

from hps.api.checks import as_tuple, check_count, check_flag, check_seconds, check_seed, plain_job
from hps.api.loading import default_job, load_catalog, load_workload
from hps.config.types import Catalog, Job, ParallelStage, PlanFile, Workload
from hps.config.validation import validate_job
from hps.contract.types import Budget, Plan, PlanResult, PlanScore
from hps.errors import ConfigError
from hps.methods import problem as contract


class Problem(contract.Problem):
    """A workload on a catalogue under a job, built once and planned or scored any number of times.

    workload: a zoo name, a workload TOML path (str or pathlib.Path) or a `Workload`; overrides:
    zoo hyperparameters (e.g. {"layers": 8}); catalog: a shipped name, a catalogue TOML path or a
    `Catalog`; job: a `Job` (numpy scalars accepted), or None for the workload's own
    (`default_job`); parallel: plan in the parallel-plan model (None: when the job names a
    finite micro-batch count or a micro-batch size), which runs whole samples: a batch or
    micro-batch that is not an integer is refused there; clock: what times the parallel-plan
    model's layers, "kernel" (None: the default there) or "roofline" (docs/clocks.md)."""

    def __init__(
        self,
        workload: str | os.PathLike | Workload,
        catalog: str | os.PathLike | Catalog,
        job: Job | None = None,
        *,
        overrides: Mapping | None = None,
        parallel: bool | None = None,
        clock=None,
    ):
        if overrides is not None and (
            not isinstance(overrides, Mapping) or not all(isinstance(key, str) for key in overrides)
        ):
            raise ConfigError("overrides", "", f"must be a dict of hyperparameters by name, got {overrides!r:.80}")
        if parallel is not None:
            parallel = check_flag(parallel, "parallel")
        loaded = load_workload(workload, source="workload", **dict(overrides or {}))
        if job is None:
            job = default_job(loaded)
        elif not isinstance(job, Job):
            raise ConfigError("job", "", f"must be a hps.Job or None, got {type(job).__name__}")
        else:
            job = plain_job(job)
            validate_job(job, source="job")
        model = None if parallel is None else ("parallel" if parallel else "schedule")
        super().__init__(loaded, load_catalog(catalog, source="catalog"), job, model=model, clock=clock)
        self.overrides = dict(overrides or {})
        self.workload_source = recorded_source(workload, loaded.name)
        """What a plan file names as the workload: the zoo name given, the absolute path of the
        file given, else (a `Workload` given) the workload's name."""
        self.catalog_source = recorded_source(catalog, self.catalog.name)
        self._given_objects = (isinstance(workload, Workload), isinstance(catalog, Catalog))

    def with_job(self, **changes) -> Problem:
        """The same workload, catalogue and model under the job with `changes` (e.g.
        throughput=500.0; numpy scalars accepted), checked as the constructor checks a job."""
        changed = super().with_job(**changes)
        changed.job = plain_job(changed.job)
        return changed

    def report(self, planned: PlanResult | PlanScore) -> dict:
        """The JSON document `hps search --json` prints for a planner's result, or `hps evaluate
        --json` for a scored plan."""
        from hps.report.plans import result_report, score_report

        if isinstance(planned, PlanResult):
            return result_report(self, planned)
        if isinstance(planned, PlanScore):
            return score_report(self, planned)
        raise ConfigError("planned", "", f"must be a PlanResult or PlanScore, got {type(planned).__name__}")

    def plan_file(self, result: PlanResult) -> PlanFile:
        """A parallel-plan model result as a plan file (hps-plan/3) to write with `hps.write_plan`:
        it names the workload and catalogue the problem was given (files by absolute path), so
        that reading it back scores the same data."""
        if not self.parallel or not isinstance(result, PlanResult) or result.plan is None:
            raise ConfigError("result", "", "only a parallel-plan model plan that was found has a plan file")
        if self.overrides:
            raise ConfigError("result", "", "a plan file names a zoo workload or a file: save an overridden "
                              "workload as TOML (hps workload export) and plan that file")  # fmt: skip
        workload_object, catalog_object = self._given_objects
        if workload_object and not _same_workload(self.workload_source, self.workload):
            raise ConfigError("result", "workload", f"the Workload {self.workload.name!r} was given as an object "
                              "that no zoo entry equals: a plan file names a file; build the Problem from its TOML "
                              "path (hps workload export)")  # fmt: skip
        if catalog_object and not _same_catalog(self.catalog_source, self.catalog):
            raise ConfigError("result", "catalog", f"the Catalog {self.catalog.name!r} was given as an object that "
                              "no shipped catalogue equals: a plan file names a file; build the Problem from its "
                              "TOML path")  # fmt: skip
        from hps.config.planfile import file_sha256

        job = dataclasses.replace(self.job, micro_batch=float(result.plan.micro_batch), **dict(result.plan.choices))
        return PlanFile(
            self.workload_source, self.catalog_source, job, result.plan.stages, self.clock.name,
            workload_sha256=file_sha256(self.workload_source), catalog_sha256=file_sha256(self.catalog_source),
        )  # fmt: skip


def recorded_source(given: object, name: str) -> str:
    """What a plan file records for a workload or catalogue given as `given`: a file's absolute
    path (a str or os.PathLike naming a file), a zoo or shipped name as given, else `name`."""
    if isinstance(given, (str, os.PathLike)):
        text = os.fspath(given)
        return os.path.abspath(text) if os.path.isfile(text) else text
    return name


def _same_workload(recorded: str, workload: Workload) -> bool:
    """Whether the workload a plan file records as `recorded` scores as `workload` does (its
    layers and measured call times); False where it cannot be loaded."""
    try:
        other = load_workload(recorded)
    except ConfigError:
        return False
    return (other.layers, other.measured_call_s) == (workload.layers, workload.measured_call_s)


def _same_catalog(recorded: str, catalog: Catalog) -> bool:
    """Whether the catalogue a plan file records as `recorded` has `catalog`'s types and links;
    False where it cannot be loaded."""
    try:
        other = load_catalog(recorded)
    except ConfigError:
        return False
    return (other.resources, other.links) == (catalog.resources, catalog.links)


def checked_problem(problem: object) -> Problem:
    """`problem`, or ConfigError naming the argument "problem" when it is not a hps.Problem."""
    if not isinstance(problem, Problem):
        raise ConfigError("problem", "", f"must be a hps.Problem, got {type(problem).__name__}")
    return problem


def plan_of(planned: object, what: str) -> object:
    """The Plan of a PlanResult (ConfigError naming "plan" where the planner found none, so there
    is nothing to `what`), anything else as it is."""
    if not isinstance(planned, PlanResult):
        return planned
    if planned.plan is None:
        raise ConfigError("plan", "", f"no plan was found, so there is nothing to {what}")
    return planned.plan


def planners(parallel: bool = True) -> tuple[str, ...]:
    """The names `plan(problem, method=...)` accepts in the parallel-plan model (with
    parallel=False: the schedule model), from the one registry (`hps.methods.registry`)."""
    from hps.methods.registry import planner_names

    return planner_names("parallel" if parallel else "schedule")


def plan(
    problem: Problem,
    method: str = "exact",
    seconds: float = 60.0,
    evaluations: int | None = None,
    seed: int = 0,
    **options,
) -> PlanResult:
    """Plan `problem` with the planner `method` (see `planners`) within `seconds` of wall time
    (the exact solver stops there with its best plan and proven gap) and `evaluations` (the
    planner's own count; None: its default); `seed` of the random planners; options: the
    planner's own (`policy`: checkpoint, samples, refine; `exact`: incumbent, a Plan to start from)."""
    from hps.methods.registry import run

    problem = checked_problem(problem)
    if not isinstance(method, str):
        raise ConfigError("method", "", f"must be a planner name, got {method!r}")
    budget = Budget(
        check_seconds(seconds, "seconds"),
        None if evaluations is None else check_count(evaluations, "evaluations"),
        check_seed(seed, "seed"),
    )
    return run(method, problem, budget, **options)


def evaluate(problem: Problem, plan) -> PlanScore:
    """Score `plan` on `problem`: a PlanResult, a Plan, a sequence (any iterable) of ParallelStage
    (the parallel-plan model, under the job's micro_batch), for the schedule model a sequence of
    type names, one per layer; or a PlanFile, scored as `hps evaluate --plan` scores it: in the
    parallel-plan model under the file's own job (an hps-plan/2 file with the problem's
    collective policy and chunks, which it does not record), on the problem's workload and catalogue, which must be
    the file's. ConfigError naming the stage field a plan gets wrong."""
    problem = checked_problem(problem)
    micro_batch = problem.job.micro_batch
    plan = plan_of(plan, "score")
    if isinstance(plan, PlanFile):
        problem = under_plan_file(problem, plan)
        micro_batch, plan = plan.job.micro_batch, plan.stages
    elif isinstance(plan, Plan):
        micro_batch, plan = plan.micro_batch, plan.stages
    if problem.parallel:
        return _evaluate_parallel(problem, plan, micro_batch)
    return _evaluate_schedule(problem, plan)


def under_plan_file(problem: Problem, plan: PlanFile) -> Problem:
    """`problem` in the parallel-plan model under `plan`'s own job (an hps-plan/2 file, which
    records none, under the problem's collective policy and chunks); ConfigError naming the plan
    file's workload or catalogue where it is not the problem's (other layers or types, or a file
    that cannot be read)."""
    fix = "score it on hps.Problem(plan.workload, plan.catalog)"
    if not _same_workload(plan.workload, problem.workload):
        raise ConfigError("plan", "workload", f"the plan file's workload {plan.workload!r} is not the problem's "
                          f"{problem.workload.name!r}: {fix}")  # fmt: skip
    if not _same_catalog(plan.catalog, problem.catalog):
        raise ConfigError("plan", "catalog", f"the plan file's catalogue {plan.catalog!r} is not the problem's "
                          f"{problem.catalog.name!r}: {fix}")  # fmt: skip
    job = plan.job
    if plan.version == "hps-plan/2":
        job = dataclasses.replace(job, collective=problem.job.collective, chunks=problem.job.chunks)
    return Problem(problem.workload, problem.catalog, job, parallel=True, clock=problem.clock)


def _evaluate_parallel(problem: Problem, stages, micro_batch) -> PlanScore:
    return problem.score(checked_parallel_plan(problem, stages, micro_batch))


def checked_parallel_plan(problem: Problem, stages, micro_batch) -> Plan:
    """`stages` (any iterable of ParallelStage) under `micro_batch` as a Plan checked as a plan
    file is (ConfigError naming the stage field it gets wrong)."""
    import json

    from hps.config.planfile import check_plan_against, parse_plan_file, plan_file_json

    stages = _items(stages)
    if not stages or not all(isinstance(stage, ParallelStage) for stage in stages):
        raise ConfigError("plan", "", "must be a non-empty sequence of hps ParallelStage (or a PlanResult, PlanFile)")
    if micro_batch is None:
        raise ConfigError("plan", "micro_batch", "scoring a parallel plan needs a micro-batch: set the job's")
    from hps.config.plan_space import variants

    job = dataclasses.replace(problem.job, micro_batch=float(micro_batch))
    job = variants(job)[0]  # the plainest of the open choices: what a plan of stages alone is checked with
    holder = PlanFile(problem.workload.name, problem.catalog.name, job, stages)
    checked = parse_plan_file(json.loads(json.dumps(plan_file_json(holder, "plan"))), "plan")
    check_plan_against(checked, problem.workload, problem.catalog, "plan")
    return Plan(checked.stages, int(micro_batch))


def _items(values: object) -> tuple:
    """Any iterable but a str as a tuple (a generator read once), anything else as ()."""
    try:
        return as_tuple(values, "plan")
    except ConfigError:
        return ()


def _evaluate_schedule(problem: Problem, schedule) -> PlanScore:
    from hps.config.loaders import parse_schedule
    from hps.costmodel.schedule.plan import evaluate_plan, schedule_plan

    schedule = _items(schedule)
    if schedule and all(isinstance(stage, ParallelStage) for stage in schedule):
        schedule = [stage.type for stage in schedule for _ in range(stage.first, stage.last + 1)]
    if not schedule or not all(isinstance(name, str) for name in schedule):
        raise ConfigError("plan", "", "must be a sequence of resource type names, one per layer (or a PlanResult)")
    types = parse_schedule(",".join(schedule), problem.catalog, len(problem.workload.layers), source="plan")
    return evaluate_plan(problem.instance, schedule_plan(types))
