"""Differentiable scheduling: schedule logits optimised by Adam through a straight-through
Gumbel-softmax relaxation of the placement cost model.

Each of R restarts holds logits θ (L, T). A step draws Gumbel noise g, takes the hard one-hot
schedule argmax(θ + g) in the forward pass and the softmax((θ + g)/τ) in the backward pass, and
descends the surrogate objective below. The hard schedules of every step are scored exactly by
the model (`hps.methods.search.scoring.score`, i.e. `evaluate_with_table` on the instance's segment
table, the same numbers `evaluate_schedules` gives), so evaluations = restarts × steps, and the
result is the best hard schedule seen over all restarts and steps. One jit, `vmap` over
restarts, `lax.scan` over steps. Every `round_steps` steps the restarts start afresh (a descent
settles within a few dozen steps, its logits saturate and it stops exploring): half from small
random logits, half leaning towards the best schedule so far, each with a new Adam state.

The surrogate works on an assignment matrix A (L, T) (one-hot for a schedule, soft in between).
Stages are maximal runs of one type, so the weight of "layers i..j form a stage on type t" is

    w[i, j, t] = (1 − A[i−1, t]) · Π_{l=i..j} A[l, t] · (1 − A[j+1, t])      (A[−1] = A[L] = 0)

which is exactly the stage indicator when A is one-hot and multilinear in A otherwise. With the
segment table's provisioned replicas k, stage time (s per iteration) and reason per (i, j, t):

    $/hour        = Σ w · k · price_t
    slowest (s)   = max w · time            (backward: the p-norm (Σ w · time^p)^(1/p); the
                                             default p = 1 makes it the sum of stage times)
    objective     = ln($/hour) + ln(slowest) + ln(N / (3600 · B))            (= ln cost)
                    + λ · [ max(0, ln(R · slowest / B))                        throughput shortfall
                          + Σ w · fails · (j − i + 1) / L                      unprovisionable layers
                          + Σ_t max(0, Σ w · k − max_units_t) / max_units_t ]  pooled-cap overflow

At a one-hot A the objective is ln(cost) of the exact model for a feasible schedule; for an
infeasible one the bracket holds the terms of `hps.methods.search.scoring.infeasibility_penalty`.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import optax
from flax import struct

from hps.config.limits import MASKED_LOGIT
from hps.costmodel.schedule.cost import FEASIBLE, SegmentTable
from hps.costmodel.schedule.params import PlacementParams
from hps.errors import ConfigError, SearchSpaceTooLarge
from hps.methods.search.scoring import (
    RANK_FEASIBLE,
    SearchCall,
    batch_best,
    compile_and_run,
    merge,
    nothing,
    real_sizes,
    score,
    search_method,
)

RESTARTS = 64
STEPS = 800  # RESTARTS × STEPS = 51,200 evaluations, the genetic and random defaults
MAX_WORK = 4e9
"""Stage updates (restarts × steps × L² × T) the gradient search takes on; past it, it is refused."""
MIN_STEPS = 64  # a budget buys restarts = min(RESTARTS, budget // MIN_STEPS) (at least 1)
LEARNING_RATE = 0.3
TEMPERATURE_START = 1.0
TEMPERATURE_END = 1.0
PENALTY_WEIGHT = 3.0
SLOWEST_NORM_POWER = 1.0
INIT_BIAS = 2.0  # logit bonus of a leaning restart (first round: restart r < T on type r)
ROUND_STEPS = 64
CENTRED_FRACTION = 0.5  # of the restarts of each new round, those leaning towards the best so far
MAX_EXPONENT = 80.0  # (time / slowest)^p is capped at e^80, far below float32's limit


@struct.dataclass
class Segments:
    """Per-segment constants of the surrogate, each (L, L, T) float32 over (first i, last j,
    type t); zero outside valid segments (i ≤ j < real layers, real types)."""

    valid: jnp.ndarray  # 1.0 where the segment exists
    dollars_per_hour: jnp.ndarray  # k · price, $/hour
    time: jnp.ndarray  # stage time at k, seconds per iteration (valid segments > 0)
    replicas: jnp.ndarray  # k, units
    failing_layers: jnp.ndarray  # (j − i + 1) where the segment cannot be provisioned, else 0


def segment_constants(table: SegmentTable, params: PlacementParams, type_ok) -> Segments:
    """Gather the segment table into the surrogate's constants (inf and nan never reach a product)."""
    idx = jnp.arange(params.max_layers)
    ordered = idx[:, None] <= idx[None, :]
    valid = ordered[..., None] & params.layer_mask[None, :, None] & type_ok[None, None, :]
    replicas = table.replicas.astype(jnp.float32)
    time_s = jnp.where(valid & jnp.isfinite(table.time) & (table.time > 0), table.time, 1.0)
    length = (idx[None, :] - idx[:, None] + 1).astype(jnp.float32)[..., None]
    zero = lambda x: jnp.where(valid, x, 0.0)  # noqa: E731
    return Segments(
        valid=valid.astype(jnp.float32),
        dollars_per_hour=zero(replicas * params.price_per_hour[None, None, :]),
        time=zero(time_s),
        replicas=zero(replicas),
        failing_layers=zero(jnp.where(table.reason != FEASIBLE, length, 0.0)),
    )


def stage_weights(assign, layer_mask) -> jnp.ndarray:
    """w (L, L, T) from an assignment A (L, T): w[i, j, t] = (1 − A[i−1,t])·Π_{l=i..j} A[l,t]·(1 − A[j+1,t]),
    the stage indicator for one-hot A. Padded layers count as A = 0."""
    a = assign * layer_mask[:, None]
    zero_row = jnp.zeros_like(a[:1])
    before = jnp.concatenate([zero_row, a[:-1]], axis=0)  # A[i−1]
    after = jnp.concatenate([a[1:], zero_row], axis=0)  # A[j+1]
    idx = jnp.arange(a.shape[0])
    ordered = (idx[:, None] <= idx[None, :])[..., None]  # [i, j]
    runs = jnp.cumprod(jnp.where(ordered, a[None, :, :], 1.0), axis=1)  # Π_{l=i..j} A[l, t]
    runs = jnp.where(ordered, runs, 0.0)
    return (1.0 - before)[:, None, :] * runs * (1.0 - after)[None, :, :]


def surrogate_objective(assign, segments: Segments, params: PlacementParams, penalty_weight, power) -> jnp.ndarray:
    """Scalar objective of one assignment A (L, T): ln(cost) plus λ·penalty (module docstring)."""
    w = stage_weights(assign, params.layer_mask)
    dollars = jnp.sum(w * segments.dollars_per_hour)
    tiny = jnp.finfo(jnp.float32).tiny
    slowest_exact = jnp.max(w * segments.time)
    scale = jax.lax.stop_gradient(jnp.maximum(slowest_exact, tiny))
    log_ratio = jnp.log(jnp.maximum(segments.time / scale, tiny))
    relative_power = jnp.where(segments.valid > 0, jnp.exp(jnp.minimum(power * log_ratio, MAX_EXPONENT)), 0.0)
    smooth = scale * jnp.maximum(jnp.sum(w * relative_power), tiny) ** (1.0 / power)
    slowest = slowest_exact + (smooth - jax.lax.stop_gradient(smooth))  # forward: the exact max
    log_cost = (
        jnp.log(jnp.maximum(dollars, tiny))
        + jnp.log(jnp.maximum(slowest, tiny))
        + jnp.log(params.samples / (3600.0 * params.batch))
    )
    shortfall = jnp.maximum(jnp.log(jnp.maximum(params.throughput * slowest / params.batch, tiny)), 0.0)
    failing = jnp.sum(w * segments.failing_layers) / jnp.maximum(jnp.sum(params.layer_mask), 1)
    units = jnp.sum(w * segments.replicas, axis=(0, 1))  # (T,)
    cap = jnp.maximum(params.max_units.astype(jnp.float32), 1.0)
    overflow = jnp.sum(jnp.maximum(units - cap, 0.0) / cap * (jnp.max(segments.valid, axis=(0, 1))))
    return log_cost + penalty_weight * (shortfall + failing + overflow)


def straight_through(logits, noise, temperature) -> tuple[jnp.ndarray, jnp.ndarray]:
    """(hard one-hot (L, T) with the softmax's gradient, schedule (L,) int32) of one Gumbel draw.
    The forward value is exactly the one-hot (soft − stop_gradient(soft) is exactly 0)."""
    perturbed = logits + noise
    schedule = jnp.argmax(perturbed, axis=-1).astype(jnp.int32)
    hard = jax.nn.one_hot(schedule, logits.shape[-1], dtype=logits.dtype)
    soft = jax.nn.softmax(perturbed / temperature, axis=-1)
    return hard + (soft - jax.lax.stop_gradient(soft)), schedule


def initial_logits(key, restarts: int, max_layers: int, type_ok, n_types, centre, n_centred) -> jnp.ndarray:
    """(R, L, T) fresh logits: small normal noise; restart r < n_types leans (by INIT_BIAS)
    towards the single-type plan r, or, when `n_centred` > 0, restart r < n_centred leans
    towards the schedule `centre` (L,) instead. Masked types get a large finite negative."""
    n_all_types = type_ok.shape[0]
    logits = 0.1 * jax.random.normal(key, (restarts, max_layers, n_all_types))
    restart = jnp.arange(restarts)[:, None, None]
    single = jnp.arange(n_all_types)[None, None, :] == restart
    centred = jax.nn.one_hot(centre, n_all_types, dtype=bool)[None]
    lean = jnp.where(n_centred > 0, centred & (restart < n_centred), single & (restart < n_types))
    return jnp.where(type_ok, logits + INIT_BIAS * lean, MASKED_LOGIT)


@functools.cache
def _optimiser(restarts: int, steps: int):
    """A jitted optimisation of fixed restarts and steps (one compile per pair)."""

    @jax.jit
    def optimise(
        table: SegmentTable,
        params: PlacementParams,
        key,
        n_types,
        learning_rate,
        temperatures,
        penalty_weight,
        power,
        round_steps,
        n_centred,
    ):
        type_ok = params.type_mask & (jnp.arange(params.max_types) < n_types)
        segments = segment_constants(table, params, type_ok)
        init_key, key = jax.random.split(key)
        no_centre = jnp.zeros((params.max_layers,), jnp.int32)
        logits = initial_logits(init_key, restarts, params.max_layers, type_ok, n_types, no_centre, 0)
        optimiser = optax.adam(learning_rate)

        def loss(one_logits, noise, temperature):
            assign, schedule = straight_through(one_logits, noise, temperature)
            return surrogate_objective(assign, segments, params, penalty_weight, power), schedule

        loss_grad = jax.vmap(jax.value_and_grad(loss, has_aux=True), in_axes=(0, 0, None))

        def step(carry, inputs):
            logits, opt_state, best = carry
            index, step_key, temperature = inputs
            noise_key, round_key = jax.random.split(step_key)
            new_round = (index > 0) & (index % round_steps == 0)
            fresh = initial_logits(round_key, restarts, params.max_layers, type_ok, n_types, best.schedule, n_centred)
            logits = jnp.where(new_round, fresh, logits)
            opt_state = jax.tree.map(lambda a, b: jnp.where(new_round, a, b), optimiser.init(logits), opt_state)
            noise = jax.random.gumbel(noise_key, logits.shape)
            (_, schedules), grads = loss_grad(logits, noise, temperature)
            scored = score(table, params, schedules, penalty_needed=best.rank != RANK_FEASIBLE)
            best = merge(best, batch_best(scored))
            grads = jnp.where(type_ok, grads, 0.0)
            updates, opt_state = optimiser.update(grads, opt_state)
            return (optax.apply_updates(logits, updates), opt_state, best), None

        start = (logits, optimiser.init(logits), nothing(params.max_layers))
        inputs = (jnp.arange(steps), jax.random.split(key, steps), temperatures)
        (_, _, best), _ = jax.lax.scan(step, start, inputs)
        return best

    return optimise


def temperature_schedule(steps: int, start: float, end: float) -> jnp.ndarray:
    """(steps,) softmax temperatures, geometric from start to end."""
    fraction = jnp.arange(steps, dtype=jnp.float32) / max(steps - 1, 1)
    return (start * (end / start) ** fraction).astype(jnp.float32)


def restarts_and_steps(budget: int | None, restarts: int = RESTARTS, steps: int = STEPS) -> tuple[int, int]:
    """(restarts, steps) a budget of evaluations buys: restarts = min(restarts, budget // 64)
    (at least 1), steps = budget // restarts; without a budget, the given pair."""
    if budget is None:
        return restarts, steps
    if budget < 1:
        raise ConfigError("evaluations", "", f"the gradient search needs at least 1 evaluation, got {budget}")
    restarts = max(1, min(restarts, int(budget) // MIN_STEPS))
    return restarts, int(budget) // restarts


@search_method
def gradient(
    params: PlacementParams,
    call: SearchCall,
    *,
    restarts: int = RESTARTS,
    steps: int = STEPS,
    learning_rate: float = LEARNING_RATE,
    temperature: tuple[float, float] = (TEMPERATURE_START, TEMPERATURE_END),
    penalty_weight: float = PENALTY_WEIGHT,
    power: float = SLOWEST_NORM_POWER,
    round_steps: int = ROUND_STEPS,
    centred_fraction: float = CENTRED_FRACTION,
):
    """Best hard schedule of a straight-through Gumbel-softmax descent; evaluations = restarts ×
    steps. budget (optional) sets them by `restarts_and_steps`, so evaluations ≤ budget and each
    restart gets ≥ 64 steps where the budget allows. learning_rate: Adam's, in logits per step; temperature: (start,
    end) of the geometric softmax-temperature schedule; penalty_weight: λ on the infeasibility
    terms; power: p of the backward p-norm standing in for the slowest stage; round_steps and
    centred_fraction: how often restarts start afresh and what share lean towards the best."""
    restarts, steps = restarts_and_steps(call.budget, restarts, steps)
    if restarts < 1 or steps < 1 or learning_rate <= 0 or min(temperature) <= 0 or power < 1:
        raise ValueError(
            f"need restarts ≥ 1, steps ≥ 1, learning_rate > 0, temperatures > 0 and power ≥ 1, got "
            f"{restarts}, {steps}, {learning_rate}, {temperature}, {power}"
        )
    n_layers, n_types = real_sizes(params)
    work = restarts * steps * params.max_layers**2 * params.max_types
    if work > MAX_WORK:
        raise SearchSpaceTooLarge(
            f"the gradient search relaxes every stage of every restart each step: {restarts} restarts x {steps} "
            f"steps x {params.max_layers}^2 layers x {params.max_types} types = {work:.2g} stage updates, over its "
            f"limit {MAX_WORK:.0g}; the exact solver and the genetic search serve this size"
        )
    args = (
        call.key,
        jnp.int32(n_types),
        jnp.float32(learning_rate),
        temperature_schedule(steps, *temperature),
        jnp.float32(penalty_weight),
        jnp.float32(power),
        jnp.int32(round_steps),
        jnp.int32(round(centred_fraction * restarts)),
    )
    return compile_and_run("gradient", _optimiser(restarts, steps), params, args, call, n_layers, restarts * steps)
