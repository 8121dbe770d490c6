"""How every search ranks scored schedules, and the pieces they share.

Ranking is lexicographic on (rank, primary, dollars_per_hour):
- rank 0: feasible, primary = cost (dollars);
- rank 1: infeasible, primary = `infeasibility_penalty` (graded, so a search can climb out);
- rank 2: not a candidate (a padding row of a fixed-size batch).
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from flax import struct

from hps.contract.types import Budget, NotApplicable, PlanResult
from hps.costmodel.schedule.cost import (
    FEASIBLE,
    SegmentTable,
    evaluate_with_table,
    segment_table,
)
from hps.costmodel.schedule.params import PlacementParams

RANK_FEASIBLE, RANK_INFEASIBLE, RANK_NONE = 0, 1, 2
DEFAULT_BUDGET = Budget()
"""No time limit, each search's default evaluations, seed 0."""

instance_table = jax.jit(segment_table)


@struct.dataclass
class Scored:
    """Scores of schedules; a batch has a leading (N,) axis on every field, one schedule none.
    schedule (…, L) int32; rank int32; primary, dollars_per_hour, throughput float32; reason int32."""

    schedule: jnp.ndarray
    rank: jnp.ndarray
    primary: jnp.ndarray
    dollars_per_hour: jnp.ndarray
    throughput: jnp.ndarray
    reason: jnp.ndarray


def real_sizes(params: PlacementParams) -> tuple[int, int]:
    """(real layers, real types) of a padded instance."""
    return int(params.layer_mask.sum()), int(params.type_mask.sum())


def infeasibility_penalty(table: SegmentTable, params: PlacementParams, schedules, result) -> jnp.ndarray:
    """(N,) ≥ 0, lower is closer to feasible, the sum of three terms:
    the throughput shortfall ln(R / throughput) where below the floor R (0 at or above it);
    the fraction of real layers in stages that cannot be provisioned (memory or throughput);
    Σ_t max(0, units_t − max_units_t) / max_units_t, the units over each type's pooled cap."""
    n_layers, n_types = params.max_layers, params.max_types
    idx = jnp.arange(n_layers)
    shortfall = jnp.maximum(jnp.log(params.throughput / result.throughput), 0.0)
    shortfall = jnp.nan_to_num(shortfall, nan=0.0, posinf=1e30)
    types = jnp.clip(schedules, 0, n_types - 1)
    flat = (result.stage_first * n_layers + idx) * n_types + types
    stage_fails = result.stage_end & (table.reason.reshape(-1)[flat] != FEASIBLE)
    failing_layers = jnp.sum(jnp.where(stage_fails, idx - result.stage_first + 1, 0), axis=1)
    failing_fraction = failing_layers / jnp.maximum(jnp.sum(params.layer_mask), 1)
    overflow = jnp.zeros_like(shortfall)
    for t in range(n_types):
        units = jnp.sum(jnp.where(types == t, result.replicas, 0), axis=1)
        cap = params.max_units[t]
        overflow += jnp.maximum(units - cap, 0) / jnp.maximum(cap, 1)
    return shortfall + failing_fraction + overflow


def score(table: SegmentTable, params: PlacementParams, schedules, valid=None, penalty_needed=True) -> Scored:
    """Score a batch (N, L) of schedules; rows where `valid` is False get rank 2.

    `penalty_needed` may be a traced bool: where it is False, or a row of the batch is feasible,
    the penalty is skipped (infeasible rows tie at 0): a batched search passes "no feasible
    schedule held yet" and saves the work. The constant True (default) always computes it."""
    schedules = jnp.where(params.layer_mask, schedules.astype(jnp.int32), 0)
    result = evaluate_with_table(table, params, schedules)
    candidate = jnp.ones_like(result.feasible) if valid is None else valid

    def penalize():
        return infeasibility_penalty(table, params, schedules, result).astype(result.cost.dtype)

    if penalty_needed is True:
        penalty = penalize()
    else:
        skip = jnp.any(result.feasible & candidate) | jnp.logical_not(penalty_needed)
        penalty = jax.lax.cond(skip, lambda: jnp.zeros_like(result.cost), penalize)
    rank = jnp.where(result.feasible, RANK_FEASIBLE, RANK_INFEASIBLE)
    rank = jnp.where(candidate, rank, RANK_NONE)
    return Scored(
        schedule=schedules,
        rank=rank.astype(jnp.int32),
        primary=jnp.where(result.feasible, result.cost, penalty).astype(jnp.float32),
        dollars_per_hour=result.dollars_per_hour.astype(jnp.float32),
        throughput=result.throughput.astype(jnp.float32),
        reason=result.reason.astype(jnp.int32),
    )


def order(scored: Scored) -> jnp.ndarray:
    """(N,) indices sorting a batch best first."""
    return jnp.lexsort((scored.dollars_per_hour, scored.primary, scored.rank))


def batch_best(scored: Scored) -> Scored:
    """The best row of a batch (ties: the lowest index)."""
    top_rank = jnp.min(scored.rank)
    in_rank = scored.rank == top_rank
    top_primary = jnp.min(jnp.where(in_rank, scored.primary, jnp.inf))
    tied = in_rank & (scored.primary == top_primary)
    pick = jnp.argmin(jnp.where(tied, scored.dollars_per_hour, jnp.inf))
    pick = jnp.where(jnp.any(tied), pick, jnp.argmax(in_rank))
    return jax.tree.map(lambda x: x[pick], scored)


def better(a: Scored, b: Scored) -> jnp.ndarray:
    """True when single schedule a is a candidate and ranks strictly before b."""
    same_rank = a.rank == b.rank
    cheaper = (a.primary < b.primary) | ((a.primary == b.primary) & (a.dollars_per_hour < b.dollars_per_hour))
    return (a.rank < RANK_NONE) & ((a.rank < b.rank) | (same_rank & cheaper))


def merge(current: Scored, candidate: Scored) -> Scored:
    """The better of two single schedules; the current one on ties."""
    take = better(candidate, current)
    return jax.tree.map(lambda c, n: jnp.where(take, n, c), current, candidate)


def nothing(max_layers: int) -> Scored:
    """A placeholder that every candidate beats."""
    return Scored(
        schedule=jnp.zeros((max_layers,), jnp.int32),
        rank=jnp.int32(RANK_NONE),
        primary=jnp.float32(jnp.inf),
        dollars_per_hour=jnp.float32(jnp.inf),
        throughput=jnp.float32(0.0),
        reason=jnp.int32(0),
    )


def _shape_of(x):
    if isinstance(x, jax.ShapeDtypeStruct):
        return x
    return jax.ShapeDtypeStruct(jnp.shape(x), x.dtype if hasattr(x, "dtype") else jnp.result_type(x))


def prepare_table(params: PlacementParams, *, warmup: bool):
    """The jitted `segment_table`, or (warmup) its ahead-of-time compiled form for these params."""
    if not warmup:
        return instance_table
    return instance_table.lower(jax.tree.map(_shape_of, params)).compile()


def prepare(fn, params: PlacementParams, *args, warmup: bool, table=None):
    """A jitted search `fn(table, params, *args)`, or (warmup) its ahead-of-time compiled form,
    so that compiling happens before the clock starts; `table`: the segment table it will get
    (None: the jnp model's, `segment_table(params)`)."""
    if not warmup:
        return fn
    table = jax.eval_shape(segment_table, params) if table is None else table
    shapes = jax.tree.map(_shape_of, (table, params, *args))
    return fn.lower(*shapes).compile()


@dataclass(frozen=True)
class SearchCall:
    """What every search method is given besides the instance. key: its random key; budget:
    evaluations (None: the method's default); table: a precomputed segment table (None: built
    on the clock); warmup: compile ahead and restart the clock after compiling; started: the
    clock's start (time.perf_counter(), seconds)."""

    key: jax.Array
    budget: int | None
    table: SegmentTable | None
    warmup: bool
    started: float


def search_method(fn):
    """The planner `plan(problem, budget=Budget(), *, warmup=True, **options) -> PlanResult` of a
    search written as `fn(params, call: SearchCall, **options) -> (name, schedule, evaluations,
    seconds)` over `problem.search_arrays`, keyed by budget.seed, within budget.evaluations
    (None: its default); its best schedule is scored by the numpy model every planner is scored
    by. warmup: compile first, so that the seconds exclude compiling."""

    @functools.wraps(fn)
    def plan(problem, budget: Budget = DEFAULT_BUDGET, *, warmup: bool = True, **options) -> PlanResult:
        from hps.costmodel.schedule.plan import planned, schedule_plan

        if not problem.job.schedule_model:
            why = "the baselines score HeterPS schedules only (micro-batches inf, state sharding none)"
            raise NotApplicable(fn.__name__, why)
        params, table = problem.search_arrays
        call = SearchCall(jax.random.key(budget.seed), budget.evaluations, table, warmup, time.perf_counter())
        name, schedule, evaluations, seconds = fn(params, call, **options)
        return planned(name, problem.instance, schedule_plan(schedule), math.nan, seconds, evaluations)

    return plan


def compile_and_run(method: str, fn, params: PlacementParams, args: tuple, call: SearchCall, n_layers, evaluations):
    """(method, best schedule, evaluations, seconds) of the jitted search `fn(table, params,
    *args)` (as `found`), the segment table being call.table or computed here (on the clock).
    With call.warmup, the table and `fn` are compiled ahead and the clock restarts after
    compiling."""
    make_table = prepare_table(params, warmup=call.warmup) if call.table is None else None
    search = prepare(fn, params, *args, warmup=call.warmup, table=call.table)
    started = time.perf_counter() if call.warmup else call.started
    table = make_table(params) if call.table is None else call.table
    return found(method, search(table, params, *args), n_layers, evaluations, started)


def found(method: str, best: Scored, n_layers: int, evaluations: int, started: float):
    """(method, the best schedule over the real layers, evaluations, seconds since `started`),
    blocking on the device result first."""
    best = jax.block_until_ready(best)
    wall = time.perf_counter() - started
    return method, tuple(int(t) for t in best.schedule[:n_layers]), int(evaluations), wall
