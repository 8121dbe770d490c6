"""Plain helpers shared by several test modules: the tiny training run, parameter equality and
CLI JSON calls. A plain module, not a test module: fixtures live in conftest.py."""

from __future__ import annotations

import ast
import json
import math

import jax
import numpy as np
import pytest

from hps.cli.main import main
from hps.contract.types import Plan, PlanResult, PlanScore
from hps.placement.agent.policy import PolicySpec
from hps.placement.agent.train import TrainConfig
from hps.placement.env.generator import InstanceSplit

# The tiny placement training run: 5 chunks of 2 updates over 64 environments.
TINY_SPLIT = InstanceSplit("ckpt-tiny", 4, 6, 2, 3, salt=31)
TINY = TrainConfig(
    split=TINY_SPLIT, num_envs=64, updates_per_chunk=2, num_chunks=5, seed=7, policy=PolicySpec(hidden=16)
)

# TINY as an experiment file (conftest.py's `experiment` fixture writes it).
EXPERIMENT = """
from hps.placement.agent.policy import PolicySpec
from hps.placement.agent.train import TrainConfig
from hps.placement.env.generator import InstanceSplit

CONFIG = TrainConfig(split=InstanceSplit("ckpt-tiny", 4, 6, 2, 3, salt=31), num_envs=64, updates_per_chunk=2,
                     num_chunks=5, seed=7, policy=PolicySpec(hidden=16))
"""

# A small CTR-DNN job on the `small` catalogue, as CLI flags.
SMALL = ["--catalog", "small", "--workload", "ctr-dnn", "--batch", "1024", "--throughput", "1000", "--samples", "1e8"]


def assert_same_params(a, b):
    flat_a, flat_b = jax.tree.leaves(a), jax.tree.leaves(b)
    assert len(flat_a) == len(flat_b)
    for x, y in zip(flat_a, flat_b):
        np.testing.assert_array_equal(x, y)


def run_json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def run_cli_output(argv: list[str], capsys) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `hps ARGV` in-process; argparse's own errors exit too."""
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def called_name(node: ast.Call) -> str:
    """`f`, `a.f` or `a.b.f` of a call (the attribute chain of its function, names only)."""
    parts, func = [], node.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    parts.append(func.id if isinstance(func, ast.Name) else "?")
    return ".".join(reversed(parts))


def score_dict(score) -> dict:
    """A schedule-model PlanScore in the keys of the plain-Python reference evaluator
    (`hps.reference.placement.evaluate_plan`): feasible, reason, failed_layer, throughput,
    dollars_per_hour, cost, stages [{type, first_layer, last_layer, replicas, time, mode, reason,
    dollars_per_hour}]."""
    from hps.costmodel.schedule.plan import failed_layer

    stages = [
        {
            "type": s.stage.type,
            "first_layer": s.stage.first,
            "last_layer": s.stage.last,
            "replicas": s.stage.dp,
            "time": s.time_per_microbatch_s,
            "mode": s.mode,
            "reason": s.reason or "feasible",
            "dollars_per_hour": s.dollars_per_hour,
        }
        for s in score.stages
    ]
    return {
        "feasible": score.feasible,
        "reason": score.reason,
        "failed_layer": failed_layer(score),
        "throughput": score.throughput,
        "dollars_per_hour": score.dollars_per_hour,
        "cost": score.cost,
        "stages": stages,
    }


def evaluated(inst, plan) -> dict:
    """`score_dict` of the numpy model's score of `plan` ((first, last, type index) stages)."""
    from hps.costmodel.schedule.plan import evaluate_plan

    return score_dict(evaluate_plan(inst, plan))


def check_result(problem, name: str, result, best) -> None:
    """The contract's promises of one planner's result against the certified optimum `best`."""
    assert isinstance(result, PlanResult) and result.planner == name
    assert result.seconds >= 0 and (result.evaluations is None or result.evaluations >= 1)
    assert (result.plan is None) <= (result.score is None or not result.score.feasible)
    if result.plan is not None:
        assert isinstance(result.plan, Plan) and isinstance(result.score, PlanScore)
        again = problem.score(result.plan)
        assert again.feasible == result.score.feasible
        assert again.cost == pytest.approx(result.score.cost, rel=1e-12)
        assert again.throughput == pytest.approx(result.score.throughput, rel=1e-12)
        assert [s.stage for s in again.stages] == [s.stage for s in result.score.stages]
    if result.feasible:
        assert result.cost >= best.cost * (1 - 1e-9)
    if math.isfinite(result.bound):
        assert result.bound <= best.cost * (1 + 1e-9)
    if not math.isnan(result.bound) and result.feasible:
        want = 0.0 if result.bound >= result.cost * (1 - 1e-9) else (result.cost - result.bound) / result.bound
        assert result.gap == pytest.approx(want, abs=1e-9)
    elif math.isnan(result.bound):
        assert result.gap is None


def search(method, workload, catalog, job, params=None, *, table=None, seed=0, evaluations=None, **options):
    """The schedule-model planner `method` through the registry, its searches on `params` where
    given (padded as the test chooses, so instances of several sizes share one compile)."""
    from hps.contract.types import Budget
    from hps.costmodel.schedule.provisioning import build_instance
    from hps.methods.problem import Problem
    from hps.methods.registry import run

    problem = Problem.of_instance(build_instance(workload, catalog, job), None if params is None else (params, table))
    return run(method, problem, Budget(evaluations=evaluations, seed=seed), **options)


def search_generated(method, instance, *, seed=0, evaluations=None, **options):
    """`search` on one unbatched generated PlacementInstance (its padded params)."""
    from hps.contract.types import Budget
    from hps.methods.registry import run
    from hps.placement.agent.evaluation import problem_of

    return run(method, problem_of(instance), Budget(evaluations=evaluations, seed=seed), **options)


def schedule_of(result: PlanResult, catalog) -> tuple[int, ...]:
    """The type index per layer of a schedule-model result's plan."""
    return tuple(catalog.index(s.type) for s in result.plan.stages for _ in range(s.first, s.last + 1))
