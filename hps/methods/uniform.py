"""Uniform plans, the ones Megatron-LM, MaxText and torchtitan launch: every stage on one type with
one tensor- and one data-parallel degree, the workload's blocks split evenly over the stages (the
leading and trailing one-row segments, an embedding and a head, ride with the first and the last
stage). The cheapest such plan is found by scoring every one (type, t, d, micro-batch, stage
count), each candidate confirmed by the plan model's own score (docs/parallel-plans.md,
"Uniform plans").
"""

from __future__ import annotations

import math
import time

import numpy as np

from hps.config.frameworks import FRAMEWORK_FAMILIES, device_family
from hps.config.types import ParallelStage
from hps.contract.types import Budget, Plan, PlanResult
from hps.costmodel.parallel.problem import FLOOR_TOLERANCE, ParallelProblem, divisors
from hps.costmodel.parallel.score import score_plan
from hps.costmodel.parallel.stages import stage_arrays
from hps.errors import ConfigError
from hps.methods.problem import Problem

KEEP = 4
"""Plans of each micro-batch and layout kept to confirm by the plan model's own score."""


def block_bounds(problem: ParallelProblem) -> tuple[int, list[int], int]:
    """(last row of the leading one-row segments or −1, the last row of each block between them,
    the last row of the workload): segments end after every row a stage may end on."""
    ends = [*np.flatnonzero(problem.cut_after[:-1]).tolist(), problem.num_layers - 1]
    starts = [0, *(e + 1 for e in ends[:-1])]
    sizes = [e - s + 1 for s, e in zip(starts, ends)]
    lead = 0
    while lead < len(sizes) - 1 and sizes[lead] == 1:
        lead += 1
    trail = len(sizes)
    while trail > lead + 1 and sizes[trail - 1] == 1:
        trail -= 1
    return (ends[lead - 1] if lead else -1), ends[lead:trail], ends[-1]


def uniform_stages(problem: ParallelProblem, stages: int) -> list[tuple[int, int]] | None:
    """(first, last) rows of `stages` stages splitting the blocks evenly (None: they do not split)."""
    lead_end, blocks, last = block_bounds(problem)
    if not blocks or len(blocks) % stages:
        return None
    per = len(blocks) // stages
    cuts = [blocks[per * (j + 1) - 1] for j in range(stages - 1)]
    firsts = [0, *(c + 1 for c in cuts)]
    return list(zip(firsts, [*cuts, last]))


def plan(problem: Problem, budget: Budget, *, framework: str | None = None) -> PlanResult:
    """The cheapest uniform plan of `problem` (on the types `framework` runs where given: one of
    FRAMEWORK_FAMILIES), over the micro-batches reached within budget.seconds. Its bound is NaN:
    it proves nothing about plans outside the uniform space."""
    if framework is not None and framework not in FRAMEWORK_FAMILIES:
        choices = ", ".join(FRAMEWORK_FAMILIES)
        raise ConfigError("framework", "", f"unknown framework {framework!r}; choose one of {choices}")
    started = time.perf_counter()
    base = problem.parallel_problem
    families = FRAMEWORK_FAMILIES.get(framework)
    types = [y for y, r in enumerate(problem.catalog.resources) if families is None or device_family(r) in families]
    candidates, evaluations = [], 0
    layouts = [spans for count in range(1, len(block_bounds(base)[1]) + 1) if (spans := uniform_stages(base, count))]
    for b in base.micro_batch_choices():
        if time.perf_counter() - started > budget.seconds:  # the micro-batches left are not searched
            break
        for spans in layouts:
            found = uniform_plans(base, b, spans, types, KEEP)
            evaluations += found[1]
            candidates.extend(found[0])
    for _, stages, b in sorted(candidates, key=lambda c: c[0]):  # confirmed by the model's own score
        score = score_plan(base, stages, b)
        if score.feasible:
            return PlanResult("uniform", Plan(stages, b), score, math.nan, time.perf_counter() - started, evaluations)
    return PlanResult("uniform", None, None, math.nan, time.perf_counter() - started, evaluations)


def uniform_plans(
    base: ParallelProblem, b: int, spans: list[tuple[int, int]], types: list[int], keep: int | None = None
):
    """([(cost $, stages, b)] of the cheapest `keep` (None: all) uniform plans over `spans` (one
    (type, t, d) of `types` for every span) under micro-batch b that meet memory, caps, the
    network and the floor, cheapest first; how many were scored), in one vectorised call."""
    count, catalog, job = len(spans), base.catalog, base.job
    rows = [
        (y, t, d)
        for y in types
        for t in base.tp_choices(y)
        for d in divisors(b)
        if t * d <= catalog.resources[y].max_units and count * t * d <= base.pooled_caps[y]
    ]
    if not rows:
        return [], 0
    y, t, d = (np.repeat(np.array(column, np.int64), count) for column in zip(*rows))
    first = np.tile([s for s, _ in spans], len(rows))
    last = np.tile([e for _, e in spans], len(rows))
    arrays = stage_arrays(base, b, first, last, y, t, d)
    micro_batches = int(job.batch) // b
    in_flight = np.tile(base.in_flight(count, micro_batches), len(rows))
    limits = base.memory_limit[y]
    shape = (len(rows), count)
    fits = (arrays.memory(in_flight) <= limits) & base.span_allowed(first, last, y) & base.splits(first, last)
    with np.errstate(invalid="ignore"):
        iteration = base.bubble_slots_of(micro_batches, count) * arrays.time.reshape(shape).max(axis=1)
        iteration = iteration + arrays.tail.reshape(shape).max(axis=1)
        ok = fits.reshape(shape).all(axis=1) & np.isfinite(iteration)
        ok &= job.batch / iteration >= job.throughput * (1 - FLOOR_TOLERANCE)
    cost = job.samples / job.batch / 3600 * arrays.rate.reshape(shape).sum(axis=1) * iteration
    names = catalog.names
    best = np.flatnonzero(ok)[np.argsort(cost[ok], kind="stable")][:keep]
    out = []
    for i in best:
        ty, tt, td = rows[i]
        stages = tuple(ParallelStage(s, e, names[ty], tt, td) for s, e in spans)
        out.append((float(cost[i]), stages, b))
    return out, len(rows)
