"""The parallel-plan model and its exact solver against the plain-Python reference
(hps/reference/parallel.py) and brute force over every plan of small random instances."""

from __future__ import annotations

import dataclasses
import functools
import math
import random

import pytest

from hps.config.types import CLOCKS, Job, ParallelStage
from hps.costmodel.clocks.base import clock_named
from hps.costmodel.parallel.problem import ParallelProblem
from hps.costmodel.parallel.score import score_plan
from hps.methods.exact_parallel.dual import solve_max_throughput
from hps.methods.exact_parallel.solver import solve_parallel
from hps.reference import parallel as reference
from tests.parallel_instances import (
    brute_force,
    every_plan,
    fastest_within,
    plan_count,
    random_instance,
    scored_plans,
)


def at_micro_batch(job: Job, b: int) -> Job:
    return dataclasses.replace(job, micro_batch=float(b))


@pytest.mark.parametrize("clock", CLOCKS)
@pytest.mark.parametrize("seed", range(0, 40, 4))
def test_numpy_score_equals_the_reference_on_sampled_plans(seed, clock):
    for s in range(seed, seed + 4):
        workload, catalog, job = random_instance(s)
        b = int(job.micro_batch or job.batch)
        job = at_micro_batch(job, b)
        problem = ParallelProblem(workload, catalog, job, clock=clock_named(clock))
        plans = list(every_plan(workload, catalog, b))
        random.Random(s).shuffle(plans)
        for plan in plans[:25]:
            ref = reference.evaluate(workload, catalog, job, plan, clock)
            got = score_plan(problem, plan)
            assert got.reason == (None if ref["reason"] == "feasible" else ref["reason"])
            assert got.iteration_s == pytest.approx(ref["iteration_s"], rel=1e-9)
            assert got.cost == pytest.approx(ref["cost"], rel=1e-9) if ref["feasible"] else math.isinf(got.cost)
            for mine, theirs in zip(got.stages, ref["stages"]):
                assert mine.memory_per_device_bytes == pytest.approx(theirs["memory"], rel=1e-9)
                assert mine.time_per_microbatch_s == pytest.approx(theirs["time"], rel=1e-9)


BRUTE_FORCE_PLANS = 20_000
"""The most plans one brute-force check scores (about 5 s); a larger instance is replaced by the
next seed 100,000 on, so every group keeps its count of instances."""


def bounded_instance(seed: int, limit: int = BRUTE_FORCE_PLANS):
    """random_instance(seed), or of the first seed + k·100,000 whose plans (at most `limit`)
    brute force can score."""
    while True:
        workload, catalog, job = random_instance(seed)
        if plan_count(workload, catalog, job) <= limit:
            return workload, catalog, job
        seed += 100_000


def check_exact_equals_brute_force(seeds, limit: int = BRUTE_FORCE_PLANS):
    """The cost solver's optimum, and its dual's at a budget drawn from the plans' $/hour, equal
    brute force's, each proven (or both proven infeasible); instances of at most `limit` plans."""
    for seed in seeds:
        workload, catalog, job = bounded_instance(seed, limit)
        # scored once with no floor: the evaluator tests the floor last but for the budget, so a
        # plan is feasible at the job's floor where it is feasible here and fast enough
        scored = scored_plans(workload, catalog, dataclasses.replace(job, throughput=1e-6))
        at_floor = [(dict(s, feasible=s["feasible"] and s["throughput"] >= job.throughput * (1 - 1e-9)), p, b)
                    for s, p, b in scored]  # fmt: skip
        cost, plan, _ = brute_force(workload, catalog, job, at_floor)
        result = solve_parallel(ParallelProblem(workload, catalog, job))
        check_the_dual(seed, workload, catalog, job, scored, at_floor)
        if plan is None:
            assert result.plan is None and result.gap == 0.0, seed
            continue
        assert result.plan is not None, seed
        assert result.score.cost == pytest.approx(cost, rel=1e-9), seed
        assert result.gap == 0.0 and result.bound <= result.score.cost


def check_the_dual(seed, workload, catalog, job, scored, at_floor) -> None:
    """The most throughput within a budget: a feasible plan's $/hour times 0.6, 1 or 1.7 (or $1
    where none is feasible), at the job's floor (`at_floor`) or with none (`scored`)."""
    rng = random.Random(seed)
    rates = sorted(s["dollars_per_hour"] for s, _, _ in at_floor if s["feasible"])
    budget = rng.choice(rates) * rng.choice([0.6, 1.0, 1.7]) if rates else 1.0
    if rng.random() < 0.5:  # every plan that fits, whatever its throughput
        job, at_floor = dataclasses.replace(job, throughput=1e-6), scored
    want, plan, _ = fastest_within(at_floor, budget)
    got = solve_max_throughput(ParallelProblem(workload, catalog, dataclasses.replace(job, budget_per_hour=budget)))
    assert got.objective == "throughput" and got.gap == 0.0, seed
    if plan is None:
        assert got.plan is None and got.status == "infeasible" and got.bound == 0.0, seed
        return
    assert got.status == "optimal" and got.score.throughput == pytest.approx(want, rel=1e-9), seed
    assert got.score.dollars_per_hour <= budget * (1 + 1e-9) and got.bound == pytest.approx(want, rel=1e-9), seed


@pytest.mark.parametrize("start", range(0, 40, 10))
def test_exact_solver_equals_brute_force_on_small_instances(start):
    check_exact_equals_brute_force(range(start, start + 10))


@pytest.mark.slow
@pytest.mark.parametrize("start", range(1000, 1300, 30))
def test_exact_solver_equals_brute_force_on_300_more_instances(start):
    check_exact_equals_brute_force(range(start, start + 30), limit=BRUTE_FORCE_PLANS // 2)


def test_every_plan_the_solver_returns_is_realizable():
    """Integer per-replica micro-batches, memory within the type, t within the scale-up domain,
    cuts only where the workload allows them, links between sites."""
    for seed in range(40):
        workload, catalog, job = random_instance(seed)
        result = solve_parallel(ParallelProblem(workload, catalog, job))
        if result.plan is None:
            continue
        b = result.plan.micro_batch
        assert int(job.batch) % b == 0
        for stage, scored in zip(result.plan.stages, result.score.stages):
            resource = catalog.resources[catalog.index(stage.type)]
            assert b % stage.dp == 0 and scored.replica_micro_batch == b // stage.dp >= 1
            assert stage.tp & (stage.tp - 1) == 0 and stage.tp <= resource.tensor_parallel_limit
            assert scored.memory_per_device_bytes <= resource.memory
            assert stage.last == len(workload.layers) - 1 or workload.layers[stage.last].cut_after
        sites = [catalog.resources[catalog.index(s.type)].site for s in result.plan.stages]
        assert all(a == c or catalog.link(a, c) is not None for a, c in zip(sites, sites[1:]))


def test_a_cut_inside_a_block_is_never_proposed():
    workload, catalog, job = random_instance(3)
    layers = tuple(dataclasses.replace(layer, cut_after=False) for layer in workload.layers)
    workload = dataclasses.replace(workload, layers=layers)
    result = solve_parallel(ParallelProblem(workload, catalog, job))
    assert result.plan is None or len(result.plan.stages) == 1


def test_the_bubble_counts_the_micro_batches_each_replica_runs():
    """(M + S − 1) slots of the slowest stage: one stage of one replica at b = B has M = 1."""
    workload, catalog, job = random_instance(5)
    name = catalog.resources[0].name
    n = len(workload.layers)
    plan = (ParallelStage(0, n - 1, name, 1, 1),)
    for b in (1, int(job.batch)):
        score = score_plan(ParallelProblem(workload, catalog, at_micro_batch(job, b)), plan)
        micro_batches = int(job.batch) // b
        assert score.micro_batches == micro_batches
        assert score.iteration_s == pytest.approx(micro_batches * score.bottleneck_s + score.stages[0].tail_s)


def keeps_sequence(catalog, sequence, plan) -> bool:
    return all(catalog.index(s.type) == sequence[i] for s in plan for i in range(s.first, s.last + 1))


def test_a_type_sequence_is_completed_exactly():
    """With one type allowed per layer, the solver's plan is the cheapest of the brute-force plans
    that keep every layer on its type (cuts, t, d and b free)."""
    import numpy as np

    for seed in range(12):
        workload, catalog, job = random_instance(seed)
        rng = random.Random(seed)
        sequence = [rng.randrange(len(catalog.resources)) for _ in workload.layers]
        allowed = np.eye(len(catalog.resources), dtype=bool)[sequence]
        keeps = functools.partial(keeps_sequence, catalog, sequence)
        best = math.inf
        for b in [int(job.micro_batch)] if job.micro_batch else range(1, int(job.batch) + 1):
            if int(job.batch) % b:
                continue
            for plan in filter(keeps, every_plan(workload, catalog, b)):
                ref = reference.evaluate(workload, catalog, at_micro_batch(job, b), plan)
                best = min(best, ref["cost"] if ref["feasible"] else math.inf)
        result = solve_parallel(ParallelProblem(workload, catalog, job, allowed))
        if math.isinf(best):
            assert result.plan is None, seed
            continue
        assert result.score.cost == pytest.approx(best, rel=1e-9), seed
        assert keeps(result.plan.stages) and result.gap == 0.0


def test_the_work_floor_and_a_spent_deadline_bound_the_optimum_from_below(monkeypatch):
    """work_floor ≤ the brute-force optimum on every instance with a plan; with no time at all
    the solver returns at once with a bound no higher than the optimum (unsearched micro-batches
    bounded by the work floor), never a plan dearer than it claims; and so with a deadline that
    passes after its first few checks (between micro-batches, stage counts or regions)."""
    from hps.methods.exact_parallel import solver
    from hps.methods.exact_parallel.solver import work_floor

    class AfterChecks:
        """A deadline that passes after `checks` looks at it."""

        checks = 0

        def __init__(self, at: float):
            self.left = AfterChecks.checks

        def passed(self) -> bool:
            self.left -= 1
            return self.left < 0

    checked = 0
    for seed in range(16):
        workload, catalog, job = random_instance(seed)
        cost, plan, _ = brute_force(workload, catalog, job)
        if plan is None:
            continue
        problem = ParallelProblem(workload, catalog, job)
        assert work_floor(problem) <= cost * (1 + 1e-9), seed
        hurried = solve_parallel(problem, seconds=0.0)
        assert hurried.bound <= cost * (1 + 1e-9), seed
        if hurried.plan is not None:
            assert hurried.score.cost >= cost * (1 - 1e-9)
        for checks in (1, 2, 4, 8):
            monkeypatch.setattr(AfterChecks, "checks", checks)
            with monkeypatch.context() as patched:
                patched.setattr(solver, "Deadline", AfterChecks)
                cut = solve_parallel(problem)
            assert cut.bound <= cost * (1 + 1e-9), (seed, checks)
            if cut.plan is not None:
                assert cut.score.cost >= cost * (1 - 1e-9) and cut.bound <= cut.score.cost * (1 + 1e-12)
        checked += 1
    assert checked >= 6


def test_a_stage_table_past_memory_is_refused_with_its_size(monkeypatch):
    from hps.contract import memory
    from hps.errors import InstanceTooLarge

    workload, catalog, job = random_instance(3)
    job = dataclasses.replace(job, throughput=1e-6, fp8=False, micro_batch=job.batch)  # a table to build
    monkeypatch.setattr(memory, "memory_limit_bytes", lambda: 1000)
    with pytest.raises(InstanceTooLarge, match=r"stage table of [\d,]+ spans x [\d,]+ options"):
        solve_parallel(ParallelProblem(workload, catalog, job))


def test_each_micro_batch_is_bounded_and_seeded_by_its_one_stage_plans():
    """Per micro-batch b: work(b) is no higher than the cheapest plan under b by brute force over the
    reference evaluator; every one-stage plan the solver starts from is feasible and costs what the
    reference says; and the cheapest of them is the brute-force optimum over one-stage plans. A
    solve with no time left returns at least that plan (its micro-batches open, not missed)."""
    from hps.methods.exact_parallel.micro_batches import work_floor
    from hps.methods.uniform import uniform_plans

    checked = seeded = 0
    for seed in range(24):
        workload, catalog, job = bounded_instance(seed)
        problem = ParallelProblem(workload, catalog, job)
        best_one = math.inf
        for b in problem.micro_batch_choices():
            at_b = dataclasses.replace(job, micro_batch=float(b))
            every = list(every_plan(workload, catalog, b))
            costs = [reference.evaluate(workload, catalog, at_b, plan) for plan in every]
            feasible = [c["cost"] for c in costs if c["feasible"]]
            if feasible:
                assert work_floor(problem, b) <= min(feasible) * (1 + 1e-9), (seed, b)
                checked += 1
            last = len(workload.layers) - 1
            plans = uniform_plans(problem, b, [(0, last)], list(range(len(catalog.resources))))[0]
            one_stage = [c["cost"] for plan, c in zip(every, costs) if len(plan) == 1 and c["feasible"]]
            assert (len(plans) > 0) == (len(one_stage) > 0), (seed, b)
            for cost, (stage,), _ in plans:
                want = reference.evaluate(workload, catalog, at_b, (stage,))
                assert stage.first == 0 and stage.last == last and want["feasible"], (seed, b, stage)
                assert cost == pytest.approx(want["cost"], rel=1e-9)
            if plans:
                assert plans[0][0] == pytest.approx(min(one_stage), rel=1e-9)
                best_one = min(best_one, plans[0][0])
        if math.isfinite(best_one) and len(problem.micro_batch_choices()) > 1:
            hurried = solve_parallel(problem, seconds=0.0)
            assert hurried.plan is not None and hurried.score.cost <= best_one * (1 + 1e-9), seed
            seeded += 1
    assert checked >= 20 and seeded >= 3, (checked, seeded)


def test_the_reach_bounds_every_plan_and_a_floor_above_it_is_proven_infeasible():
    """max_throughput is at least the throughput of every plan within the caps that may run (brute
    force over the reference evaluator, the floor lifted); with the floor just above it the solver proves that
    no plan exists (bound inf, status infeasible) and brute force agrees."""
    from hps.methods.exact_parallel.reach import max_throughput

    checked = 0
    for seed in range(24):
        workload, catalog, job = bounded_instance(seed)
        open_floor = dataclasses.replace(job, throughput=1e-9)
        reach = max_throughput(ParallelProblem(workload, catalog, open_floor))
        fastest = 0.0
        for b in ParallelProblem(workload, catalog, open_floor).micro_batch_choices():
            at_b = dataclasses.replace(open_floor, micro_batch=float(b))
            for plan in every_plan(workload, catalog, b):
                score = reference.evaluate(workload, catalog, at_b, plan)
                if score["reason"] not in ("pooled_cap", "micro_batch", "no_link", "not_allowed", "virtual_stages"):
                    fastest = max(fastest, score["throughput"])
        assert fastest <= reach * (1 + 1e-9), seed
        above = dataclasses.replace(job, throughput=reach * 1.01)
        result = solve_parallel(ParallelProblem(workload, catalog, above))
        assert result.plan is None and result.status == "infeasible" and math.isinf(result.bound), seed
        assert brute_force(workload, catalog, above)[1] is None, seed
        checked += 1
    assert checked == 24


def test_the_reach_within_a_budget_bounds_every_affordable_plan_of_its_micro_batch():
    """max_throughput_within(b, D) is at least the throughput of every plan under b that brute
    force finds within the caps and D $/hour (the dual's bound before a micro-batch's table)."""
    from hps.methods.exact_parallel.reach import max_throughput_within

    checked = 0
    for seed in range(10):
        workload, catalog, job = bounded_instance(seed, BRUTE_FORCE_PLANS // 4)
        scored = scored_plans(workload, catalog, dataclasses.replace(job, throughput=1e-6))
        problem = ParallelProblem(workload, catalog, job)
        rates = sorted(s["dollars_per_hour"] for s, _, _ in scored if s["feasible"])
        if not rates:
            continue
        budget = rates[len(rates) // 2]
        for b in {b for _, _, b in scored}:
            fastest = max((s["throughput"] for s, _, at in scored if at == b and s["feasible"]
                           and s["dollars_per_hour"] <= budget), default=0.0)  # fmt: skip
            assert max_throughput_within(problem, b, budget) >= fastest * (1 - 1e-7), (seed, b)
            checked += fastest > 0
    assert checked >= 10
