"""One placement policy for every size: padded size buckets, a size-free env and policy, and the
planner on instances past the training bucket (hps.config.limits, hps.placement.agent.planner)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hps.config.limits import (
    MAX_CATALOG_TYPES,
    MAX_UNITS,
    MAX_WORKLOAD_LAYERS,
    POLICY_LAYER_BUCKETS,
    POLICY_TYPE_BUCKETS,
    POLICY_UNIT_BUCKETS,
    policy_bucket,
)
from hps.config.loaders import load_catalog
from hps.config.paths import resolve_topology
from hps.costmodel.schedule.plan import schedule_plan
from hps.costmodel.schedule.provisioning import build_instance
from hps.methods.search.climb_at_scale import climb_at_scale
from hps.methods.search.refine import MAX_ROUNDS as REFINE_ROUNDS
from hps.placement.agent import planner
from hps.placement.agent.policy import PolicyFunctions, PolicySpec
from hps.placement.agent.rollout import rollout
from hps.placement.env import InstanceSplit, PlacementEnv, generate_instances
from hps.studies.placement import default_job
from hps.workloads import build_workload
from tests.direct_model import evaluate_direct
from tests.helpers import evaluated

POLICY = PolicyFunctions(PolicySpec(hidden=16))
PARAMS = POLICY.init(jax.random.PRNGKey(3))
WIDE = InstanceSplit("sizes-wide", 40, 60, 7, 12, salt=41)
"""Past the training bucket in layers and types: padded to 64 layers and 16 types."""


def test_buckets_reach_every_size_the_loaders_accept():
    assert POLICY_LAYER_BUCKETS[-1] == MAX_WORKLOAD_LAYERS and POLICY_TYPE_BUCKETS[-1] == MAX_CATALOG_TYPES
    assert POLICY_UNIT_BUCKETS[-1] == MAX_UNITS
    assert [policy_bucket(n, POLICY_LAYER_BUCKETS) for n in (1, 32, 33, 1000, 4096)] == [32, 32, 64, 1024, 4096]
    assert [policy_bucket(n, POLICY_TYPE_BUCKETS) for n in (2, 6, 7, 17)] == [6, 6, 16, 32]
    with pytest.raises(ValueError, match="4096"):
        policy_bucket(4097, POLICY_LAYER_BUCKETS)


@pytest.mark.parametrize("encoder", ["lstm", "attention"])
def test_one_set_of_parameters_serves_every_bucket(encoder):
    """The parameters have no size: the same pytree is initialised for any spec, and plays
    32 x 6 and 64 x 16 instances; each episode's env outcome is the direct model's score of
    the schedule it played."""
    policy = PolicyFunctions(PolicySpec(encoder=encoder, hidden=16))
    params = policy.init(jax.random.PRNGKey(0))
    small = InstanceSplit("sizes-small", 4, 8, 2, 4, salt=42)
    score = jax.jit(evaluate_direct)
    for split, shape in ((small, (32, 6)), (WIDE, (64, 16))):
        instances = generate_instances(jax.random.PRNGKey(1), 4, split)
        assert instances.placement.layer_mask.shape[1:] == (shape[0],)
        assert instances.placement.type_mask.shape[1:] == (shape[1],)
        play = jax.jit(lambda p, inst, key: rollout(policy, p, PlacementEnv(), inst, key, split.max_layers))  # noqa: B023
        trajectory = play(params, instances, jax.random.PRNGKey(2))
        for i in range(4):
            one = jax.tree.map(lambda x: x[i], instances)  # noqa: B023
            n = int(one.placement.layer_mask.sum())
            schedule = jnp.zeros((shape[0],), jnp.int32).at[:n].set(trajectory.actions[i, :n])
            direct = score(one.placement, schedule[None], one.alpha, one.beta)
            assert bool(direct.feasible[0]) == bool(trajectory.feasible[i])
            if bool(direct.feasible[0]):
                np.testing.assert_allclose(trajectory.cost_ratio[i], direct.cost[0] / one.cost_scale, rtol=1e-5)


def test_the_plan_of_a_workload_past_the_training_bucket_is_scored_exactly():
    """llama3-70b (162 layers) on cloud-2024: planned in the 256-layer bucket; the reported
    schedule has a layer count of entries and is the cheapest of the candidates under the
    float64 numpy model, which picks the same plan as the jnp segment table."""
    workload = build_workload("llama3-70b")
    catalog = load_catalog(resolve_topology("cloud-2024", "catalogs", "catalog"))
    job = default_job(workload)
    assert planner.policy_sizes(workload, catalog)[0] == 256
    dense = planner.plan(POLICY, PARAMS, workload, catalog, job, samples=8, seed=1)
    assert len(dense.schedule) == len(workload.layers) == 162
    assert all(0 <= t < len(catalog.resources) for t in dense.schedule)
    inst = build_instance(workload, catalog, job)
    candidates = planner.candidate_schedules(
        POLICY, PARAMS, planner.make_instance(_padded(workload, catalog, job)), jax.random.PRNGKey(1), 8, 162
    )
    best, feasible = planner.best_by_numpy(inst, candidates)
    assert feasible == dense.feasible_candidates
    chosen = evaluated(inst, schedule_plan(dense.schedule))
    if feasible:
        costs = [evaluated(inst, schedule_plan(row))["cost"] for row in np.asarray(candidates)]
        assert chosen["cost"] == pytest.approx(min(costs), rel=1e-5)
        assert evaluated(inst, schedule_plan(best.schedule))["cost"] == pytest.approx(chosen["cost"], rel=1e-5)


def test_past_the_dense_model_the_planner_scores_and_refines_in_numpy(monkeypatch):
    workload = build_workload("resnet152")
    catalog = load_catalog(resolve_topology("cloud-2024", "catalogs", "catalog"))
    job = default_job(workload)
    dense = planner.plan(POLICY, PARAMS, workload, catalog, job, samples=8, seed=2)
    monkeypatch.setattr(planner, "dense_model_fits", lambda *_: False)
    numpy_plan = planner.plan(POLICY, PARAMS, workload, catalog, job, samples=8, seed=2)
    assert numpy_plan.feasible_candidates == dense.feasible_candidates
    inst = build_instance(workload, catalog, job)
    cost = lambda schedule: evaluated(inst, schedule_plan(schedule))["cost"]  # noqa: E731
    assert cost(numpy_plan.schedule) == pytest.approx(cost(dense.schedule), rel=1e-5)
    refined = planner.plan(POLICY, PARAMS, workload, catalog, job, samples=8, seed=2, polish=True)
    assert refined.sampled_schedule == numpy_plan.schedule and refined.refine_evaluations > 0
    assert cost(refined.schedule) <= cost(numpy_plan.schedule)
    monkeypatch.undo()
    dense_refined = planner.plan(POLICY, PARAMS, workload, catalog, job, samples=8, seed=2, polish=True)
    # the same moves from the same start for as many rounds: the numpy climb ends where the jnp one does
    climbed, _, _ = climb_at_scale(inst, dense_refined.sampled_schedule, max_rounds=REFINE_ROUNDS)
    assert cost(climbed) == pytest.approx(cost(dense_refined.schedule), rel=1e-5)


def _padded(workload, catalog, job):
    layers, types, units = planner.policy_sizes(workload, catalog)
    return planner.build_params(
        workload, catalog, job, max_layers=layers, max_types=types, max_replicas=units, dense_model=False
    )
