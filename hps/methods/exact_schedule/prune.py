"""The exact solver's stage table without the stages that cannot be in a cheaper plan.

Every stage (first, last, t) at k units has r·τ = price_t·k·time = price_t·(B·ps + k·sync(k)),
ps being its compute and boundary seconds per sample times B. A plan costs c_S·Σ_j r_j·max τ ≥
c_S·Σ_j w_j for any lower bounds w_j ≤ r_j·τ_j. So with P(f) the least Σ w of stages covering
layers before f and Q(l+1) of those after l, no plan through the stage costs less than
c_S·(P(f) + w + Q(l+1)), and stages where that reaches the cost of a known plan are left out
(rate inf) before any is provisioned exactly. Two bounds are taken in turn:

1. w0 = price_t·B·ps (no All-Reduce), cheap, on every stage;
2. on the stages left, w = price_t·(B·ps + k_lb·sync_lb(k_lb)): for every k an allowed mode may
   take, k ≥ k_lb (memory and the floor, with the All-Reduce time's suffix minimum sync_lb), a
   closed form. P and Q are taken over the stages left only: every stage of a plan cheaper than
   the known one is among them, so the test still keeps all of its stages.

The known plan is scored exactly: first the cheapest under the rates price_t·k (k the floor's
least, no memory or All-Reduce), then the cheapest under price_t·k_lb over the stages left.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hps.costmodel.schedule.plan import evaluate_plan
from hps.costmodel.schedule.provisioning import Instance, boundary_bytes, range_max
from hps.errors import InstanceTooLarge
from hps.methods.exact_schedule.dp import least_rate, least_span_rate
from hps.methods.exact_schedule.table import CHUNK, Table, fill_table, refuse_dense

GUESS_BOUNDARIES = 256
"""The first guessed plan places its stage boundaries on at most this many layers."""

DENSE_SHARE = 0.3
"""Past this share of a chunk's stages left by the first bound, the second is computed for all."""

SAFETY = 1e-9
"""Relative margin on the pruning test, for the floats of r·τ against those of its bound."""


def cost_scale(inst: Instance, stages: int) -> float:
    """c_S = bubble(S)·N / (3600·B) (h per iteration-second): a plan of S stages costs c_S·Σ r·max τ."""
    return inst.bubble(stages) * inst.job.samples / (3600.0 * inst.job.batch)


def _ceil(values: np.ndarray) -> np.ndarray:
    return np.ceil(values * (1 - 1e-12))


def per_sample_seconds(inst: Instance, first, last, types=None) -> np.ndarray:
    """B·(compute + 2·boundary / nic_bw) seconds of stages first..last on `types` (arrays that
    broadcast to one shape; None: every type, (P, T) for first and last (P,)): the time of one
    replica's batch with no All-Reduce."""
    if types is None:
        time_sum = inst.time_prefix[last + 1] - inst.time_prefix[first]
        nic_bw, boundary = inst.nic_bw, boundary_bytes(inst, first, last)[:, None]
    else:
        time_sum = inst.time_prefix[last + 1, types] - inst.time_prefix[first, types]
        nic_bw, boundary = inst.nic_bw[types], boundary_bytes(inst, first, last)
    return inst.job.batch * (time_sum + (2 * boundary) / nic_bw)


def work_bounds(inst: Instance, first, last, types, stages: int):
    """(w, k_lb) of stages first..last on `types` (arrays that broadcast to one shape; None:
    every type, (P, T) for first and last (P,)) in a plan of `stages` stages: a lower bound on
    r·τ ($·s/h) and on k over every allowed mode; inf where no k ≤ max_units can fit memory
    and meet the floor."""
    job = inst.job
    target = job.batch / (job.throughput * inst.bubble(stages))
    per_sample = per_sample_seconds(inst, first, last, types)
    if types is None:
        first, last, types = first[:, None], last[:, None], np.arange(inst.num_types)
    dense = inst.dense_prefix[last + 1] - inst.dense_prefix[first]
    shrinking = (inst.sparse_prefix[last + 1] - inst.sparse_prefix[first]) + job.batch * (
        inst.act_prefix[last + 1] - inst.act_prefix[first]
    )
    memory = inst.memory[types]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        room = memory - 4 * dense
        k_mem = np.where(room > 0, shrinking / room, np.where(shrinking == 0, 1.0, np.inf))
        if job.state_sharding == "auto":
            widest = range_max(inst.dense, np.ravel(first), np.ravel(last)).reshape(np.shape(first))
            room = memory - widest
            sharded = np.where(room > 0, (4 * dense + shrinking) / room, np.inf)
            k_mem = np.minimum(k_mem, np.maximum(2.0, sharded))
        k = np.maximum(np.maximum(1.0, _ceil(k_mem)), _ceil(per_sample / target))
        sync = _sync_lower(inst, dense, types, k)  # k ≥ B·ps / (target − sync_lb(k)): the floor with the least sync
        k = np.maximum(k, np.where(target - sync > 0, _ceil(per_sample / (target - sync)), np.inf))
        feasible = k <= inst.max_units[types]
        k = np.where(feasible, k, np.inf)
        # sync_lb only grows with k, so sync_lb(k) ≥ the sync_lb taken before k rose: one gather
        work = np.where(feasible, inst.price[types] * (per_sample + k * sync), np.inf)
    return work, k


def _sync_lower(inst: Instance, dense: np.ndarray, types, k: np.ndarray) -> np.ndarray:
    """sync_lb(k): the least All-Reduce time over every k' ≥ k (replicated, the least of the
    modes); 0 where k = 1 or the span has no dense bytes."""
    width = inst.alpha_lb.shape[1]
    k = np.where(np.isfinite(k), k, 1.0)
    flat = types * width + np.minimum(k, width).astype(np.int64) - 1
    value = dense * inst.alpha_lb.ravel()[flat] + inst.beta_lb.ravel()[flat]
    return np.where((k > 1) & (dense > 0), value, 0.0)


def _prefix_least(cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(P, Q), (L + 1,) each: the least Σ cost of spans covering layers 0..f−1 and f..L−1, for
    span costs [first, last] (L, L)."""
    n = cost.shape[0]
    before, after = np.full(n + 1, np.inf), np.full(n + 1, np.inf)
    before[0], after[n] = 0.0, 0.0
    by_last = cost.T.copy()
    for i in range(1, n + 1):
        before[i] = np.min(before[:i] + by_last[i - 1, :i])
    for j in range(n - 1, -1, -1):
        after[j] = np.min(cost[j, j:] + after[j + 1 :])
    return before, after


def _round_down(values: np.ndarray) -> np.ndarray:
    """values as float32, each ≤ its float64 value (still a lower bound; inf stays inf)."""
    with np.errstate(over="ignore"):
        low = values.astype(np.float32)
    return np.where(low > values, np.nextafter(low, np.float32(-np.inf)), low)


def _span_least(span: np.ndarray, values: np.ndarray, spans: int) -> tuple[np.ndarray, np.ndarray]:
    """(least (spans,), at (spans,)): per span id the least of `values` (N,) over the entries of
    that id (`span` (N,), sorted), and the first entry holding it; inf and −1 where none."""
    least, at = np.full(spans, np.inf), np.full(spans, -1)
    if len(span):
        starts = np.flatnonzero(np.r_[True, span[1:] != span[:-1]])
        mins = np.minimum.reduceat(values, starts)
        least[span[starts]] = mins
        hit = np.flatnonzero(values == np.repeat(mins, np.diff(np.r_[starts, len(span)])))
        hit = hit[np.r_[True, span[hit][1:] != span[hit][:-1]]]
        at[span[hit]] = hit
    return least, at


def _guess(inst: Instance, first, last, kind, rate, stages: int | None, heterps: bool):
    """A plan to score: the least Σ rate over plans of the stages first..last on `kind` with
    rates `rate` (N,) each, inf where not allowed (of each span the least only, unless
    heterps: then a HeterPS schedule, if the dense form fits memory); None if none."""
    n = inst.num_layers
    if heterps:
        try:
            refuse_dense(inst)
        except InstanceTooLarge:
            return None
        typed = np.full((n, n, inst.num_types), np.inf)
        typed[first, last, kind] = rate
        return least_rate(typed, np.zeros_like(typed), stages, True)[1]
    span = first * n + last
    least, at = _span_least(span, rate, n * n)
    by_last = least.reshape(n, n).T.copy()
    spans = least_span_rate(by_last, np.zeros_like(by_last), stages)[1]
    if spans is None:
        return None
    return tuple((f, e, int(kind[at[f * n + e]])) for f, e in spans)


def _improve(inst: Instance, best: tuple, plan) -> tuple:
    """best (cost, plan), or (cost, plan) of `plan` where it is feasible and cheaper."""
    if plan is None:
        return best
    score = evaluate_plan(inst, plan)
    return (score.cost, plan) if score.feasible and score.cost < best[0] else best


def _covering_least(n: int, first, last, least: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(P, Q), (L + 1,) each, from each span's least bound `least` (P,) over spans first..last."""
    cost = np.full((n, n), np.inf)
    cost[first, last] = least
    return _prefix_least(cost)


def _room(scale: float, best: tuple, first, last, before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """(P,): the most a stage first..last may cost (w, $·s/h) and still be in a plan cheaper
    than `best` at cost scale c_S = `scale`, given P = before and Q = after; nan where none may."""
    with np.errstate(invalid="ignore"):  # nan where no plan passes the span: dropped, rightly
        return best[0] * (1 + SAFETY) / scale - before[first] - after[last + 1]


@dataclass(frozen=True)
class FirstBound:
    """w0 = price·B·ps ≤ r·τ, which does not depend on the stage count: each span's least over
    types (P,) ($·s/h), and P, Q (L + 1,) of it. `before[L]` bounds Σ r·τ of every plan."""

    least: np.ndarray
    before: np.ndarray
    after: np.ndarray


def first_bound(inst: Instance) -> FirstBound:
    """The FirstBound of every span, CHUNK stages at a time."""
    n = inst.num_layers
    first, last = np.triu_indices(n)
    least = np.empty(len(first))
    step = max(1, CHUNK // inst.num_types)
    for start in range(0, len(first), step):
        part = slice(start, start + step)
        least[part] = np.min(inst.price * per_sample_seconds(inst, first[part], last[part]), axis=1)
    return FirstBound(least, *_covering_least(n, first, last, least))


def _grid_guess(inst: Instance, stages: int, count: int | None, heterps: bool):
    """A first plan to score, whose stage boundaries lie on at most GUESS_BOUNDARIES evenly
    spaced layers: the least Σ price·k_lb over those (Σ w with heterps); None if none."""
    n, types = inst.num_layers, np.arange(inst.num_types)
    cuts = np.r_[np.arange(0, n, -(-n // GUESS_BOUNDARIES)), n]
    a, b = np.triu_indices(len(cuts) - 1)
    first, last = cuts[a], cuts[b + 1] - 1
    work, k_lb = work_bounds(inst, first, last, None, stages)
    rate = work if heterps else inst.price * k_lb
    at = np.repeat(np.arange(len(first)), len(types))
    return _guess(inst, first[at], last[at], np.tile(types, len(first)), rate.ravel(), count, heterps)


def _bounds_where_left(inst: Instance, first, last, room: np.ndarray, stages: int):
    """(w, k_lb) (P, T) of spans first..last (P,) on every type where w0 ≤ room (P,), inf
    elsewhere."""
    if np.all(room == np.inf):
        return work_bounds(inst, first, last, None, stages)
    alive = inst.price * per_sample_seconds(inst, first, last) <= room[:, None]
    if alive.mean() > DENSE_SHARE:  # most are left: one broadcast pass is faster
        w, k = work_bounds(inst, first, last, None, stages)
        return np.where(alive, w, np.inf), np.where(alive, k, np.inf)
    w, k = np.full(alive.shape, np.inf), np.full(alive.shape, np.inf)
    s, t = np.nonzero(alive)
    w[s, t], k[s, t] = work_bounds(inst, first[s], last[s], t, stages)
    return w, k


def _second_bounds(inst: Instance, first, last, stages: int, room: np.ndarray, heterps: bool):
    """(w (P, T) float32 rounded down, each span's least w (P,), guess rate (P,), its type
    (P,)): the second bound of the stages whose first one is ≤ room (P,), inf elsewhere; the
    guess rate is price·k_lb (w with heterps). CHUNK stages at a time."""
    count = len(first)
    work = np.empty((count, inst.num_types), np.float32)
    least, rate, kind = np.empty(count), np.empty(count), np.empty(count, np.int64)
    step = max(1, CHUNK // inst.num_types)
    for start in range(0, count, step):
        part = slice(start, start + step)
        w, k = _bounds_where_left(inst, first[part], last[part], room[part], stages)
        work[part], least[part] = _round_down(w), np.min(w, axis=1)
        guess = w if heterps else inst.price * k
        kind[part] = np.argmin(guess, axis=1)
        rate[part] = np.take_along_axis(guess, kind[part, None], 1)[:, 0]
    return work, least, rate, kind


def _survivors(low: np.ndarray, room: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(span, type) (N,) each, sorted: the stages with a finite bound low (P, T) ≤ room (P,)."""
    spans, kinds = [], []
    step = max(1, CHUNK // low.shape[1])
    for start in range(0, len(low), step):
        part = slice(start, start + step)
        bound = low[part]
        s, t = np.nonzero((bound <= room[part, None]) & np.isfinite(bound))
        spans.append(s + start)
        kinds.append(t)
    return np.concatenate(spans), np.concatenate(kinds)


def pruned_table(inst: Instance, stages: int, heterps: bool, best: tuple, bound: FirstBound):
    """(table, best): the stage table of plans of `stages` stages, every stage that no plan
    cheaper than the best known (cost, plan) can use left out, and that best, improved by the
    guessed plans where they are feasible and cheaper; bound: `first_bound(inst)`. Bounds are
    computed CHUNK stages at a time and the second kept as float32 rounded down, so memory
    stays bounded."""
    n = inst.num_layers
    first, last = np.triu_indices(n)
    count = None if math.isinf(inst.job.micro_batches) else stages
    scale = cost_scale(inst, stages)
    if math.isinf(best[0]) and n > GUESS_BOUNDARIES:  # else every layer is on the grid: step 2 guesses
        best = _improve(inst, best, _grid_guess(inst, stages, count, heterps))
    room = np.full(len(first), np.inf)
    if math.isfinite(best[0]):
        room = _room(scale, best, first, last, bound.before, bound.after)
    work, least, rate, kind = _second_bounds(inst, first, last, stages, room, heterps)
    if not np.any(np.isfinite(least)):
        return fill_table(inst, first[:0], last[:0], first[:0], stages), best
    if heterps:
        at = np.repeat(np.arange(len(first)), inst.num_types)
        kinds = np.tile(np.arange(inst.num_types), len(first))
        plan = _guess(inst, first[at], last[at], kinds, work.ravel().astype(np.float64), count, True)
    else:
        plan = _guess(inst, first, last, kind, rate, count, False)
    best = _improve(inst, best, plan)
    spans, kinds = _survivors(work, _room(scale, best, first, last, *_covering_least(n, first, last, least)))
    del work
    table = fill_table(inst, first[spans], last[spans], kinds, stages)
    return _drop_slow(inst, stages, table, best), best


def _drop_slow(inst: Instance, stages: int, table: Table, best: tuple) -> Table:
    """The table without the stages too slow for a plan cheaper than `best`: a plan through
    stage s costs c_S·Σ_j r_j·max τ ≥ c_S·τ_s·(R(f) + r_s + R'(l+1)), R and R' the least Σ r of
    stages covering the layers before and after it (the exact r, τ of the table)."""
    n = inst.num_layers
    if not len(table.first):
        return table
    least, _ = _span_least(table.first * n + table.last, table.rate, n * n)
    before, after = _prefix_least(least.reshape(n, n))
    scale = cost_scale(inst, stages)
    with np.errstate(invalid="ignore"):
        total = before[table.first] + table.rate + after[table.last + 1]
        keep = ~(scale * table.time * total > best[0] * (1 + SAFETY))
    return table.subset(keep)
