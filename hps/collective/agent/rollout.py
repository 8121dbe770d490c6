"""Rollouts of a batch of collective environments: one `lax.scan` over chunks of the env's
`step` (of `CollectiveEnv.with_deferred_reward()`: the simulation runs once per finished episode,
not on every step), vmapped over envs, and the teacher-forced replay of their valid decisions for
the loss.

Trajectories are env-major: (N, S) for N envs and S steps (≥ the largest chunk count).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from hps.collective.env.env import CollectiveEnv, CollectiveObs, identity_orders
from hps.collective.env.generator import CollectiveInstance


@struct.dataclass
class CollectiveTrajectory:
    """One episode per env (N envs, S steps, D dimensions): orders (N, S, D) the order chosen
    at each step, log_probs (N, S) its log-probability under the rollout's policy, valid (N, S);
    obs (N, S, …) each decision's observation; final_orders (N, max_chunks, D) the episode's
    orders; reward (N,) −T / T_ideal; time (N,) s. For the algorithms (`hps.rl.agent`):
    returns (N,) the log utilization and values (N, S) zeros (the policy has no critic)."""

    orders: jnp.ndarray
    log_probs: jnp.ndarray
    valid: jnp.ndarray
    obs: CollectiveObs
    final_orders: jnp.ndarray
    reward: jnp.ndarray
    time: jnp.ndarray

    @property
    def returns(self) -> jnp.ndarray:
        """(N,) log(T_ideal / T): every instance counts by its relative gain."""
        return log_utilization(self.reward)

    @property
    def values(self) -> jnp.ndarray:
        return jnp.zeros_like(self.log_probs)


def log_utilization(reward):
    """log(T_ideal / T) of rewards −T / T_ideal."""
    return -jnp.log(jnp.maximum(-reward, 1e-30))


def collective_rollout(
    policy, params, env: CollectiveEnv, instances: CollectiveInstance, key, num_steps: int, greedy: bool = False
) -> CollectiveTrajectory:
    """Play one episode in each of N envs (instances have a leading (N,) axis) for num_steps ≥
    the largest chunk count; orders sampled from the policy (the argmax at each position when
    `greedy`)."""
    play = env.with_deferred_reward()
    _, state = jax.vmap(play.reset, in_axes=(None, 0))(None, instances)
    n_envs, n_dims = state.load.shape
    decode = jax.vmap(policy.decode, in_axes=(None, 0, 0, None))
    observe = jax.vmap(play.observation)
    step = jax.vmap(play.step, in_axes=(None, 0, 0, 0))

    def one_step(carry, step_key):
        state, finished, final = carry
        obs = observe(state, instances)  # rebuilt from the state: a small carry compiles faster
        order, log_prob, _ = decode(params, obs, jax.random.split(step_key, n_envs), greedy)
        _, state, _, done, info = step(None, state, order, instances)
        final = jnp.where((done & ~finished)[:, None, None], info["orders"], final)
        return (state, finished | done, final), (obs, order, log_prob, ~finished)

    final0 = jnp.broadcast_to(identity_orders(env.max_chunks, n_dims), (n_envs, env.max_chunks, n_dims))
    carry = (state, jnp.zeros((n_envs,), bool), final0)
    carry, (observations, orders, log_probs, valid) = jax.lax.scan(one_step, carry, jax.random.split(key, num_steps))
    final = carry[2]
    reward, time = jax.vmap(env.final_reward)(final, instances)
    env_major = lambda x: jnp.swapaxes(x, 0, 1)  # noqa: E731
    return CollectiveTrajectory(
        orders=env_major(orders),
        log_probs=env_major(log_probs),
        valid=env_major(valid),
        obs=jax.tree.map(env_major, observations),
        final_orders=final,
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
    """(log_probs, entropy, values), each (N, S): the log-probability and entropy of each
    decision's order under params (0 at invalid steps) and zero values (no critic). Only the
    valid decisions are replayed, packed into min(capacity, N·S) slots (capacity ≥ the number
    of valid decisions; see `pack_decisions`)."""
    n_envs, n_steps = trajectory.valid.shape
    env_index, step, mask = pack_decisions(trajectory.valid, min(capacity, n_envs * n_steps))
    pick = lambda x: x[env_index, step]  # noqa: E731
    obs, order = jax.tree.map(pick, trajectory.obs), pick(trajectory.orders)
    log_prob, entropy = jax.vmap(policy.order_log_prob, in_axes=(None, 0, 0))(params, obs, order)
    unpack = lambda x: jnp.zeros((n_envs, n_steps), x.dtype).at[env_index, step].add(jnp.where(mask, x, 0.0))  # noqa: E731
    return unpack(log_prob), unpack(entropy), jnp.zeros((n_envs, n_steps), jnp.float32)
