"""The one problem every planner takes: a workload on a catalogue under a job, in one of the two
cost models, each model's tables built on first use."""

from __future__ import annotations

import copy
import dataclasses
import math
from functools import cached_property

from hps.config.types import Catalog, Job, Workload
from hps.contract.types import Plan, PlanScore
from hps.errors import ConfigError

MODELS = ("schedule", "parallel")
"""The schedule model (one type per layer, replicas provisioned per stage: HeterPS) and the
parallel-plan model (stages with tensor- and data-parallel degrees, integer micro-batches, sites
and links)."""


def default_model(job: Job) -> str:
    """The parallel-plan model where the job names a finite micro-batch count or a micro-batch
    size (the zoo's LLMs), else the schedule model."""
    return "parallel" if math.isfinite(job.micro_batches) or job.micro_batch is not None else "schedule"


def clock_of(clock, model: str):
    """The clock `clock` names (one of `hps.costmodel.clocks.base.CLOCKS`; None: the model's
    default, the kernel clock in the parallel-plan model and the roofline in the schedule model)
    or is; ConfigError naming the field "clock" for an unknown name, or a clock other than the
    roofline in the schedule model (which times layers by its own roofline only)."""
    from hps.costmodel.clocks.base import CLOCKS, clock_named

    if clock is None:
        clock = "roofline" if model == "schedule" else CLOCKS[0]
    if isinstance(clock, str):
        if clock not in CLOCKS:
            raise ConfigError("clock", "", f"unknown clock {clock!r}; choose one of {', '.join(CLOCKS)}")
        clock = clock_named(clock)
    elif getattr(clock, "name", None) not in CLOCKS:
        raise ConfigError("clock", "", f"must be a clock name ({', '.join(CLOCKS)}) or a clock, got {clock!r}")
    if model == "schedule" and clock.name != "roofline":
        raise ConfigError("clock", "", f"the schedule model times layers by the roofline only, got {clock.name!r}")
    return clock


class Problem:
    """A workload on a catalogue under a job, planned or scored any number of times. model: one
    of MODELS (None: `default_model(job)`); clock: what times the parallel-plan model's layers, a
    name of `hps.costmodel.clocks.base.CLOCKS` or a clock (None: the model's default, the kernel
    clock in the parallel-plan model; docs/clocks.md)."""

    def __init__(self, workload: Workload, catalog: Catalog, job: Job, *, model: str | None = None, clock=None):
        if not isinstance(job, Job):
            raise ConfigError("job", "", f"must be a hps.Job, got {type(job).__name__}")
        model = default_model(job) if model is None else model
        if model not in MODELS:
            raise ConfigError("model", "", f"must be one of {', '.join(MODELS)}, got {model!r}")
        if model == "parallel":
            from hps.config.validation import check_parallel_model_job

            check_parallel_model_job(job, "job")
        if model == "schedule" and job.budget_per_hour is not None:
            raise ConfigError("job", "budget_per_hour", "the schedule model minimises cost under the floor only")
        self.workload, self.catalog, self.job, self.model = workload, catalog, job, model
        self.clock = clock_of(clock, model)

    @classmethod
    def of_instance(cls, instance, search_arrays=None) -> Problem:
        """The schedule-model problem of a built `Instance` (a generated one, say), with the jnp
        searches' (params, segment table or None) where given: params padded past the instance
        let instances of several sizes share the searches' compiles."""
        problem = cls(instance.workload, instance.catalog, instance.job, model="schedule")
        problem.__dict__["instance"] = instance
        if search_arrays is not None:
            problem.__dict__["search_arrays"] = search_arrays
        return problem

    @property
    def parallel(self) -> bool:
        return self.model == "parallel"

    @property
    def objective(self) -> str:
        """What planners optimise (`hps.contract.types.OBJECTIVES`): "throughput" where the job
        names a budget_per_hour, else "cost"."""
        return "cost" if self.job.budget_per_hour is None else "throughput"

    def __repr__(self) -> str:
        where = f"{self.workload.name!r} on {self.catalog.name!r}"
        return f"Problem({where}, {self.model} model, {self.clock.name} clock, {self.job})"

    def with_job(self, **changes) -> Problem:
        """The same workload, catalogue and model under the job with `changes` (e.g.
        throughput=500.0); its tables are built anew on first use."""
        from hps.config.validation import validate_job

        unknown = sorted(set(changes) - set(Job.__dataclass_fields__))
        if unknown:
            raise ConfigError("with_job", unknown[0], "not a job field")
        job = dataclasses.replace(self.job, **changes)
        validate_job(job, source="with_job")
        if not self.parallel and job.budget_per_hour is not None:
            raise ConfigError("with_job", "budget_per_hour", "the schedule model minimises cost under the floor only")
        if self.parallel:
            from hps.config.validation import check_parallel_model_job

            check_parallel_model_job(job, "with_job")
        changed = copy.copy(self)
        for table in ("parallel_problem", "instance", "search_arrays", "_variant_problems"):
            changed.__dict__.pop(table, None)
        changed.job = job
        return changed

    @cached_property
    def parallel_problem(self):
        """The parallel-plan model's `ParallelProblem` (its numpy tables built on first use)."""
        from hps.config.plan_space import open_fields
        from hps.costmodel.parallel.problem import ParallelProblem

        left = open_fields(self.job)
        if left:
            raise ConfigError(
                "job", left[0], f"left open ({', '.join(left)}): only a planner searches these; fix them for this use"
            )
        return ParallelProblem(self.workload, self.catalog, self.job, clock=self.clock)

    @cached_property
    def instance(self):
        """The schedule model's `Instance` (its provisioning tables built on first use)."""
        from hps.costmodel.schedule.provisioning import build_instance

        return build_instance(self.workload, self.catalog, self.job)

    @cached_property
    def search_arrays(self):
        """(padded params, segment table) of the schedule model's jnp searches."""
        from hps.costmodel.schedule.search_arrays import search_arrays

        return search_arrays(self.workload, self.catalog, self.job)

    def robust(self) -> Problem:
        """This problem with the floor raised to R·(1 + h), h the largest residual (predicted /
        true throughput − 1) of the clock's held-out errors over the catalogue's types: a plan
        meeting it meets R at the low end of its throughput range (`PlanScore.throughput_range`)."""
        fp8 = (False, True) if self.job.fp8 is None else (self.job.fp8,)
        high = max(self.clock.residuals(r, f)[1] for r in self.catalog.resources for f in fp8)
        return self.with_job(throughput=self.job.throughput * (1 + max(high, 0.0)))

    def variants(self) -> list[Problem]:
        """One problem per combination of the schedule choices the job leaves open
        (`hps.config.plan_space.variants`; [self] where it fixes them all)."""
        from hps.config.plan_space import OPEN_FIELDS, open_fields, variants

        if not self.parallel or not open_fields(self.job):
            return [self]
        return [self.with_job(**{name: getattr(job, name) for name in OPEN_FIELDS}) for job in variants(self.job)]

    def for_plan(self, plan: Plan) -> Problem:
        """The problem `plan` is scored in: this one under the plan's choices; ConfigError where
        the job leaves a choice open that the plan does not make."""
        from hps.config.plan_space import open_fields

        if plan.choices:
            if all(getattr(self.job, field) == value for field, value in plan.choices):
                return self
            made = self.__dict__.setdefault("_variant_problems", {})
            if plan.choices not in made:
                made[plan.choices] = self.with_job(**dict(plan.choices))
            return made[plan.choices]
        missing = open_fields(self.job) if self.parallel else ()
        if missing:
            raise ConfigError(
                "plan", "choices", f"the job leaves {', '.join(missing)} open and the plan does not choose"
            )
        return self

    def score(self, plan: Plan) -> PlanScore:
        """`plan`'s score in this problem's model (the schedule model provisions its own replicas:
        the stages' tp and dp are not read there), under the plan's choices."""
        if self.parallel:
            from hps.costmodel.parallel.score import score_plan

            return score_plan(self.for_plan(plan).parallel_problem, plan.stages, plan.micro_batch)
        from hps.costmodel.schedule.plan import evaluate_plan, index_plan

        return evaluate_plan(self.instance, index_plan(plan, self.catalog))
