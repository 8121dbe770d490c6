"""Generated hard parallel-plan instances (hps.placement.env.parallel_generator) and the summary
of their experiment (hps.studies.parallel_hard)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from hps.api.loading import load_catalog
from hps.costmodel.parallel.problem import ParallelProblem
from hps.placement.env.parallel_generator import (
    HELD_OUT,
    POOL_DISCOUNT,
    PRICE_SPREAD,
    TRAIN,
    generate,
    single_type_reach,
)
from hps.reference import parallel as reference
from hps.studies.parallel_hard import planner_table, warm_table
from tests.parallel_instances import every_plan, random_instance


@pytest.fixture(scope="module")
def base():
    return load_catalog("cloud-2026")


@pytest.mark.parametrize("seed", range(4))
def test_an_instance_is_its_seed_within_its_split(base, seed):
    instance = generate(HELD_OUT, seed, base)
    again = generate(HELD_OUT, seed, base)
    assert instance.workload.layers == again.workload.layers and instance.catalog == again.catalog
    assert instance.job == again.job
    rows = len(instance.workload.layers)
    assert HELD_OUT.rows[0] - 1 <= rows <= HELD_OUT.rows[1] and rows % 2 == 0
    assert HELD_OUT.types[0] <= len(instance.catalog.resources) <= HELD_OUT.types[1]
    assert len(set(instance.catalog.names)) == len(instance.catalog.names)
    assert HELD_OUT.reach[0] <= instance.reach <= HELD_OUT.reach[1]
    bound = single_type_reach(instance.problem).max()
    assert instance.job.throughput == pytest.approx(instance.reach * bound, rel=1e-12)
    other = generate(TRAIN, seed, base)
    assert other.workload.layers != instance.workload.layers or other.catalog != instance.catalog


@pytest.mark.parametrize("seed", range(6))
def test_prices_and_caps_stay_within_the_base_catalogue(base, seed):
    instance = generate(HELD_OUT, seed, base)
    listed = {r.name: r for r in base.resources}
    drawn = {r.name: r for r in instance.catalog.resources}
    for r in instance.catalog.resources:
        own = r.name.split("-pool")[0]
        assert 1 <= r.max_units <= listed[own].max_units
        assert r.site == listed[own].site and r.peak_flops == listed[own].peak_flops
        if r.name == own:
            ratio = r.price_per_hour / listed[own].price_per_hour
            assert PRICE_SPREAD[0] * (1 - 1e-12) <= ratio <= PRICE_SPREAD[1] * (1 + 1e-12)
        else:  # a second pool: cheaper than its type as drawn here
            ratio = r.price_per_hour / drawn[own].price_per_hour
            assert POOL_DISCOUNT[0] <= ratio <= POOL_DISCOUNT[1]


def test_no_plan_of_one_type_runs_faster_than_its_reach():
    """Every feasible one-type plan of small random instances, by the reference evaluator, runs at
    most the type's cap over its least device-seconds a sample."""
    checked = 0
    for seed in range(12):
        workload, catalog, job = random_instance(seed)
        job = dataclasses.replace(job, throughput=1e-9)  # every plan meets the floor
        reach = single_type_reach(ParallelProblem(workload, catalog, job))
        choices = [int(job.micro_batch)] if job.micro_batch else [d for d in range(1, int(job.batch) + 1)]
        for b in (b for b in choices if int(job.batch) % b == 0):
            at_b = dataclasses.replace(job, micro_batch=float(b))
            for plan in every_plan(workload, catalog, b):
                if len({stage.type for stage in plan}) > 1:
                    continue
                score = reference.evaluate(workload, catalog, at_b, plan)
                if score["feasible"]:
                    checked += 1
                    assert score["throughput"] <= reach[catalog.index(plan[0].type)] * (1 + 1e-9)
    assert checked > 50


def _result(exact_cost, bound, proven, seconds, planners, warm=None):
    names = ("sequence", "single", "greedy", "refine", "exact_same_time")
    costs = dict(zip(names, planners))
    return {
        "exact": {"cost": exact_cost, "bound": bound, "proven": proven, "seconds": seconds},
        "planners": {n: {"cost": costs[n], "seconds": 1.0} for n in names},
        "warm": warm,
    }


def test_the_summary_by_hand():
    results = [
        _result(10.0, 10.0, True, 20.0, [10.0, 12.0, 11.0, 10.0, None], {"proven": True, "to_certificate": 5.0}),
        _result(20.0, 20.0, True, 40.0, [22.0, 30.0, 20.0, 20.0, 25.0], {"proven": True, "to_certificate": 50.0}),
        _result(8.0, 4.0, False, 60.0, [6.0, None, 8.0, 7.0, 8.0], {"proven": True, "to_certificate": 9.0}),
        _result(None, 1.0, False, 60.0, [None] * 5),  # nobody has a plan: not counted
        _result(5.0, 5.0, True, 2.0, [5.0] * 5),  # certified in under 10 s: not a warm-start instance
    ]
    table = planner_table(results)
    sequence = table["sequence"]
    assert sequence["optimum"]["mean"] == pytest.approx((1.0 + 1.1 + 1.0) / 3)
    assert sequence["optimum"]["worst"] == pytest.approx(1.1)
    assert sequence["optimum"]["p95"] == pytest.approx(np.percentile([1.0, 1.1, 1.0], 95))
    assert sequence["bound"] == {"mean": 1.5, "p95": 1.5, "worst": 1.5}
    assert table["single"]["feasible"] == 0.75 and table["exact_same_time"]["feasible"] == 0.75
    assert table["single"]["optimum"]["worst"] == pytest.approx(1.5)
    warm = warm_table(results)
    assert warm == {"instances": 2, "cold": 30.0, "warm": 27.5, "only_warm": 1}
    unproven_warm = [_result(10.0, 10.0, True, 20.0, [10.0] * 5, {"proven": False, "to_certificate": 70.0})]
    assert math.isinf(warm_table(unproven_warm)["warm"])


def test_numpy_bools_and_numbers_are_written_as_json():
    """An item's result holds numpy scalars (a certificate is `gap == 0.0` of a numpy float)."""
    from hps.studies.files import json_ready, json_text

    ready = json_ready({"proven": np.float64(0.0) == 0.0, "bound": np.float64(np.inf), "n": [np.int64(3)]})
    assert ready == {"proven": True, "bound": None, "n": [3]} and type(ready["proven"]) is bool
    assert json_text(ready) == '{\n  "bound": null,\n  "n": [\n    3\n  ],\n  "proven": true\n}\n'
