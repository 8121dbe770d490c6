"""Pooled caps in the exact solver: the best-first search for the cheapest plan that meets every
type's max_units, guided by admissible bounds (the cap-free least rate to the end and its
Lagrangian tightening)."""

from __future__ import annotations

import heapq
import math

import numpy as np

from hps.placement.exact.table import Table
from hps.placement.model.plan import Plan
from hps.placement.model.provisioning import Instance

NODE_LIMIT = 200_000
"""Expansions of one pooled-cap search; past it the certificate reports the gap left."""


def meets_caps(plan: Plan, table: Table, inst: Instance) -> bool:
    units = np.zeros(inst.num_types, np.int64)
    for first, last, t in plan:
        units[t] += table.replicas[first, last, t]
    return bool(np.all(units <= inst.max_units))


def rate_to_end(rate: np.ndarray):
    """(least rate from each boundary j to the end (L+1,), the stage (end, type) it starts with
    (L, 2)) over plans of any stage count, by a DP from the right; rate (L, L, T)."""
    n, t = rate.shape[0], rate.shape[2]
    to_end, first = np.full(n + 1, np.inf), np.zeros((n, 2), np.int64)
    to_end[n] = 0.0
    for j in range(n - 1, -1, -1):
        totals = rate[j, j:, :] + to_end[j + 1 :, None]
        flat = int(np.argmin(totals))
        to_end[j], first[j] = totals.flat[flat], (j + flat // t, flat % t)
    return to_end, first


def rate_to_end_in(rate: np.ndarray, stages: int) -> np.ndarray:
    """(stages + 1, L + 1): [r, j] the least rate from boundary j to the end in exactly r stages."""
    n = rate.shape[0]
    least = np.min(rate, axis=2)  # [first, last]: the cheapest type of each stage
    out = np.full((stages + 1, n + 1), np.inf)
    out[0, n] = 0.0
    for r in range(1, stages + 1):
        for j in range(n - 1, -1, -1):
            out[r, j] = float(np.min(least[j, j:] + out[r - 1, j + 1 :]))
    return out


def cap_prices(table: Table, rate: np.ndarray, inst: Instance, rounds: int = 30):
    """(λ (T,) $/h per unit, to_end_λ (L+1,)): Lagrange prices on the pooled caps, by
    subgradient ascent on min_P Σ_j (r_j + λ_t·k_j) − Σ_t λ_t·max_units_t, the best found.
    For every plan meeting the caps and each boundary j, the rest of the plan costs at least
    to_end_λ[j] − Σ_t λ_t·(max_units_t − units used before j)."""
    caps = inst.max_units.astype(np.float64)
    lam = np.zeros(inst.num_types)
    best = (-np.inf, lam, rate_to_end(rate)[0])
    unit = float(np.max(inst.price))
    for round_ in range(rounds):
        to_end, first = rate_to_end(rate + lam * table.replicas)
        value = to_end[0] - float(lam @ caps)
        if value > best[0]:
            best = (value, lam.copy(), to_end)
        units, j = np.zeros(inst.num_types), 0
        while j < inst.num_layers and np.isfinite(to_end[j]):
            end, t = first[j]
            units[t] += table.replicas[j, end, t]
            j = end + 1
        over = (units - caps) / caps
        if np.all(over <= 0) and np.all(lam * over == 0):
            break
        lam = np.maximum(0.0, lam + unit * over / (1 + round_))
    return best[1], best[2]


def capped_search(table: Table, allowed: np.ndarray, inst: Instance, stages: int | None, heterps: bool):
    """(least Σ r, plan, proven lower bound on Σ r) over plans meeting the pooled caps, by
    best-first search guided by an admissible bound on the rest of the plan: the larger of the
    cap-free least rate to the end and its Lagrangian tightening (`cap_prices`)."""
    n = inst.num_layers
    rate = np.where(allowed, table.rate, np.inf)
    to_end = rate_to_end(rate)[0] if stages is None else rate_to_end_in(rate, stages)
    lam, priced = cap_prices(table, rate, inst)
    caps = inst.max_units.astype(np.float64)

    def rest(j: int, s: int, units) -> float:
        """A lower bound on the rate of the stages after boundary j (s stages so far)."""
        if j == n:
            return 0.0 if stages is None or s == stages else math.inf
        free = to_end[j] if stages is None else (to_end[stages - s, j] if s < stages else math.inf)
        return max(free, priced[j] - float(lam @ (caps - np.asarray(units))))

    start = (rest(0, 0, (0,) * inst.num_types), 0.0, 0, 0, -1, (0,) * inst.num_types, ())
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
            if (heterps and t == last) or units[t] + k > caps[t]:
                continue
            grown = units[:t] + (units[t] + k,) + units[t + 1 :]
            cost = spent + rate[j, end, t]
            estimate = cost + rest(end + 1, s + 1, grown)
            if math.isfinite(estimate):
                heapq.heappush(
                    frontier, (estimate, cost, end + 1, s + 1, int(t), grown, (*plan, (j, int(end), int(t))))
                )
    lowest = frontier[0][0] if frontier else math.inf
    return math.inf, None, lowest
