"""Demonstrations: instances labelled with a teacher's plan, for imitation while training.

Two teachers (`TEACHERS`, chosen by the training config's `teacher`):

- "exact" (the default): the exact solver's proven optimum over HeterPS schedules
  (`hps.methods.exact_schedule.solve_exact(..., heterps=True)` on the instance's own float32 numbers,
  widened), so the policy imitates the best plan there is, not a search's guess at it. It runs
  in numpy, one instance after another, about 15 ms an instance of 4–24 layers on one core.
- "climb": the stage-move hill climb started from the best single-type plan
  (`hps.methods.search.refine.climb_from_single`), scored by the exact model: jitted and
  vmapped, about 9 ms an instance, and optimal on most small instances but not on all.
- "single": every layer on the cheapest feasible single type; weak, but nearly free at any
  size (the RL benchmark uses it on large instances, where the update's work is the same).

A training run labels a fixed pool of instances once, before its first update (the labels are
a pure function of the seed, so a resumed run labels the same pool), and each update adds the
cross-entropy of the teacher's plans, teacher-forced, to the policy-gradient loss
(`imitation_loss`): the policy learns from the best plans known as well as from its own
samples, like expert iteration. Instances without a feasible plan teach nothing.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from hps.costmodel.schedule.cost import FEASIBLE
from hps.methods.search.refine import climb_from_single
from hps.methods.search.scoring import RANK_FEASIBLE
from hps.placement.agent.rollout import truncate_obs
from hps.placement.env.env import PlacementEnv, PlacementObs
from hps.placement.env.generator import (
    InstanceSplit,
    PlacementInstance,
    generate_instances,
    single_type_stages,
)
from hps.rl.reinforce import masked_mean

LABEL_SECONDS = 2.0
"""The exact solver's time limit per label (s): an instance it cannot close by then (large ones
with binding pooled caps can take minutes) is labelled with the best plan it found."""

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


def exact_plans(instances: PlacementInstance):
    """(schedules (D, L) int32, feasible (D,) bool): the exact solver's optimal HeterPS
    schedule of each of a batch of D padded instances (type per layer; padded layers 0; the
    best plan found within LABEL_SECONDS where the solver cannot close it sooner), and
    whether a feasible plan was found."""
    from hps.costmodel.schedule.from_params import generated_instance
    from hps.costmodel.schedule.plan import index_plan
    from hps.methods.exact_schedule import solve_exact

    arrays = jax.device_get(instances)
    count, max_layers = np.asarray(arrays.placement.layer_mask).shape
    schedules = np.zeros((count, max_layers), np.int32)
    feasible = np.zeros((count,), bool)
    for i in range(count):
        one = jax.tree.map(lambda x: np.asarray(x)[i], arrays)  # noqa: B023
        inst = generated_instance(one)
        found = solve_exact(inst, heterps=True, seconds=LABEL_SECONDS)
        if found.plan is not None:
            feasible[i] = True
            for first, last, type_index in index_plan(found.plan, inst.catalog):
                schedules[i, first : last + 1] = type_index
    return jnp.asarray(schedules), jnp.asarray(feasible)


def climb_plans(instances: PlacementInstance):
    """(schedules (D, L) int32, feasible (D,) bool) of the hill-climb teacher on a batch of D
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


def single_plans(instances: PlacementInstance):
    """(schedules (D, L) int32, feasible (D,) bool): every layer on the type of the cheapest
    feasible single-type plan (`single_type_stages`), at the cost of one provision per type; a
    weak teacher, for benchmarks of the update (whose work does not depend on the labels)."""
    return _single_block(instances)


@jax.jit
def _single_block(instances):
    def one(instance):
        params = instance.placement
        cost, _, reason = single_type_stages(params, instance.alpha, instance.beta)
        cost = jnp.where((reason == FEASIBLE) & params.type_mask, cost, jnp.inf)
        best = jnp.argmin(cost).astype(jnp.int32)
        return jnp.where(params.layer_mask, best, 0), jnp.isfinite(cost[best])

    return jax.vmap(one)(instances)


TEACHERS = {"exact": exact_plans, "climb": climb_plans, "single": single_plans}
"""The teachers by name: each maps a batch of D instances to (schedules (D, L), feasible (D,))."""


def make_demonstrations(
    key, count: int, split: InstanceSplit, num_steps: int, teacher: str = "exact"
) -> Demonstrations:
    """`count` fresh instances of `split` labelled by `teacher` (a name of TEACHERS), truncated
    to `num_steps` layers (the decisions a rollout makes)."""
    instances = generate_instances(key, count, split)
    schedules, feasible = TEACHERS[teacher](instances)
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
