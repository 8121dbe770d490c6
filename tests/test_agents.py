"""Placement policies and their training (docs/environments.md)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hps.config.limits import MASKED_LOGIT, POLICY_TYPES
from hps.costmodel.schedule.params import TYPE_FIELDS
from hps.placement.agent.lstm import lstm_sequence, lstm_update
from hps.placement.agent.policy import PolicyFunctions, PolicySpec
from hps.placement.agent.rollout import replay, rollout, truncate_obs
from hps.placement.agent.train import (
    TrainConfig,
    init_train_state,
    make_train,
    run_training,
)
from hps.placement.env import InstanceSplit, PlacementEnv, generate_instances
from hps.rl.driver import TrainState

ENV = PlacementEnv()
SMALL = InstanceSplit("agents-small", 4, 8, 2, 4, salt=21)
STEPS = SMALL.max_layers


@pytest.fixture(scope="module")
def pool():
    return generate_instances(jax.random.PRNGKey(0), 256, SMALL)


def take(tree, index):
    return jax.tree.map(lambda x: x[index], tree)


@jax.jit
def permute_types(instance, perm):
    """The same instance with its type slots reordered: new slot j holds old slot perm[j]."""
    p = instance.placement
    per_type = {
        name: getattr(p, name)[perm]
        for name in (
            "type_mask",
            *TYPE_FIELDS,
            "max_units",
            "net_size",
            "net_bandwidth",
            "net_latency",
            "net_algorithm",
        )
    }
    per_type.update(measured_time=p.measured_time[:, perm], measured_mask=p.measured_mask[:, perm])
    return instance.replace(
        placement=p.replace(**per_type),
        alpha=instance.alpha[perm],
        beta=instance.beta[perm],
        layer_time=instance.layer_time[:, perm],
    )


def sampled_outcome(policy, params, instances, key):
    """Mean episode reward, mean cost ratio of feasible episodes, feasible fraction."""
    traj = jax.jit(lambda p, i, k: rollout(policy, p, ENV, i, k, STEPS))(params, instances, key)
    feasible = np.asarray(traj.feasible)
    return float(np.mean(traj.episode_reward)), float(np.asarray(traj.cost_ratio)[feasible].mean()), feasible.mean()


# ---------------------------------------------------------------- policy


@pytest.mark.parametrize("encoder", ["lstm", "attention"])
def test_policy_probabilities_follow_the_types_in_any_catalogue_order(pool, encoder):
    policy = PolicyFunctions(PolicySpec(encoder=encoder))
    params = policy.init(jax.random.PRNGKey(1))
    evaluate = jax.jit(policy.evaluate_actions)
    rng = np.random.default_rng(0)
    for i in range(4):
        instance = take(pool, i)
        perm = jnp.asarray(rng.permutation(POLICY_TYPES))  # padded slots land anywhere
        inverse = jnp.argsort(perm)
        n_types = int(instance.placement.type_mask.sum())
        actions = jnp.asarray(rng.integers(0, n_types, STEPS), jnp.int32)
        obs = truncate_obs(ENV.reset(None, instance)[0], STEPS)
        moved = truncate_obs(ENV.reset(None, permute_types(instance, perm))[0], STEPS)
        logits, _ = evaluate(params, obs, actions)
        moved_logits, _ = evaluate(params, moved, inverse[actions])
        probs, moved_probs = jax.nn.softmax(logits), jax.nn.softmax(moved_logits)
        np.testing.assert_allclose(moved_probs, probs[:, perm], atol=2e-5)
        assert (np.asarray(moved_logits)[:, ~np.asarray(moved.action_mask)] == MASKED_LOGIT).all()


def test_apply_scores_the_decision_an_observation_asks_for(pool):
    policy = PolicyFunctions(PolicySpec())
    params = policy.init(jax.random.PRNGKey(2))
    instance = take(pool, 3)
    actions = jnp.zeros((STEPS,), jnp.int32)
    obs, state = ENV.reset(None, instance)
    full, _ = policy.evaluate_actions(params, truncate_obs(obs, STEPS), actions)
    for layer in range(3):
        logits, _ = jax.jit(policy.apply)(params, truncate_obs(obs, STEPS))
        np.testing.assert_allclose(logits, full[layer], rtol=1e-5, atol=1e-5)
        obs, state, *_ = ENV.step(None, state, actions[layer], instance)


def test_rollout_samples_only_real_types_and_replay_reproduces_its_log_probs(pool):
    policy = PolicyFunctions(PolicySpec())
    params = policy.init(jax.random.PRNGKey(3))
    traj = jax.jit(lambda p, i, k: rollout(policy, p, ENV, i, k, STEPS))(params, pool, jax.random.PRNGKey(4))
    valid = np.asarray(traj.valid)
    n_types = np.asarray(pool.placement.type_mask.sum(-1))
    assert (np.asarray(traj.actions)[valid] < np.repeat(n_types, valid.sum(1))).all()
    assert np.array_equal(valid.sum(1), np.asarray(pool.placement.layer_mask.sum(-1)))
    log_probs, _, values = jax.jit(lambda p, t: replay(policy, p, t))(params, traj)
    np.testing.assert_allclose(np.asarray(log_probs)[valid], np.asarray(traj.log_probs)[valid], atol=1e-5)
    np.testing.assert_allclose(np.asarray(values)[valid], np.asarray(traj.values)[valid], rtol=1e-5, atol=1e-5)


def test_instances_shared_by_several_envs_play_as_if_each_env_had_its_own_copy(pool):
    """rollout(samples=4) encodes each instance once; it must equal four envs per copied
    instance, and replay must reproduce its log-probabilities."""
    policy = PolicyFunctions(PolicySpec(hidden=16))
    params = policy.init(jax.random.PRNGKey(5))
    instances, key = take(pool, slice(0, 8)), jax.random.PRNGKey(6)
    copies = jax.tree.map(lambda x: jnp.repeat(x, 4, axis=0), instances)
    shared = jax.jit(lambda p, i, k: rollout(policy, p, ENV, i, k, STEPS, samples=4))(params, instances, key)
    copied = jax.jit(lambda p, i, k: rollout(policy, p, ENV, i, k, STEPS))(params, copies, key)
    assert shared.obs.layer_mask.shape[0] == 8 and shared.actions.shape == copied.actions.shape == (32, STEPS)
    np.testing.assert_array_equal(shared.actions, copied.actions)
    np.testing.assert_allclose(shared.episode_reward, copied.episode_reward, rtol=1e-6)
    valid = np.asarray(shared.valid)
    np.testing.assert_allclose(np.asarray(shared.log_probs)[valid], np.asarray(copied.log_probs)[valid], atol=1e-5)
    log_probs, _, _ = jax.jit(lambda p, t: replay(policy, p, t))(params, shared)
    np.testing.assert_allclose(np.asarray(log_probs)[valid], np.asarray(shared.log_probs)[valid], atol=1e-5)


def test_lstm_sequence_equals_the_cell_run_step_by_step_and_its_gradient_equals_autodiff():
    def step_by_step(gates, kernel):
        zeros = jnp.zeros(gates.shape[1:-1] + (kernel.shape[0],))

        def step(carry, x):
            hidden, cell = lstm_update(x + carry[0] @ kernel, carry[1])
            return (hidden, cell), hidden

        return jax.lax.scan(step, (zeros, zeros), gates)[1]

    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
    gates, kernel = jax.random.normal(k1, (7, 5, 32)), 0.5 * jax.random.normal(k2, (8, 32))
    weights = jax.random.normal(k3, (7, 5, 8))
    np.testing.assert_allclose(lstm_sequence(gates, kernel), step_by_step(gates, kernel), rtol=1e-6, atol=1e-7)
    ours = jax.grad(lambda g, k: jnp.sum(lstm_sequence(g, k) * weights), argnums=(0, 1))(gates, kernel)
    autodiff = jax.grad(lambda g, k: jnp.sum(step_by_step(g, k) * weights), argnums=(0, 1))(gates, kernel)
    for mine, reference in zip(ours, autodiff):
        np.testing.assert_allclose(mine, reference, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- training


@pytest.mark.parametrize("algorithm, chunks, margin", [("reinforce", 8, 3.0), ("ppo", 4, 3.0)])
@pytest.mark.slow
def test_training_on_a_fixed_instance_distribution_lowers_the_cost(pool, algorithm, chunks, margin):
    config = TrainConfig(
        algorithm=algorithm, split=SMALL, num_envs=128, updates_per_chunk=10, num_chunks=chunks, seed=1
    )
    policy = PolicyFunctions(config.policy)
    key = jax.random.PRNGKey(9)
    before = sampled_outcome(policy, init_train_state(config, devices=jax.devices()[:1]).params, pool, key)
    state, history = run_training(config, instances=pool, devices=jax.devices()[:1])
    after = sampled_outcome(policy, state.params, pool, key)
    print(f"{algorithm}: before {before}, after {after}")
    assert len(history) == chunks and int(state.step) == chunks * config.updates_per_chunk
    assert after[0] > before[0] + margin, (before, after)  # mean reward
    assert after[1] < 0.5 * before[1], (before, after)  # mean cost / reference cost of feasible plans
    assert after[2] > max(before[2], 0.9), (before, after)  # feasible fraction


@pytest.mark.parametrize("algorithm", ["reinforce", "ppo"])
@pytest.mark.slow
def test_eight_devices_match_one_device(pool, algorithm):
    assert len(jax.devices()) == 8
    config = TrainConfig(
        algorithm=algorithm,
        split=SMALL,
        num_envs=64,
        pool_size=64,
        updates_per_chunk=2,
        ppo_epochs=2,
        ppo_minibatches=2,
        seed=3,
    )
    instances = None if algorithm == "reinforce" else take(pool, slice(0, 64))  # generated vs fixed pool
    results = []
    for devices in (jax.devices()[:1], jax.devices()):
        train_chunk = make_train(config, devices=devices, instances=instances)
        state = init_train_state(config, devices=devices)
        for _ in range(2):
            state, metrics = train_chunk(state)
        results.append((jax.device_get(state), jax.device_get(metrics)))
    (one, one_metrics), (eight, eight_metrics) = results
    for a, b in zip(jax.tree.leaves(one.params), jax.tree.leaves(eight.params)):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-6)
    for name in ("reward", "feasible", "cost_ratio"):
        np.testing.assert_allclose(one_metrics[name], eight_metrics[name], rtol=1e-4)


@pytest.mark.slow
def test_train_state_is_a_plain_pytree_and_run_training_reports_every_chunk(pool):
    config = TrainConfig(split=SMALL, num_envs=32, updates_per_chunk=2, num_chunks=3)
    seen = []
    state, history = run_training(
        config,
        instances=take(pool, slice(0, 32)),
        devices=jax.devices()[:1],
        on_chunk=lambda i, s, m: seen.append((i, int(s.step), sorted(m))),
    )
    assert isinstance(state, TrainState) and isinstance(state.params, dict)
    assert [s[:2] for s in seen] == [(0, 2), (1, 4), (2, 6)]
    assert {"reward", "cost_ratio", "feasible", "loss", "entropy"} <= set(seen[0][2])
    assert all(isinstance(x, jax.Array) for x in jax.tree.leaves(state))
    assert all(np.isfinite(v) for m in history for v in m.values())
    assert dataclasses.asdict(config)["policy"]["hidden"] == 64  # JSON-able config


def test_group_advantages_are_leave_one_out_per_instance_and_risk_seeking_keeps_the_best():
    from hps.rl.reinforce import advantages

    returns = jnp.asarray([-1.0, -2.0, -3.0, -6.0, -20.0, -20.0, -20.0, -20.0])  # 2 instances x 4 samples
    loo = np.asarray(advantages(returns, 0.0, True, False, samples_per_instance=4))
    # instance 0: mean of the other three: -11/3, -10/3, -3, -2; instance 1: all equal
    np.testing.assert_allclose(loo, [-1 + 11 / 3, -2 + 10 / 3, 0.0, -4.0, 0, 0, 0, 0], atol=1e-6)
    scaled = np.asarray(advantages(returns, 0.0, True, True, samples_per_instance=4))
    np.testing.assert_allclose(scaled[:4], loo[:4] / np.std([-1.0, -2.0, -3.0, -6.0]), rtol=1e-5)
    assert np.all(scaled[4:] == 0)  # a group of equal returns teaches nothing, however scaled
    top = np.asarray(advantages(returns, 0.0, True, False, samples_per_instance=4, top_fraction=0.5))
    median = np.quantile([-1.0, -2.0, -3.0, -6.0], 0.5)  # -2.5: the best two samples learn
    np.testing.assert_allclose(top[:4], [-1 - median, -2 - median, 0, 0], atol=1e-6)


@pytest.mark.slow
def test_comparison_with_the_optimum_never_beats_exhaustive_search():
    """The evaluation harness's figures are consistent: no plan beats the exact optimum (which
    exhaustive search finds too, on every instance),
    the best of the samples (which include the greedy plan) is no worse than the greedy plan."""
    from hps.placement.agent.evaluation import compare_with_optimum

    policy = PolicyFunctions(PolicySpec(hidden=16))
    params = policy.init(jax.random.PRNGKey(5))
    result = compare_with_optimum(policy, params, count=3, samples=8, split=InstanceSplit("cmp", 4, 5, 2, 3, salt=41))
    assert result.instances == 3 and result.evaluations_per_instance == 9
    assert result.found_feasible <= result.with_feasible and result.greedy_feasible <= result.found_feasible
    assert result.sampled_ratio >= 1 - 1e-6 and result.genetic_ratio >= 1 - 1e-6
    assert result.median_sampled_ratio <= result.worst_sampled_ratio
    assert result.exhaustive_agrees == 3 and result.exact_seconds > 0  # the exact optimum, checked
    if result.greedy_feasible == result.found_feasible:
        assert result.sampled_ratio <= result.greedy_ratio + 1e-6
