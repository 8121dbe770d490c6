"""PlacementEnv and its instance generators (docs/environments.md)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hps.cli.common import resolve_topology, workload_arg
from hps.config.limits import POLICY_LAYERS, POLICY_TYPES, POLICY_UNITS
from hps.config.loaders import load_catalog
from hps.config.types import Job
from hps.costmodel.schedule import build_params, evaluate_schedules
from hps.costmodel.schedule.allreduce import allreduce_table
from hps.costmodel.schedule.cost import THROUGHPUT, single_type_schedules
from hps.costmodel.schedule.provisioning import allreduce_table as numpy_allreduce_table
from hps.placement.env import (
    HELDOUT,
    HELDOUT_LARGE,
    INFEASIBLE_BASE,
    RATIO_CAP,
    TRAIN,
    InstanceSplit,
    PlacementEnv,
    generate_instances,
)
from hps.placement.env.generator import BATCHES, generation_block
from tests.direct_model import evaluate_direct

ENV = PlacementEnv()
SMALL = InstanceSplit("test-small", 4, 8, 2, 4, salt=11)
LARGE = InstanceSplit("test-large", 28, 32, 5, 6, salt=12)


@pytest.fixture(scope="module")
def instances():
    return generate_instances(jax.random.PRNGKey(3), 128, TRAIN)


def take(tree, i):
    return jax.tree.map(lambda x: x[i], tree)


def real_layers(instances):
    return np.asarray(instances.placement.layer_mask.sum(-1))


def staged_schedules(key, instances, stay=0.7):
    """(N, POLICY_LAYERS) random schedules over each instance's real types, mostly in runs (stages)."""
    n = real_layers(instances).shape[0]
    types = np.asarray(instances.placement.type_mask.sum(-1))
    k1, k2 = jax.random.split(key)
    fresh = np.floor(np.asarray(jax.random.uniform(k1, (n, POLICY_LAYERS))) * types[:, None]).astype(np.int32)
    keep = np.asarray(jax.random.bernoulli(k2, stay, (n, POLICY_LAYERS)))
    for i in range(1, POLICY_LAYERS):
        fresh[:, i] = np.where(keep[:, i], fresh[:, i - 1], fresh[:, i])
    return jnp.asarray(fresh)


def play(instance, schedule):
    """Step one env through `schedule` (POLICY_LAYERS,) from reset: per-step rewards, dones, infos."""
    return play_traced(instance, schedule)[:3]


def play_traced(instance, schedule):
    """`play`, plus the observation and state after every step."""
    _, state = ENV.reset(None, instance)

    def one(state, action):
        obs, state, reward, done, info = ENV.step(None, state, action, instance)
        return state, (reward, done, info, obs, state)

    _, out = jax.lax.scan(one, state, schedule)
    return out


play_batch = jax.jit(jax.vmap(play))
play_one = jax.jit(play_traced)
reset_batch = jax.jit(jax.vmap(ENV.reset, in_axes=(None, 0)))


def final(values, n_layers):
    return np.asarray(values)[np.arange(len(n_layers)), n_layers - 1]


# ---------------------------------------------------------------- generators


@pytest.mark.parametrize("split", [TRAIN, HELDOUT_LARGE])
def test_generators_pad_instances_of_the_split_sizes_to_fixed_shapes(split):
    inst = generate_instances(jax.random.PRNGKey(0), 128, split)
    p = inst.placement
    assert (
        p.layer_mask.shape == (128, POLICY_LAYERS)
        and p.type_mask.shape == (128, POLICY_TYPES)
        and p.unit_grid.shape == (128, POLICY_UNITS)
    )
    layers, types = real_layers(inst), np.asarray(p.type_mask.sum(-1))
    assert layers.min() >= split.min_layers and layers.max() <= split.max_layers
    assert types.min() >= split.min_types and types.max() <= split.max_types
    # real layers and types come first; sparse embedding layers only at the front
    assert np.array_equal(np.asarray(p.layer_mask), np.arange(POLICY_LAYERS) < layers[:, None])
    assert np.array_equal(np.asarray(p.type_mask), np.arange(POLICY_TYPES) < types[:, None])
    sparse = np.asarray(p.layer_sparse)
    first_dense = np.argmin(sparse, axis=1)
    assert sparse[:, 0].all() and not (sparse & (np.arange(POLICY_LAYERS) > first_dense[:, None])).any()
    tables = np.asarray(p.sparse_param_bytes)[sparse] / 2**30
    assert tables.min() >= 16 * 0.999 and tables.max() <= 512 * 1.001
    assert (np.asarray(p.io_bytes)[sparse] < 9 * 1024).all()
    units = np.asarray(p.max_units)[np.asarray(p.type_mask)]
    assert units.min() >= 1 and units.max() <= 64
    assert (units <= np.asarray(p.net_size).prod(-1)[np.asarray(p.type_mask)]).all()
    assert set(np.unique(np.asarray(p.batch))) <= set(BATCHES)


def test_generators_are_keyed_and_splits_never_share_instances():
    a = generate_instances(jax.random.PRNGKey(5), 16, TRAIN)
    b = generate_instances(jax.random.PRNGKey(5), 16, TRAIN)
    c = generate_instances(jax.random.PRNGKey(5), 16, HELDOUT)
    assert all(np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))
    assert not np.array_equal(np.asarray(a.placement.flops), np.asarray(c.placement.flops))


def test_generate_4096_instances_in_blocks_of_one_compiled_program():
    inst = generate_instances(jax.random.PRNGKey(1), 4096, TRAIN)
    assert inst.alpha.shape == (4096, POLICY_TYPES, POLICY_UNITS) and inst.reference_cost.shape == (4096,)
    assert generation_block(4096, (32, 6)) == 256 and generation_block(3, (32, 6)) == 4
    assert generation_block(17, (4096, 32)) == 16  # 64 × 4096 × 32 elements would exceed BLOCK_ELEMENTS


def test_an_instance_does_not_depend_on_how_many_are_generated_with_it():
    """300 instances come in two blocks of 256 (the second cut to 44), 16 in one block of 16:
    the first 16 are the same instances: the same integers and masks, and floats equal to
    float32 rounding (XLA compiles each block size its own way; 16 and 256 differ by 1 ulp)."""
    many = generate_instances(jax.random.PRNGKey(6), 300, TRAIN)
    few = generate_instances(jax.random.PRNGKey(6), 16, TRAIN)
    assert many.reference_cost.shape == (300,)
    for x, y in zip(jax.tree.leaves(many), jax.tree.leaves(few)):
        x, y = np.asarray(x)[:16], np.asarray(y)
        if np.issubdtype(x.dtype, np.floating):
            np.testing.assert_allclose(x, y, rtol=1e-6)
        else:
            np.testing.assert_array_equal(x, y)


def test_generated_allreduce_tables_equal_allreduce_table(instances):
    few = take(instances, slice(0, 16))
    alpha, beta = jax.jit(jax.vmap(allreduce_table))(few.placement)
    np.testing.assert_allclose(few.alpha, alpha, rtol=1e-5, atol=1e-30)
    np.testing.assert_allclose(few.beta, beta, rtol=1e-5, atol=1e-30)


@pytest.mark.parametrize("collective", ["themis", "baseline"])
@pytest.mark.parametrize("catalog, types, units", [("cloud-2024", 6, 64), ("cloud-2024", 16, 512), ("small", 6, 64)])
def test_the_planners_numpy_allreduce_table_equals_the_jnp_one(catalog, types, units, collective):
    """The table `hps plan` builds in numpy (once per distinct used-size vector) is the jnp
    model's, padded types and replica counts past max_units included, to float32 rounding."""
    cat = load_catalog(resolve_topology(catalog, "catalogs", "--catalog"))
    job = Job(batch=1024, throughput=1.0, samples=1e8, collective=collective, chunks=64)
    params = build_params(workload_arg("ctr-dnn"), cat, job, max_layers=32, max_types=types, max_replicas=units)
    alpha, beta = jax.jit(allreduce_table)(params)
    numpy_alpha, numpy_beta = numpy_allreduce_table(cat, job, types, units)
    assert numpy_alpha.shape == numpy_beta.shape == (types, units) and numpy_alpha.dtype == np.float32
    np.testing.assert_allclose(numpy_alpha, alpha, rtol=2e-6, atol=1e-30)
    np.testing.assert_allclose(numpy_beta, beta, rtol=2e-6, atol=1e-30)


def test_reference_cost_is_the_best_feasible_single_type_plan(instances):
    scores = jax.jit(jax.vmap(lambda p: evaluate_schedules(p, single_type_schedules(POLICY_TYPES, POLICY_LAYERS))))(
        instances.placement
    )
    cost = np.where(np.asarray(scores.feasible & instances.placement.type_mask), np.asarray(scores.cost), np.inf)
    np.testing.assert_allclose(instances.reference_cost, cost.min(axis=1), rtol=1e-5)


@pytest.mark.parametrize("split", [TRAIN, HELDOUT, HELDOUT_LARGE])
def test_most_generated_instances_are_feasible_and_the_floor_binds_sometimes(split):
    inst = generate_instances(jax.random.PRNGKey(2), 512, split)  # one compile serves all splits
    feasible = np.isfinite(np.asarray(inst.reference_cost))  # a feasible single-type plan exists
    assert feasible.mean() >= 0.9
    singles = jax.jit(
        jax.vmap(
            lambda i: evaluate_direct(i.placement, single_type_schedules(POLICY_TYPES, POLICY_LAYERS), i.alpha, i.beta)
        )
    )(inst)
    floor_excludes_a_type = ((np.asarray(singles.reason) == THROUGHPUT) & np.asarray(inst.placement.type_mask)).any(1)
    assert 0.2 <= floor_excludes_a_type.mean() <= 0.9


# ---------------------------------------------------------------- environment


def test_step_compiles_once_across_instances_of_different_sizes():
    traces = []

    def counted_step(state, action, instance):
        traces.append(1)
        return ENV.step(None, state, action, instance)

    step = jax.jit(jax.vmap(counted_step))
    for split in (SMALL, LARGE, TRAIN):
        inst = generate_instances(jax.random.PRNGKey(0), 16, split)
        _, state = jax.vmap(ENV.reset, in_axes=(None, 0))(None, inst)
        for _ in range(3):
            _, state, *_ = step(state, jnp.zeros((16,), jnp.int32), inst)
    assert len(traces) == 1


def test_final_reward_is_minus_cost_over_reference_cost_from_evaluate_schedules(instances):
    schedules = staged_schedules(jax.random.PRNGKey(0), instances)
    rewards, dones, info = play_batch(instances, schedules)
    n = real_layers(instances)
    scored = jax.jit(jax.vmap(lambda p, s: evaluate_schedules(p, s[None])))(instances.placement, schedules)
    feasible, cost = np.asarray(scored.feasible)[:, 0], np.asarray(scored.cost)[:, 0]
    ratio = cost / np.asarray(instances.reference_cost)
    reward = final(rewards, n)
    assert np.array_equal(final(info["feasible"], n), feasible)
    assert feasible.mean() > 0.3 and (~feasible).any()
    plain = feasible & (ratio < RATIO_CAP)
    assert plain.sum() >= 10
    np.testing.assert_allclose(reward[plain], -ratio[plain], rtol=1e-5)
    np.testing.assert_allclose(reward[feasible & ~plain], -RATIO_CAP)
    np.testing.assert_allclose(final(info["cost"], n)[feasible], cost[feasible], rtol=1e-5)
    # reward 0 before the last layer, done exactly there
    steps = np.arange(POLICY_LAYERS)
    assert (np.asarray(rewards)[steps < n[:, None] - 1] == 0).all()
    assert np.array_equal(np.asarray(dones)[steps < n[:, None]], (steps == n[:, None] - 1)[steps < n[:, None]])


def test_env_totals_equal_evaluate_direct(instances):
    schedules = staged_schedules(jax.random.PRNGKey(1), instances, stay=0.4)
    _, _, info = play_batch(instances, schedules)
    direct = jax.jit(jax.vmap(lambda i, s: evaluate_direct(i.placement, s[None], i.alpha, i.beta)))(
        instances, schedules
    )
    n = real_layers(instances)
    np.testing.assert_allclose(final(info["throughput"], n), np.asarray(direct.throughput)[:, 0], rtol=1e-5)
    np.testing.assert_allclose(final(info["dollars_per_hour"], n), np.asarray(direct.dollars_per_hour)[:, 0], rtol=1e-5)


def test_infeasible_plans_score_below_every_feasible_plan_and_closer_is_better(instances):
    schedules = staged_schedules(jax.random.PRNGKey(2), instances)
    rewards, _, info = play_batch(instances, schedules)
    n = real_layers(instances)
    reward, feasible = final(rewards, n), final(info["feasible"], n)
    assert reward[~feasible].max() < -INFEASIBLE_BASE < -RATIO_CAP <= reward[feasible].min()
    # raising the floor further makes a throughput-short plan score lower
    one = take(instances, 0)
    schedule = single_type_schedules(POLICY_TYPES, POLICY_LAYERS)[0]
    thr = float(jax.jit(evaluate_schedules)(one.placement, schedule[None]).throughput[0])
    scores = []
    for factor in (1.5, 3.0, 6.0):
        harder = one.replace(placement=one.placement.replace(throughput=jnp.float32(thr * factor)))
        r, _, inf, *_ = play_one(harder, schedule)
        assert not bool(final(inf["feasible"][None], np.array([n[0]]))[0])
        scores.append(float(np.asarray(r)[n[0] - 1]))
    assert scores[0] > scores[1] > scores[2]


def test_episode_auto_resets_to_a_fresh_episode_of_the_same_instance(instances):
    i = int(np.argmax(real_layers(instances) <= POLICY_LAYERS // 2))
    one = take(instances, i)
    n = int(real_layers(instances)[i])
    schedule = jnp.concatenate([staged_schedules(jax.random.PRNGKey(3), instances)[i, :n]] * 2)[:POLICY_LAYERS]
    rewards, dones, _, obs, states = play_one(one, jnp.pad(schedule, (0, POLICY_LAYERS - schedule.shape[0])))
    assert 2 * n <= POLICY_LAYERS
    assert np.flatnonzero(np.asarray(dones)[: 2 * n]).tolist() == [n - 1, 2 * n - 1]
    assert float(rewards[n - 1]) == float(rewards[2 * n - 1]) != 0.0
    fresh_obs, fresh = ENV.reset(None, one)
    after = take((obs, states), n - 1)
    assert int(after[0].layer_index) == 0 and np.array_equal(after[0].actions, fresh_obs.actions)
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(after[1]), jax.tree.leaves(fresh)))


def test_masked_actions_are_never_valid(instances):
    types = np.asarray(instances.placement.type_mask.sum(-1))
    i = int(np.argmax(types < POLICY_TYPES))
    one, n = take(instances, i), int(real_layers(instances)[i])
    obs, _ = ENV.reset(None, one)
    assert np.array_equal(obs.action_mask, one.placement.type_mask)
    good = single_type_schedules(POLICY_TYPES, POLICY_LAYERS)[0]
    for bad_action in (int(types[i]), POLICY_TYPES, -1):  # a padded type slot, and out of range
        schedule = good.at[n // 2].set(bad_action)
        rewards, _, info, *_ = play_one(one, schedule)
        assert not bool(info["feasible"][n - 1])
        assert float(rewards[n - 1]) < -INFEASIBLE_BASE


def test_observations_have_fixed_shapes_with_masks(instances):
    obs, _ = reset_batch(None, instances)
    assert obs.layer_features.shape[:2] == (128, POLICY_LAYERS) and obs.type_features.shape[:2] == (128, POLICY_TYPES)
    assert obs.pair_features.shape[:3] == (128, POLICY_LAYERS, POLICY_TYPES) and obs.actions.shape == (
        128,
        POLICY_LAYERS,
    )
    for array in jax.tree.leaves(obs):
        assert np.isfinite(np.asarray(array, dtype=np.float64)).all()
    padded = ~np.asarray(obs.layer_mask)
    assert (np.asarray(obs.layer_features)[padded] == 0).all()
    assert (np.abs(np.asarray(obs.layer_features)) < 10).all() and (np.abs(np.asarray(obs.type_features)) < 10).all()


def test_a_zoo_workload_on_cloud_2024_plays_with_its_best_single_type_plan_scoring_minus_one():
    from hps.config.loaders import load_catalog
    from hps.config.paths import resolve_topology
    from hps.config.types import Job
    from hps.costmodel.schedule import build_params
    from hps.placement.env import make_instance
    from hps.workloads import build_workload

    workload = build_workload("ctr-dnn")
    catalog = load_catalog(resolve_topology("cloud-2024", "catalogs", "--catalog"))
    d = workload.defaults
    params = build_params(
        workload,
        catalog,
        Job(d.batch, d.throughput, d.samples),
        max_layers=POLICY_LAYERS,
        max_types=POLICY_TYPES,
        max_replicas=POLICY_UNITS,
    )
    instance = jax.jit(make_instance)(params)
    singles = jax.jit(evaluate_schedules)(params, single_type_schedules(POLICY_TYPES, POLICY_LAYERS))
    cost = np.where(np.asarray(singles.feasible & params.type_mask), np.asarray(singles.cost), np.inf)
    best = int(np.argmin(cost))
    rewards, dones, _, _, _ = play_one(instance, jnp.full((POLICY_LAYERS,), best, jnp.int32))
    n = len(workload.layers)
    assert bool(dones[n - 1]) and float(rewards[n - 1]) == pytest.approx(-1.0, rel=1e-5)
