"""Throughput of the RL loop (for `hps bench rl`): env steps per second, compile time excluded.

Setting: `num_envs` environments of instances with exactly `layers` layers and `types` types
(`DEFAULT` 4,096 × 16 × 4; `LARGE` 1,024 × 256 × 16, padded to the 256-layer, 16-type bucket),
so every decision of the scan is a real env step. Three figures:
- env_steps_per_s: the environment alone (vmapped `PlacementEnv.step` under `lax.scan`, uniform
  random actions) — the simulator's speed;
- rollout_steps_per_s: rollouts with the policy acting (encoder + decoder + env, no gradients),
  with each instance played by the recipe's samples_per_instance envs, as training plays them
  (the encoder runs once per instance); rollout_distinct_steps_per_s: one instance per env;
- train_steps_per_s: whole `train_chunk` calls (rollout, loss, gradients, optax step, and the
  chunk's instance generation), counting the env steps of its rollouts.
Each figure is from the fastest of `repeats` calls (the machines are shared, and the fastest
call is the one other work disturbed least); the mean is no more than that.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import jax
import jax.numpy as jnp

from hps.bench.timing import timed_calls
from hps.placement.agent.policy import PolicyFunctions
from hps.placement.agent.rollout import rollout
from hps.placement.agent.train import (
    TrainConfig,
    default_placement_config,
    init_train_state,
    make_train,
)
from hps.placement.env.env import PlacementEnv
from hps.placement.env.generator import InstanceSplit, generate_instances


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


GENERATE_BLOCK = 256  # instances per generator call: one compile serves every env count


@dataclass(frozen=True)
class Setting:
    """What every figure runs on: num_envs environments of instances with exactly `layers`
    layers and `types` types; the fastest of `repeats` calls (more until min_seconds passed)."""

    num_envs: int = 4096
    layers: int = 16
    types: int = 4
    repeats: int = 3
    min_seconds: float = 0.0


DEFAULT = Setting()
LARGE = Setting(num_envs=1024, layers=256, types=16, repeats=2)
SETTINGS = {"default": DEFAULT, "large": LARGE}


def bench_config(config: TrainConfig | None, setting: Setting, updates_per_chunk: int) -> TrainConfig:
    """`config` (default: the default recipe) on the setting's instances: num_envs envs of
    exactly `layers` layers and `types` types, with no more demonstrations than one update uses,
    labelled by the single-type teacher (the same update whatever the labels, without minutes
    of labelling by the exact solver on large instances)."""
    split = InstanceSplit("bench", setting.layers, setting.layers, setting.types, setting.types, salt=99)
    config = config or default_placement_config()
    return dataclasses.replace(
        config,
        split=split,
        num_envs=setting.num_envs,
        updates_per_chunk=updates_per_chunk,
        demonstrations=min(config.demonstrations, config.demo_batch),
        teacher="single",
    )


def bench_setup(config: TrainConfig | None, setting: Setting, updates_per_chunk: int):
    """(bench_config, instances (num_envs,) of its split), generated in blocks of GENERATE_BLOCK
    so that a sweep over env counts compiles the generator once."""
    config = bench_config(config, setting, updates_per_chunk)
    keys = jax.random.split(jax.random.PRNGKey(0), -(-setting.num_envs // GENERATE_BLOCK))
    blocks = [generate_instances(key, GENERATE_BLOCK, config.split) for key in keys]
    instances = jax.tree.map(lambda *parts: jnp.concatenate(parts)[: setting.num_envs], *blocks)
    return config, jax.block_until_ready(instances)


def _rate(name: str, setting: Setting, steps_per_call: int, fn, *args) -> dict:
    """{f"{name}_steps_per_s", f"{name}_compile_s"}: env steps per second of fn(*args), each call
    doing steps_per_call of them, from the fastest of the setting's calls."""
    compile_s, seconds = timed_calls(fn, *args, repeats=setting.repeats, min_seconds=setting.min_seconds, fastest=True)
    return {f"{name}_steps_per_s": steps_per_call / seconds, f"{name}_compile_s": compile_s}


def env_rate(setting: Setting = DEFAULT) -> dict:
    """{"env_steps_per_s", "env_compile_s"}: the environment alone, uniform random actions."""
    _, instances = bench_setup(None, setting, 1)
    env_fn = jax.jit(lambda inst, key: env_only(PlacementEnv(), inst, key, setting.layers))
    steps = setting.num_envs * setting.layers
    return _rate("env", setting, steps, env_fn, instances, jax.random.PRNGKey(2))


def rollout_rate(config: TrainConfig | None = None, setting: Setting = DEFAULT, *, samples: int | None = None) -> dict:
    """{"rollout_steps_per_s", "rollout_compile_s"}: rollouts with the policy acting, no gradients.
    samples: envs per instance (default: the config's samples_per_instance, as training draws
    them); num_envs / samples distinct instances are encoded."""
    config, instances = bench_setup(config, setting, 1)
    samples = samples or config.samples_per_instance
    instances = jax.tree.map(lambda x: x[: setting.num_envs // samples], instances)
    env, policy = PlacementEnv(), PolicyFunctions(config.policy)
    params = policy.init(jax.random.PRNGKey(1))
    layers = setting.layers
    roll_fn = jax.jit(lambda p, inst, key: rollout(policy, p, env, inst, key, layers, samples=samples).episode_reward)
    return _rate("rollout", setting, setting.num_envs * layers, roll_fn, params, instances, jax.random.PRNGKey(3))


def train_rate(
    config: TrainConfig | None = None, setting: Setting = DEFAULT, *, updates_per_chunk: int = 5, devices=None
) -> dict:
    """{"train_steps_per_s", "train_compile_s"}: whole `train_chunk` calls (the fastest of
    `repeats`), counting the env steps of their rollouts."""
    config = bench_config(config, setting, updates_per_chunk)  # training generates its own instances
    train_chunk = make_train(config, devices=devices)
    state = init_train_state(config, devices=devices)

    def one_chunk():  # each call continues from the state the last one left
        nonlocal state
        state, metrics = train_chunk(state)
        return state, metrics

    return _rate("train", setting, setting.num_envs * setting.layers * updates_per_chunk, one_chunk)


def measure(
    config: TrainConfig | None = None, setting: Setting = DEFAULT, *, updates_per_chunk: int = 5, devices=None
) -> dict:
    """{"env_steps_per_s", "rollout_steps_per_s" (instances shared as training shares them),
    "rollout_distinct_steps_per_s" (one instance per env), "train_steps_per_s", "compile_s", …}."""
    config = config or default_placement_config()
    env = env_rate(setting)
    roll = rollout_rate(config, setting)
    distinct = rollout_rate(config, setting, samples=1)
    train = train_rate(config, setting, updates_per_chunk=updates_per_chunk, devices=devices)
    return {
        "env_steps_per_s": env["env_steps_per_s"],
        "rollout_steps_per_s": roll["rollout_steps_per_s"],
        "rollout_distinct_steps_per_s": distinct["rollout_steps_per_s"],
        "train_steps_per_s": train["train_steps_per_s"],
        "compile_s": env["env_compile_s"]
        + roll["rollout_compile_s"]
        + distinct["rollout_compile_s"]
        + train["train_compile_s"],
        "train_compile_s": train["train_compile_s"],
        "num_envs": setting.num_envs,
        "samples_per_instance": config.samples_per_instance,
        "layers": setting.layers,
        "types": setting.types,
        "algorithm": config.algorithm,
        "encoder": config.policy.encoder,
        "hidden": config.policy.hidden,
        "device": str(jax.devices()[0]),
    }
