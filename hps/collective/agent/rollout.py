"""Rollouts of a batch of collective environments: one `lax.scan` over chunks, vmapped over envs,
and the teacher-forced replay of their valid decisions for the loss.

Trajectories are env-major: (N, S) for N envs and S steps (≥ the largest chunk count).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from hps.collective.env.env import CollectiveEnv, CollectiveObs, identity_orders
from hps.collective.env.generator import CollectiveInstance
from hps.rl import reinforce


@struct.dataclass
class CollectiveTrajectory:
    """One episode per env (N envs, S steps, D dimensions): orders (N, S, D) the order chosen
    at each step, valid (N, S); obs (N, S, …) each decision's observation; final_orders
    (N, max_chunks, D) the episode's orders; reward (N,) −T / T_ideal; time (N,) s."""

    orders: jnp.ndarray
    valid: jnp.ndarray
    obs: CollectiveObs
    final_orders: jnp.ndarray
    reward: jnp.ndarray
    time: jnp.ndarray


def collective_rollout(
    policy, params, env: CollectiveEnv, instances: CollectiveInstance, key, num_steps: int, greedy: bool = False
) -> CollectiveTrajectory:
    """Play one episode in each of N envs (instances have a leading (N,) axis) for num_steps ≥
    the largest chunk count; orders sampled from the policy (the argmax at each position when
    `greedy`)."""
    _, state = jax.vmap(env.reset, in_axes=(None, 0))(None, instances)
    n_envs, n_dims = state.load.shape
    decode = jax.vmap(policy.decode, in_axes=(None, 0, 0, None))
    observe = jax.vmap(env.observe)
    advance = jax.vmap(env.advance)

    def one_step(carry, step_key):
        state, finished, final = carry
        obs = observe(state.chunk, state.load, instances)  # rebuilt: a small carry compiles faster
        order, _, _ = decode(params, obs, jax.random.split(step_key, n_envs), greedy)
        _, state, done, orders = advance(state, order, instances)
        final = jnp.where((done & ~finished)[:, None, None], orders, final)
        return (state, finished | done, final), (obs, order, ~finished)

    final0 = jnp.broadcast_to(identity_orders(env.max_chunks, n_dims), (n_envs, env.max_chunks, n_dims))
    carry = (state, jnp.zeros((n_envs,), bool), final0)
    carry, (observations, orders, valid) = jax.lax.scan(one_step, carry, jax.random.split(key, num_steps))
    final = carry[2]
    reward, time = jax.vmap(env.final_reward)(final, instances)
    env_major = lambda x: jnp.swapaxes(x, 0, 1)  # noqa: E731
    return CollectiveTrajectory(
        orders=env_major(orders),
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
    """Per env (N,): the summed log-probabilities and entropies of its episode's orders under
    params, and the mean entropy per decision. Only the valid decisions are replayed, packed into
    `capacity` slots (≥ the number of valid decisions; see `pack_decisions`)."""
    env_index, step, mask = pack_decisions(trajectory.valid, capacity)
    pick = lambda x: x[env_index, step]  # noqa: E731
    obs, order = jax.tree.map(pick, trajectory.obs), pick(trajectory.orders)
    log_prob, entropy = jax.vmap(policy.order_log_prob, in_axes=(None, 0, 0))(params, obs, order)
    n_envs = trajectory.valid.shape[0]
    per_env = lambda x: jax.ops.segment_sum(jnp.where(mask, x, 0.0), env_index, n_envs)  # noqa: E731
    return per_env(log_prob), per_env(entropy), reinforce.masked_mean(entropy, mask)
