"""One compiled program serves every instance of one padded shape: the placement training step,
the planner's sampling and the All-Reduce simulator are traced once for instances of different
sizes (layers, resource types, network dimensions, chunk counts) padded alike.

Each function's Python body is wrapped in `chex.assert_max_traces(n=1)`, which raises on a
second trace, and the jitted function the library itself uses is checked to hold one compiled
entry after both calls."""

from __future__ import annotations

import dataclasses

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hps.collective.model import network_params, simulate_allreduce
from hps.collective.model.orders import baseline_orders
from hps.config.types import Dimension, Network
from hps.placement.agent import planner
from hps.placement.agent import train as placement_train
from hps.placement.agent.policy import PolicyFunctions, PolicySpec
from hps.placement.agent.rollout import rollout
from hps.placement.env import InstanceSplit, PlacementEnv, generate_instances
from tests.helpers import TINY

POLICY = PolicyFunctions(PolicySpec(hidden=16))
FIVE_LAYERS = InstanceSplit("compile-5", 5, 5, 2, 2, salt=41)
EIGHT_LAYERS = InstanceSplit("compile-8", 8, 8, 3, 3, salt=42)


@pytest.fixture(autouse=True)
def fresh_trace_counter():
    chex.clear_trace_counter()
    yield
    chex.clear_trace_counter()


def same_shapes(a, b) -> bool:
    return jax.tree.map(jnp.shape, a) == jax.tree.map(jnp.shape, b)


def layer_counts(instances) -> set[int]:
    return set(np.asarray(instances.placement.layer_mask.sum(-1)).tolist())


def test_a_rollout_compiles_once_for_instances_of_different_sizes():
    """The decision scan training runs (num_steps = the longest model of the distribution) over a
    batch of 5-layer, 2-type instances and one of 8-layer, 3-type instances."""
    five = generate_instances(jax.random.PRNGKey(0), 4, FIVE_LAYERS)
    eight = generate_instances(jax.random.PRNGKey(1), 4, EIGHT_LAYERS)
    assert layer_counts(five) == {5} and layer_counts(eight) == {8} and same_shapes(five, eight)
    params = POLICY.init(jax.random.PRNGKey(2))

    @jax.jit
    @chex.assert_max_traces(n=1)
    def play(params, instances, key):
        return rollout(POLICY, params, PlacementEnv(), instances, key, EIGHT_LAYERS.max_layers, samples=2)

    for instances in (five, eight):
        trajectory = play(params, instances, jax.random.PRNGKey(3))
        assert trajectory.actions.shape == (8, EIGHT_LAYERS.max_layers)
    assert play._cache_size() == 1


def test_a_training_chunk_compiles_once_across_chunks_of_fresh_instances(monkeypatch):
    """make_train's train_chunk plays fresh instances of 4–6 layers and 2–3 types every chunk;
    its rollout is traced once for both chunks and train_chunk holds one compiled program."""
    monkeypatch.setattr(placement_train, "rollout", chex.assert_max_traces(rollout, n=1))
    config = dataclasses.replace(TINY, updates_per_chunk=1)
    train_chunk = placement_train.make_train(config, devices=jax.devices()[:1])
    state = placement_train.init_train_state(config, devices=jax.devices()[:1])
    for _ in range(2):
        state, metrics = train_chunk(state)
        assert np.isfinite(np.asarray(metrics["loss"])).all()
    assert int(state.step) == 2 and train_chunk.program._cache_size() == 1


def test_the_planners_sampling_compiles_once_for_catalogues_of_different_sizes():
    """candidate_schedules on a 6-layer instance of 2 resource types and one of 4 types, both
    padded to the policy's limits. Its layer count is static (the scan runs exactly the
    workload's decisions), so a workload of another length compiles its own program."""
    two = generate_instances(jax.random.PRNGKey(4), 1, InstanceSplit("compile-2t", 6, 6, 2, 2, salt=43))
    four = generate_instances(jax.random.PRNGKey(5), 1, InstanceSplit("compile-4t", 6, 6, 4, 4, salt=44))
    two, four = (jax.tree.map(lambda x: x[0], i) for i in (two, four))
    assert int(two.placement.type_mask.sum()) == 2 and int(four.placement.type_mask.sum()) == 4
    assert same_shapes(two, four)
    params = POLICY.init(jax.random.PRNGKey(6))
    sample = jax.jit(
        chex.assert_max_traces(planner.candidate_schedules.__wrapped__, n=1),
        static_argnames=("policy", "samples", "num_layers"),
    )
    before = planner.candidate_schedules._cache_size()
    for instance in (two, four):
        key = jax.random.PRNGKey(7)
        schedules = sample(POLICY, params, instance, key, 8, 6)
        assert schedules.shape == (9, 6)
        np.testing.assert_array_equal(schedules, planner.candidate_schedules(POLICY, params, instance, key, 8, 6))
    assert sample._cache_size() == 1
    assert planner.candidate_schedules._cache_size() - before <= 1


def test_the_simulator_compiles_once_for_networks_and_chunk_counts_of_different_sizes():
    """simulate_allreduce on a 2-dimensional network in 5 chunks and a 3-dimensional one in 12,
    both padded to MAX_DIMS dimensions and 16 chunk rows."""
    two = network_params(Network("two", (Dimension(4, 100e9, 1e-6, "ring"), Dimension(2, 25e9, 2e-6, "switch"))))
    three = network_params(
        Network(
            "three",
            (
                Dimension(2, 200e9, 5e-7, "ring"),
                Dimension(4, 50e9, 1e-6, "halving_doubling"),
                Dimension(8, 12.5e9, 2e-6, "switch"),
            ),
        )
    )
    assert same_shapes(two, three)
    simulate = jax.jit(chex.assert_max_traces(simulate_allreduce.__wrapped__, n=1), static_argnames="max_chunks")
    before = simulate_allreduce._cache_size()
    for net, chunks in ((two, 5), (three, 12)):
        orders = baseline_orders(net, 16)
        args = (net, jnp.float32(2.0**30), jnp.int32(chunks), orders, jnp.bool_(True))
        result = simulate(*args, max_chunks=16)
        assert float(result.time) > 0
        assert float(result.time) == float(simulate_allreduce(*args, max_chunks=16).time)
    assert simulate._cache_size() == 1
    assert simulate_allreduce._cache_size() - before <= 1
