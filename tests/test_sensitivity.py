"""`hps evaluate --sensitivity`: d(cost)/d(figure) by jax.grad with the plan's provisioning and
chunk orders held fixed, checked against central finite differences of the same plan."""

from __future__ import annotations

import itertools
import random

import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
import pytest

import hps
from hps.costmodel.schedule import build_params, evaluate_schedules
from hps.costmodel.schedule.sensitivity import (
    FIGURES,
    cost_and_gradients,
    figures_of,
    fix_plan,
    plan_cost,
    sensitivity,
)
from tests.helpers import SMALL, run_json
from tests.instances import random_instance

MAX_LAYERS, MAX_TYPES, MAX_REPLICAS = 5, 3, 512
RELATIVE_STEP = 1e-3
evaluate = jax.jit(evaluate_schedules)
cost_of = jax.jit(lambda params, plan: plan_cost(figures_of(params), params, plan))


def interesting_plans(seed: int, count: int):
    """(catalog, params, schedule) of feasible multi-stage plans where some stage has k > 1 and
    dense parameters, so its All-Reduce (network bandwidths and latencies) counts."""
    rng = random.Random(seed)
    found = []
    while len(found) < count:
        workload, catalog, job = random_instance(rng, n_layers=rng.randint(3, 5), n_types=3)
        params = build_params(
            workload, catalog, job, max_layers=MAX_LAYERS, max_types=MAX_TYPES, max_replicas=MAX_REPLICAS
        )
        n_layers = len(workload.layers)
        rows = [list(s) + [0] * (MAX_LAYERS - n_layers) for s in itertools.product(range(3), repeat=n_layers)]
        result = jax.tree.map(np.asarray, evaluate(params, jnp.asarray(rows, jnp.int32)))
        dense_stage = (result.replicas > 1) & result.stage_end & (np.asarray(params.dense_param_bytes) > 0)
        stages = result.stage_end.sum(axis=1)
        good = np.flatnonzero(result.feasible & (stages >= 2) & dense_stage.any(axis=1))
        if len(good):
            pick = good[np.argmin(result.cost[good])]
            found.append((catalog, params, rows[pick][:n_layers]))
    return found


@jax.jit
def perturbed_costs(params, plan, signs):
    """Costs (2·F,) with each figure entry scaled by 1 ± RELATIVE_STEP, in figure order."""
    base = figures_of(params)
    flat, unravel = jax.flatten_util.ravel_pytree(base)
    eye = jnp.eye(flat.shape[0], dtype=flat.dtype)
    scaled = flat[None, :] * (1.0 + signs[:, None, None] * RELATIVE_STEP * eye[None]).reshape(-1, flat.shape[0])
    return jax.vmap(lambda f: plan_cost(unravel(f), params, plan))(scaled), flat


def test_plan_cost_with_provisioning_fixed_equals_the_model():
    for _, params, schedule in interesting_plans(0, 3):
        padded = jnp.asarray(schedule + [0] * (MAX_LAYERS - len(schedule)), jnp.int32)
        plan, feasible, model_cost, _ = fix_plan(params, padded)
        assert bool(feasible)
        assert float(cost_of(params, plan)) == pytest.approx(float(model_cost), rel=1e-5)


def test_gradients_match_central_finite_differences_on_multi_stage_plans():
    """Elasticities from jax.grad agree with (cost(p·(1+h)) − cost(p·(1−h))) / (2h·cost),
    h = 1e-3, to 1e-2 relative plus 1e-3 absolute (float32 differencing; measured gaps are
    under 2e-4) for every figure."""
    checked_network = 0
    for _, params, schedule in interesting_plans(1, 3):
        padded = jnp.asarray(schedule + [0] * (MAX_LAYERS - len(schedule)), jnp.int32)
        plan, *_ = fix_plan(params, padded)
        cost, grads = cost_and_gradients(params, plan)
        costs, flat = perturbed_costs(params, plan, jnp.asarray([1.0, -1.0]))
        costs = np.asarray(costs, np.float64).reshape(2, -1)
        fd_elasticity = (costs[0] - costs[1]) / (2 * RELATIVE_STEP * float(cost))
        grad_flat = np.asarray(jax.flatten_util.ravel_pytree(grads)[0])
        elasticity = grad_flat * np.asarray(flat) / float(cost)
        np.testing.assert_allclose(elasticity, fd_elasticity, rtol=1e-2, atol=1e-3)
        checked_network += int(np.any(np.abs(np.asarray(grads["net_bandwidth"])) > 0))
    assert checked_network > 0


def test_elasticities_obey_the_scaling_identities():
    """Cost is linear in prices (their elasticities sum to 1) and inversely proportional to a
    common speed-up of every rate with latencies shrunk alike (speeds − latencies sum to −1)."""
    for catalog, params, schedule in interesting_plans(2, 2):
        rows = sensitivity(params, catalog, schedule)["figures"]
        total = lambda names: sum(r["elasticity"] for r in rows if r["figure"] in names)  # noqa: B023
        assert total({"price_per_hour"}) == pytest.approx(1.0, rel=1e-4)
        speeds = {"peak_flops", "mem_bw", "io_bw", "nic_bw", "net_bandwidth"}
        assert total(speeds) - total({"net_latency"}) == pytest.approx(-1.0, rel=1e-3)
        assert all(r["d_cost"] == 0.0 for r in rows if not r["in_plan"])
        assert {r["figure"] for r in rows} == set(FIGURES)


def test_sensitivity_of_an_infeasible_plan_is_a_config_error():
    catalog, params, schedule = interesting_plans(3, 1)[0]
    with pytest.raises(hps.ConfigError, match="infeasible"):
        sensitivity(params.replace(throughput=jnp.float32(1e15)), catalog, schedule)


def test_cli_evaluate_sensitivity_json_and_table(capsys):
    """--json carries "sensitivity" beside the contract keys; the table names each figure."""
    argv = ["evaluate", *SMALL, "--schedule", "cpu,cpu,gpu-a,gpu-a,gpu-a,gpu-a,gpu-a", "--sensitivity"]
    out = run_json(capsys, [*argv, "--json"])
    assert out["feasible"] and out["sensitivity"]["cost"] == pytest.approx(out["cost"], rel=1e-6)
    rows = out["sensitivity"]["figures"]
    assert {"type", "figure", "dimension", "unit", "value", "d_cost", "elasticity"} <= rows[0].keys()
    prices = [r for r in rows if r["figure"] == "price_per_hour"]
    assert sum(r["elasticity"] for r in prices) == pytest.approx(1.0, rel=1e-4)
    from hps.cli.main import main

    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "elasticity" in text and "price_per_hour" in text and "gpu-a" in text
