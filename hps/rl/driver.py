"""The chunked training driver both agents share.

The algorithm gives one update, `update(state, context, index) -> (state, metrics)` (the agent's
rollout, the loss and the optax step; `hps.rl.algorithms.make_update` over the `hps.rl.agent`
contract); `scan_chunk` scans it over a chunk of updates with the metrics averaged
inside the scan, and the agent jits that. `run_chunks` is the thin Python loop between jitted
chunks: resume point, time budget, NaN guard and the `on_chunk` hook (progress bars,
checkpoints, evaluation plug in there). Nothing here prints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import struct

from hps.errors import ConfigError, TrainingDiverged
from hps.rl.sharding import env_mesh, put_alike, replicated

AT_LEAST_ONE = (
    "num_envs",
    "updates_per_chunk",
    "num_chunks",
    "samples_per_instance",
    "ppo_epochs",
    "ppo_minibatches",
    "max_chunks",
    "demo_batch",
)
POSITIVE = ("learning_rate", "max_grad_norm", "clip_eps", "top_fraction")
NON_NEGATIVE = ("pool_size", "entropy_coef", "value_coef", "demonstrations", "imitation_coef", "policy_gradient_coef")
UNIT_INTERVAL = ("baseline_decay", "gamma", "gae_lambda", "top_fraction")  # in [0, 1]


def check_train_numbers(config) -> None:
    """ConfigError naming the field of a training config (either trainer's) whose number no run
    can use: counts below 1, non-positive rates, non-finite values, fractions outside [0, 1],
    or num_envs that is not a multiple of samples_per_instance."""
    source = type(config).__name__

    def bad(name: str, problem: str):
        return ConfigError(source, name, f"{problem}, got {getattr(config, name)!r}")

    for name in AT_LEAST_ONE:
        value = getattr(config, name, 1)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise bad(name, "must be an integer >= 1")
    for name in POSITIVE + NON_NEGATIVE + UNIT_INTERVAL:
        value = getattr(config, name, 1)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise bad(name, "must be a finite number")
        if (name in POSITIVE and value <= 0) or (name in NON_NEGATIVE and value < 0):
            raise bad(name, "must be > 0" if name in POSITIVE else "must be >= 0")
        if name in UNIT_INTERVAL and not 0 <= value <= 1:
            raise bad(name, "must be in [0, 1]")
    if config.num_envs % config.samples_per_instance:
        raise bad("num_envs", f"must be a multiple of samples_per_instance ({config.samples_per_instance})")


ALGORITHMS = ("reinforce", "ppo")  # hps.rl.reinforce, hps.rl.ppo
ADVANTAGE_SCALES = ("instance", "batch")  # hps.rl.reinforce.scaled_advantages


@dataclass(frozen=True)
class BaseTrainConfig:
    """The fields every trainer's config has (hashable; each agent's config extends it and
    redeclares the fields whose default differs): num_envs envs per update, samples_per_instance
    consecutive of them sharing an instance; updates_per_chunk updates per jitted chunk,
    num_chunks chunks; Adam at learning_rate after clipping gradients to global norm
    max_grad_norm (`make_optimizer`); the seed; the algorithm ("reinforce" or "ppo",
    `hps.rl.algorithms`) and its options. Both: entropy_coef. REINFORCE (`hps.rl.reinforce`):
    baseline_decay of the moving-average baseline, normalize_advantages and advantage_scale
    ("instance": with samples_per_instance > 1 each instance's advantages are divided by the
    std of its returns, else by the batch's; "batch": all by the batch std of the advantages),
    top_fraction < 1 for the risk-seeking objective, policy_gradient_coef the weight of the
    policy-gradient loss beside an agent's extra loss. PPO (`hps.rl.ppo`): gamma, gae_lambda,
    ppo_epochs, ppo_minibatches (num_envs must be a multiple), clip_eps, value_coef. Checked by
    `check_train_numbers`."""

    num_envs: int = 4096
    samples_per_instance: int = 1
    updates_per_chunk: int = 10
    num_chunks: int = 10
    learning_rate: float = 1e-3
    max_grad_norm: float = 1.0
    entropy_coef: float = 0.01
    baseline_decay: float = 0.9
    normalize_advantages: bool = True
    seed: int = 0
    algorithm: str = "reinforce"
    advantage_scale: str = "instance"
    top_fraction: float = 1.0
    policy_gradient_coef: float = 1.0
    gamma: float = 1.0
    gae_lambda: float = 0.95
    ppo_epochs: int = 4
    ppo_minibatches: int = 4
    clip_eps: float = 0.2
    value_coef: float = 0.5

    def __post_init__(self):
        check_train_numbers(self)
        source = type(self).__name__
        if self.algorithm not in ALGORITHMS:
            raise ConfigError(source, "algorithm", f"must be one of {', '.join(ALGORITHMS)}, got {self.algorithm!r}")
        if self.advantage_scale not in ADVANTAGE_SCALES:
            raise ConfigError(
                source,
                "advantage_scale",
                f"must be one of {', '.join(ADVANTAGE_SCALES)}, got {self.advantage_scale!r}",
            )
        if self.algorithm == "ppo" and self.num_envs % self.ppo_minibatches:
            problem = f"must be a multiple of ppo_minibatches ({self.ppo_minibatches}), got {self.num_envs}"
            raise ConfigError(source, "num_envs", problem)


@struct.dataclass
class TrainState:
    """params: policy parameters (plain dict). opt_state: optax state. baseline: REINFORCE's
    moving-average return. key: raw uint32[2] PRNG key. step: updates done (int32)."""

    params: Any
    opt_state: Any
    baseline: jnp.ndarray
    key: jnp.ndarray
    step: jnp.ndarray


def make_optimizer(config) -> optax.GradientTransformation:
    """Gradient clipping to config.max_grad_norm, then Adam at config.learning_rate (a
    BaseTrainConfig)."""
    return optax.chain(optax.clip_by_global_norm(config.max_grad_norm), optax.adam(config.learning_rate))


def state_sharding(devices=None):
    """Where a TrainState lives: replicated over the env mesh of `devices` (default all)."""
    return replicated(env_mesh(devices))


def fresh_state(config, policy, *, devices=None) -> TrainState:
    """A fresh TrainState from config.seed for policy functions `policy` (anything with
    .init(key) -> params), replicated over the device mesh."""
    key, init_key = jax.random.split(jax.random.PRNGKey(config.seed))
    params = policy.init(init_key)
    state = TrainState(
        params=params,
        opt_state=make_optimizer(config).init(params),
        baseline=jnp.float32(0.0),
        key=key,
        step=jnp.int32(0),
    )
    return put_alike(state, state_sharding(devices))


def optimizer_step(tx, params, opt_state, grads):
    """One optax step: (new params, new optimizer state, global gradient norm)."""
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, optax.tree.norm(grads)


def scan_chunk(update, state, context, updates_per_chunk: int):
    """`updates_per_chunk` calls of update(state, context, index) under `lax.scan`; returns
    (state, the chunk's mean metrics)."""
    indices = jnp.arange(updates_per_chunk)
    state, metrics = jax.lax.scan(lambda s, index: update(s, context, index), state, indices)
    return state, jax.tree.map(jnp.mean, metrics)


@jax.jit
def all_finite(tree) -> jax.Array:
    """True when every leaf of `tree` holds only finite numbers."""
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(leaf)) for leaf in jax.tree.leaves(tree)]))


def divergence(state, metrics: dict) -> str | None:
    """What is not finite after a chunk (its mean loss, the parameters), or None."""
    if not math.isfinite(metrics["loss"]):
        return f"the mean loss is {metrics['loss']}"
    if not bool(all_finite(state.params)):
        return "the policy parameters hold NaN or inf"
    return None


def run_chunks(train_chunk, state, updates_per_chunk: int, num_chunks: int, *, on_chunk=None, stop=None):
    """The Python loop between jitted chunks, shared by every trainer: from chunk
    state.step / updates_per_chunk to num_chunks (so a resumed run ends where an uninterrupted
    one does). on_chunk(chunk_index, state, metrics) runs after each chunk; stop() is asked
    before each but the first run here and ends training early when true (a time budget: at
    least one chunk is trained, so a budget shorter than the compile still trains). Returns (state, history: one
    metrics dict of floats per chunk run here). TrainingDiverged when a chunk's loss or
    parameters are not finite, before on_chunk sees (and a session saves) that state."""
    history = []
    for chunk in range(int(jax.device_get(state.step)) // updates_per_chunk, num_chunks):
        if stop is not None and history and stop():
            break
        first_update = int(jax.device_get(state.step))
        state, metrics = train_chunk(state)
        metrics = {name: float(value) for name, value in jax.device_get(metrics).items()}
        problem = divergence(state, metrics)
        if problem is not None:
            raise TrainingDiverged(
                f"training diverged in chunk {chunk} (updates {first_update}-"
                f"{first_update + updates_per_chunk - 1}): {problem}"
            )
        history.append(metrics)
        if on_chunk is not None:
            on_chunk(chunk, state, metrics)
    return state, history
