"""Stage-table figures by the batched JAX scorer's code (hps/costmodel/parallel/batched_stages.py)
against numpy's `stage_arrays`, on generated hard instances, a zoo LLM and small random ones: the
same entries with the same in-flight counts and units, τ, φ and $/hour to 1e-9. Dominance then
compares τ and φ that may differ in the last bit (numpy gives two options of equal time the
same float, the affine layer-time coefficients may not), so the pruned tables are not compared."""

from __future__ import annotations

import numpy as np
import pytest

from hps.api.planning import Problem
from hps.config.loaders import load_catalog
from hps.config.paths import resolve_topology
from hps.costmodel.parallel.batched_stages import StageFigures
from hps.costmodel.parallel.problem import ParallelProblem
from hps.methods.exact_parallel.solver import solve_parallel
from hps.methods.exact_parallel.table import StageTable
from hps.placement.env.parallel_generator import HELD_OUT, generate
from tests.parallel_instances import random_instance


def generated(seed: int) -> ParallelProblem:
    return generate(HELD_OUT, seed, load_catalog(resolve_topology("cloud-2026", "catalogs", "x"))).problem


def zoo() -> ParallelProblem:
    return Problem("gpt3-175b", "cloud-2026", overrides={"layers": 2}, parallel=True).parallel_problem


def small(seed: int) -> ParallelProblem:
    workload, catalog, job = random_instance(seed)
    return ParallelProblem(workload, catalog, job)


PROBLEMS = {
    "held-out 22": lambda: generated(22),
    "held-out 24": lambda: generated(24),
    "gpt3-175b, 2 blocks": zoo,
    **{f"random {s}": (lambda s=s: small(s)) for s in (0, 3, 7)},
}


@pytest.mark.parametrize("name", PROBLEMS)
def test_jax_figures_give_numpys_table_entries_to_1e_9(name):
    problem = PROBLEMS[name]()
    if any(layer.measured for layer in problem.workload.layers):
        pytest.skip("the batched scorer takes no measured layer times")
    figures = StageFigures(problem)
    for b in problem.micro_batch_choices()[:2]:
        mine, theirs = StageTable(problem, b, prune=False, figures=figures), StageTable(problem, b, prune=False)
        for column in ("entry_span", "entry_opt", "fits", "units"):
            np.testing.assert_array_equal(getattr(mine, column), getattr(theirs, column))
        for column in ("time", "tail", "rate"):
            np.testing.assert_allclose(getattr(mine, column), getattr(theirs, column), rtol=1e-9)
        np.testing.assert_allclose(mine.least_work(np.inf, np.inf), theirs.least_work(np.inf, np.inf), rtol=1e-9)


def test_the_solver_with_jax_tables_proves_the_same_optimum():
    problem = zoo()
    mine, theirs = solve_parallel(problem, jax_tables=True), solve_parallel(problem)
    assert mine.status == theirs.status == "optimal"
    assert mine.cost == pytest.approx(theirs.cost, rel=1e-9)
