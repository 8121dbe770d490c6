"""CollectiveEnv (docs/environments.md), in the functional gymnax / Jumanji shape.

    obs, state = env.reset(key, instance)
    obs, state, reward, done, info = env.step(key, state, action, instance)

One step per chunk, in chunk order; the action is an index into PERMUTATIONS (D! = 24 orders of
the D = 4 padded dimensions), the chunk's Reduce-Scatter order (All-Gather runs it reversed).
`obs.action_mask` keeps one canonical permutation per distinct order of the dimensions that take
part (`collective_features.canonical_mask`); a masked action is still played as given, and only
its order of the active dimensions matters. The state tracks each dimension's load as Themis's
greedy does (`chunk_loads`), so the observation shows the loads and Themis's own choice.

After the last real chunk the whole collective is simulated with the chosen orders and the
intra-dimension discipline of the env (SCF by default) by the jitted event-driven simulator,
and the reward is −T / T_ideal (so utilization = −1 / reward); earlier rewards are 0. The episode
then auto-resets by select. Instances (`CollectiveInstance`) are the env params, so one compiled
step serves any network, size and chunk count under `vmap`; every shape is fixed by the env's
static max_chunks. `reset` is deterministic; the keys are accepted for the common interface.

Under `vmap`, `step` runs the simulation on every step (a select, not a branch). Rollouts that
play whole episodes use `advance` (dynamics and auto-reset, no simulation) and `final_reward`
once per episode instead; `step` is exactly `advance` plus `final_reward` where done.
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
    ordered chunks put on each dimension (Themis's fluid load). actions (max_chunks,) int32:
    the permutation chosen for each ordered chunk, −1 for the rest."""

    chunk: jnp.ndarray
    load: jnp.ndarray
    actions: jnp.ndarray


@struct.dataclass
class CollectiveObs:
    """Fixed-shape observation (D = 4, K = 24; see `collective_features`): dim_features
    (D, F_D), dim_mask (D,) (dimensions of size > 1), step_features (K, D, F_S) and perm_features
    (K, F_P) of each candidate permutation, global_features (F_G,), action_mask (K,),
    themis_action () int32 (Themis's canonical choice for this chunk), chunk () int32."""

    dim_features: jnp.ndarray
    dim_mask: jnp.ndarray
    step_features: jnp.ndarray
    perm_features: jnp.ndarray
    global_features: jnp.ndarray
    action_mask: jnp.ndarray
    themis_action: jnp.ndarray
    chunk: jnp.ndarray


def orders_of(actions):
    """(max_chunks, D) int32 orders of permutation indices (max_chunks,) (−1: identity)."""
    perms = features.permutations()
    return jnp.where(actions[:, None] >= 0, perms[jnp.maximum(actions, 0)], perms[0])


class CollectiveEnv(Environment):
    """The chunk-ordering MDP over instances of up to max_chunks chunks (static size)."""

    def __init__(self, max_chunks: int = 64, scf: bool = True):
        if not 1 <= max_chunks <= MAX_CHUNKS:
            raise ValueError(f"max_chunks must be in 1..{MAX_CHUNKS}, got {max_chunks}")
        self.max_chunks = max_chunks
        self.scf = scf

    def __eq__(self, other):  # equal envs share compiled functions (jit static arguments, caches)
        return type(other) is type(self) and (self.max_chunks, self.scf) == (other.max_chunks, other.scf)

    def __hash__(self):
        return hash((type(self).__name__, self.max_chunks, self.scf))

    @property
    def num_actions(self) -> int:
        return int(features.PERMUTATIONS.shape[0])

    def initial_state(self, instance: CollectiveInstance) -> CollectiveState:
        return CollectiveState(
            chunk=jnp.int32(0),
            load=jnp.zeros_like(instance.net.bandwidth),
            actions=jnp.full((self.max_chunks,), -1, jnp.int32),
        )

    def observe(self, chunk, load, instance: CollectiveInstance) -> CollectiveObs:
        """The observation at chunk `chunk` with loads `load` (D,) s (all a decision needs;
        rollouts keep only these two per step and rebuild observations for the update)."""
        net = instance.net
        active = net.size > 1
        chunk_bytes, _ = features.chunk_times(instance)
        themis = features.themis_action(load, chunk_bytes, net)
        step, perm = features.candidate_features(instance, load, chunk, themis)
        return CollectiveObs(
            dim_features=features.dim_features(instance, load, chunk),
            dim_mask=active,
            step_features=step,
            perm_features=perm,
            global_features=features.global_features(instance, chunk),
            action_mask=features.canonical_mask(active),
            themis_action=themis,
            chunk=jnp.asarray(chunk, jnp.int32),
        )

    def observation(self, state: CollectiveState, instance: CollectiveInstance) -> CollectiveObs:
        return self.observe(state.chunk, state.load, instance)

    def reset_env(self, key, instance: CollectiveInstance) -> CollectiveState:
        del key  # deterministic: the instance is the randomness
        return self.initial_state(instance)

    def advance(self, state: CollectiveState, action, instance: CollectiveInstance):
        """`step` without the simulation, for rollouts that score whole episodes: order the
        current chunk and auto-reset after the last real chunk. Returns (obs, next_state, done,
        finished_actions): the finished episode's (or so far) actions (max_chunks,), before any
        reset."""
        new_state, done = self.transition(state, action, instance)
        next_state = self.auto_reset(None, done, new_state, instance)
        return self.observation(next_state, instance), next_state, done, new_state.actions

    def transition(self, state: CollectiveState, action, instance: CollectiveInstance):
        """(state after ordering the current chunk by permutation `action` (clipped to
        0..K−1), done after the last real chunk)."""
        action = jnp.clip(jnp.asarray(action, jnp.int32), 0, self.num_actions - 1)
        net = instance.net
        chunk_bytes, _ = features.chunk_times(instance)
        order = features.permutations()[action]
        chunk = jnp.minimum(state.chunk, self.max_chunks - 1)
        new_state = CollectiveState(
            chunk=state.chunk + 1,
            load=state.load + chunk_loads(order, chunk_bytes, net.size, net.bandwidth),
            actions=state.actions.at[chunk].set(action),
        )
        done = new_state.chunk >= jnp.minimum(instance.n_chunks, self.max_chunks)
        return new_state, done

    def simulate(self, actions, instance: CollectiveInstance):
        """SimResult of the collective when chunk c uses permutation actions[c] (max_chunks,)."""
        orders = orders_of(actions)
        return simulate_allreduce(
            instance.net, instance.total_bytes, instance.n_chunks, orders, self.scf, max_chunks=self.max_chunks
        )

    def final_reward(self, actions, instance: CollectiveInstance):
        """(reward −T / T_ideal, completion time T s) of a finished episode's actions."""
        time = self.simulate(actions, instance).time
        return -time / jnp.maximum(instance.ideal, features._TINY), time

    def step_env(self, key, state: CollectiveState, action, instance: CollectiveInstance):
        """Order the current chunk; returns (state, reward, done, info). info: "actions"
        (max_chunks,) of the episode that just ended (or so far), "time" (s) and
        "utilization" (T_ideal / T) of those orders (meaningful where done). Under `vmap` the
        simulation runs on every step (a select, not a branch)."""
        del key
        new_state, done = self.transition(state, action, instance)
        reward, time = self.final_reward(new_state.actions, instance)
        info = {"actions": new_state.actions, "time": time, "utilization": -1.0 / reward}
        return new_state, jnp.where(done, reward, 0.0), done, info
