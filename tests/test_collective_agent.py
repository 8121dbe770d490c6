"""The collective policy and its REINFORCE training (docs/environments.md)."""

from __future__ import annotations

import json
from operator import itemgetter

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hps.collective import studies
from hps.collective.agent.evaluation import POLICY_NAMES, evaluate_suite, learned_orders
from hps.collective.agent.policy import CollectivePolicyFunctions, CollectivePolicySpec
from hps.collective.agent.rollout import collective_rollout, replay
from hps.collective.agent.train import (
    CollectiveTrainConfig,
    checkpoint_spec,
    init_collective_state,
    policy_from_spec,
    run_collective_training,
)
from hps.collective.env.env import CollectiveEnv
from hps.collective.env.features import permutation_index
from hps.collective.env.generator import (
    NetworkSplit,
    collective_instance,
    generate_collectives,
)
from hps.collective.model.orders import PERMUTATIONS
from hps.config.limits import MASKED_LOGIT
from hps.config.loaders import load_network
from hps.config.paths import TOPOLOGIES
from hps.rl.driver import TrainState

MAX_CHUNKS = 16
ENV = CollectiveEnv(max_chunks=MAX_CHUNKS)
SMALL = NetworkSplit("agent-small", max_chunks=MAX_CHUNKS, salt=41)
POLICY = CollectivePolicyFunctions(CollectivePolicySpec(hidden=16, themis_prior=0.0))
FAST_COMPILE = {"xla_backend_optimization_level": 0}  # tiny runs: compile time dominates


def fast_jit(fn):
    return jax.jit(fn, compiler_options=FAST_COMPILE)


ROLLOUT = fast_jit(lambda params, instances, key: collective_rollout(POLICY, params, ENV, instances, key, MAX_CHUNKS))


@pytest.fixture(scope="module")
def instances():
    return generate_collectives(jax.random.PRNGKey(0), 64, SMALL)


@pytest.fixture(scope="module")
def trajectory(instances):
    params = POLICY.init(jax.random.PRNGKey(1))
    return params, ROLLOUT(params, instances, jax.random.PRNGKey(2))


def relabel(instance, sigma):
    """The same network with its dimensions relabelled: new dimension j is old dimension sigma[j]."""
    return instance.replace(net=jax.tree.map(lambda x: x[sigma], instance.net))


def test_permutation_probabilities_follow_relabelled_dimensions(instances):
    split = NetworkSplit("4d", min_dims=4, max_dims=4, max_chunks=MAX_CHUNKS, salt=42)
    nets = generate_collectives(jax.random.PRNGKey(3), 4, split)
    params = CollectivePolicyFunctions(CollectivePolicySpec(hidden=16)).init(jax.random.PRNGKey(4))
    apply, observe = fast_jit(POLICY.apply), fast_jit(ENV.observe)
    index = fast_jit(jax.vmap(lambda inverse, p: permutation_index(inverse[p]), in_axes=(None, 0)))
    rng = np.random.default_rng(0)
    perms = jnp.asarray(PERMUTATIONS)
    for i in range(4):
        instance = jax.tree.map(itemgetter(i), nets)
        sigma = jnp.asarray(rng.permutation(4))
        inverse = jnp.argsort(sigma)
        mapped = index(inverse, perms)  # action k -> its relabelled index
        load = jnp.asarray(rng.uniform(0, 1, 4), jnp.float32) * instance.ideal
        obs = observe(3, load, instance)
        moved = observe(3, load[sigma], relabel(instance, sigma))
        themis = mapped[obs.themis_action]  # Themis breaks ties by index; give both the same choice
        moved = moved.replace(
            themis_action=themis,
            perm_features=moved.perm_features.at[:, 0].set((jnp.arange(24) == themis).astype(jnp.float32)),
        )
        logits, moved_logits = apply(params, obs), apply(params, moved)
        np.testing.assert_allclose(moved_logits[mapped], logits, rtol=1e-4, atol=1e-4)


def test_rollout_samples_allowed_permutations_and_reward_is_the_envs(instances, trajectory):
    _, traj = trajectory
    valid = np.asarray(traj.valid)
    assert (valid.sum(1) == np.asarray(instances.n_chunks)).all()
    allowed = np.take_along_axis(np.asarray(traj.obs.action_mask), np.asarray(traj.actions)[..., None], -1)[..., 0]
    assert allowed[valid].all()
    assert (np.asarray(traj.final_actions)[:, :MAX_CHUNKS][valid] == np.asarray(traj.actions)[valid]).all()
    reward, time = fast_jit(jax.vmap(ENV.final_reward))(traj.final_actions, instances)
    np.testing.assert_allclose(traj.reward, reward, rtol=1e-6)
    np.testing.assert_allclose(traj.reward, -np.asarray(traj.time) / np.asarray(instances.ideal), rtol=1e-6)


def test_packed_replay_scores_every_decision_once(instances, trajectory):
    params, traj = trajectory
    capacity = int(np.asarray(instances.n_chunks).sum())
    log_prob, entropy, _ = fast_jit(lambda p, t: replay(POLICY, p, t, capacity))(params, traj)
    logits = fast_jit(jax.vmap(jax.vmap(POLICY.apply, in_axes=(None, 0)), in_axes=(None, 0)))(params, traj.obs)
    log_p = jax.nn.log_softmax(logits, axis=-1)
    direct = jnp.take_along_axis(log_p, traj.actions[..., None], axis=-1)[..., 0]
    expected = np.where(traj.valid, direct, 0.0).sum(1)
    np.testing.assert_allclose(log_prob, expected, rtol=1e-4, atol=1e-4)
    masked = np.asarray(logits)[~np.asarray(traj.obs.action_mask)]
    assert (masked == MASKED_LOGIT).all() and np.all(np.asarray(entropy) >= 0)


def sampled_utilization(params, instances, key):
    traj = ROLLOUT(params, instances, key)
    return float(np.mean(-1.0 / np.asarray(traj.reward)))


@pytest.mark.slow
def test_training_improves_over_the_initial_random_policy(instances):
    config = CollectiveTrainConfig(
        policy=POLICY.spec,
        split=SMALL,
        num_envs=64,
        samples_per_instance=4,
        updates_per_chunk=10,
        num_chunks=2,
        learning_rate=1e-2,
        max_chunks=MAX_CHUNKS,
        seed=5,
    )
    devices = jax.devices()[:1]
    key = jax.random.PRNGKey(6)
    before = sampled_utilization(init_collective_state(config, devices=devices).params, instances, key)
    seen = []
    state, history = run_collective_training(
        config, devices=devices, compiler_options=FAST_COMPILE, on_chunk=lambda i, s, m: seen.append(int(s.step))
    )
    after = sampled_utilization(state.params, instances, key)
    print(f"sampled utilization: before {before:.4f}, after {after:.4f}")
    assert seen == [10, 20] and len(history) == 2
    assert after > 1.12 * before, (before, after)  # 1.18-1.25x over seeds 1, 2, 3, 5
    assert isinstance(state, TrainState) and isinstance(state.params, dict)
    assert all(isinstance(x, jax.Array) for x in jax.tree.leaves(state))
    spec = json.loads(json.dumps(checkpoint_spec(config)))  # what a checkpoint's JSON carries
    assert CollectiveTrainConfig.from_dict(spec["training"]) == config
    assert policy_from_spec(spec) == POLICY and spec["max_chunks"] == MAX_CHUNKS


def test_suite_evaluation_compares_every_policy_with_the_cli_figures():
    params = POLICY.init(jax.random.PRNGKey(7))
    paths = sorted(TOPOLOGIES.glob("networks/*.toml"))[:2]
    result = evaluate_suite(
        POLICY, params, ENV, paths, sizes=(2.0**26,), chunks=(MAX_CHUNKS,), compiler_options=FAST_COMPILE
    )
    assert set(result["mean"]) == set(POLICY_NAMES) and len(result["rows"]) == 2
    for row, path in zip(result["rows"], paths):
        for policy in ("themis", "baseline", "best-fixed"):
            expected, _ = studies.single_allreduce(load_network(path), 2.0**26, MAX_CHUNKS, policy, True)
            np.testing.assert_allclose(row[policy], expected["utilization"], rtol=1e-5)


def test_learned_orders_are_permutations_of_every_dimension():
    params = CollectivePolicyFunctions(CollectivePolicySpec(hidden=16)).init(jax.random.PRNGKey(8))
    network = load_network(sorted(TOPOLOGIES.glob("networks/3d-*.toml"))[0])
    instance = collective_instance(network, 2.0**26, 5)
    orders = np.asarray(learned_orders(POLICY, params, instance, MAX_CHUNKS, compiler_options=FAST_COMPILE))
    assert orders.shape == (MAX_CHUNKS, 4) and all(sorted(row) == [0, 1, 2, 3] for row in orders)
    assert (orders[:, 3] == 3).all()  # the padded dimension stays last
