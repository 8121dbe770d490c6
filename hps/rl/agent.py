"""The contract between an agent and the on-policy algorithms (rejax's OnPolicyMixin split: the
algorithm owns the update, the agent supplies its rollout and the replay of its decisions).

An agent (`Agent`) gives:
- rollout(params, context, index, draw_key, play_key) -> trajectory: the update's batch of
  N envs (drawn with draw_key from the chunk's context, `index` the update's place in the
  chunk), each playing one episode through its env's `step` with actions sampled by play_key;
- replay(params, trajectory) -> (log_probs, entropy, values), each (N, S): the trajectory's
  actions re-scored under `params` (teacher forcing), S the rollout's decision steps;
- extra_loss(params, key) -> (loss (), aux dict), optional: a term the algorithm adds to its
  loss (the placement agent's imitation of demonstrations);
- episode_metrics(trajectory) -> dict of scalars about the episodes played (means);
- shard(tree) -> tree: the env batch (leading axis N) placed on the device mesh;
- critic: whether replay's values come from a value head (PPO's GAE needs one; without it PPO
  uses REINFORCE's episode advantages at every decision).

A trajectory (`Trajectory`) is any pytree with these attributes (fields or properties): log_probs
(N, S) log π_old(a | s) of the actions played, valid (N, S) bool (the decisions of each env's
episode), values (N, S) the value estimates at play time (0 without a critic) and returns (N,),
the episode's return, paid at its last valid decision (earlier rewards are 0). PPO's minibatches
split it by env: with ppo, every leaf must have the leading axis N.

`on_policy_update` is the loop body both algorithms share: split the key, roll out, learn,
count the step. The algorithms (`hps.rl.reinforce.make_update`, `hps.rl.ppo.make_update`, picked
by `hps.rl.algorithms.make_update`) give `update(state, context, index) -> (state, metrics)`,
which `hps.rl.driver.scan_chunk` scans.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import jax


class Trajectory(Protocol):
    """What the algorithms read of a rollout (shapes: N envs, S decision steps)."""

    log_probs: jax.Array  # (N, S) float32
    valid: jax.Array  # (N, S) bool
    values: jax.Array  # (N, S) float32
    returns: jax.Array  # (N,) float32


def _no_metrics(trajectory) -> dict:
    del trajectory
    return {}


def _unsharded(tree):
    return tree


@dataclass(frozen=True)
class Agent:
    """The functions an agent supplies (see the module docstring for their signatures)."""

    rollout: Callable[..., Any]
    replay: Callable[..., tuple]
    extra_loss: Callable[..., tuple] | None = None
    episode_metrics: Callable[[Any], dict] = _no_metrics
    shard: Callable[[Any], Any] = _unsharded
    critic: bool = True


def with_extra_loss(agent: Agent, params, key, loss, aux: dict):
    """(loss + the agent's extra loss, aux with the extra loss's aux) — unchanged without one."""
    if agent.extra_loss is None:
        return loss, aux
    extra, extra_aux = agent.extra_loss(params, key)
    return loss + extra, {**aux, **extra_aux}


def on_policy_update(agent: Agent, learn):
    """update(state, context, index) -> (state, metrics) of one on-policy iteration: the state's
    key splits into (next key, draw key, play key, learn key); the agent rolls out with the
    current parameters, then learn(state, trajectory, learn_key) -> (state, metrics) takes the
    algorithm's step; the agent's episode metrics join its metrics and state.step counts it."""

    def update(state, context, index):
        key, draw_key, play_key, learn_key = jax.random.split(state.key, 4)
        trajectory = agent.rollout(state.params, context, index, draw_key, play_key)
        state, metrics = learn(state, trajectory, learn_key)
        metrics = {**metrics, **agent.episode_metrics(trajectory)}
        return state.replace(key=key, step=state.step + 1), metrics

    return update
