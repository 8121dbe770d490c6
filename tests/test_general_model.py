"""The general placement model (explicit plans, micro-batch bubble, sharded states) in numpy
against the plain-Python reference, and the plan checks."""

from __future__ import annotations

import dataclasses
import math
import random

import numpy as np
import pytest

from hps.collective.model.loads import fluid_loads
from hps.config.types import Catalog, Dimension, Job, Layer, Network, ResourceType, Workload
from hps.costmodel.schedule.plan import parse_stages, schedule_plan
from hps.costmodel.schedule.provisioning import build_instance
from hps.errors import ConfigError
from hps.reference.placement import evaluate as reference_schedule
from hps.reference.placement import evaluate_plan as reference_plan
from hps.reference.placement import themis_loads
from tests.helpers import evaluated
from tests.instances import random_instance


def random_plan(rng: random.Random, num_layers: int, num_types: int):
    cuts = sorted(rng.sample(range(1, num_layers), rng.randint(0, num_layers - 1))) if num_layers > 1 else []
    bounds = [0, *cuts, num_layers]
    return tuple((bounds[i], bounds[i + 1] - 1, rng.randrange(num_types)) for i in range(len(bounds) - 1))


def plan_arrays(plans, width: int):
    """(types (N, width) int32, stage ends (N, width) bool) of plans, as evaluate_plans reads them."""
    import jax.numpy as jnp

    types, ends = np.zeros((len(plans), width), np.int32), np.zeros((len(plans), width), bool)
    for n, plan in enumerate(plans):
        for first, last, t in plan:
            types[n, first : last + 1], ends[n, last] = t, True
    return jnp.asarray(types), jnp.asarray(ends)


def general_instance(rng: random.Random):
    """A random instance whose job has random micro-batches and sharding, and whose dense
    parameters are, half the time, 60x heavier (so that replicated states often do not fit)."""
    workload, catalog, job = random_instance(rng)
    if rng.random() < 0.5:
        layers = tuple(
            dataclasses.replace(layer, dense_param_bytes=60 * layer.dense_param_bytes) for layer in workload.layers
        )
        workload = dataclasses.replace(workload, layers=layers)
    return workload, catalog, general_job(rng, job)


def general_job(rng: random.Random, job: Job) -> Job:
    micro_batches = rng.choice([math.inf, 1, 4, 16])
    return dataclasses.replace(job, micro_batches=micro_batches, state_sharding=rng.choice(["none", "auto"]))


def assert_same(got: dict, want: dict) -> None:
    assert got["feasible"] == want["feasible"]
    assert (got["reason"] or "feasible") == want["reason"]
    assert got["failed_layer"] == want["failed_layer"]
    for a, b in zip(got["stages"], want["stages"], strict=True):
        assert (a["replicas"], a["mode"]) == (b["replicas"], b["mode"])
        assert a["time"] == pytest.approx(b["time"], rel=1e-12)
    if want["feasible"]:
        assert got["cost"] == pytest.approx(want["cost"], rel=1e-12)
        assert got["throughput"] == pytest.approx(want["throughput"], rel=1e-12)


def test_numpy_model_equals_reference_on_random_plans():
    rng = random.Random(7)
    reasons = set()
    modes = set()
    for _ in range(200):
        workload, catalog, job = general_instance(rng)
        inst = build_instance(workload, catalog, job)
        for _ in range(3):
            plan = random_plan(rng, len(workload.layers), len(catalog.resources))
            want = reference_plan(workload, catalog, job, plan)
            assert_same(evaluated(inst, plan), want)
            reasons.add(want["reason"])
            modes.update(stage["mode"] for stage in want["stages"])
    assert reasons == {"feasible", "memory", "throughput", "pooled_cap"}
    assert modes == {"replicated", "sharded"}


def test_defaults_are_the_heterps_model():
    """With M = inf and no sharding, a schedule's plan scores as the schedule does."""
    rng = random.Random(3)
    for _ in range(50):
        workload, catalog, job = random_instance(rng)
        schedule = [rng.randrange(len(catalog.resources)) for _ in workload.layers]
        got = evaluated(build_instance(workload, catalog, job), schedule_plan(schedule))
        assert_same(got, reference_schedule(workload, catalog, job, schedule))


def test_bubble_and_sharding_by_hand():
    """Two identical layers of W = 1 GB dense parameters, 1 ms per sample, on a type with 3 GB
    of memory and a free network: replicated (4W) never fits, sharded needs 4W/k + W ≤ 3W
    (k ≥ 2); the floor R = 4,500/s needs k ≥ R·t = 4.5 per stage, and a two-stage plan with
    M = 2 micro-batches has bubble 1.5, so k ≥ 6.75."""
    layer = Layer("l", "dense", 1e9, 0.0, 0.0, 0.0, 1e9, 0.0)
    network = Network("free", (Dimension(64, 1e30, 0.0, "ring"),))
    gpu = ResourceType("gpu", "gpu", 1e12, 1.0, 1.0, 1e12, 1e12, 1e12, 3e9, 2.0, 64, network)
    workload, catalog = Workload("w", (layer, layer)), Catalog("c", (gpu,))
    job = Job(batch=1000.0, throughput=4500.0, samples=1e6, state_sharding="auto")
    one = evaluated(build_instance(workload, catalog, job), ((0, 0, 0), (1, 1, 0)))
    assert [(s["replicas"], s["mode"]) for s in one["stages"]] == [(5, "sharded"), (5, "sharded")]
    piped = evaluated(
        build_instance(workload, catalog, dataclasses.replace(job, micro_batches=2)), ((0, 0, 0), (1, 1, 0))
    )
    assert [s["replicas"] for s in piped["stages"]] == [7, 7]
    assert piped["throughput"] == pytest.approx(1000.0 / (1.5 * 1000.0 / 7 * 1e-3))
    assert piped["dollars_per_hour"] == 28.0
    none = evaluated(build_instance(workload, catalog, dataclasses.replace(job, state_sharding="none")), ((0, 1, 0),))
    assert none["reason"] == "memory"


def test_fluid_loads_equal_the_reference_greedy():
    rng = np.random.default_rng(0)
    sizes = rng.integers(1, 9, (200, 4))
    bandwidths = rng.uniform(1e9, 1e11, (200, 4))
    bandwidths[:50] = 1e10  # tied loads
    for themis in (True, False):
        got = fluid_loads(sizes, bandwidths, 2.0**30, 64, themis)
        for row, s, b in zip(got, sizes, bandwidths):
            want = themis_loads(list(s), list(b), 2.0**30, 64, themis)
            assert row == pytest.approx([want.get(d, 0.0) for d in range(4)], rel=1e-12, abs=1e-30)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("0-3:t0,5-7:t0", "leaves layers 4-4 out"),
        ("0-3:t0,3-7:t0", "overlaps the stage before"),
        ("0-3:t0,4-6:t0", "the stages end at layer 6"),
        ("0-3:t0,4-7:gpu", "unknown type 'gpu'"),
        ("0-3:t0,7-4:t0", "leaves layers"),
        ("0-3,4-7:t0", "is not FIRST-LAST:TYPE"),
    ],
)
def test_bad_plans_name_the_problem(text, problem):
    workload, catalog, _ = random_instance(random.Random(1), n_layers=8, n_types=1)
    with pytest.raises(ConfigError, match=problem) as info:
        parse_stages(text, catalog, len(workload.layers))
    assert info.value.source == "stages"


def test_parse_stages_shares_types():
    workload, catalog, _ = random_instance(random.Random(1), n_layers=8, n_types=2)
    assert parse_stages("0-3:t1,4-5:t1,6-7:t0", catalog, 8) == ((0, 3, 1), (4, 5, 1), (6, 7, 0))


def test_jnp_general_model_equals_reference_on_random_plans():
    """≥ 500 random plans (stages sharing types, finite micro-batches, sharded states) through
    the jnp model's direct path, float32, against the float64 reference: to 1e-5 relative."""
    import jax

    from hps.costmodel.schedule import REASONS, build_params
    from tests.direct_model import evaluate_plans

    evaluate = jax.jit(evaluate_plans)
    rng = random.Random(5)
    reasons, modes, plans = set(), set(), 0
    for _ in range(130):
        workload, catalog, job = general_instance(rng)
        params = build_params(workload, catalog, job, max_layers=8, max_types=4, max_replicas=512)
        batch = [random_plan(rng, len(workload.layers), len(catalog.resources)) for _ in range(4)]
        got = jax.device_get(evaluate(params, *plan_arrays(batch, 8)))
        for n, plan in enumerate(batch):
            want = reference_plan(workload, catalog, job, plan)
            plans += 1
            reasons.add(want["reason"])
            assert REASONS[int(got.reason[n])] == want["reason"] and int(got.failed_layer[n]) == want["failed_layer"]
            assert float(got.throughput[n]) == pytest.approx(want["throughput"], rel=1e-5)
            assert float(got.cost[n]) == pytest.approx(want["cost"], rel=1e-5)
            for stage in want["stages"]:
                end = stage["last_layer"]
                assert int(got.replicas[n, end]) == stage["replicas"]
                assert bool(got.stage_sharded[n, end]) == (stage["mode"] == "sharded")
                assert float(got.stage_time[n, end]) == pytest.approx(stage["time"], rel=1e-5)
                modes.add(stage["mode"])
    assert plans >= 500 and reasons == {"feasible", "memory", "throughput", "pooled_cap"}
    assert modes == {"replicated", "sharded"}


def six_dimension_instance(rng: random.Random):
    """A general instance whose first type's network has 5 or 6 dimensions (sizes 1–3)."""
    workload, catalog, job = general_instance(rng)
    dims = tuple(
        Dimension(rng.choice([1, 2, 3]), rng.uniform(1, 300) * 2**30, rng.uniform(0, 1e-5), "ring")
        for _ in range(rng.randint(5, 6))
    )
    first = catalog.resources[0]
    network = Network(first.name, dims)
    first = dataclasses.replace(first, network=network, max_units=rng.randint(1, network.total_size))
    return workload, dataclasses.replace(catalog, resources=(first, *catalog.resources[1:])), job


def test_six_dimension_networks_in_both_models_equal_the_reference():
    """Types on 5–6-dimensional networks: the numpy path to 1e-12 and the jnp model (padded to
    its 6-wide bucket) to 1e-5 against the reference, on random plans."""
    import jax

    from hps.costmodel.schedule import REASONS, build_params
    from tests.direct_model import evaluate_plans

    evaluate = jax.jit(evaluate_plans)
    rng = random.Random(17)
    for _ in range(40):
        workload, catalog, job = six_dimension_instance(rng)
        inst = build_instance(workload, catalog, job)
        params = build_params(workload, catalog, job, max_layers=8, max_types=4, max_replicas=1024)
        assert params.net_size.shape[-1] == 6
        batch = [random_plan(rng, len(workload.layers), len(catalog.resources)) for _ in range(3)]
        got = jax.device_get(evaluate(params, *plan_arrays(batch, 8)))
        for n, plan in enumerate(batch):
            want = reference_plan(workload, catalog, job, plan)
            assert_same(evaluated(inst, plan), want)
            assert REASONS[int(got.reason[n])] == want["reason"]
            if want["feasible"]:
                assert float(got.cost[n]) == pytest.approx(want["cost"], rel=1e-5)
