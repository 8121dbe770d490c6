"""Rollouts of a batch of placement environments: one `lax.scan` over decisions, vmapped over envs.

Every env plays one episode of its instance. `samples` consecutive envs share an instance (the
training recipe plays each instance 16 times, `hps plan` 64 times): the instance's observation
features and the policy's encoding are computed once per instance, and each decision broadcasts
them over that instance's envs, so N = I × samples envs cost I encodings. The scan runs
`num_steps` decisions (the longest model of the instance distribution); an env with fewer layers
finishes early, auto-resets (the env's select), and its later steps are marked invalid and
ignored. A valid decision s is always the decision for layer s, so the decoder reads the
context at the scan's step index (a slice shared by every env, not a per-env gather).

Trajectories are env-major: (N, S) for N envs and S = num_steps decisions.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from hps.placement.env.env import PlacementEnv, PlacementObs
from hps.rl.batching import over_envs


@struct.dataclass
class Trajectory:
    """actions, log_probs, values, valid: (N, S); valid marks the decisions of each env's first
    episode. episode_reward, cost_ratio (cost / cost_scale, +inf when infeasible), feasible: (N,)
    outcome of that episode (`returns` is episode_reward, for `hps.rl.agent`). obs: (I, …) first
    observation of each instance, truncated to S layers (what `evaluate_actions` needs to replay
    the episodes); samples: envs per instance (static), N = I × samples."""

    actions: jnp.ndarray
    log_probs: jnp.ndarray
    values: jnp.ndarray
    valid: jnp.ndarray
    episode_reward: jnp.ndarray
    cost_ratio: jnp.ndarray
    feasible: jnp.ndarray
    obs: PlacementObs
    samples: int = struct.field(pytree_node=False, default=1)

    @property
    def returns(self) -> jnp.ndarray:
        """(N,) the episode's return for the algorithms (`hps.rl.agent.Trajectory`): its reward."""
        return self.episode_reward


def truncate_obs(obs: PlacementObs, num_layers: int) -> PlacementObs:
    """The observation with its layer axis cut to the first `num_layers` (static) layers; the
    layer axis is the last but one of layer_features and pair_features and the last of
    layer_mask and actions (a leading batch axis is allowed)."""
    return obs.replace(
        layer_features=obs.layer_features[..., :num_layers, :],
        pair_features=obs.pair_features[..., :num_layers, :, :],
        layer_mask=obs.layer_mask[..., :num_layers],
        actions=obs.actions[..., :num_layers],
    )


def masked_log_softmax(logits):
    """log-probabilities (…, T) of masked logits (masked entries stay hugely negative)."""
    return jax.nn.log_softmax(logits, axis=-1)


def rollout(
    policy,
    params,
    env: PlacementEnv,
    instances,
    key,
    num_steps: int,
    greedy: bool = False,
    temperature: float = 1.0,
    samples: int = 1,
) -> Trajectory:
    """Play one episode in each of N = I × samples envs (instances have a leading (I,) axis;
    envs i·samples … (i+1)·samples − 1 play instance i).

    policy: a `PolicyFunctions`; actions are sampled from softmax(logits / temperature) (argmax
    when `greedy`). log_probs are always the policy's own (temperature 1), as training needs."""
    obs, first_state = jax.vmap(env.reset, in_axes=(None, 0))(None, instances)
    obs = truncate_obs(obs, num_steps)
    context = jax.vmap(policy.encode, in_axes=(None, 0))(params, obs)
    n_envs = obs.layer_mask.shape[0] * samples
    state = jax.tree.map(lambda x: jnp.repeat(x, samples, axis=0), first_state)
    initial = jax.vmap(lambda _: policy.initial_carry(params))(jnp.arange(n_envs))
    zeros = jnp.zeros((n_envs,), jnp.float32)
    decode = over_envs(policy.decode, (None, "instance", "env", None, "env"), samples)
    env_step = over_envs(env.step, (None, "env", "env", "instance"), samples)

    def one_step(carry, inputs):
        step_key, step = inputs
        state, policy_carry, previous, finished, reward_acc, ratio_acc, feasible_acc = carry
        logits, value, policy_carry = decode(params, context, policy_carry, step, previous)
        if greedy:
            action = jnp.argmax(logits, axis=-1).astype(jnp.int32)
        else:
            action = jax.random.categorical(step_key, logits / temperature).astype(jnp.int32)
        log_prob = jnp.take_along_axis(masked_log_softmax(logits), action[:, None], axis=-1)[:, 0]
        _, state, reward, done, info = env_step(None, state, action, instances)
        valid = ~finished
        record = done & valid
        reward_acc = jnp.where(record, reward, reward_acc)
        ratio_acc = jnp.where(record, info["cost_ratio"], ratio_acc)
        feasible_acc = jnp.where(record, info["feasible"], feasible_acc)
        policy_carry = jax.tree.map(lambda a, b: jnp.where(done[:, None], a, b), initial, policy_carry)
        previous = jnp.where(done, -1, action)
        carry = (state, policy_carry, previous, finished | done, reward_acc, ratio_acc, feasible_acc)
        return carry, (action, log_prob, value, valid)

    carry = (state, initial, jnp.full((n_envs,), -1, jnp.int32), zeros.astype(bool), zeros, zeros, zeros.astype(bool))
    inputs = (jax.random.split(key, num_steps), jnp.arange(num_steps, dtype=jnp.int32))
    carry, (actions, log_probs, values, valid) = jax.lax.scan(one_step, carry, inputs)
    env_major = lambda x: jnp.swapaxes(x, 0, 1)  # noqa: E731
    return Trajectory(
        actions=env_major(actions),
        log_probs=env_major(log_probs),
        values=env_major(values),
        valid=env_major(valid),
        episode_reward=carry[4],
        cost_ratio=carry[5],
        feasible=carry[6],
        obs=obs,
        samples=samples,
    )


def replay(policy, params, trajectory: Trajectory):
    """Teacher-forced log-probabilities (N, S) of the trajectory's actions, entropies (N, S) and
    values (N, S) under `params` (one encoder pass per instance, one decoder pass per env)."""
    actions = trajectory.actions
    logits, values = policy.evaluate_batch(params, trajectory.obs, actions, trajectory.samples)
    log_p = masked_log_softmax(logits)
    log_probs = jnp.take_along_axis(log_p, actions[..., None], axis=-1)[..., 0]
    entropy = -jnp.sum(jnp.exp(log_p) * log_p, axis=-1)
    return log_probs, entropy, values
