"""PPO: generalised advantage estimation and the clipped surrogate objective.

Per rollout, advantages come from GAE(γ, λ) over each env's decisions with the value head's
estimates (the only reward is the final one, at the last real layer; the episode then ends, so
nothing is bootstrapped past it). λ = 1 gives plain Monte-Carlo advantages R − V(s). The update
then runs `epochs` passes over the envs in random minibatches, each minimising
    −mean[min(ρ·Â, clip(ρ, 1 ± ε)·Â)] + value_coef · ½·mean[(V − G)²] − entropy_coef · mean[H]
with ρ = π_new(a|s) / π_old(a|s), Â the advantages normalised per minibatch and G = A + V_old
the return targets; means run over valid decisions.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hps.rl.reinforce import masked_mean


def gae(values, valid, final_reward, gamma: float, lam: float):
    """Advantages and return targets (N, S) from values (N, S), valid (N, S) and the episode's
    final reward (N,), paid at its last valid decision."""
    valid_next = jnp.concatenate([valid[:, 1:], jnp.zeros_like(valid[:, :1])], axis=1)
    last = valid & ~valid_next
    rewards = jnp.where(last, final_reward[:, None], 0.0)
    next_values = jnp.where(valid_next, jnp.concatenate([values[:, 1:], jnp.zeros_like(values[:, :1])], axis=1), 0.0)
    deltas = jnp.where(valid, rewards + gamma * next_values - values, 0.0)

    def backward(carry, inputs):
        delta, keep = inputs
        adv = delta + gamma * lam * carry * keep
        return adv, adv

    inputs = (deltas.T, valid_next.T.astype(values.dtype))
    _, adv = jax.lax.scan(backward, jnp.zeros(values.shape[0]), inputs, reverse=True)
    adv = jnp.where(valid, adv.T, 0.0)
    return adv, jnp.where(valid, adv + values, 0.0)


def normalize(adv, valid):
    """Advantages shifted and scaled to mean 0, std 1 over the valid decisions."""
    mean = masked_mean(adv, valid)
    std = jnp.sqrt(masked_mean((adv - mean) ** 2, valid))
    return jnp.where(valid, (adv - mean) / (std + 1e-6), 0.0)


def ppo_loss(params, replay, trajectory, adv, targets, clip_eps, value_coef, entropy_coef):
    """(loss, aux) of one minibatch; adv, targets (M, S). replay(params, trajectory) ->
    (log_probs, entropy, values), each (M, S); trajectory.valid and trajectory.log_probs (M, S)
    are the rollout's. aux: entropy, value_loss, approx_kl, clip_fraction."""
    log_probs, entropy, values = replay(params, trajectory)
    valid = trajectory.valid
    adv = normalize(adv, valid)
    log_ratio = log_probs - trajectory.log_probs
    ratio = jnp.exp(log_ratio)
    surrogate = jnp.minimum(ratio * adv, jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * adv)
    policy_loss = -masked_mean(surrogate, valid)
    value_loss = 0.5 * masked_mean((values - targets) ** 2, valid)
    mean_entropy = masked_mean(entropy, valid)
    loss = policy_loss + value_coef * value_loss - entropy_coef * mean_entropy
    aux = {
        "entropy": mean_entropy,
        "value_loss": value_loss,
        "approx_kl": masked_mean((ratio - 1.0) - log_ratio, valid),
        "clip_fraction": masked_mean((jnp.abs(ratio - 1.0) > clip_eps).astype(jnp.float32), valid),
    }
    return loss, aux


def minibatch_indices(key, n_envs: int, minibatches: int):
    """(minibatches, n_envs // minibatches) int32: a random partition of the envs."""
    return jax.random.permutation(key, n_envs).reshape(minibatches, n_envs // minibatches)
