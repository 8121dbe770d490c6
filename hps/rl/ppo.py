"""PPO: generalised advantage estimation and the clipped surrogate objective.

Per rollout, advantages come from GAE(γ, λ) over each env's decisions with the value head's
estimates (the only reward is the final one, at the last real layer; the episode then ends, so
nothing is bootstrapped past it). λ = 1 gives plain Monte-Carlo advantages R − V(s). The update
then runs `epochs` passes over the envs in random minibatches, each minimising
    −mean[min(ρ·Â, clip(ρ, 1 ± ε)·Â)] + value_coef · ½·mean[(V − G)²] − entropy_coef · mean[H]
with ρ = π_new(a|s) / π_old(a|s), Â the advantages normalised per minibatch and G = A + V_old
the return targets; means run over valid decisions.

`make_update(agent, config, tx)` is the algorithm for any agent of the `hps.rl.agent` contract.
An agent without a critic (agent.critic False) gets REINFORCE's episode advantages instead of
GAE (R minus the mean of the instance's other samples, or minus the batch mean with one sample
per instance) at every decision of the episode; its values are 0, and the value loss (reported,
a constant) is left out of the loss.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hps.rl.agent import Agent, on_policy_update, with_extra_loss
from hps.rl.driver import optimizer_step
from hps.rl.reinforce import advantages, masked_mean


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


def advantage_targets(agent: Agent, config, trajectory):
    """(advantages, return targets), each (N, S): GAE(config.gamma, config.gae_lambda) with the
    rollout's values when the agent has a critic; otherwise the episode advantages of
    `reinforce.advantages` (unnormalised, config.samples_per_instance samples per instance) at
    every valid decision, and the return as target."""
    valid = trajectory.valid
    if agent.critic:
        return gae(trajectory.values, valid, trajectory.returns, config.gamma, config.gae_lambda)
    returns = trajectory.returns
    episode = advantages(returns, 0.0, True, False, config.samples_per_instance)
    return jnp.where(valid, episode[:, None], 0.0), jnp.where(valid, returns[:, None], 0.0)


def make_update(agent: Agent, config, tx):
    """update(state, context, index) -> (state, metrics) of PPO for `agent` (a
    `hps.rl.agent.Agent`), `config` a training config (num_envs, gamma, gae_lambda, ppo_epochs,
    ppo_minibatches, clip_eps, value_coef, entropy_coef) and `tx` its optax optimizer: one
    rollout, then ppo_epochs passes over random partitions of the envs into ppo_minibatches
    minibatches, one optax step each. metrics (means over the minibatches): loss, grad_norm,
    entropy, value_loss, approx_kl, clip_fraction and the extra loss's aux, then the agent's
    episode metrics."""
    value_coef = config.value_coef if agent.critic else 0.0  # no critic: a constant, left out of the loss

    def loss_fn(params, part, key):
        loss, aux = ppo_loss(params, agent.replay, *part, config.clip_eps, value_coef, config.entropy_coef)
        return with_extra_loss(agent, params, key, loss, aux)

    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)

    def learn(state, trajectory, key):
        adv, targets = advantage_targets(agent, config, trajectory)

        def minibatch(carry, inputs):
            params, opt_state = carry
            index, extra_key = inputs
            part = agent.shard(jax.tree.map(lambda x: x[index], (trajectory, adv, targets)))
            (loss, aux), grads = grad_fn(params, part, extra_key)
            params, opt_state, grad_norm = optimizer_step(tx, params, opt_state, grads)
            return (params, opt_state), {"loss": loss, "grad_norm": grad_norm, **aux}

        def epoch(carry, epoch_key):
            indices = minibatch_indices(epoch_key, config.num_envs, config.ppo_minibatches)
            extra_keys = jax.random.split(jax.random.fold_in(epoch_key, 1), config.ppo_minibatches)
            return jax.lax.scan(minibatch, carry, (indices, extra_keys))

        keys = jax.random.split(key, config.ppo_epochs)
        (params, opt_state), metrics = jax.lax.scan(epoch, (state.params, state.opt_state), keys)
        metrics = jax.tree.map(jnp.mean, metrics)
        return state.replace(params=params, opt_state=opt_state), metrics

    return on_policy_update(agent, learn)
