"""Demonstrations for the parallel-plan policy: plans of a teacher (the exact solver, within a
time limit per instance) as the env's action sequences, and the imitation loss on them.

A plan (b, stages) becomes the actions the env would take to lay it out
(`plan_actions`): the divisor slot of b, then per stage its type, its unit count's END slot, its
tensor-parallel level and the divisor slot of d. A plan the action space cannot express (a stage
other than the last of END_SLOTS or more units, more than max_stages stages) is left out.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from hps.placement.env.parallel_env import END_SLOTS, ParallelPlanEnv
from hps.placement.env.parallel_instance import instance_pool


@struct.dataclass
class Demonstrations:
    """D labelled episodes: actions (D, steps) int32, valid (D, steps) bool (the episode's
    decisions), instance (D,) int32 the pool index each was taken on."""

    actions: np.ndarray
    valid: np.ndarray
    instance: np.ndarray


def plan_actions(problem, plan, env: ParallelPlanEnv, divisors: np.ndarray) -> np.ndarray | None:
    """(steps,) int32 the actions laying out `plan` (a `hps.contract.Plan` of `problem`), or None
    where the env cannot express it. divisors: the instance's padded divisor slots."""
    stages = plan.stages
    if plan.micro_batch is None or len(stages) > env.max_stages:
        return None
    slot = {int(d): k for k, d in enumerate(divisors)}
    units = np.cumsum(problem.cut_after)
    actions = [slot[int(plan.micro_batch)]]
    for j, stage in enumerate(stages):
        count = int(units[stage.last] - (units[stage.first - 1] if stage.first else 0))
        last = j == len(stages) - 1
        if not last and count >= END_SLOTS:
            return None
        end = min(count, END_SLOTS) - 1 if last else count - 1
        y = problem.catalog.index(stage.type)
        actions += [y, end, int(stage.tp).bit_length() - 1, slot[int(stage.dp)]]
    out = np.zeros(env.max_steps, np.int32)
    out[: len(actions)] = actions
    return out


@functools.cache
def teacher_plans(split: str, count: int, seconds: float) -> tuple:
    """(index, Plan) of the exact solver's best plan within `seconds` for each of instances
    0 .. count − 1 of `split` that it finds one for."""
    from hps.methods.exact_parallel.solver import solve_parallel

    problems, _ = instance_pool(split, 0, count)
    found = []
    for i, problem in enumerate(problems):
        result = solve_parallel(problem, seconds=seconds)
        if result.plan is not None:
            found.append((i, result.plan))
    return tuple(found)


def make_demonstrations(problems, instances, labelled, env: ParallelPlanEnv) -> Demonstrations | None:
    """Demonstrations of the `labelled` (pool index, Plan) pairs on `instances` (stacked, numpy),
    None when no plan is expressible."""
    rows, index, lengths = [], [], []
    divisors = np.asarray(instances.params.divisors)
    for i, plan in labelled:
        actions = plan_actions(problems[i], plan, env, divisors[i])
        if actions is not None:
            rows.append(actions)
            index.append(i)
            lengths.append(1 + 4 * len(plan.stages))
    if not rows:
        return None
    actions, lengths = np.stack(rows), np.asarray(lengths)
    valid = np.arange(env.max_steps)[None, :] < lengths[:, None]
    return Demonstrations(actions, valid, np.asarray(index, np.int32))


def imitation_loss(policy, params, env: ParallelPlanEnv, pool, demos: Demonstrations):
    """(mean negative log-likelihood of the demonstrations' decisions, agreement: the share of
    them the policy's argmax takes)."""
    from hps.placement.agent.parallel_rollout import play_forced

    batch = jax.tree.map(lambda x: x[demos.instance], pool)
    log_probs, agree = play_forced(policy, params, env, batch, demos.actions)
    weights = demos.valid.astype(jnp.float32)
    count = jnp.maximum(jnp.sum(weights), 1.0)
    return -jnp.sum(log_probs * weights) / count, jnp.sum(agree * weights) / count
