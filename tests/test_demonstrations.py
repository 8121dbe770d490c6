"""Imitation of the search teacher (`hps.placement.agent.demonstrations`) while training placement policies."""

from __future__ import annotations

from operator import itemgetter

import jax
import numpy as np
import pytest

from hps.costmodel.schedule.cost import segment_table
from hps.errors import ConfigError
from hps.methods.search.scoring import RANK_FEASIBLE, score
from hps.placement.agent.demonstrations import (
    climb_plans,
    exact_plans,
    imitation_loss,
    make_demonstrations,
    single_plans,
)
from hps.placement.agent.policy import PolicyFunctions, PolicySpec
from hps.placement.agent.train import TrainConfig, run_training
from hps.placement.env import InstanceSplit, generate_instances
from tests.helpers import search_generated

SMALL = InstanceSplit("demo-small", 4, 7, 2, 4, salt=31)


@pytest.mark.slow
def test_the_climb_teacher_is_never_worse_than_single_type_plans_and_finds_the_optimum_of_small_instances():
    instances = generate_instances(jax.random.PRNGKey(4), 8, SMALL)
    schedules, feasible = jax.device_get(climb_plans(instances))
    optimal = compared = 0
    for i in range(8):
        placement = jax.tree.map(itemgetter(i), instances.placement)
        instance = jax.tree.map(itemgetter(i), instances)
        optimum, one = search_generated("exhaustive", instance), search_generated("single", instance)
        n = int(placement.layer_mask.sum())
        assert feasible[i] == optimum.feasible  # feasible whenever a feasible plan exists
        if not optimum.feasible:
            continue
        teacher = cost_of(placement, schedules[i])
        assert optimum.cost * (1 - 1e-5) <= teacher <= one.cost * (1 + 1e-5)
        compared += 1
        optimal += teacher <= optimum.cost * (1 + 1e-5)
        assert all(0 <= t < int(placement.type_mask.sum()) for t in schedules[i][:n])
    assert compared >= 5 and optimal >= compared - 1, (optimal, compared)


def test_the_exact_teacher_labels_every_instance_with_the_exhaustive_optimum():
    """The exact solver's labels, scored by the jnp model, cost what exhaustive enumeration of
    every schedule finds (to float32), and are feasible exactly where a feasible plan exists."""
    instances = generate_instances(jax.random.PRNGKey(4), 12, SMALL)
    schedules, feasible = jax.device_get(exact_plans(instances))
    compared = 0
    for i in range(12):
        placement = jax.tree.map(itemgetter(i), instances.placement)
        optimum = search_generated("exhaustive", jax.tree.map(itemgetter(i), instances))
        n = int(placement.layer_mask.sum())
        assert feasible[i] == optimum.feasible
        if not optimum.feasible:
            continue
        assert cost_of(placement, schedules[i]) == pytest.approx(float(optimum.cost), rel=1e-5)
        assert all(0 <= t < int(placement.type_mask.sum()) for t in schedules[i][:n])
        assert not schedules[i][n:].any()
        compared += 1
    assert compared >= 8


def test_the_single_type_teacher_labels_the_best_single_type_plan():
    instances = generate_instances(jax.random.PRNGKey(8), 12, SMALL)
    schedules, feasible = jax.device_get(single_plans(instances))
    for i in range(12):
        placement = jax.tree.map(itemgetter(i), instances.placement)
        one = search_generated("single", jax.tree.map(itemgetter(i), instances))
        assert feasible[i] == one.feasible
        n = int(placement.layer_mask.sum())
        assert len(set(schedules[i][:n].tolist())) == 1 and not schedules[i][n:].any()
        if one.feasible:
            assert cost_of(placement, schedules[i]) == pytest.approx(float(one.cost), rel=1e-5)


@jax.jit
def _scored(placement, schedules):
    return score(segment_table(placement), placement, schedules)


def cost_of(placement, schedule) -> float:
    """$ of one schedule under the exact model (the scoring every search uses), jitted: one
    compile for every instance of a split, not one per operation and shape."""
    scored = _scored(placement, np.asarray(schedule)[None])
    assert int(scored.rank[0]) == RANK_FEASIBLE
    return float(scored.primary[0])


def test_imitation_loss_is_the_mean_cross_entropy_of_the_teachers_types():
    demos = make_demonstrations(jax.random.PRNGKey(5), 6, SMALL, SMALL.max_layers)
    policy = PolicyFunctions(PolicySpec(hidden=16))
    params = policy.init(jax.random.PRNGKey(1))
    loss, agreement = imitation_loss(params, policy, demos)
    terms, agree = [], []
    for i in range(6):
        obs = jax.tree.map(itemgetter(i), demos.obs)
        actions = np.asarray(demos.actions[i])
        logits = np.asarray(policy.evaluate_actions(params, obs, demos.actions[i])[0], np.float64)
        top = logits.max(-1, keepdims=True)
        log_p = logits - top - np.log(np.sum(np.exp(logits - top), -1, keepdims=True))
        for step in np.flatnonzero(np.asarray(demos.valid[i])):
            terms.append(-log_p[step, actions[step]])
            agree.append(np.argmax(logits[step]) == actions[step])
    assert len(terms) > 0
    np.testing.assert_allclose(float(loss), np.mean(terms), rtol=1e-5)
    np.testing.assert_allclose(float(agreement), np.mean(agree), rtol=1e-6)


@pytest.mark.slow
def test_training_with_demonstrations_learns_the_teachers_plans():
    pool = generate_instances(jax.random.PRNGKey(6), 64, SMALL)
    config = TrainConfig(
        split=SMALL,
        policy=PolicySpec(hidden=16),
        num_envs=64,
        samples_per_instance=4,
        updates_per_chunk=10,
        num_chunks=4,
        demonstrations=64,
        demo_batch=32,
        imitation_coef=5.0,
        learning_rate=3e-3,
        seed=2,
    )
    _, history = run_training(config, instances=pool, devices=jax.devices()[:1])
    first, last = history[0], history[-1]
    print(first["imitation"], last["imitation"], first["agreement"], last["agreement"])
    assert last["imitation"] < 0.6 * first["imitation"], (first, last)
    assert last["agreement"] > first["agreement"] + 0.05, (first, last)


def test_demonstrations_are_for_reinforce_only():
    with pytest.raises(ConfigError, match="demonstrations"):
        TrainConfig(algorithm="ppo", demonstrations=16)
