"""Stochastic beam search against the policy's exact plan probabilities (teacher forcing).

A 4-layer, 2-type instance has 16 plans, few enough to compute every plan's probability under
the policy by teacher forcing (`evaluate_actions`, a path the beam search does not use) and to
check the search's plans against it: all 16 distinct, the plain beam in order of probability,
and the first two beams of the stochastic search distributed as the first two draws without
replacement from the policy."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hps.placement.agent.beam import beam_plans
from hps.placement.agent.policy import PolicyFunctions, PolicySpec
from hps.placement.env.generator import InstanceSplit, generate_instances

LAYERS, TYPES = 4, 2
POLICY = PolicyFunctions(PolicySpec(hidden=16))
SHARPEN = 2.0


@pytest.fixture(scope="module")
def case():
    """(instance, params, plans (16, 4), exact probabilities (16,)) of a small instance under
    a random policy, sharpened so that the first draw and the second differ in law."""
    pool = generate_instances(jax.random.PRNGKey(3), 1, InstanceSplit("beam", LAYERS, LAYERS, TYPES, TYPES, salt=61))
    instance = jax.tree.map(lambda x: x[0], pool)
    params = jax.tree.map(lambda x: SHARPEN * x, POLICY.init(jax.random.PRNGKey(1)))
    from hps.placement.env.env import PlacementEnv

    obs, _ = PlacementEnv().reset(None, instance)
    plans = np.array(list(itertools.product(range(TYPES), repeat=LAYERS)), np.int32)
    padded = np.zeros((len(plans), obs.actions.shape[0]), np.int32)
    padded[:, :LAYERS] = plans

    def log_prob(actions):
        logits, _ = POLICY.evaluate_actions(params, obs, actions)
        log_p = jax.nn.log_softmax(logits, axis=-1)
        return jnp.sum(jnp.take_along_axis(log_p[:LAYERS], actions[:LAYERS, None], axis=-1))

    probs = np.exp(np.asarray(jax.jit(jax.vmap(log_prob))(jnp.asarray(padded)), np.float64))
    assert abs(probs.sum() - 1.0) < 1e-4  # the 16 plans are all the policy can draw
    return instance, params, plans, probs


def _index(plans, rows):
    lookup = {tuple(p): i for i, p in enumerate(plans)}
    return np.array([lookup[tuple(r)] for r in rows])


def test_beams_are_the_distinct_plans_then_repeats_of_the_first(case):
    instance, params, plans, _ = case
    steps = int(instance.placement.max_layers)
    found = np.asarray(beam_plans(POLICY, params, instance, jax.random.PRNGKey(0), steps, 20))
    assert found.shape == (20, steps) and np.all(found[:, LAYERS:] == 0)
    first = found[:16, :LAYERS]
    assert sorted(map(tuple, first)) == sorted(map(tuple, plans))
    np.testing.assert_array_equal(found[16:, :LAYERS], np.broadcast_to(first[0], (4, LAYERS)))


def test_plain_beam_search_lists_plans_by_probability(case):
    instance, params, plans, probs = case
    found = beam_plans(POLICY, params, instance, jax.random.PRNGKey(0), LAYERS, 16, stochastic=False)
    order = probs[_index(plans, np.asarray(found))]
    np.testing.assert_allclose(order, np.sort(probs)[::-1], rtol=1e-4)


def test_first_two_beams_are_draws_without_replacement(case):
    instance, params, plans, probs = case
    draws = 4000
    keys = jax.random.split(jax.random.PRNGKey(5), draws)
    found = jax.jit(jax.vmap(lambda k: beam_plans(POLICY, params, instance, k, LAYERS, 3)))(keys)
    found = np.asarray(found)
    first, second = (_index(plans, found[:, b]) for b in (0, 1))
    assert np.all(first != second)
    # P(first = x) = p(x); P(second = y) = Σ_{x ≠ y} p(x) p(y) / (1 − p(x))
    want_second = probs * np.sum(probs / (1 - probs)) - probs**2 / (1 - probs)
    for got, want in ((first, probs), (second, want_second)):
        freq = np.bincount(got, minlength=len(plans)) / draws
        assert 0.5 * np.abs(freq - want).sum() < 0.05, (freq, want)
    # a sampler with replacement would draw the second as the first: the test tells them apart
    assert 0.5 * np.abs(want_second - probs).sum() > 0.15
