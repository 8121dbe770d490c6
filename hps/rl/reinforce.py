"""REINFORCE with a moving-average baseline (HeterPS's method).

One update per rollout: every env contributes one finished episode with return R (the final
reward; earlier rewards are 0). The advantage is R − b, b the exponential moving average of past
batch-mean returns (the first batch sets b to its own mean), optionally divided by the batch's
return standard deviation; the loss is
    −mean_envs[ advantage · Σ_decisions log π(a | s) + entropy_coef · Σ_decisions entropy ]
and b ← decay · b + (1 − decay) · mean(R) afterwards.

`make_update(agent, config, tx)` is the algorithm for any agent of the `hps.rl.agent` contract:
the returns are the trajectory's `returns`, the log-probabilities and entropies its replay's,
and the agent's extra loss (if any) is added to policy_gradient_coef × the loss above.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from hps.rl.agent import Agent, on_policy_update, with_extra_loss
from hps.rl.driver import optimizer_step


def advantages(
    returns, baseline, first_update, normalize: bool, samples_per_instance: int = 1, top_fraction: float = 1.0
):
    """(N,) advantages.

    One sample per instance: R − b (b = batch mean on the first update), scaled by 1/std(R) if
    `normalize`. K > 1 consecutive samples of each instance: R minus the mean of the instance's
    other K − 1 returns (leave-one-out), scaled by 1/std of that instance's returns if
    `normalize` (so instances whose returns differ in scale, e.g. by an infeasible sample, weigh
    alike). top_fraction < 1 (risk-seeking policy gradient, for best-of-K planning): only the
    samples at or above the instance's (1 − top_fraction) quantile learn, with R minus that
    quantile as advantage."""
    if samples_per_instance > 1:
        k = samples_per_instance
        groups = returns.reshape(-1, k)
        if top_fraction < 1.0:
            threshold = jnp.quantile(groups, 1.0 - top_fraction, axis=1, keepdims=True)
            adv = jnp.where(groups >= threshold, groups - threshold, 0.0)
        else:
            adv = groups - (jnp.sum(groups, axis=1, keepdims=True) - groups) / (k - 1)
        if normalize:
            adv = adv / (jnp.std(groups, axis=1, keepdims=True) + 1e-6)
        return adv.reshape(-1)
    adv = returns - jnp.where(first_update, jnp.mean(returns), baseline)
    if normalize:
        adv = adv / (jnp.std(returns) + 1e-6)
    return adv


def scaled_advantages(returns, baseline, first_update, config):
    """(N,) advantages of returns (N,) under a training config's REINFORCE options:
    `advantages` with normalize_advantages, samples_per_instance and top_fraction when
    config.advantage_scale is "instance"; with "batch", the unnormalised advantages divided by
    their batch standard deviation when normalize_advantages."""
    per_instance = config.advantage_scale == "instance"
    normalize = config.normalize_advantages
    adv = advantages(
        returns, baseline, first_update, normalize and per_instance, config.samples_per_instance, config.top_fraction
    )
    if normalize and not per_instance:
        adv = adv / (jnp.std(adv) + 1e-6)
    return adv


def update_baseline(baseline, returns, first_update, decay: float):
    """b ← decay · b + (1 − decay) · mean(R); the first update starts from mean(R)."""
    mean = jnp.mean(returns)
    return jnp.where(first_update, mean, decay * baseline + (1.0 - decay) * mean)


def masked_mean(x, mask):
    """Mean of x over the leading axes that mask covers, of the entries where mask is set (0
    when none): mask of x's shape gives a scalar, mask (N,) of rows x (N, H) gives (H,)."""
    weights = mask.astype(x.dtype).reshape(mask.shape + (1,) * (x.ndim - mask.ndim))
    return jnp.sum(x * weights, axis=tuple(range(mask.ndim))) / jnp.maximum(jnp.sum(weights), 1.0)


def episode_loss(adv, episode_log_prob, episode_entropy, entropy_coef: float):
    """−mean_envs[adv · Σ log π + entropy_coef · Σ entropy], all (N,) per-episode sums."""
    return -jnp.mean(adv * episode_log_prob + entropy_coef * episode_entropy)


def reinforce_loss(params, replay, trajectory, adv, entropy_coef: float):
    """(loss, aux) for advantages adv (N,); aux = {"entropy": mean entropy per decision}. The
    entropy bonus is summed over an episode's decisions, like the log-probabilities.
    replay(params, trajectory) -> (log_probs, entropy, values), each (N, S) per decision;
    trajectory.valid (N, S) marks the real decisions."""
    log_probs, entropy, _ = replay(params, trajectory)
    episode_log_prob = jnp.sum(jnp.where(trajectory.valid, log_probs, 0.0), axis=1)
    episode_entropy = jnp.sum(jnp.where(trajectory.valid, entropy, 0.0), axis=1)
    loss = episode_loss(adv, episode_log_prob, episode_entropy, entropy_coef)
    return loss, {"entropy": masked_mean(entropy, trajectory.valid)}


def make_update(agent: Agent, config, tx):
    """update(state, context, index) -> (state, metrics) of REINFORCE for `agent` (a
    `hps.rl.agent.Agent`), `config` a training config (entropy_coef, baseline_decay,
    normalize_advantages, advantage_scale, samples_per_instance, top_fraction,
    policy_gradient_coef) and `tx` its optax optimizer. metrics: loss, grad_norm, baseline,
    entropy and the extra loss's aux, then the agent's episode metrics."""

    def loss_fn(params, trajectory, adv, key):
        loss, aux = reinforce_loss(params, agent.replay, trajectory, adv, config.entropy_coef)
        return with_extra_loss(agent, params, key, config.policy_gradient_coef * loss, aux)

    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)

    def learn(state, trajectory, key):
        returns = trajectory.returns
        first = state.step == 0
        adv = scaled_advantages(returns, state.baseline, first, config)
        (loss, aux), grads = grad_fn(state.params, trajectory, adv, key)
        params, opt_state, grad_norm = optimizer_step(tx, state.params, state.opt_state, grads)
        baseline = update_baseline(state.baseline, returns, first, config.baseline_decay)
        metrics = {"loss": loss, "grad_norm": grad_norm, "baseline": baseline, **aux}
        return state.replace(params=params, opt_state=opt_state, baseline=baseline), metrics

    return on_policy_update(agent, learn)
