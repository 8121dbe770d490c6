"""Rollouts of a batch of collective environments: one `lax.scan` over chunks, vmapped over envs,
and the teacher-forced replay of their valid decisions for the loss.

Trajectories are env-major: (N, S) for N envs and S steps (≥ the largest chunk count).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from hps.collective.env.env import CollectiveEnv, CollectiveObs
from hps.collective.env.generator import CollectiveInstance
from hps.rl import reinforce


@struct.dataclass
class CollectiveTrajectory:
    """One episode per env (N envs, S steps): actions, valid (N, S); obs (N, S, …) each
    decision's observation; final_actions (N, max_chunks) the episode's permutations; reward
    (N,) −T / T_ideal; time (N,) s."""

    actions: jnp.ndarray
    valid: jnp.ndarray
    obs: CollectiveObs
    final_actions: jnp.ndarray
    reward: jnp.ndarray
    time: jnp.ndarray


def collective_rollout(
    policy, params, env: CollectiveEnv, instances: CollectiveInstance, key, num_steps: int, greedy: bool = False
) -> CollectiveTrajectory:
    """Play one episode in each of N envs (instances have a leading (N,) axis) for num_steps ≥
    the largest chunk count; actions sampled from the policy (argmax when `greedy`)."""
    _, state = jax.vmap(env.reset, in_axes=(None, 0))(None, instances)
    n_envs = state.chunk.shape[0]
    apply = jax.vmap(policy.apply, in_axes=(None, 0))
    observe = jax.vmap(env.observe)
    advance = jax.vmap(env.advance)

    def one_step(carry, step_key):
        state, finished, final = carry
        obs = observe(state.chunk, state.load, instances)  # rebuilt: a small carry compiles faster
        logits = apply(params, obs)
        if greedy:
            action = jnp.argmax(logits, axis=-1).astype(jnp.int32)
        else:
            action = jax.random.categorical(step_key, logits).astype(jnp.int32)
        _, state, done, actions = advance(state, action, instances)
        final = jnp.where((done & ~finished)[:, None], actions, final)
        return (state, finished | done, final), (obs, action, ~finished)

    final0 = jnp.full((n_envs, env.max_chunks), -1, jnp.int32)
    carry = (state, jnp.zeros((n_envs,), bool), final0)
    carry, (observations, actions, valid) = jax.lax.scan(one_step, carry, jax.random.split(key, num_steps))
    final = carry[2]
    reward, time = jax.vmap(env.final_reward)(final, instances)
    env_major = lambda x: jnp.swapaxes(x, 0, 1)  # noqa: E731
    return CollectiveTrajectory(
        actions=env_major(actions),
        valid=env_major(valid),
        obs=jax.tree.map(env_major, observations),
        final_actions=final,
        reward=reward,
        time=time,
    )


def pack_decisions(valid, capacity: int):
    """(env (M,), step (M,), mask (M,)) of the first `capacity` valid decisions of valid (N, S),
    env-major; mask is False on padding when fewer are valid (more would be dropped)."""
    n_steps = valid.shape[1]
    flat = jnp.argsort(~valid.reshape(-1), stable=True)[:capacity]
    return flat // n_steps, flat % n_steps, valid.reshape(-1)[flat]


def replay(policy, params, trajectory: CollectiveTrajectory, capacity: int):
    """Per env (N,): the summed log-probabilities and entropies of its episode's decisions
    under params, and the mean entropy per decision. Only the valid decisions are replayed,
    packed into `capacity` slots (≥ the number of valid decisions; see `pack_decisions`)."""
    env_index, step, mask = pack_decisions(trajectory.valid, capacity)
    pick = lambda x: x[env_index, step]  # noqa: E731
    obs, action = jax.tree.map(pick, trajectory.obs), pick(trajectory.actions)
    log_p = jax.nn.log_softmax(jax.vmap(policy.apply, in_axes=(None, 0))(params, obs), axis=-1)
    log_prob = jnp.take_along_axis(log_p, action[:, None], axis=-1)[:, 0]
    entropy = -jnp.sum(jnp.exp(log_p) * log_p, axis=-1)
    n_envs = trajectory.valid.shape[0]
    per_env = lambda x: jax.ops.segment_sum(jnp.where(mask, x, 0.0), env_index, n_envs)  # noqa: E731
    return per_env(log_prob), per_env(entropy), reinforce.masked_mean(entropy, mask)
