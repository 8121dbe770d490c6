"""CollectiveEnv and its network generator (docs/environments.md: one step per chunk,
action = an order (permutation) of the dimensions, reward at the end = −T / T_ideal)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hps.collective.env.env import CollectiveEnv
from hps.collective.env.features import canonical_order
from hps.collective.env.generator import (
    HELDOUT_NETWORKS,
    TRAIN_NETWORKS,
    NetworkSplit,
    generate_collectives,
    stratified_chunks,
)
from hps.collective.model.network import ideal_time
from hps.collective.model.orders import themis_orders
from hps.collective.model.simulator import simulate_allreduce

MAX_CHUNKS = 16
ENV = CollectiveEnv(max_chunks=MAX_CHUNKS)
SMALL = NetworkSplit("test-small", max_chunks=MAX_CHUNKS, salt=31)
GiB = 2.0**30
FAST_COMPILE = {"xla_backend_optimization_level": 0}  # tiny runs: compile time dominates


def fast_jit(fn):
    return jax.jit(fn, compiler_options=FAST_COMPILE)


def take(tree, index):
    return jax.tree.map(lambda x: x[index], tree)


def random_orders(key, count, length, n_dims):
    """(count, length, n_dims) int32: uniformly random permutations of the padded dimensions."""
    keys = jax.random.split(key, count * length)
    perms = jax.vmap(lambda k: jax.random.permutation(k, n_dims))(keys)
    return perms.reshape(count, length, n_dims).astype(jnp.int32)


def play(instance, actions):
    """Step one env through `actions` (MAX_CHUNKS,) from reset: rewards, dones, infos, states."""
    _, state = ENV.reset(None, instance)

    def one(state, action):
        _, state, reward, done, info = ENV.step(None, state, action, instance)
        return state, (reward, done, info, state)

    return jax.lax.scan(one, state, actions)[1]


play_batch = fast_jit(jax.vmap(play))
reset_batch = fast_jit(jax.vmap(ENV.reset, in_axes=(None, 0)))


@pytest.fixture(scope="module")
def instances():
    return generate_collectives(jax.random.PRNGKey(0), 64, SMALL)


# ---------------------------------------------------------------- generator


def test_generated_networks_follow_the_split_ranges_with_size_one_padding():
    inst = jax.device_get(generate_collectives(jax.random.PRNGKey(1), 512, TRAIN_NETWORKS))
    net = inst.net
    real = net.size > 1
    n_dims = real.sum(1)
    assert set(n_dims) == {2, 3, 4, 5, 6} and net.size.shape == (512, 6)
    assert (real == (np.arange(6)[None, :] < n_dims[:, None])).all()  # real dimensions first
    assert net.size[real].min() == 2 and net.size[real].max() == 16
    bandwidth = net.bandwidth[real] / GiB
    assert bandwidth.min() >= 0.999 and bandwidth.max() <= 1000.1 and np.median(bandwidth) < 100  # log-uniform
    assert net.latency[real].max() <= 10e-6 and (net.latency[~real] == 0).all()
    assert set(net.algorithm[real]) == {0, 1, 2, 3}
    assert inst.total_bytes.min() >= 2**20 * 0.999 and inst.total_bytes.max() <= GiB * 1.001
    assert inst.n_chunks.min() == 4 and inst.n_chunks.max() == 64 and len(set(inst.n_chunks)) > 40
    np.testing.assert_allclose(inst.ideal, jax.vmap(ideal_time)(inst.net, inst.total_bytes), rtol=1e-6)


def test_heldout_split_has_its_own_instances_and_ranges():
    key = jax.random.PRNGKey(2)
    train = jax.device_get(generate_collectives(key, 256, TRAIN_NETWORKS))
    held = jax.device_get(generate_collectives(key, 256, HELDOUT_NETWORKS))
    assert not np.isin(held.total_bytes, train.total_bytes).any()  # a different salt
    real = held.net.size > 1
    assert real.sum(1).min() == 3 and real.sum(1).max() == 6
    assert held.net.size.max() > 16 and held.total_bytes.max() > GiB


def test_stratified_chunk_counts_fix_the_batch_total():
    counts = stratified_chunks(32, TRAIN_NETWORKS)
    assert counts.min() == 4 and counts.max() >= 60 and np.all(np.diff(counts) >= 0)
    for seed in range(2):
        inst = generate_collectives(jax.random.PRNGKey(seed), 32, TRAIN_NETWORKS, stratified=True)
        assert sorted(np.asarray(inst.n_chunks)) == sorted(counts)


# ---------------------------------------------------------------- environment


def test_step_compiles_once_across_networks_of_different_dimension_counts():
    traces = []

    def counted_step(state, action, instance):
        traces.append(1)
        return ENV.step(None, state, action, instance)

    step = fast_jit(jax.vmap(counted_step))
    for n_dims in (1, 2, 4, 6):
        split = NetworkSplit(f"{n_dims}d", min_dims=n_dims, max_dims=n_dims, max_chunks=MAX_CHUNKS)
        inst = generate_collectives(jax.random.PRNGKey(n_dims), 8, split)
        obs, state = reset_batch(None, inst)
        for _ in range(2):
            obs, state, *_ = step(state, obs.themis_order, inst)
    assert len(traces) == 1


def test_final_reward_is_minus_simulated_time_over_ideal_for_the_chosen_orders(instances):
    actions = random_orders(jax.random.PRNGKey(3), 64, MAX_CHUNKS, 6)
    rewards, dones, info, states = jax.device_get(play_batch(instances, actions))
    n_chunks = np.asarray(instances.n_chunks)
    last = n_chunks - 1
    rows = np.arange(len(n_chunks))
    assert (dones.argmax(1) == last).all() and dones.sum(1).min() >= 1
    assert (rewards[np.arange(MAX_CHUNKS)[None, :] < last[:, None]] == 0).all()  # nothing before the end
    active = np.asarray(instances.net.size) > 1
    orders = jax.vmap(jax.vmap(canonical_order, in_axes=(0, None)))(actions, active)
    simulate = fast_jit(
        jax.vmap(lambda i, o: simulate_allreduce(i.net, i.total_bytes, i.n_chunks, o, True, max_chunks=MAX_CHUNKS).time)
    )
    times = simulate(instances, orders)
    expected = -np.asarray(times) / np.asarray(instances.ideal)
    np.testing.assert_allclose(rewards[rows, last], expected, rtol=1e-6)
    np.testing.assert_allclose(info["utilization"][rows, last], -1.0 / expected, rtol=1e-6)
    stored = np.where((np.arange(MAX_CHUNKS) < n_chunks[:, None])[..., None], orders, np.arange(6))
    assert (info["orders"][rows, last] == stored).all()  # canonical orders, the identity past the last chunk
    assert (states.chunk[rows, last] == 0).all() and (states.load[rows, last] == 0).all()  # auto-reset


@fast_jit
@jax.vmap
def themis_played_and_simulated(instance):
    """(time of the episode that always takes obs.themis_order, time of themis_orders)."""
    play = ENV.with_deferred_reward()
    obs, state = play.reset(None, instance)

    def one(carry, _):
        obs, state = carry
        obs, state, reward, done, info = play.step(None, state, obs.themis_order, instance)
        return (obs, state), (done, info["orders"])

    _, (dones, actions) = jax.lax.scan(one, (obs, state), None, length=MAX_CHUNKS)
    played = ENV.final_reward(actions[jnp.argmax(dones)], instance)[1]
    orders = themis_orders(instance.net, instance.total_bytes, instance.n_chunks, max_chunks=MAX_CHUNKS)
    return played, simulate_allreduce(
        instance.net, instance.total_bytes, instance.n_chunks, orders, True, max_chunks=MAX_CHUNKS
    ).time


def test_following_themis_action_plays_themis_orders(instances):
    played, themis = themis_played_and_simulated(instances)
    np.testing.assert_allclose(played, themis, rtol=1e-6)


def test_the_deferred_reward_env_steps_alike_and_pays_what_step_pays_where_done(instances):
    """with_deferred_reward: the same states, observations and done flags as `step`, reward 0,
    and final_reward of its finished orders is the reward `step` pays where done."""
    play = ENV.with_deferred_reward()
    assert play != ENV and play.deferred_reward and play == CollectiveEnv(MAX_CHUNKS, deferred_reward=True)
    plain = fast_jit(jax.vmap(ENV.step, in_axes=(None, 0, 0, 0)))
    deferred = fast_jit(jax.vmap(play.step, in_axes=(None, 0, 0, 0)))
    score = fast_jit(jax.vmap(ENV.final_reward))
    obs, state = reset_batch(None, instances)
    for _ in range(MAX_CHUNKS):
        action = obs.themis_order
        obs, next_state, reward, done, _ = plain(None, state, action, instances)
        obs_d, state_d, reward_d, done_d, info_d = deferred(None, state, action, instances)
        for a, b in zip(jax.tree.leaves((obs, next_state, done)), jax.tree.leaves((obs_d, state_d, done_d))):
            np.testing.assert_array_equal(a, b)
        assert (np.asarray(reward_d) == 0).all()
        finished = np.asarray(done)
        np.testing.assert_allclose(
            np.asarray(score(info_d["orders"], instances)[0])[finished], reward[finished], rtol=1e-6
        )
        state = next_state


def test_orders_are_kept_canonical_and_only_the_order_of_active_dimensions_counts(instances):
    """Two orders with the same order of the active dimensions give the same state and reward."""
    _, state = reset_batch(None, instances)
    active = np.asarray(instances.net.size) > 1
    orders = np.asarray(random_orders(jax.random.PRNGKey(9), 64, 1, 6))[:, 0]
    rng = np.random.default_rng(1)
    shuffled = orders.copy()
    for i in range(64):  # move the size-1 dimensions to other slots, keeping the active ones in order
        slots = rng.permutation(6)
        idle = orders[i][~active[i, orders[i]]]
        keep = orders[i][active[i, orders[i]]]
        row = np.full(6, -1)
        idle_slots = np.sort(slots[: len(idle)])
        row[idle_slots] = rng.permutation(idle)
        row[row < 0] = keep
        shuffled[i] = row
    step = fast_jit(jax.vmap(ENV.transition))
    first, _ = jax.device_get(step(state, jnp.asarray(orders), instances))
    second, _ = jax.device_get(step(state, jnp.asarray(shuffled), instances))
    np.testing.assert_array_equal(first.orders, second.orders)
    np.testing.assert_allclose(first.load, second.load, rtol=1e-6)
    for i in range(64):
        row = first.orders[i, 0]
        n_active = int(active[i].sum())
        assert sorted(row) == list(range(6)) and active[i, row[:n_active]].all()
        assert list(row[n_active:]) == sorted(row[n_active:])  # size-1 dimensions in index order
        assert list(row[:n_active]) == [d for d in orders[i] if active[i, d]]


def test_observation_is_finite_and_padded_dimensions_are_zero(instances):
    obs, state = reset_batch(None, instances)
    step = jax.vmap(ENV.with_deferred_reward().step, in_axes=(None, 0, 0, 0))
    obs, *_ = fast_jit(step)(None, state, obs.themis_order, instances)
    for leaf in jax.tree.leaves(obs):
        assert np.isfinite(np.asarray(leaf, np.float32)).all()
    padded = ~np.asarray(obs.dim_mask)
    assert (np.asarray(obs.dim_features)[padded] == 0).all()
