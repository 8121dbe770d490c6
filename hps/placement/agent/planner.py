"""Planning with a trained placement policy (`hps plan`).

The policy draws `samples` distinct schedules of the instance, without replacement (stochastic
beam search, `hps.placement.agent.beam`), and decodes one greedily; the exact cost model scores
them all and the cheapest feasible one wins (the least infeasible when none is
feasible). With `refine`, a hill climb of stage moves (`hps.methods.search.refine`, or past the segment
table's size `hps.methods.search.climb_at_scale`) then polishes that plan.

The instance is padded to the least size bucket of hps.config.limits (POLICY_LAYER_BUCKETS,
POLICY_TYPE_BUCKETS, POLICY_UNIT_BUCKETS) that holds its layers, types and largest max_units,
so one checkpoint plans every workload and catalogue the loaders accept, and one compiled
planner serves every instance of a bucket with the same number of layers (the decision count
is static: it fixes the sampling keys, so plans stay reproducible). Candidates are scored by
the jnp model's segment table where it fits (hps.config.limits.DENSE_MODEL_BYTES), else by the
numpy model of the exact solver, one plan at a time (`evaluate_plan`, the same model in float64).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from hps.config.limits import POLICY_LAYER_BUCKETS, POLICY_TYPE_BUCKETS, POLICY_UNIT_BUCKETS, policy_bucket
from hps.config.types import Catalog, Job, Workload
from hps.contract.memory import refuse_past_memory
from hps.contract.types import PlanScore
from hps.costmodel.schedule import build_params
from hps.costmodel.schedule.cost import segment_table
from hps.costmodel.schedule.params import dense_size_fits
from hps.costmodel.schedule.plan import evaluate_plan, failed_layer, schedule_plan
from hps.costmodel.schedule.provisioning import allreduce_table, build_instance
from hps.errors import ConfigError
from hps.methods.search.climb_at_scale import climb_at_scale
from hps.methods.search.refine import refine
from hps.methods.search.scoring import RANK_FEASIBLE, batch_best, score
from hps.placement.agent.beam import beam_plans
from hps.placement.agent.policy import PolicyFunctions
from hps.placement.agent.rollout import rollout
from hps.placement.env.env import PlacementEnv
from hps.placement.env.generator import make_instance


@dataclass(frozen=True)
class Sampled:
    """schedule: type index per layer (refined when planned with `polish`); sampled_schedule:
    the best of the sampled plans, before any refinement; candidates: schedules scored
    (samples + 1 greedy); feasible_candidates: how many of them were feasible;
    refine_evaluations: plans the stage moves scored (0 without refine); plan_seconds: wall
    time of planning, compile excluded, of which refine_seconds refining; compile_seconds: the
    first calls' extra time."""

    schedule: list[int]
    sampled_schedule: list[int]
    candidates: int
    feasible_candidates: int
    plan_seconds: float
    compile_seconds: float
    refine_evaluations: int = 0
    refine_seconds: float = 0.0


def policy_sizes(workload: Workload, catalog: Catalog) -> tuple[int, int, int]:
    """(L, T, K): the size bucket the policy plans this instance in (hps.config.limits)."""
    return (
        policy_bucket(len(workload.layers), POLICY_LAYER_BUCKETS),
        policy_bucket(len(catalog.resources), POLICY_TYPE_BUCKETS),
        policy_bucket(max(r.max_units for r in catalog.resources), POLICY_UNIT_BUCKETS),
    )


def dense_model_fits(workload: Workload, catalog: Catalog) -> bool:
    """Whether the jnp model's segment table of the unpadded instance fits DENSE_MODEL_BYTES."""
    return dense_size_fits(len(workload.layers), len(catalog.resources), max(r.max_units for r in catalog.resources))


@partial(jax.jit, static_argnames=("policy", "samples", "num_layers", "distinct"))
def candidate_schedules(
    policy: PolicyFunctions, params, instance, key, samples: int, num_layers: int, temperature=1.0, distinct=True
):
    """(samples + 1, num_layers) int32: `samples` schedules drawn at `temperature`, then the
    greedy one. distinct: drawn without replacement (stochastic beam search,
    `hps.placement.agent.beam`), so no plan is scored twice; else independently."""
    env = PlacementEnv()  # sizes come from the instance
    single = jax.tree.map(lambda x: x[None], instance)
    if distinct:
        sampled = beam_plans(policy, params, instance, key, num_layers, samples, temperature=temperature)
    else:
        sampled = rollout(
            policy, params, env, single, key, num_layers, temperature=temperature, samples=samples
        ).actions
    greedy = rollout(policy, params, env, single, key, num_layers, greedy=True).actions
    return jnp.concatenate([sampled[:, :num_layers], greedy[:, :num_layers]], axis=0)


@jax.jit
def best_candidate(exact_params, schedules):
    """(segment table, best scored schedule, feasible count) under the exact model, ranked as
    every search ranks."""
    table = segment_table(exact_params)
    scored = score(table, exact_params, schedules)
    return table, batch_best(scored), jnp.sum(scored.rank == RANK_FEASIBLE)


compiled_instance = jax.jit(make_instance)
"""`make_instance` as one compiled program (run op by op, it dispatches about a hundred)."""


def _timed(fn, *args):
    """(result blocked on, seconds)."""
    start = time.perf_counter()
    out = jax.block_until_ready(fn(*args))
    return out, time.perf_counter() - start


@dataclass(frozen=True)
class _Best:
    """The numpy scoring's pick: its schedule (the field `plan` reads of `batch_best`'s) and its
    `evaluate_plan` score."""

    schedule: np.ndarray
    score: PlanScore


def best_by_numpy(inst, schedules) -> tuple[_Best, int]:
    """(the best of `schedules` (N, L) under the float64 numpy model, feasible count): the
    cheapest feasible one; when none is, the one whose first failing stage starts latest, then
    the highest throughput (the closest to feasible, as far as one plan's score tells)."""
    scores = [evaluate_plan(inst, schedule_plan(row)) for row in np.asarray(schedules)]
    feasible = [s.feasible for s in scores]
    if any(feasible):
        best = min((i for i, ok in enumerate(feasible) if ok), key=lambda i: scores[i].cost)
    else:
        best = max(range(len(scores)), key=lambda i: (failed_layer(scores[i]), scores[i].throughput))
    return _Best(np.asarray(schedules)[best], scores[best]), sum(feasible)


BEAM_COPIES = 4
"""Copies of each plan's environment state and policy carry the beam search holds at its peak
(the state, its pick by parent, the next state, the carry's update), counted by `plan_bytes`."""


def plan_bytes(policy: PolicyFunctions, params, instance) -> int:
    """Bytes one sampled plan takes in the beam search of `instance` (a padded instance, as
    `compiled_instance` makes): BEAM_COPIES of its environment state and policy carry, found
    from their shapes (nothing is allocated)."""
    state = jax.eval_shape(lambda: PlacementEnv().reset(None, instance)[1])
    carry = jax.eval_shape(lambda: policy.initial_carry(params))
    return BEAM_COPIES * sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves((state, carry)))


def plan(
    policy: PolicyFunctions,
    params,
    workload: Workload,
    catalog: Catalog,
    job: Job,
    *,
    samples: int = 64,
    seed: int = 0,
    polish: bool = False,
) -> Sampled:
    """The best of `samples` distinct sampled plans and the greedy plan of `workload` on
    `catalog`; `polish`: then refined by stage moves (against the jnp model's segment table
    where it fits, else by `climb_at_scale` in numpy). Each step runs once to compile, then
    once timed."""
    if samples < 1:
        raise ConfigError("samples", "", f"must be ≥ 1, got {samples}")
    dense = dense_model_fits(workload, catalog)
    layers, types, units = policy_sizes(workload, catalog)
    padded = build_params(
        workload, catalog, job, max_layers=layers, max_types=types, max_replicas=units, dense_model=False
    )
    alpha, beta = allreduce_table(catalog, job, types, units)
    instance = compiled_instance(padded, alpha, beta)
    refuse_past_memory(f"hps plan's beam search of {samples:,} plans", samples * plan_bytes(policy, params, instance))
    key = jax.random.PRNGKey(seed)
    num_layers = len(workload.layers)
    if dense:
        exact = build_params(workload, catalog, job)
        pick = lambda schedules: best_candidate(exact, schedules)  # noqa: E731
    else:
        inst = build_instance(workload, catalog, job)
        pick = lambda schedules: (None, *best_by_numpy(inst, schedules))  # noqa: E731

    def sample():
        return pick(candidate_schedules(policy, params, instance, key, samples, num_layers))

    _, first = _timed(sample)
    (table, best, feasible), seconds = _timed(sample)
    refined, evaluations, refine_first, refine_seconds = best, 0, 0.0, 0.0
    if polish and dense:
        _, refine_first = _timed(refine, table, exact, best)
        (refined, evaluations), refine_seconds = _timed(refine, table, exact, best)
    elif polish:
        start = time.perf_counter()
        schedule, climbed, evaluations = climb_at_scale(inst, best.schedule)
        refined, refine_seconds = _Best(schedule, climbed), time.perf_counter() - start
    return Sampled(
        schedule=np.asarray(refined.schedule).tolist(),
        sampled_schedule=np.asarray(best.schedule).tolist(),
        candidates=samples + 1,
        feasible_candidates=int(feasible),
        plan_seconds=seconds + refine_seconds,
        compile_seconds=max(first - seconds, 0.0) + max(refine_first - refine_seconds, 0.0),
        refine_evaluations=int(evaluations),
        refine_seconds=refine_seconds,
    )


def policy_sequences(
    policy: PolicyFunctions,
    params,
    workload: Workload,
    catalog: Catalog,
    job: Job,
    segments: list[tuple[int, int]],
    *,
    samples: int = 64,
    seed: int = 0,
) -> list[tuple[int, ...]]:
    """The distinct type sequences over `segments` (first, last layer) of the policy's
    `samples` sampled schedules and its greedy one, in the order drawn: each segment takes the
    type the schedule gives most of its layers (the policy plans one type per layer; a parallel
    plan keeps a segment on one type). The job is planned as a schedule-model job (steady-state
    pipelining, no state sharding), the model the policy was trained in."""
    import dataclasses
    import math

    schedule_job = dataclasses.replace(job, micro_batches=math.inf, state_sharding="none", micro_batch=None)
    layers, types, units = policy_sizes(workload, catalog)
    padded = build_params(
        workload, catalog, schedule_job, max_layers=layers, max_types=types, max_replicas=units, dense_model=False
    )
    alpha, beta = allreduce_table(catalog, schedule_job, types, units)
    instance = compiled_instance(padded, alpha, beta)
    schedules = np.asarray(
        candidate_schedules(policy, params, instance, jax.random.PRNGKey(seed), samples, len(workload.layers))
    )
    out = []
    for row in schedules:
        counts = [np.bincount(row[first : last + 1], minlength=len(catalog.resources)) for first, last in segments]
        out.append(tuple(int(c.argmax()) for c in counts))
    return list(dict.fromkeys(out))
