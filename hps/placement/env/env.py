"""PlacementEnv (docs/environments.md), in the functional gymnax / Jumanji shape.

    obs, state = env.reset(key, instance)
    obs, state, reward, done, info = env.step(key, state, action, instance)

One step per real layer, in layer order; the action is the resource type of that layer (an index
into the catalogue; `obs.action_mask` marks the real types). The reward is 0 until the last real
layer, then the schedule's score (`hps.placement.env.accounting`: −cost / reference cost when feasible,
a graded penalty below −11 when not). The episode then auto-resets by select to a fresh episode of
the same instance. Instances (`PlacementInstance`, from `hps.placement.env.generator`) are the env params,
so one compiled step serves any instance under `vmap`; every shape is fixed by the env's static
sizes. `reset` is deterministic (the instance is the randomness); the keys are accepted for the
common interface (`hps.rl.env.Environment`, which owns the auto-reset).
"""

from __future__ import annotations

import jax.numpy as jnp
from flax import struct

from hps.placement.env import features
from hps.placement.env.accounting import (
    Outcome,
    ProvisionedStage,
    StageSums,
    Totals,
    commit,
    extend_sums,
    outcome,
    provision_stage,
)
from hps.placement.env.generator import PlacementInstance
from hps.rl.env import Environment


@struct.dataclass
class PlacementState:
    """layer: index of the next layer to place (int32). actions (L,) int32: the type chosen for
    each placed layer, −1 for the rest. stage_first: first layer of the open stage. sums: the open
    stage's sums over its layers; pending: the open stage provisioned through the last placed
    layer. totals: the closed stages so far."""

    layer: jnp.ndarray
    actions: jnp.ndarray
    stage_first: jnp.ndarray
    sums: StageSums
    pending: ProvisionedStage
    totals: Totals


@struct.dataclass
class PlacementObs:
    """Fixed-shape observation. Static per instance: layer_features (L, F_L), type_features
    (T, F_T), pair_features (L, T, F_P), job_features (F_J,), layer_mask (L,), action_mask (T,)
    (the real types). Dynamic: layer_index () int32, the layer to place now; actions (L,) int32,
    the types placed so far (−1 for layers not placed yet)."""

    layer_features: jnp.ndarray
    type_features: jnp.ndarray
    pair_features: jnp.ndarray
    job_features: jnp.ndarray
    layer_mask: jnp.ndarray
    action_mask: jnp.ndarray
    layer_index: jnp.ndarray
    actions: jnp.ndarray


class PlacementEnv(Environment):
    """The placement MDP over padded instances. It has no sizes of its own: every shape comes
    from the instance (its padded layers L and types T), so one env object serves every size
    bucket, and each bucket compiles once."""

    def initial_state(self, instance: PlacementInstance) -> PlacementState:
        params = instance.placement
        return PlacementState(
            layer=jnp.int32(0),
            actions=jnp.full((params.max_layers,), -1, jnp.int32),
            stage_first=jnp.int32(0),
            sums=StageSums.empty(),
            pending=ProvisionedStage(jnp.float32(0.0), jnp.float32(1.0), jnp.int32(0)),
            totals=Totals.empty(params.max_types),
        )

    def observation(self, state: PlacementState, instance: PlacementInstance) -> PlacementObs:
        params = instance.placement
        return PlacementObs(
            layer_features=features.layer_features(params),
            type_features=features.type_features(instance),
            pair_features=features.pair_features(instance),
            job_features=features.job_features(params),
            layer_mask=params.layer_mask,
            action_mask=params.type_mask,
            layer_index=state.layer,
            actions=state.actions,
        )

    def reset_env(self, key, instance: PlacementInstance) -> PlacementState:
        del key  # deterministic: the instance is the randomness
        return self.initial_state(instance)

    def step_env(self, key, state: PlacementState, action, instance: PlacementInstance):
        """Place the current layer on type `action`; returns (state, reward, done, info).

        info holds the finished schedule's `Outcome` fields (meaningful where done) and
        "schedule" (L,), the actions of the episode that just ended (or so far)."""
        del key
        new_state, finished, done = self._advance(state, jnp.asarray(action, jnp.int32), instance)
        reward = jnp.where(done, finished.reward, 0.0)
        info = {name: getattr(finished, name) for name in Outcome.__dataclass_fields__}
        info["schedule"] = new_state.actions
        return new_state, reward, done, info

    def _advance(self, state: PlacementState, action, instance: PlacementInstance):
        """Record `action` for layer state.layer, close the stages it completes, and score the
        schedule (used only where done). An action outside 0..T−1 is stored clipped and counts
        as a layer that cannot be provisioned."""
        params = instance.placement
        layer = state.layer
        n_layers = jnp.sum(params.layer_mask).astype(jnp.int32)
        in_range = (action >= 0) & (action < params.max_types)
        action = jnp.clip(action, 0, params.max_types - 1)
        previous = jnp.maximum(state.actions[jnp.maximum(layer - 1, 0)], 0)
        changed = (layer > 0) & (action != previous)
        totals = commit(state.totals, instance, state.pending, state.stage_first, layer - 1, previous, changed)
        first = jnp.where(changed, layer, state.stage_first)
        sums = extend_sums(state.sums, instance, layer, action, changed)  # empty at layer 0 (reset)
        pending = provision_stage(instance, first, layer, action, sums)
        done = layer >= n_layers - 1
        totals = commit(totals, instance, pending, first, layer, action, done)
        totals = totals.replace(failing_layers=totals.failing_layers + (~in_range).astype(jnp.int32))
        new_state = PlacementState(
            layer=layer + 1,
            actions=state.actions.at[layer].set(action),
            stage_first=first,
            sums=sums,
            pending=pending,
            totals=totals,
        )
        return new_state, outcome(totals, instance), done
