"""Demonstrations: instances labelled with a search teacher's plan, for imitation while training.

The teacher is the stage-move hill climb started from the best single-type plan
(`hps.placement.search.refine.climb_from_single`), scored by the exact model. It is cheap (one segment
table and a few rounds of at most 2·L·(T − 1) candidates per instance) and strong: on small
instances it matches the exhaustive optimum (docs/results.md). A training run labels a
fixed pool of instances once, before its first update (the labels are a pure function of the
seed, so a resumed run labels the same pool), and each update adds the cross-entropy of the
teacher's plans, teacher-forced, to the policy-gradient loss (`imitation_loss`): the policy
learns from the plans search finds as well as from its own samples, like expert iteration.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from hps.placement.agent.rollout import truncate_obs
from hps.placement.env.env import PlacementEnv, PlacementObs
from hps.placement.env.generator import (
    InstanceSplit,
    PlacementInstance,
    generate_instances,
)
from hps.placement.search.refine import climb_from_single
from hps.placement.search.scoring import RANK_FEASIBLE
from hps.rl.reinforce import masked_mean

LABEL_BLOCK = 32
"""Instances the teacher labels per call: one compiled program (compiled once, then cached) serves
every pool size, and memory stays bounded (one segment table per instance of the block)."""


@struct.dataclass
class Demonstrations:
    """obs: (D, …) first observation of each instance, truncated to S layers; actions (D, S)
    int32: the teacher's type per layer; valid (D, S): real layers of instances where the
    teacher's plan is feasible (infeasible instances teach nothing)."""

    obs: PlacementObs
    actions: jnp.ndarray
    valid: jnp.ndarray


def teacher_plans(instances: PlacementInstance):
    """(schedules (D, POLICY_LAYERS) int32, feasible (D,) bool) of the teacher on a batch of D
    instances, labelled LABEL_BLOCK at a time (the last block padded with copies of the first instance).
    The blocks are sliced on the host, which is cheaper than a device gather per leaf and block."""
    placements = jax.device_get(instances.placement)
    count = jax.tree.leaves(placements)[0].shape[0]
    padded = -(-count // LABEL_BLOCK) * LABEL_BLOCK
    index = np.concatenate([np.arange(count), np.zeros((padded - count,), np.int64)])
    placements = jax.tree.map(lambda x: np.asarray(x)[index], placements)
    blocks = [_label_block(_rows(placements, start, start + LABEL_BLOCK)) for start in range(0, padded, LABEL_BLOCK)]
    schedules, feasible = (jnp.concatenate(parts)[:count] for parts in zip(*blocks))
    return schedules, feasible


def _rows(tree, lo: int, hi: int):
    """Rows lo:hi of every leaf of `tree`."""
    return jax.tree.map(lambda x: x[lo:hi], tree)


@jax.jit
def _label_block(placements):
    best, _ = jax.vmap(climb_from_single)(placements)
    return best.schedule, best.rank == RANK_FEASIBLE


def make_demonstrations(key, count: int, split: InstanceSplit, num_steps: int) -> Demonstrations:
    """`count` fresh instances of `split` labelled by the teacher, truncated to `num_steps`
    layers (the decisions a rollout makes)."""
    instances = generate_instances(key, count, split)
    schedules, feasible = teacher_plans(instances)
    return _demonstrations(instances, schedules, feasible, num_steps)


@partial(jax.jit, static_argnames=("num_steps",))
def _demonstrations(instances, schedules, feasible, num_steps: int) -> Demonstrations:
    obs, _ = jax.vmap(PlacementEnv().reset, in_axes=(None, 0))(None, instances)
    obs = truncate_obs(obs, num_steps)
    return Demonstrations(obs=obs, actions=schedules[:, :num_steps], valid=obs.layer_mask & feasible[:, None])


def imitation_loss(params, policy, demos: Demonstrations):
    """Mean negative log-probability per decision (nats) of the teacher's actions under the
    policy, teacher-forced, over the valid decisions; and the fraction of decisions where the
    policy's most likely type is the teacher's."""
    logits, _ = policy.evaluate_batch(params, demos.obs, demos.actions)
    log_p = jax.nn.log_softmax(logits, axis=-1)
    chosen = jnp.take_along_axis(log_p, demos.actions[..., None], axis=-1)[..., 0]
    agree = jnp.argmax(logits, axis=-1) == demos.actions
    return -masked_mean(chosen, demos.valid), masked_mean(agree.astype(jnp.float32), demos.valid)
