"""Pooled caps in the exact solver: the best-first search for the cheapest plan that meets every
type's max_units, guided by admissible bounds (the cap-free least rate to the end and its
Lagrangian tightening)."""

from __future__ import annotations

import heapq
import math
import time

import numpy as np

from hps.costmodel.schedule.plan import IndexPlan
from hps.costmodel.schedule.provisioning import Instance
from hps.methods.exact_schedule.dp import least_rate
from hps.methods.exact_schedule.table import DenseTable, Table

NODE_LIMIT = 200_000
"""Expansions of one pooled-cap search; past it the certificate reports the gap left."""


def meets_caps(plan: IndexPlan, table: Table, inst: Instance) -> bool:
    units = np.zeros(inst.num_types)
    for first, last, t in plan:
        units[t] += table.stage_replicas(first, last, t)
    return bool(np.all(units <= inst.max_units))


def plan_units(plan: IndexPlan, table: DenseTable, num_types: int) -> np.ndarray:
    """(T,) units each type's stages of `plan` use."""
    units = np.zeros(num_types)
    for first, last, t in plan:
        units[t] += table.replicas[first, last, t]
    return units


def _fits_neighbours(plan: list, j: int, t: int, heterps: bool) -> bool:
    """Whether stage j of `plan` may take type t: with heterps, no neighbour has it."""
    if not heterps:
        return True
    return all(plan[i][2] != t for i in (j - 1, j + 1) if 0 <= i < len(plan))


def _moves(plan: list, table: DenseTable, rate, units: np.ndarray, caps: np.ndarray, heterps: bool, only_over: bool):
    """(Δrate per unit freed, stage, new type) of every type change of one stage to an allowed
    stage (finite `rate`, (L, L, T)) that keeps the new type within its cap; with only_over,
    of stages on types over their cap only."""
    for j, (first, last, t) in enumerate(plan):
        if only_over and units[t] <= caps[t]:
            continue
        k = table.replicas[first, last, t]
        for other in np.flatnonzero(np.isfinite(rate[first, last])):
            grown = units[other] + table.replicas[first, last, other]
            if other == t or grown > caps[other] or not _fits_neighbours(plan, j, int(other), heterps):
                continue
            yield (rate[first, last, other] - rate[first, last, t]) / k, j, int(other)


def repair(plan: IndexPlan, table: DenseTable, rate: np.ndarray, inst: Instance, heterps: bool) -> IndexPlan | None:
    """A plan of allowed stages (finite `rate`) on the same boundaries as `plan` that meets the
    pooled caps, or None: stages of types
    over their cap move, one at a time, to the type with room that adds the least rate per unit
    freed; then any stage moves to a cheaper type with room while one exists."""
    caps = inst.max_units.astype(np.float64)
    plan, units = list(plan), plan_units(plan, table, inst.num_types)
    for only_over in (True, False):
        while not only_over or np.any(units > caps):
            move = min(_moves(plan, table, rate, units, caps, heterps, only_over), default=None)
            if move is None:
                if only_over:
                    return None
                break
            if not only_over and move[0] >= 0:
                break
            _, j, other = move
            first, last, t = plan[j]
            units[t] -= table.replicas[first, last, t]
            units[other] += table.replicas[first, last, other]
            plan[j] = (first, last, other)
    return tuple(plan)


def rate_to_end(rate: np.ndarray, stages: int | None) -> np.ndarray:
    """[r, j]: the least rate from boundary j to the end in exactly r stages, (stages + 1, L + 1);
    with stages None, one row [0, j] over any number of stages. rate (L, L, T)."""
    n = rate.shape[0]
    least = np.min(rate, axis=2)  # [first, last]: the cheapest type of each stage
    rows = 1 if stages is None else stages + 1
    out = np.full((rows, n + 1), np.inf)
    out[0, n] = 0.0
    for r in range(1, rows) if stages is not None else (0,):
        source = r - 1 if stages is not None else 0
        for j in range(n - 1, -1, -1):
            out[r, j] = float(np.min(least[j, j:] + out[source, j + 1 :]))
    return out


def cap_prices(
    table: DenseTable,
    rate: np.ndarray,
    inst: Instance,
    stages: int | None,
    heterps: bool,
    rounds: int = 40,
    start: np.ndarray | None = None,
    enough: float = math.inf,
):
    """Lagrange prices λ (T,) $/h per unit on the pooled caps, by subgradient ascent on the dual
    g(λ) = min_P Σ_j (r_j + λ_t·k_j) − Σ_t λ_t·max_units_t ≤ the least Σ r of plans meeting the
    caps, from λ = `start` (None: 0), for at most `rounds` programs, stopping early once
    g(λ) ≥ `enough`. Returns (λ, g(λ), (Σ r, plan) of the cheapest plan that met the caps on
    the way, each iterate's plan `repair`ed where it broke them; (inf, None) when none did)."""
    caps = inst.max_units.astype(np.float64)
    lam = np.zeros(inst.num_types) if start is None else np.array(start, np.float64)
    best, incumbent = (-math.inf, lam), (math.inf, None)
    unit = float(np.max(inst.price))
    for _ in range(rounds):
        total, plan = least_rate(rate + lam * table.replicas, table.time, stages, heterps)
        if plan is None:
            return lam, math.inf, incumbent
        used = plan_units(plan, table, inst.num_types)
        value = total - float(lam @ caps)
        if value > best[0]:
            best = (value, lam.copy())
        if value >= enough:
            break
        over = used - caps
        meeting = plan if np.all(over <= 0) else repair(plan, table, rate, inst, heterps)
        if meeting is not None:
            plain = float(sum(rate[f, e, t] for f, e, t in meeting))
            incumbent = min(incumbent, (plain, meeting))
            if incumbent[0] - best[0] <= 1e-12 * incumbent[0]:
                break
        norm = float(over @ over)
        if norm == 0:
            break
        target = min(incumbent[0], enough)  # Polyak's step towards what is worth reaching
        if not math.isfinite(target):
            target = best[0] + 0.1 * abs(best[0]) + unit
        lam = np.maximum(0.0, lam + (target - value) / norm * over)
    return best[1], best[0], incumbent


def capped_search(
    table: DenseTable,
    allowed: np.ndarray,
    inst: Instance,
    stages: int | None,
    heterps: bool,
    deadline,
    nodes=NODE_LIMIT,
    useless_from: float = math.inf,
):
    """(least Σ r, plan, proven lower bound on Σ r) over plans meeting the pooled caps. Lagrange
    prices give a bound and usually the plan; otherwise a best-first search over (boundary,
    stages, last type, units per type) finishes, its bound on the rest of a plan the larger of
    the cap-free least rate to the end and its priced form less λ·(caps − units used). It stops
    early after `nodes` expansions or at `deadline` (time.perf_counter()), and then the bound
    it returns is below the rate it found. useless_from: the caller has no use for plans of
    Σ r ≥ it (they cannot beat its best plan), so the search prunes them; when it finds none
    below, the bound it returns is at least useless_from (or the plan it has)."""
    n = inst.num_layers
    rate = np.where(allowed, table.rate, np.inf)
    lam, dual, (upper, found) = cap_prices(table, rate, inst, stages, heterps)
    if found is not None and upper - dual <= 1e-12 * upper:
        return upper, found, upper
    free = rate_to_end(rate, stages)
    priced = rate_to_end(rate + lam * table.replicas, stages)
    caps = inst.max_units.astype(np.float64)

    def rest(j: int, s: int, units) -> float:
        """A lower bound on the rate of the stages after boundary j (s stages so far)."""
        row = 0 if stages is None else stages - s
        if row < 0:
            return math.inf
        return max(free[row, j], priced[row, j] - float(lam @ (caps - np.asarray(units))))

    limit = min(upper, useless_from)  # nodes whose bound reaches it cannot help the caller
    start = (max(dual, rest(0, 0, (0,) * inst.num_types)), 0.0, 0, 0, -1, (0,) * inst.num_types, ())
    frontier, seen, expanded = [start], set(), 0
    while frontier and expanded < nodes and frontier[0][0] < limit:
        if expanded % 256 == 0 and time.perf_counter() > deadline:
            break
        bound, spent, j, s, last, units, plan = heapq.heappop(frontier)
        if j == n:
            return spent, plan, spent
        if (j, s, last, units) in seen:
            continue
        seen.add((j, s, last, units))
        expanded += 1
        ends, types = np.nonzero(np.isfinite(rate[j, j:, :]))
        for end, t in zip(ends + j, types):
            k = int(table.replicas[j, end, t])
            if (heterps and t == last) or units[t] + k > caps[t]:
                continue
            grown = units[:t] + (units[t] + k,) + units[t + 1 :]
            cost = spent + rate[j, end, t]
            estimate = cost + rest(end + 1, s + 1, grown)
            if estimate < limit:
                heapq.heappush(
                    frontier, (estimate, cost, end + 1, s + 1, int(t), grown, (*plan, (j, int(end), int(t))))
                )
    lowest = min(frontier[0][0], limit) if frontier else limit
    return upper, found, min(upper, max(dual, lowest))
