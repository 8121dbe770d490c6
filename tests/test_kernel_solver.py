"""The exact parallel-plan solver stays exact under the kernel clock (plain 1F1B, one model chunk a
device): on small random instances its optimum equals brute force over every plan scored by
`score_plan` on the same kernel-clock problem."""

import dataclasses
import math

import pytest

from hps.costmodel.clocks.base import clock_named
from hps.costmodel.parallel.problem import ParallelProblem
from hps.costmodel.parallel.score import score_plan
from hps.methods.exact_parallel.solver import solve_parallel
from tests.parallel_instances import every_plan, plan_count, random_instance


def kernel_problem(workload, catalog, job) -> ParallelProblem:
    resources = tuple(
        dataclasses.replace(r, matmul_efficiency_max=0.3 + 0.1 * i, matmul_half_work_flop=2e9, tp_comm_exposed=0.5)
        for i, r in enumerate(catalog.resources)
    )
    return ParallelProblem(
        workload, dataclasses.replace(catalog, resources=resources), job, clock=clock_named("kernel")
    )


def kernel_brute_force(problem: ParallelProblem) -> float:
    best = math.inf
    for b in problem.micro_batch_choices():
        for plan in every_plan(problem.workload, problem.catalog, b):
            score = score_plan(problem, plan, b)
            if score.feasible:
                best = min(best, score.cost)
    return best


def test_exact_equals_brute_force_under_the_kernel_model():
    checked, feasible, differs, seed = 0, 0, 0, 0
    while checked < 25:
        workload, catalog, job = random_instance(seed)
        seed += 1
        if plan_count(workload, catalog, job) > 3000:
            continue
        problem = kernel_problem(workload, catalog, job)
        want = kernel_brute_force(problem)
        result = solve_parallel(problem)
        if math.isinf(want):
            assert result.plan is None, seed
        else:
            assert result.plan is not None and result.score.cost == pytest.approx(want, rel=1e-9), seed
            assert result.gap == 0.0
            feasible += 1
            roofline = solve_parallel(ParallelProblem(workload, catalog, job))
            differs += roofline.plan is None or abs(roofline.score.cost / want - 1) > 1e-6
        checked += 1
    assert feasible >= 10 and differs >= 5  # the kernel model changes the optimum the solver must find
