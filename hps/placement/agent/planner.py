"""Planning with a trained placement policy (`hps plan`).

The policy samples `samples` schedules of the instance (and decodes one greedily); the exact cost
model (`hps.placement.model.evaluate_schedules`) scores them all and the cheapest feasible one wins
(the least infeasible when none is feasible). With `refine`, a hill climb of stage moves
(`hps.placement.search.refine`) then polishes that plan. The instance is padded to the env's trained limits
(hps.config.limits: POLICY_LAYERS layers, POLICY_TYPES types, POLICY_UNITS units), so one
compiled planner serves every catalogue within them and every workload with the same number of
layers (the decision count is static: it fixes the sampling keys, so plans stay reproducible).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from hps.config.limits import POLICY_LAYERS, POLICY_TYPES, POLICY_UNITS
from hps.config.types import Catalog, Job, Workload
from hps.errors import ConfigError
from hps.placement.agent.policy import PolicyFunctions
from hps.placement.agent.rollout import rollout
from hps.placement.env.env import PlacementEnv
from hps.placement.env.generator import make_instance
from hps.placement.model import build_params
from hps.placement.model.cost import segment_table
from hps.placement.search.refine import refine
from hps.placement.search.scoring import RANK_FEASIBLE, batch_best, score


@dataclass(frozen=True)
class Plan:
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


def check_limits(workload: Workload, catalog: Catalog) -> None:
    """ConfigError when the instance is larger than the policy was built for."""
    if len(workload.layers) > POLICY_LAYERS:
        raise ConfigError(
            workload.name, "layer", f"{len(workload.layers)} layers; the policy plans at most {POLICY_LAYERS}"
        )
    if len(catalog.resources) > POLICY_TYPES:
        raise ConfigError(
            catalog.name, "resource", f"{len(catalog.resources)} types; the policy plans at most {POLICY_TYPES}"
        )
    units = max(r.max_units for r in catalog.resources)
    if units > POLICY_UNITS:
        raise ConfigError(
            catalog.name, "max_units", f"{units} units; the policy plans at most {POLICY_UNITS} per stage"
        )


@partial(jax.jit, static_argnames=("policy", "samples", "num_layers"))
def candidate_schedules(policy: PolicyFunctions, params, instance, key, samples: int, num_layers: int, temperature=1.0):
    """(samples + 1, num_layers) int32: schedules sampled at `temperature`, then the greedy one."""
    env = PlacementEnv()
    single = jax.tree.map(lambda x: x[None], instance)
    sampled = rollout(policy, params, env, single, key, num_layers, temperature=temperature, samples=samples).actions
    greedy = rollout(policy, params, env, single, key, num_layers, greedy=True).actions
    return jnp.concatenate([sampled, greedy], axis=0)[:, :num_layers]


@jax.jit
def best_candidate(exact_params, schedules):
    """(segment table, best scored schedule, feasible count) under the exact model, ranked as
    every search ranks."""
    table = segment_table(exact_params)
    scored = score(table, exact_params, schedules)
    return table, batch_best(scored), jnp.sum(scored.rank == RANK_FEASIBLE)


def _timed(fn, *args):
    """(result blocked on, seconds)."""
    start = time.perf_counter()
    out = jax.block_until_ready(fn(*args))
    return out, time.perf_counter() - start


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
) -> Plan:
    """The best of `samples` sampled plans and the greedy plan of `workload` on `catalog`;
    `polish`: then refined by stage moves. Each step runs once to compile, then once timed."""
    check_limits(workload, catalog)
    if samples < 1:
        raise ConfigError("--samples", "samples", f"must be ≥ 1, got {samples}")
    padded = build_params(
        workload, catalog, job, max_layers=POLICY_LAYERS, max_types=POLICY_TYPES, max_replicas=POLICY_UNITS
    )
    exact = build_params(workload, catalog, job)
    instance = make_instance(padded)
    key = jax.random.PRNGKey(seed)

    def sample():
        schedules = candidate_schedules(policy, params, instance, key, samples, len(workload.layers))
        return best_candidate(exact, schedules)

    _, first = _timed(sample)
    (table, best, feasible), seconds = _timed(sample)
    refined, evaluations, refine_first, refine_seconds = best, 0, 0.0, 0.0
    if polish:
        _, refine_first = _timed(refine, table, exact, best)
        (refined, evaluations), refine_seconds = _timed(refine, table, exact, best)
    return Plan(
        schedule=np.asarray(refined.schedule).tolist(),
        sampled_schedule=np.asarray(best.schedule).tolist(),
        candidates=samples + 1,
        feasible_candidates=int(feasible),
        plan_seconds=seconds + refine_seconds,
        compile_seconds=max(first - seconds, 0.0) + max(refine_first - refine_seconds, 0.0),
        refine_evaluations=int(evaluations),
        refine_seconds=refine_seconds,
    )
