"""CollectiveEnv (docs/environments.md), in the functional gymnax / Jumanji shape.

    obs, state = env.reset(key, instance)
    obs, state, reward, done, info = env.step(key, state, action, instance)

One step per chunk, in chunk order; the action is the chunk's Reduce-Scatter order (All-Gather
runs it reversed): a permutation (D,) int32 of the network's D padded dimensions (4 or 6). Only
its order of the active dimensions (size > 1) matters, so the env keeps the canonical order
(`features.canonical_order`: the active ones as given, then the size-1 ones in index order).
The state tracks each dimension's load as Themis's greedy does (`chunk_loads`), so the
observation shows the loads and Themis's own order for the chunk.

After the last real chunk the whole collective is simulated with the chosen orders and the
intra-dimension discipline of the env (SCF by default) by the jitted event-driven simulator,
and the reward is −T / T_ideal (so utilization = −1 / reward); earlier rewards are 0. The episode
then auto-resets by select. Instances (`CollectiveInstance`) are the env params, so one compiled
step serves any network, size and chunk count of one padded width under `vmap`; the chunk rows
are fixed by the env's static max_chunks. `reset` is deterministic; the keys are accepted for
the common interface.

Under `vmap`, `step` runs the simulation on every step (a select, not a branch). Rollouts that
play whole episodes step the env of `with_deferred_reward()` instead: the same `step` (dynamics,
auto-reset, observation) paying reward 0, whose info["orders"] hold the finished episode's
orders where done; they score each episode once with `final_reward(info["orders"])`, which is
what `step` pays where done.
"""

from __future__ import annotations

import jax.numpy as jnp
from flax import struct

from hps.collective.env import features
from hps.collective.env.generator import CollectiveInstance
from hps.collective.model.simulator import simulate_allreduce
from hps.collective.model.themis import chunk_loads
from hps.config.limits import MAX_CHUNKS
from hps.rl.env import Environment


@struct.dataclass
class CollectiveState:
    """chunk: index of the next chunk to order (int32). load (D,) s: the bandwidth time the
    ordered chunks put on each dimension (Themis's fluid load). orders (max_chunks, D) int32:
    the canonical order of each ordered chunk, the identity for the rest."""

    chunk: jnp.ndarray
    load: jnp.ndarray
    orders: jnp.ndarray


@struct.dataclass
class CollectiveObs:
    """Fixed-shape observation of one chunk (D padded dimensions; `features`): dim_features
    (D, F_D), dim_mask (D,) (dimensions of size > 1), global_features (F_G,); what the decoder's
    position features need: size (D,) float32 NPUs, bandwidth (D,) bytes/s, latency (D,) s (a
    chunk's latency on each dimension), load and busy (D,) s, scale (3,) = (chunk bytes, c_ideal
    s, T_ideal s); themis_order (D,) int32 (Themis's canonical order for this chunk); chunk ()."""

    dim_features: jnp.ndarray
    dim_mask: jnp.ndarray
    global_features: jnp.ndarray
    size: jnp.ndarray
    bandwidth: jnp.ndarray
    latency: jnp.ndarray
    load: jnp.ndarray
    busy: jnp.ndarray
    scale: jnp.ndarray
    themis_order: jnp.ndarray
    chunk: jnp.ndarray


def identity_orders(max_chunks: int, n_dims: int):
    """(max_chunks, D) int32: every row 0..D−1."""
    return jnp.tile(jnp.arange(n_dims, dtype=jnp.int32), (max_chunks, 1))


class CollectiveEnv(Environment):
    """The chunk-ordering MDP over instances of up to max_chunks chunks (static size)."""

    def __init__(self, max_chunks: int = 64, scf: bool = True, deferred_reward: bool = False):
        if not 1 <= max_chunks <= MAX_CHUNKS:
            raise ValueError(f"max_chunks must be in 1..{MAX_CHUNKS}, got {max_chunks}")
        self.max_chunks = max_chunks
        self.scf = scf
        self.deferred_reward = deferred_reward

    def _key(self):
        return (self.max_chunks, self.scf, self.deferred_reward)

    def __eq__(self, other):  # equal envs share compiled functions (jit static arguments, caches)
        return type(other) is type(self) and self._key() == other._key()

    def __hash__(self):
        return hash((type(self).__name__, *self._key()))

    def with_deferred_reward(self) -> CollectiveEnv:
        """This env with its reward deferred: `step` pays 0 and skips the simulation; the
        episode's reward is `final_reward(info["orders"])` where done."""
        return CollectiveEnv(self.max_chunks, self.scf, deferred_reward=True)

    def initial_state(self, instance: CollectiveInstance) -> CollectiveState:
        n_dims = instance.net.size.shape[-1]
        return CollectiveState(
            chunk=jnp.int32(0),
            load=jnp.zeros_like(instance.net.bandwidth),
            orders=identity_orders(self.max_chunks, n_dims),
        )

    def observe(self, chunk, load, instance: CollectiveInstance) -> CollectiveObs:
        """The observation at chunk `chunk` with loads `load` (D,) s (all a decision needs;
        rollouts keep only these two per step)."""
        net = instance.net
        chunk_bytes, c_ideal = features.chunk_times(instance)
        return CollectiveObs(
            dim_features=features.dim_features(instance, load, chunk),
            dim_mask=net.size > 1,
            global_features=features.global_features(instance, chunk),
            size=net.size.astype(jnp.float32),
            bandwidth=net.bandwidth,
            latency=features.chunk_latency(net),
            load=load,
            busy=features.busy(load, chunk, net),
            scale=jnp.stack([chunk_bytes, c_ideal, jnp.maximum(instance.ideal, features._TINY)]),
            themis_order=features.themis_canonical(load, chunk_bytes, net),
            chunk=jnp.asarray(chunk, jnp.int32),
        )

    def observation(self, state: CollectiveState, instance: CollectiveInstance) -> CollectiveObs:
        return self.observe(state.chunk, state.load, instance)

    def reset_env(self, key, instance: CollectiveInstance) -> CollectiveState:
        del key  # deterministic: the instance is the randomness
        return self.initial_state(instance)

    def transition(self, state: CollectiveState, action, instance: CollectiveInstance):
        """(state after ordering the current chunk by `action` (D,) int32, a permutation of the
        padded dimensions; done after the last real chunk)."""
        net = instance.net
        order = features.canonical_order(jnp.asarray(action, jnp.int32), net.size > 1)
        chunk_bytes, _ = features.chunk_times(instance)
        chunk = jnp.minimum(state.chunk, self.max_chunks - 1)
        new_state = CollectiveState(
            chunk=state.chunk + 1,
            load=state.load + chunk_loads(order, chunk_bytes, net.size, net.bandwidth),
            orders=state.orders.at[chunk].set(order),
        )
        done = new_state.chunk >= jnp.minimum(instance.n_chunks, self.max_chunks)
        return new_state, done

    def simulate(self, orders, instance: CollectiveInstance):
        """SimResult of the collective when chunk c uses orders[c] ((max_chunks, D) int32)."""
        return simulate_allreduce(
            instance.net, instance.total_bytes, instance.n_chunks, orders, self.scf, max_chunks=self.max_chunks
        )

    def final_reward(self, orders, instance: CollectiveInstance):
        """(reward −T / T_ideal, completion time T s) of a finished episode's orders."""
        time = self.simulate(orders, instance).time
        return -time / jnp.maximum(instance.ideal, features._TINY), time

    def step_env(self, key, state: CollectiveState, action, instance: CollectiveInstance):
        """Order the current chunk; returns (state, reward, done, info). info: "orders"
        (max_chunks, D) of the episode that just ended (or so far), "time" (s) and
        "utilization" (T_ideal / T) of those orders (meaningful where done). Under `vmap` the
        simulation runs on every step (a select, not a branch). With deferred_reward the
        reward is 0 and info holds the orders only."""
        del key
        new_state, done = self.transition(state, action, instance)
        if self.deferred_reward:
            return new_state, jnp.zeros((), jnp.float32), done, {"orders": new_state.orders}
        reward, time = self.final_reward(new_state.orders, instance)
        info = {"orders": new_state.orders, "time": time, "utilization": -1.0 / reward}
        return new_state, jnp.where(done, reward, 0.0), done, info
