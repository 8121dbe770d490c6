"""The jnp searches at sizes their own replica scan cannot hold: the segment table built by the
numpy provisioning equals the jnp one where both fit, and the searches plan with it."""

from __future__ import annotations

import random

import jax
import numpy as np
import pytest

from hps.costmodel.schedule import build_params, segment_table
from hps.costmodel.schedule.numpy_table import numpy_segment_table, searchable
from hps.errors import InstanceTooLarge
from tests.helpers import evaluated, schedule_of, search
from tests.instances import random_instance


def test_numpy_segment_table_equals_the_jnp_one():
    """60 random instances: the same k, reason and (to 1e-5) time for every stage. All are
    padded to one replica count, so the jnp table compiles once."""
    rng = random.Random(23)
    instances = [random_instance(rng, n_layers=rng.randint(1, 6), n_types=rng.randint(1, 3)) for _ in range(60)]
    replicas = max(r.max_units for _, catalog, _ in instances for r in catalog.resources)
    table_of = jax.jit(segment_table)
    compared = 0
    for workload, catalog, job in instances:
        params = build_params(workload, catalog, job, max_layers=6, max_types=3, max_replicas=replicas)
        want = jax.device_get(table_of(params))
        got = jax.device_get(numpy_segment_table(workload, catalog, job, 6, 3))
        n, t = len(workload.layers), len(catalog.resources)
        first, last = np.triu_indices(n)
        for name in ("reason", "replicas"):
            assert np.array_equal(getattr(got, name)[first, last, :t], getattr(want, name)[first, last, :t]), name
        np.testing.assert_allclose(got.time[first, last, :t], want.time[first, last, :t], rtol=1e-5)
        compared += len(first) * t
    assert compared >= 500


def test_searches_plan_instances_past_the_replica_scan():
    """20 layers on 4 types of 65,536 units: the jnp model refuses the instance (its scan over
    every k), the searches run on the numpy table, padded to the (32, 4) bucket, and their plans
    score the same under the numpy model and no better than the exact solver's optimum."""
    from hps.bench.exact import synthetic_instance
    from hps.costmodel.schedule.plan import schedule_plan
    from hps.costmodel.schedule.provisioning import build_instance
    from hps.methods.exact_schedule import solve_exact

    workload, catalog, job = synthetic_instance(20, 4, seed=3)
    with pytest.raises(InstanceTooLarge, match="65536 units per type"):
        build_params(workload, catalog, job)
    params, table = searchable(workload, catalog, job)
    assert params.max_layers == 32 and params.max_types == 4 and table.replicas.shape == (32, 32, 4)
    inst = build_instance(workload, catalog, job)
    optimum = solve_exact(inst, heterps=True).cost
    for method, budget in (("greedy", None), ("genetic", 4096), ("random", 4096)):
        found = search(method, workload, catalog, job, params, table=table, evaluations=budget)
        assert found.feasible, method
        score = evaluated(inst, schedule_plan(schedule_of(found, catalog)))
        assert found.cost == pytest.approx(score["cost"], rel=1e-5) and score["cost"] >= optimum * (1 - 1e-9)
