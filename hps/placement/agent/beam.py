"""Distinct plans from the placement policy: stochastic beam search (Gumbel top-k).

Sampling `k` plans independently repeats the likeliest ones: a policy that puts 90 % of its
mass on one plan spends most of 64 samples on it. Stochastic beam search (Kool, van Hoof and
Welling, "Stochastic Beams and Where to Find Them", ICML 2019) draws k plans *without
replacement* from the same distribution, in one pass over the layers with k beams:

- every partial plan y carries its log-probability φ(y) and a Gumbel perturbation G(y) of it;
  the root has φ = G = 0;
- at each layer, a beam's children y + t get φ(y + t) = φ(y) + log p(t | y) and independent
  Gumbels Ĝ_t ~ Gumbel(φ(y + t)), shifted so that their maximum equals the parent's G:
  G(y + t) = −log(exp(−G(y)) − exp(−Z) + exp(−Ĝ_t)), Z = max_t Ĝ_t;
- the k children with the largest G (over all beams) become the next beams.

The k plans left at the last layer are distributed as k draws without replacement from the
policy (the paper's Theorem), so they are k *distinct* plans whenever the instance has k.
Without the noise (`stochastic=False`) the same pass is plain beam search: the k plans of
(approximately) highest probability. A beam that has no distinct plan left (an instance with
fewer than k plans) repeats the first beam's plan. Decisions past the instance's real layers
(a padded bucket) have one allowed action, type 0, so they neither branch nor reorder the beams.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hps.placement.agent.rollout import masked_log_softmax, truncate_obs
from hps.placement.env.env import PlacementEnv


def _log1mexp(x):
    """log(1 − exp(x)) for x ≤ 0, stable at both ends (−inf at x = 0)."""
    return jnp.where(x > -0.6931, jnp.log(-jnp.expm1(x)), jnp.log1p(-jnp.exp(x)))


def shifted_gumbels(parent_g, child_phi, key):
    """(k, T) Gumbels of the children: Gumbel(child_phi) draws shifted so that each row's
    maximum is its parent's `parent_g` (k,), in the numerically stable form of the paper's
    appendix. Children with φ = −inf get −inf."""
    draws = child_phi + jax.random.gumbel(key, child_phi.shape)
    z = jnp.max(draws, axis=-1, keepdims=True)
    v = parent_g[:, None] - draws + _log1mexp(jnp.minimum(draws - z, 0.0))
    shifted = parent_g[:, None] - jnp.maximum(v, 0.0) - jnp.log1p(jnp.exp(-jnp.abs(v)))
    return jnp.where(jnp.isfinite(child_phi), shifted, -jnp.inf)


def beam_plans(policy, params, instance, key, num_steps: int, beams: int, stochastic: bool = True, temperature=1.0):
    """(beams, num_steps) int32: distinct plans of one unbatched `instance`, best-perturbed
    first; num_steps ≥ its real layers (the columns past them are 0). policy: a
    `PolicyFunctions`; temperature divides the logits (as sampling at that temperature)."""
    env = PlacementEnv()
    obs, first_state = env.reset(None, instance)
    obs = truncate_obs(obs, num_steps)
    context = policy.encode(params, obs)
    n_types = obs.action_mask.shape[0]
    n_layers = jnp.sum(instance.placement.layer_mask)
    only_first = jnp.where(jnp.arange(n_types) == 0, 0.0, -jnp.inf)
    tile = lambda x: jnp.broadcast_to(x, (beams, *jnp.shape(x)))  # noqa: E731
    state = jax.tree.map(tile, first_state)
    carry = jax.tree.map(tile, policy.initial_carry(params))
    root = jnp.where(jnp.arange(beams) == 0, 0.0, -jnp.inf)  # one live beam: the empty plan
    decode = jax.vmap(policy.decode, in_axes=(None, None, 0, None, 0))
    env_step = jax.vmap(env.step_env, in_axes=(None, 0, 0, None))

    def one_step(loop, inputs):
        state, carry, previous, phi, g = loop
        step_key, step = inputs
        logits, _, carry = decode(params, context, carry, step, previous)
        log_p = jnp.where(context.action_mask, masked_log_softmax(logits / temperature), -jnp.inf)
        log_p = jnp.where(step < n_layers, log_p, only_first)
        child_phi = phi[:, None] + log_p  # (beams, T)
        child_g = shifted_gumbels(g, child_phi, step_key) if stochastic else child_phi
        g, chosen = jax.lax.top_k(child_g.reshape(-1), beams)
        parent, action = chosen // n_types, (chosen % n_types).astype(jnp.int32)
        phi = child_phi.reshape(-1)[chosen]
        pick = lambda x: x[parent]  # noqa: E731
        state, _, _, _ = env_step(None, jax.tree.map(pick, state), action, instance)
        return (state, jax.tree.map(pick, carry), action, phi, g), (parent, action)

    loop = (state, carry, jnp.full((beams,), -1, jnp.int32), root, root)
    inputs = (jax.random.split(key, num_steps), jnp.arange(num_steps, dtype=jnp.int32))
    (_, _, _, _, g), (parents, actions) = jax.lax.scan(one_step, loop, inputs)

    def back(beam, step_links):
        parent, action = step_links
        return parent[beam], action[beam]

    _, plans = jax.lax.scan(back, jnp.arange(beams), (parents, actions), reverse=True)
    plans = plans.T  # (beams, num_steps)
    return jnp.where(jnp.isfinite(g)[:, None], plans, plans[0])
