"""Planning with a trained parallel-plan policy (`hps plan --checkpoint`, the "policy" planner
of the parallel model when the checkpoint holds a parallel policy).

The problem becomes one `ParallelInstance` padded to the least size bucket that holds it
(`batched_params.bucket_for`), so one checkpoint plans any workload and catalogue within the
largest bucket, and one compile serves every problem of a bucket. The policy lays out `samples`
plans by sampling and one greedily, in one jitted rollout; the env's scorer (the batched
scorer, equal to `score_plan`) ranks them, and the cheapest feasible one wins (where none is,
the one of the highest reward, the least infeasible). Its score is then `score_plan`'s.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial

import jax
import numpy as np

from hps.config.types import ParallelStage
from hps.contract.types import Plan
from hps.costmodel.parallel.batched_params import bucket_for
from hps.costmodel.parallel.problem import ParallelProblem
from hps.costmodel.parallel.score import score_plan
from hps.errors import ConfigError
from hps.placement.agent.parallel_rollout import rollout
from hps.placement.env.parallel_env import ParallelPlanEnv
from hps.placement.env.parallel_instance import parallel_instance


@dataclass(frozen=True)
class PolicyPlans:
    """plan: the chosen plan (None when no sampled plan is well formed); feasible: whether it
    is; candidates: plans laid out (samples + 1 greedy); feasible_candidates: how many were
    feasible; plan_seconds: wall time of planning, compile excluded; compile_seconds: the first
    call's extra time (0 when the bucket was compiled before)."""

    plan: Plan | None
    feasible: bool
    candidates: int
    feasible_candidates: int
    plan_seconds: float
    compile_seconds: float


@partial(jax.jit, static_argnames=("policy", "env", "samples"))
def _lay_out(policy, env, params, instance, key, samples: int):
    sampled = rollout(policy, params, env, instance, key, samples=samples)
    greedy = rollout(policy, params, env, instance, key, greedy=True)
    return sampled, greedy


_COMPILED: set = set()


def _laid_out(functions, params, problem: ParallelProblem, max_stages: int, samples: int, seed: int):
    """(plans (N,) numpy `Plans`, feasible (N,), cost_ratio (N,), reward (N,), plan_seconds,
    compile_seconds) of `samples` sampled plans and the greedy one (the last)."""
    try:
        bucket = bucket_for(problem)
        instance = parallel_instance(problem, bucket)
    except ValueError as error:
        raise ConfigError("policy", "problem", f"the parallel policy cannot plan it: {error}") from None
    env = ParallelPlanEnv(max_stages)
    batch = jax.tree.map(lambda x: np.asarray(x)[None], instance)
    key = jax.random.PRNGKey(seed)
    shape_key = (bucket, max_stages, samples, functions.spec)
    compile_seconds = 0.0
    with jax.enable_x64(True):
        if shape_key not in _COMPILED:
            started = time.perf_counter()
            jax.block_until_ready(_lay_out(functions, env, params, batch, key, samples))
            compile_seconds = time.perf_counter() - started
            _COMPILED.add(shape_key)
        started = time.perf_counter()
        sampled, greedy = jax.device_get(_lay_out(functions, env, params, batch, key, samples))
    joined = lambda name: np.concatenate([getattr(sampled, name), getattr(greedy, name)])  # noqa: E731
    plans = jax.tree.map(lambda a, b: np.concatenate([a, b]), sampled.plans, greedy.plans)
    plan_seconds = time.perf_counter() - started
    compile_seconds = max(compile_seconds - plan_seconds, 0.0) if compile_seconds else 0.0
    return plans, joined("feasible"), joined("cost_ratio"), joined("episode_reward"), plan_seconds, compile_seconds


def plan_with_policy(functions, params, problem: ParallelProblem, *, max_stages: int, samples: int = 64, seed: int = 0):
    """`PolicyPlans` of the policy (`ParallelPolicyFunctions` and its parameters) on `problem`.
    ConfigError where the problem is past the largest size bucket."""
    plans, feasible, ratio, reward, plan_seconds, compile_seconds = _laid_out(
        functions, params, problem, max_stages, samples, seed
    )
    started = time.perf_counter()
    best = int(np.argmin(np.where(feasible, ratio, np.inf))) if feasible.any() else int(np.argmax(reward))
    plan = _plan_of(problem, plans, best)
    plan_seconds += time.perf_counter() - started
    return PolicyPlans(plan, bool(feasible[best]), len(feasible), int(feasible.sum()), plan_seconds, compile_seconds)


def policy_type_sequences(functions, params, problem: ParallelProblem, segments: list[tuple[int, int]], *,
                          max_stages: int, samples: int = 64, seed: int = 0) -> list[tuple[int, ...]]:  # fmt: skip
    """The distinct type sequences over `segments` (first, last layer) of the policy's sampled
    and greedy plans, the best first (feasible by cost, then the others by reward): what a
    sequence search completes exactly (the sweep's proposals, the warm start)."""
    plans, feasible, ratio, reward, _, _ = _laid_out(functions, params, problem, max_stages, samples, seed)
    order = np.lexsort((-reward, np.where(feasible, ratio, np.inf)))
    out = []
    for i in order:
        count = int(plans.stage_mask[i].sum())
        last, types = plans.last[i, :count], plans.types[i, :count]
        sequence = tuple(int(types[min(int(np.searchsorted(last, first)), count - 1)]) for first, _ in segments)
        if sequence not in out:
            out.append(sequence)
    return out


def _plan_of(problem: ParallelProblem, plans, i: int) -> Plan | None:
    """Plan i of the rollout's `plans` (leading (N,) axis), None where it is not well formed."""
    count = int(plans.stage_mask[i].sum())
    names = [r.name for r in problem.catalog.resources]
    stages = tuple(
        ParallelStage(int(plans.first[i, j]), int(plans.last[i, j]), names[int(plans.types[i, j])],
                      int(plans.tp[i, j]), int(plans.dp[i, j]))
        for j in range(count)
    )  # fmt: skip
    b = int(plans.micro_batch[i])
    try:
        score_plan(problem, stages, b)
    except (ValueError, KeyError, IndexError):
        return None
    return Plan(stages, b)
