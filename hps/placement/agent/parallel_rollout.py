"""Rollouts of a batch of parallel-plan environments: one `lax.scan` over decisions, vmapped
over envs; N = I × samples envs, `samples` consecutive envs playing one instance.

Every env plays one episode. The scan runs the env's `max_steps` decisions; an env whose plan
closes earlier auto-resets (the env's select) and its later decisions are marked invalid. Every
env starts together and every stage takes four decisions, so at each step every valid env is at
the same phase: the scan gives it to the env (`observation_at`, `step_at`), which then computes
that phase's features only, and scores plans only where a stage closes. The
trajectory keeps the actions, not the observations: `replay` plays the same actions through
the (deterministic) env again to re-score them under new parameters, which costs a second pass
of the env but no (N, steps, slots, features) array. Run under `jax.enable_x64` (the env's
figures are float64); log-probabilities, values and returns are float32.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from hps.placement.env.parallel_env import MICRO_BATCH, TYPE, ParallelPlanEnv
from hps.rl.batching import over_envs


@struct.dataclass
class ParallelTrajectory:
    """actions, log_probs, values, valid: (N, S) for S = max_steps decisions; valid marks the
    decisions of each env's first episode. episode_reward (N,) float32 (`returns`), cost_ratio
    (N,) cost / reference (inf when infeasible), feasible (N,) bool, plans: the finished plans
    (`Plans` with a leading (N,) axis). samples: envs per instance (static)."""

    actions: jnp.ndarray
    log_probs: jnp.ndarray
    values: jnp.ndarray
    valid: jnp.ndarray
    episode_reward: jnp.ndarray
    cost_ratio: jnp.ndarray
    feasible: jnp.ndarray
    plans: object
    instances: object
    samples: int = struct.field(pytree_node=False, default=1)

    @property
    def returns(self) -> jnp.ndarray:
        return self.episode_reward


def _play(
    policy, params, env: ParallelPlanEnv, instances, key, samples: int, forced=None, greedy=False, temperature=1.0
):
    """The scan both rollout and replay run: actions sampled (or argmax, or `forced` (N, S))."""
    instances = jax.tree.map(jnp.asarray, instances)
    _, first_state = jax.vmap(env.reset, in_axes=(None, 0))(None, instances)
    state = jax.tree.map(lambda x: jnp.repeat(x, samples, axis=0), first_state)
    n_envs = state.phase.shape[0]
    observe = over_envs(env.observation_at, (None, "env", "instance"), samples)
    env_step = over_envs(env.step_at, (None, "env", "env", "instance"), samples)
    reset = over_envs(env.auto_reset, (None, "env", "env", "instance"), samples)
    apply = jax.vmap(policy.apply, in_axes=(None, 0))
    steps = env.max_steps
    plan0 = jax.vmap(env.plan_of, in_axes=(0, None))(state, jax.tree.map(lambda x: x[0], instances))

    def one_step(carry, inputs):
        state, finished, reward_acc, ratio_acc, feasible_acc, plans = carry
        step_key, step = inputs
        phase = jnp.where(step == 0, MICRO_BATCH, TYPE + (step - 1) % 4)  # every env's, while valid
        obs = observe(phase, state, instances)
        logits, value = apply(params, obs)
        log_p = jax.nn.log_softmax(logits, axis=-1)
        if forced is not None:
            action = forced[:, step]
        elif greedy:
            action = jnp.argmax(logits, axis=-1).astype(jnp.int32)
        else:
            action = jax.random.categorical(step_key, logits / temperature).astype(jnp.int32)
        log_prob = jnp.take_along_axis(log_p, action[:, None], axis=-1)[:, 0]
        entropy = -jnp.sum(jnp.where(obs.mask, jnp.exp(log_p) * log_p, 0.0), axis=-1)
        agree = (jnp.argmax(logits, axis=-1) == action).astype(jnp.float32)
        state, reward, done, info = env_step(phase, state, action, instances)
        state = reset(None, done, state, instances)
        valid = ~finished
        record = done & valid
        reward_acc = jnp.where(record, reward.astype(jnp.float32), reward_acc)
        ratio_acc = jnp.where(record, info["cost_ratio"], ratio_acc)
        feasible_acc = jnp.where(record, info["feasible"], feasible_acc)
        plans = jax.tree.map(
            lambda new, old: jnp.where(record.reshape(-1, *([1] * (new.ndim - 1))), new, old), info["plan"], plans
        )
        carry = (state, finished | done, reward_acc, ratio_acc, feasible_acc, plans)
        return carry, (action, log_prob, entropy, value, valid, agree)

    zeros = jnp.zeros((n_envs,), jnp.float32)
    carry = (state, zeros.astype(bool), zeros, jnp.full((n_envs,), jnp.inf), zeros.astype(bool), plan0)
    inputs = (jax.random.split(key, steps), jnp.arange(steps, dtype=jnp.int32))
    carry, outputs = jax.lax.scan(one_step, carry, inputs)
    env_major = lambda x: jnp.swapaxes(x, 0, 1)  # noqa: E731
    return carry, tuple(env_major(x) for x in outputs)


def rollout(policy, params, env: ParallelPlanEnv, instances, key, samples: int = 1, greedy: bool = False,
            temperature: float = 1.0) -> ParallelTrajectory:  # fmt: skip
    """One episode in each of N = I × samples envs of `instances` (leading (I,) axis); actions
    sampled from softmax(logits / temperature) (argmax when `greedy`); log_probs are the
    policy's own (temperature 1)."""
    carry, (actions, log_probs, _, values, valid, _) = _play(
        policy, params, env, instances, key, samples, greedy=greedy, temperature=temperature
    )
    _, _, reward, ratio, feasible, plans = carry
    return ParallelTrajectory(actions, log_probs, values, valid, reward, ratio, feasible, plans, instances, samples)


def replay(policy, params, env: ParallelPlanEnv, trajectory: ParallelTrajectory):
    """Teacher-forced (log_probs, entropy, values), each (N, S), of the trajectory's actions
    under `params`, on the instances it was played on."""
    _, (_, log_probs, entropy, values, _, _) = _play(
        policy, params, env, trajectory.instances, jax.random.PRNGKey(0), trajectory.samples, forced=trajectory.actions
    )
    return log_probs, entropy, values


def play_forced(policy, params, env: ParallelPlanEnv, instances, actions):
    """(log_probs, agreement), each (N, S): the policy's log-probability of each of `actions`
    (N, S), one env an instance of `instances` (leading (N,) axis), and whether its argmax is
    that action."""
    _, (_, log_probs, _, _, _, agree) = _play(policy, params, env, instances, jax.random.PRNGKey(0), 1, forced=actions)
    return log_probs, agree
