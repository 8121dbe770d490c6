"""The plan contract walked through its registry: every planner of every model it plans in, on a
small instance of that model, returns a `PlanResult` whose plan re-scores to its score, whose
cost is no lower than the exact optimum, whose bound is no higher, and whose gap is what its
cost and bound say; the exact solvers certify the optimum (gap 0). `compare` puts them beside it."""

from __future__ import annotations

import functools
import random

import pytest

from hps.contract.types import Budget, PlanResult
from hps.errors import ConfigError
from hps.methods.compare import compare
from hps.methods.problem import Problem
from hps.methods.registry import NEEDS_OPTIONS, PLANNERS, planner_names, run
from tests import instances, parallel_instances
from tests.helpers import check_result

BUDGET = Budget(seconds=60.0, evaluations=256, seed=0)
SCHEDULE_SEED, PARALLEL_SEED = 3, 7
"""A schedule-model instance of 4 layers on 3 types, and `tests.test_planners`' seed 7 of the
parallel-plan model (every type sequence completes within a second)."""


@functools.cache
def problem(model: str) -> Problem:
    if model == "schedule":
        workload, catalog, job = instances.random_instance(random.Random(SCHEDULE_SEED), n_layers=4, n_types=3)
    else:
        workload, catalog, job = parallel_instances.random_instance(PARALLEL_SEED)
    return Problem(workload, catalog, job, model=model)


@functools.cache
def optimum(model: str) -> PlanResult:
    return run("exact", problem(model), BUDGET)


def walk() -> list[tuple[str, str]]:
    return [(name, model) for name in planner_names() for model in PLANNERS[name]]


def test_the_walk_covers_every_name_and_the_instances_have_a_feasible_optimum():
    assert {name for name, _ in walk()} | set(NEEDS_OPTIONS) == set(PLANNERS)
    for model in ("schedule", "parallel"):
        best = optimum(model)
        assert best.feasible and best.gap == 0.0, model
        assert best.bound == pytest.approx(best.cost, rel=1e-9)


@pytest.mark.parametrize(("name", "model"), walk())
def test_every_planner_keeps_the_contract(name, model):
    check_result(problem(model), name, run(name, problem(model), BUDGET), optimum(model))


@pytest.mark.parametrize("model", ["schedule", "parallel"])
def test_compare_puts_every_planner_beside_the_certified_optimum(model):
    names = planner_names(model)
    compared = compare(problem(model), names, BUDGET)
    assert compared.results[0].planner == "exact"
    assert sorted([r.planner for r in compared.results] + list(compared.skipped)) == sorted(names)
    assert compared.reference.planner == "exact" and compared.reference.cost == optimum(model).cost
    for result in compared.results:
        over = compared.over_optimum(result)
        assert over is None if not result.feasible else over == pytest.approx(result.cost / optimum(model).cost)


def test_a_name_outside_the_registry_or_its_model_is_a_config_error_naming_method():
    with pytest.raises(ConfigError, match="unknown planner 'magic'; choose one of") as error:
        run("magic", problem("schedule"), BUDGET)
    assert error.value.source == "method"
    with pytest.raises(ConfigError, match="gradient has no planner in the parallel model") as error:
        run("gradient", problem("parallel"), BUDGET)
    assert error.value.source == "method"
