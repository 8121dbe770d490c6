"""Throughput of the RL loop (for `hps bench rl`): env steps per second, compile time excluded.

Setting: `num_envs` environments of instances with exactly `layers` layers and `types` types
(default 4,096 × 16 × 4), so every decision of the scan is a real env step. Three figures:
- env_steps_per_s: the environment alone (vmapped `PlacementEnv.step` under `lax.scan`, uniform
  random actions) — the simulator's speed;
- rollout_steps_per_s: rollouts with the policy acting (encoder + decoder + env, no gradients);
- train_steps_per_s: whole `train_chunk` calls (rollout, loss, gradients, optax step, and the
  chunk's instance generation), counting the env steps of its rollouts.
"""

from __future__ import annotations

import dataclasses
import time

import jax
import jax.numpy as jnp

from hps.agents.policy import PolicyFunctions
from hps.agents.rollout import rollout
from hps.agents.train import TrainConfig, default_placement_config, init_train_state, make_train
from hps.envs.generators import InstanceSplit, generate_instances
from hps.envs.placement import PlacementEnv


def _timed(fn, *args, repeats: int):
    """(first call seconds, mean seconds of `repeats` further calls); results blocked on."""
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    first = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(repeats):
        jax.block_until_ready(fn(*args))
    return first, (time.perf_counter() - start) / repeats


def env_only(env: PlacementEnv, instances, key, num_steps: int):
    """Sum of rewards over `num_steps` random-action steps of every env (N,)."""
    n_envs = instances.layer_time.shape[0]
    n_types = jnp.sum(instances.placement.type_mask, axis=-1)
    _, state = jax.vmap(env.reset, in_axes=(None, 0))(None, instances)

    def one_step(carry, step_key):
        state, total = carry
        action = jnp.floor(jax.random.uniform(step_key, (n_envs,)) * n_types).astype(jnp.int32)
        _, state, reward, _, _ = jax.vmap(env.step, in_axes=(None, 0, 0, 0))(None, state, action, instances)
        return (state, total + reward), None

    (_, total), _ = jax.lax.scan(one_step, (state, jnp.zeros((n_envs,))), jax.random.split(key, num_steps))
    return total


def measure(config: TrainConfig | None = None, *, num_envs: int = 4096, layers: int = 16, types: int = 4,
            repeats: int = 3, updates_per_chunk: int = 5, devices=None) -> dict:
    """{"env_steps_per_s", "rollout_steps_per_s", "train_steps_per_s", "compile_s", …}."""
    split = InstanceSplit("bench", layers, layers, types, types, salt=99)
    config = config or default_placement_config()
    config = dataclasses.replace(config, split=split, num_envs=num_envs, updates_per_chunk=updates_per_chunk)
    instances = jax.block_until_ready(generate_instances(jax.random.PRNGKey(0), num_envs, split))
    env, policy = PlacementEnv(), PolicyFunctions(config.policy)
    params = policy.init(jax.random.PRNGKey(1))
    steps = num_envs * layers

    env_fn = jax.jit(lambda inst, key: env_only(env, inst, key, layers))
    env_compile, env_s = _timed(env_fn, instances, jax.random.PRNGKey(2), repeats=repeats)
    roll_fn = jax.jit(lambda p, inst, key: rollout(policy, p, env, inst, key, layers).episode_reward)
    roll_compile, roll_s = _timed(roll_fn, params, instances, jax.random.PRNGKey(3), repeats=repeats)

    train_chunk = make_train(config, devices=devices)
    state = init_train_state(config, devices=devices)
    start = time.perf_counter()
    state, _ = jax.block_until_ready(train_chunk(state))
    train_compile = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(repeats):
        state, _ = jax.block_until_ready(train_chunk(state))
    train_s = (time.perf_counter() - start) / repeats
    return {
        "env_steps_per_s": steps / env_s,
        "rollout_steps_per_s": steps / roll_s,
        "train_steps_per_s": steps * updates_per_chunk / train_s,
        "compile_s": env_compile + roll_compile + train_compile,
        "train_compile_s": train_compile,
        "num_envs": num_envs,
        "layers": layers,
        "types": types,
        "algorithm": config.algorithm,
        "encoder": config.policy.encoder,
        "hidden": config.policy.hidden,
        "device": str(jax.devices()[0]),
    }
