"""Placement search baselines (every comparison includes them): single-type plans,
greedy per layer, random search, a genetic algorithm, and exhaustive search as the optimum."""

from __future__ import annotations

import dataclasses
import itertools
import math
import random

import jax.numpy as jnp
import pytest

import hps
from hps.costmodel.schedule import build_params
from hps.methods.search.exhaustive import decode
from hps.reference import placement as reference
from tests.helpers import schedule_of, search
from tests.instances import random_instance

# One padded shape for the small instances, so each method compiles once for all of them.
MAX_LAYERS, MAX_TYPES, MAX_REPLICAS = 5, 3, 512


def small_instances(seed: int, count: int):
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        workload, catalog, job = random_instance(rng, n_layers=rng.randint(3, 5), n_types=rng.randint(2, 3))
        params = build_params(
            workload, catalog, job, max_layers=MAX_LAYERS, max_types=MAX_TYPES, max_replicas=MAX_REPLICAS
        )
        out.append((workload, catalog, job, params))
    return out


def brute_force(workload, catalog, job):
    """Reference optimum: every schedule through the plain-Python evaluator."""
    costs = {
        schedule: reference.evaluate(workload, catalog, job, list(schedule))["cost"]
        for schedule in itertools.product(range(len(catalog.resources)), repeat=len(workload.layers))
    }
    return min(costs.values())


def close(got, want, rel=1e-5):
    return math.isinf(got) if math.isinf(want) else abs(got - want) <= rel * abs(want)


def run_every_method(workload, catalog, job, params):
    return {
        "single": search("single", workload, catalog, job, params),
        "greedy": search("greedy", workload, catalog, job, params),
        "random": search("random", workload, catalog, job, params, evaluations=300),
        "genetic": search("genetic", workload, catalog, job, params, population=32, generations=5),
        "exhaustive": search("exhaustive", workload, catalog, job, params),
    }


def test_decode_enumerates_every_schedule_once():
    """Indices 0..T^L−1 decode to base-T digits, layer 0 least significant; padded layers 0."""
    digits = decode(jnp.arange(3**4, dtype=jnp.int32), 4, 3, 6)
    rows = {tuple(int(d) for d in row) for row in digits}
    assert len(rows) == 3**4
    assert all(row[4:] == (0, 0) for row in rows)
    assert tuple(int(d) for d in digits[5]) == (2, 1, 0, 0, 0, 0)


@pytest.mark.parametrize("seed", range(2))
def test_exhaustive_equals_brute_force_over_the_reference_evaluator(seed):
    """Exhaustive search is the optimum: same cost as a Python loop over every schedule, and the
    schedule it returns costs that much under the reference."""
    for workload, catalog, job, params in small_instances(seed, 6):
        want = brute_force(workload, catalog, job)
        got = search("exhaustive", workload, catalog, job, params)
        assert got.evaluations == len(catalog.resources) ** len(workload.layers)
        assert len(schedule_of(got, catalog)) == len(workload.layers)
        assert got.feasible == math.isfinite(want)
        assert close(got.cost, want)
        again = reference.evaluate(workload, catalog, job, list(schedule_of(got, catalog)))
        assert close(again["cost"], want)
        assert (got.score.reason or "feasible") == again["reason"]


def test_every_method_is_no_better_than_the_optimum_and_counts_its_evaluations():
    """Single evaluates T plans, random its budget, genetic population × generations, greedy T
    plus T·L per sweep; none beats exhaustive; each reported score is the reference's."""
    for workload, catalog, job, params in small_instances(7, 4):
        n_layers, n_types = len(workload.layers), len(catalog.resources)
        results = run_every_method(workload, catalog, job, params)
        optimum = results["exhaustive"].cost
        for name, result in results.items():
            assert result.planner == name
            assert result.cost >= optimum * (1 - 1e-6), name
            want = reference.evaluate(workload, catalog, job, list(schedule_of(result, catalog)))
            assert result.feasible == want["feasible"], name
            assert close(result.cost, want["cost"]), name
            assert close(result.score.throughput, want["throughput"]), name
            assert close(result.score.dollars_per_hour, want["dollars_per_hour"]), name
            assert result.seconds > 0
        assert results["single"].evaluations == n_types
        assert results["random"].evaluations == 300
        assert results["genetic"].evaluations == 32 * 5
        greedy_sweeps, remainder = divmod(results["greedy"].evaluations - n_types, n_types * n_layers)
        assert remainder == 0 and greedy_sweeps >= 1
        assert results["greedy"].cost <= results["single"].cost


def test_single_type_plans_cover_every_type_and_pick_the_cheapest_feasible():
    workload, catalog, job, params = small_instances(3, 1)[0]
    costs = [
        reference.evaluate(workload, catalog, job, [t] * len(workload.layers))["cost"]
        for t in range(len(catalog.resources))
    ]
    assert close(search("single", workload, catalog, job, params).cost, min(costs))


def test_genetic_reaches_the_optimum_on_an_8_layer_instance():
    """8 layers × 4 types (65,536 schedules): single-type is 16× and greedy 4.6× the optimum
    here; the genetic algorithm with its default budget finds the optimum."""
    workload, catalog, job = random_instance(random.Random(0), n_layers=8, n_types=4)
    optimum = search("exhaustive", workload, catalog, job)
    assert optimum.feasible
    found = search("genetic", workload, catalog, job)
    assert found.evaluations == 1024 * 50
    assert found.cost <= optimum.cost * (1 + 1e-6)
    assert search("single", workload, catalog, job).cost > 2 * optimum.cost


def test_exhaustive_refuses_a_space_above_its_limit():
    workload, catalog, job, params = small_instances(5, 1)[0]
    size = len(catalog.resources) ** len(workload.layers)
    with pytest.raises(hps.SearchSpaceTooLarge, match="genetic") as raised:
        search("exhaustive", workload, catalog, job, params, limit=size - 1)
    assert f"{size:,}" in str(raised.value) and f"{size - 1:,}" in str(raised.value)
    big_workload, big_catalog, big_job = random_instance(random.Random(1), n_layers=13, n_types=4)
    with pytest.raises(hps.SearchSpaceTooLarge, match="4\\^13"):
        search("exhaustive", big_workload, big_catalog, big_job)


def reference_penalty(catalog, job, evaluation):
    """The graded penalty of hps.methods.search.scoring, from a reference evaluation: ln(R / throughput)
    below the floor, plus the fraction of layers in unprovisionable stages, plus the units over
    each type's pooled cap relative to it."""
    stages = evaluation["stages"]
    shortfall = max(math.log(job.throughput / evaluation["throughput"]), 0.0)
    failing = sum(s["last_layer"] - s["first_layer"] + 1 for s in stages if s["reason"] != "feasible")
    n_layers = stages[-1]["last_layer"] + 1
    overflow = 0.0
    for t, resource in enumerate(catalog.resources):
        units = sum(s["replicas"] for s in stages if s["type"] == t)
        overflow += max(units - resource.max_units, 0) / resource.max_units
    return shortfall + failing / n_layers + overflow


def test_all_infeasible_instance_returns_the_least_bad_schedule_as_infeasible():
    """A floor no schedule can meet: every method says feasible False with cost inf, and
    exhaustive's pick has the smallest graded penalty of all schedules."""
    workload, catalog, job = random_instance(random.Random(11), n_layers=4, n_types=3)
    job = dataclasses.replace(job, throughput=1e15)
    params = build_params(workload, catalog, job, max_layers=MAX_LAYERS, max_types=MAX_TYPES, max_replicas=MAX_REPLICAS)
    for name, result in run_every_method(workload, catalog, job, params).items():
        assert not result.feasible, name
        assert math.isinf(result.cost), name
        assert result.score.reason in ("throughput", "memory"), name
        assert len(schedule_of(result, catalog)) == 4
    best = search("exhaustive", workload, catalog, job, params)
    penalties = [
        reference_penalty(catalog, job, reference.evaluate(workload, catalog, job, list(s)))
        for s in itertools.product(range(3), repeat=4)
    ]
    picked = reference_penalty(
        catalog, job, reference.evaluate(workload, catalog, job, list(schedule_of(best, catalog)))
    )
    assert picked <= min(penalties) + 1e-5 * abs(min(penalties))


def test_the_registry_dispatches_by_name_and_rejects_unknown_methods():
    workload, catalog, job, params = small_instances(2, 1)[0]
    result = search("single", workload, catalog, job, params)
    assert result.planner == "single" and result.evaluations == len(catalog.resources)
    with pytest.raises(hps.ConfigError, match="^method: "):
        search("annealing", workload, catalog, job, params)


def test_exhaustive_compiles_once_per_padded_shape():
    """Different instances (and search-space sizes) of one padded shape reuse one compile."""
    from hps.methods.search.exhaustive import _enumerator

    instances = small_instances(9, 3)
    sizes = {len(c.resources) ** len(w.layers) for w, c, _, _ in instances}
    before = _enumerator(1024)._cache_size()  # other tests in this process may have compiled other shapes
    for workload, catalog, job, params in instances:
        search("exhaustive", workload, catalog, job, params, batch_size=1024)
    assert len(sizes) > 1
    assert _enumerator(1024)._cache_size() - before <= 1


def test_budgets_cap_evaluations_and_reject_non_positive_values():
    """genetic: generations = budget // population, and a budget below one population runs one
    generation of that many; greedy stops before a sweep that would pass its budget."""
    workload, catalog, job, params = small_instances(4, 1)[0]
    n_types = len(catalog.resources)
    assert search("genetic", workload, catalog, job, params, evaluations=70, population=32).evaluations == 64
    assert search("genetic", workload, catalog, job, params, evaluations=20, population=32).evaluations == 20
    assert search("greedy", workload, catalog, job, params, evaluations=n_types).evaluations == n_types
    for method in ("random", "genetic"):
        with pytest.raises(hps.ConfigError, match="^evaluations: "):
            search(method, workload, catalog, job, params, evaluations=0)
