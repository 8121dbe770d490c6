"""The plan model's prediction for a plan as it is executed (docs/executor.md, "Prediction").

The executor may run a stage with fewer replicas than the plan provisioned (a pool smaller than
the plan) and picks its own micro-batch count, so the prediction scores the stages that actually
run, under the micro-batch they actually run, in the parallel-plan model on the clock of the
problem that planned them: its layer times (measured entries where the workload has them),
tensor-parallel collectives, pipeline boundary, call cost, data-parallel All-Reduce and
bubble. The job is the one the executor trains: fp32 parameters and gradients with plain SGD
(no optimizer state), no state sharding, no recomputation. A type's `max_units` (a rental cap,
not a property of the devices) is raised to the units the plan runs on it; a stage whose replicas
lie beyond its type's network has no All-Reduce time (nan).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from hps.config.types import ParallelStage
from hps.contract.types import Plan, PlanScore
from hps.methods.problem import Problem

EXECUTED_PRECISION = "fp32-sgd"
"""What the executor trains with: fp32 parameters and gradients, plain SGD."""


@dataclass(frozen=True)
class StagePrediction:
    """Seconds per iteration (global batch B) of one stage, by term: compute (its layers and
    call cost over every micro-batch), boundary (its activations and gradients in and out) and
    sync (its exposed data-parallel All-Reduce)."""

    compute: float
    boundary: float
    sync: float

    @property
    def time(self) -> float:
        return self.compute + self.boundary + self.sync


def executed_score(problem: Problem, stages: tuple[ParallelStage, ...], micro_batches: int) -> PlanScore:
    """The parallel-plan model's score of `stages` (tp and dp as they run) under M =
    `micro_batches` micro-batches of B/M samples, on `problem`'s clock."""
    micro_batch = int(problem.job.batch) // micro_batches
    return as_run(problem, stages, micro_batches).score(Plan(stages, micro_batch))


def activation_bytes(problem: Problem, stages: tuple[ParallelStage, ...], micro_batches: int) -> list[float]:
    """Per stage, the bytes per device its activations in flight take as the executor runs it
    (1F1B: stage j of S holds min(S − j, M) micro-batches), by the parallel-plan model's count."""
    from hps.costmodel.parallel.stages import stage_memory

    parallel = as_run(problem, stages, micro_batches).parallel_problem
    columns = [[s.first for s in stages], [s.last for s in stages], [s.tp for s in stages], [s.dp for s in stages]]
    _, per_micro_batch, _ = stage_memory(parallel, int(problem.job.batch) // micro_batches, *columns)
    count = len(stages)
    return [float(a) * min(count - j, micro_batches) for j, a in enumerate(per_micro_batch)]


def as_run(problem: Problem, stages: tuple[ParallelStage, ...], micro_batches: int) -> Problem:
    """`problem` in the parallel-plan model under the job the executor trains (module doc), with
    each type's max_units raised to the units `stages` run on it."""
    job = problem.job
    micro_batch = int(job.batch) // micro_batches
    executed = dataclasses.replace(
        job,
        micro_batch=float(micro_batch),
        micro_batches=float(micro_batches),
        precision=EXECUTED_PRECISION,
        zero=0,
        recompute="none",
        virtual_stages=1,
        fp8=False,
    )
    used = {}
    for stage in stages:
        used[stage.type] = used.get(stage.type, 0) + stage.tp * stage.dp
    resources = tuple(
        dataclasses.replace(r, max_units=max(r.max_units, used.get(r.name, 0))) for r in problem.catalog.resources
    )
    catalog = dataclasses.replace(problem.catalog, resources=resources)
    return Problem(problem.workload, catalog, executed, model="parallel", clock=problem.clock)


def stage_predictions(score: PlanScore) -> list[StagePrediction]:
    """Per stage of an `executed_score`, its terms per iteration (the optimizer step, which the
    executor's stage terms leave out, is not among them)."""
    m = score.micro_batches
    return [
        StagePrediction(
            compute=m * (stage.time_per_microbatch_s - stage.boundary_s),
            boundary=m * stage.boundary_s,
            sync=stage.sync_s,
        )
        for stage in score.stages
    ]
