"""The exact placement solver: the cheapest plan of the general model, with a certificate.

docs/placement-model.md ("The exact solver") states the algorithm and proves it. For a plan P
of S stages whose stage j has cost rate r_j = k_j·price ($/h) and time τ_j (s per iteration),
cost(P) = c_S · Σ_j r_j · max_j τ_j with c_S = bubble(S) · N / (3600 · B), and (r_j, τ_j)
depend only on the stage's (first layer, last layer, type) and on S. So, per stage count:

1. a dynamic program over stage boundaries (`_least_rate`) finds the least Σ r_j of plans whose
   every τ_j ≤ ρ (and, for HeterPS schedules, whose adjacent stages differ in type);
2. starting from ρ = ∞, after each plan ρ drops below that plan's max τ; every plan left costs
   at least c_S · DP(ρ) · τ_lb(ρ), τ_lb being the largest over layers of the least τ of an
   allowed stage covering it, so once that bound reaches the best plan's cost, it is optimal;
3. pooled caps (Σ k_j ≤ max_units over the stages of one type) are met by a best-first search
   over (boundary, stages, last type, units per type) guided by an admissible cap-free bound.

With M = ∞ the bubble is 1 and plans of any stage count share one table; with finite M each
S = 1, 2, … gets its own, and S stops once bubble(S) times a lower bound that holds for every
plan (Σ_j price_j · B · (compute + boundary)_j) reaches the best cost.
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass

import numpy as np

from hps.placement.model.plan import Plan, evaluate_plan
from hps.placement.model.provisioning import FEASIBLE, Instance, provision

NODE_LIMIT = 200_000
"""Expansions of one pooled-cap search; past it the certificate reports the gap left."""


@dataclass(frozen=True)
class ExactResult:
    """The best plan found (None: no feasible plan), its `evaluate_plan` score, the proven
    lower bound on cost ($; inf when no plan is feasible), the relative gap (cost − bound) /
    bound (0: proven optimal) and the solver's wall time (s)."""

    plan: Plan | None
    score: dict | None
    bound: float
    gap: float
    seconds: float


@dataclass(frozen=True)
class _Table:
    """Every stage [first, last, t] of a plan of S stages, (L, L, T): cost rate r ($/h, inf
    where the stage is not provisionable or not allowed), time τ (s), replicas."""

    rate: np.ndarray
    time: np.ndarray
    replicas: np.ndarray


def _table(inst: Instance, stages: int) -> _Table:
    n, t = inst.num_layers, inst.num_types
    first, last, types = np.meshgrid(np.arange(n), np.arange(n), np.arange(t), indexing="ij")
    upper = first <= last
    got = provision(inst, first[upper], last[upper], types[upper], stages)
    rate, seconds = np.full((n, n, t), np.inf), np.full((n, n, t), np.inf)
    replicas = np.zeros((n, n, t), np.int64)
    ok = got.reason == FEASIBLE
    rate[upper] = np.where(ok, got.replicas * inst.price[types[upper]], np.inf)
    seconds[upper] = np.where(ok, got.time, np.inf)
    replicas[upper] = got.replicas
    return _Table(rate, seconds, replicas)


def _lex_argmin(values: np.ndarray, peaks: np.ndarray, axis: int) -> np.ndarray:
    """Indices along `axis` of the least value, ties broken by the least peak."""
    least = np.min(values, axis=axis, keepdims=True)
    return np.argmin(np.where(values == least, peaks, np.inf), axis=axis)


def _best_before(values: np.ndarray, peaks: np.ndarray, heterps: bool):
    """For a row (T,) of bests (and their peaks) by last type: the best a stage of each type
    may follow, its peak, and which type gives it (with heterps, never the same type)."""
    first = int(_lex_argmin(values, peaks, 0))
    value, peak, which = (
        np.full(len(values), values[first]),
        np.full(len(values), peaks[first]),
        np.full(len(values), first),
    )
    if heterps:
        others = np.where(np.arange(len(values)) == first, np.inf, values)
        second = int(_lex_argmin(others, peaks, 0)) if len(values) > 1 else first
        value[first], peak[first], which[first] = (
            (others[second], peaks[second], second) if len(values) > 1 else (np.inf, np.inf, first)
        )
    return value, peak, which


def _least_rate(rate: np.ndarray, seconds: np.ndarray, stages: int | None, heterps: bool):
    """(least Σ r, plan) over plans of layers 0..L−1 with exactly `stages` stages (None: any
    number), adjacent stages on different types when heterps; of the plans with the least Σ r,
    one whose largest stage time (seconds, (L, L, T)) is least. (inf, None) when none exists."""
    n, t = rate.shape[0], rate.shape[2]
    levels = stages or 1
    shape = (levels + 1, n + 1, t)
    best, peak, before, before_peak = (np.full(shape, np.inf) for _ in range(4))
    which, came = np.full(shape, -1), np.zeros(shape, np.int64)
    before[0, 0], before_peak[0, 0] = 0.0, 0.0
    columns = np.arange(t)
    for i in range(1, n + 1):
        for s in range(1, levels + 1):
            source, target = (s - 1, s) if stages else (0, 0)
            total = before[source, :i] + rate[:i, i - 1, :]  # (i, T): the last stage j..i−1
            peaks = np.maximum(before_peak[source, :i], seconds[:i, i - 1, :])
            j = _lex_argmin(total, peaks, 0)
            best[target, i], peak[target, i], came[target, i] = total[j, columns], peaks[j, columns], j
        for s in range(levels + 1) if stages else (0,):
            before[s, i], before_peak[s, i], which[s, i] = _best_before(best[s, i], peak[s, i], heterps)
    level = levels if stages else 0
    last_type = int(_lex_argmin(best[level, n], peak[level, n], 0))
    total = float(best[level, n, last_type])
    if not math.isfinite(total):
        return math.inf, None
    plan, i = [], n
    while i > 0:
        j = int(came[level, i, last_type])
        plan.append((j, i - 1, last_type))
        source = level - 1 if stages else 0
        last_type, i, level = int(which[source, j, last_type]), j, source
    return total, tuple(reversed(plan))


def _cover_bound(seconds: np.ndarray) -> float:
    """τ_lb: the largest over layers l of the least τ of a stage covering l (inf: some layer
    has no allowed stage)."""
    least = np.min(seconds, axis=2)  # [first, last]
    to_right = np.minimum.accumulate(least[:, ::-1], axis=1)[:, ::-1]  # [f, l]: min over last >= l
    covering = np.minimum.accumulate(to_right, axis=0)  # [f, l]: min over first <= f as well
    return float(np.max(np.diagonal(covering)))


def _meets_caps(plan: Plan, table: _Table, inst: Instance) -> bool:
    units = np.zeros(inst.num_types, np.int64)
    for first, last, t in plan:
        units[t] += table.replicas[first, last, t]
    return bool(np.all(units <= inst.max_units))


def _capped_search(table: _Table, allowed: np.ndarray, inst: Instance, stages: int | None, heterps: bool):
    """(least Σ r, plan, proven lower bound on Σ r) over plans meeting the pooled caps, by
    best-first search guided by the cap-free least rate from each boundary to the end."""
    n = inst.num_layers
    rate = np.where(allowed, table.rate, np.inf)
    to_end = np.full(n + 1, np.inf)
    to_end[n] = 0.0
    for j in range(n - 1, -1, -1):
        to_end[j] = float(np.min(rate[j, j:, :] + to_end[j + 1 :, None]))
    start = (to_end[0], 0.0, 0, 0, -1, (0,) * inst.num_types, ())
    frontier, seen, expanded = [start], set(), 0
    while frontier and expanded < NODE_LIMIT:
        bound, spent, j, s, last, units, plan = heapq.heappop(frontier)
        if j == n:
            if stages is None or s == stages:
                return spent, plan, spent
            continue
        if (j, s, last, units) in seen or (stages is not None and s >= stages):
            continue
        seen.add((j, s, last, units))
        expanded += 1
        ends, types = np.nonzero(np.isfinite(rate[j, j:, :]))
        for end, t in zip(ends + j, types):
            k = int(table.replicas[j, end, t])
            if (heterps and t == last) or units[t] + k > inst.max_units[t]:
                continue
            grown = units[:t] + (units[t] + k,) + units[t + 1 :]
            cost = spent + rate[j, end, t]
            heapq.heappush(
                frontier, (cost + to_end[end + 1], cost, end + 1, s + 1, int(t), grown, (*plan, (j, int(end), int(t))))
            )
    lowest = frontier[0][0] if frontier else math.inf
    return math.inf, None, lowest


def _work_bound(inst: Instance) -> float:
    """min over plans of Σ_j price_j · B · (compute + boundary per sample)_j ($·s/h): with
    r_j·τ_j ≥ price_j·B·(compute + boundary)_j, a lower bound on Σ r · max τ of every plan."""
    n = inst.num_layers
    first, last = np.triu_indices(n)
    per_sample = inst.time_prefix[last + 1] - inst.time_prefix[first]  # (N, T)
    act_in = np.where(first > 0, inst.act[np.maximum(first - 1, 0)], 0.0)
    act_out = np.where(last < n - 1, inst.act[last], 0.0)
    per_sample = per_sample + 2 * (act_in + act_out)[:, None] / inst.nic_bw[None]
    work = np.full((n, n, inst.num_types), np.inf)
    work[first, last] = inst.price[None] * inst.job.batch * per_sample
    return _least_rate(work, work, None, False)[0]


def _solve_count(inst: Instance, table: _Table, stages: int | None, heterps: bool, scale: float, best):
    """Lower ρ until the bound proves `best` (cost, plan) optimal among plans of this stage
    count. Returns (best, the bound left unproven: inf when every class was closed)."""
    allowed = np.isfinite(table.rate)
    while True:
        seconds = np.where(allowed, table.time, np.inf)
        total, plan = _least_rate(np.where(allowed, table.rate, np.inf), seconds, stages, heterps)
        if plan is None:
            return best, math.inf
        # Σ r · max τ ≥ Σ_j r_j · max(τ_j, τ_lb) for every plan of the class
        cover = _cover_bound(seconds)
        mixed = np.where(allowed, table.rate * np.maximum(table.time, cover), np.inf)
        if scale * _least_rate(mixed, seconds, stages, heterps)[0] >= best[0]:
            return best, math.inf
        least = total
        if not _meets_caps(plan, table, inst):
            total, plan, lowest = _capped_search(table, allowed, inst, stages, heterps)
            if plan is None:
                return best, scale * lowest * cover
        rho = max(table.time[f, e, t] for f, e, t in plan)
        cost = scale * total * rho
        if cost < best[0]:
            best = (cost, plan)
        # A plan of max τ ≥ best / (scale · least) costs at least the best: skip them all.
        allowed &= table.time < min(rho, best[0] / (scale * least))


def solve_exact(inst: Instance, *, heterps: bool = False) -> ExactResult:
    """The cheapest plan of `inst` (with heterps, the cheapest HeterPS schedule: adjacent
    stages on different types) and its certificate."""
    started = time.perf_counter()
    job = inst.job
    per_cost = job.samples / (3600.0 * job.batch)
    best, unproven = (math.inf, None), math.inf
    if math.isinf(job.micro_batches):
        best, unproven = _solve_count(inst, _table(inst, 1), None, heterps, per_cost, best)
    else:
        work = _work_bound(inst)
        for stages in range(1, inst.num_layers + 1):
            if inst.bubble(stages) * per_cost * work >= best[0]:
                break
            scale = inst.bubble(stages) * per_cost
            best, left = _solve_count(inst, _table(inst, stages), stages, heterps, scale, best)
            unproven = min(unproven, left)
    cost, plan = best
    bound = min(cost, unproven)
    score = evaluate_plan(inst, plan) if plan is not None else None
    gap = 0.0 if plan is None or bound >= cost else (cost - bound) / bound
    return ExactResult(plan, score, bound, gap, time.perf_counter() - started)
