"""Pooled caps at scale: a lower bound on the cost of every plan whose bottleneck lies in a range
of stage times, by Lagrange duals on a refined grid of time thresholds.

Every plan that meets the pooled caps and whose stages all take τ ≤ ρ has Σ r ≥ g(ρ), the
Lagrangian dual of the capped least rate under threshold ρ (`cap_prices`, valid for any prices
λ ≥ 0). So a plan whose max τ lies in (lo, hi] costs at least c·lo·g(hi). Starting from one
interval [τ_lb, ρ] of the plans still open (τ_lb: no plan has a smaller max τ), the interval of
the weakest bound is cut at its geometric midpoint, which costs one dual there; an interval
closes once its bound reaches the best plan's cost, and the part of it above best / (c·g(hi))
closes at once. The search ends when every interval is closed, when the weakest is narrower
than a ratio of `NARROW` (its bound is then within that ratio of c·ρ·g(ρ), and the gap left
is the duals' own), or at the deadline. The duals' cap-meeting iterates (repaired where they
broke a cap) are plans, and the cheapest becomes the best. docs/pipeline-plans.md ("Pooled caps
at scale") states and proves it.
"""

from __future__ import annotations

import heapq
import math
import time

import numpy as np

from hps.costmodel.schedule.provisioning import Instance
from hps.methods.exact_schedule.best import keep_cheaper
from hps.methods.exact_schedule.caps import cap_prices
from hps.methods.exact_schedule.table import DenseTable

NARROW = 1 + 1e-3
"""Intervals of bottleneck times no wider than this ratio are not cut further."""

COLD_ROUNDS, WARM_ROUNDS = 40, 12
"""Subgradient programs of the first dual, and of each later one (started from a neighbour's prices)."""


def interval_bound(
    dense: DenseTable,
    allowed: np.ndarray,
    inst: Instance,
    stages: int | None,
    heterps: bool,
    scale: float,
    best,
    low: float,
    deadline: float,
):
    """(best (cost, plan), a lower bound on the cost of every plan of allowed stages (`allowed`,
    (L, L, T)) with `stages` stages (None: any number) that meets the pooled caps and whose max
    τ is at least `low`; inf when none can beat `best`). scale: c ($ per $/h·s); best:
    (cost, plan) to beat, returned improved where a dual's plan is cheaper; deadline:
    time.perf_counter() past which the bound left open is returned."""
    rate = np.where(allowed, dense.rate, np.inf)
    times = np.unique(dense.time[allowed])  # a plan's max τ is one of these
    times = times[times >= low]
    if times.size == 0:
        return best, math.inf

    def at_most(rho: float, strictly: bool = False) -> float:  # the largest stage time ≤ rho (< rho)
        i = np.searchsorted(times, rho, side="left" if strictly else "right") - 1
        return float(times[i]) if i >= 0 else -math.inf

    def above(rho: float) -> float:  # the least stage time > rho
        i = np.searchsorted(times, rho, side="right")
        return float(times[i]) if i < times.size else math.inf

    def dual(rho: float, start, enough: float, rounds: int):
        nonlocal best
        under = np.where(dense.time <= rho, rate, np.inf)
        lam, value, (total, plan) = cap_prices(dense, under, inst, stages, heterps, rounds, start, enough)
        if plan is not None:
            best = keep_cheaper(best, scale, total, dense.bottleneck(plan), plan)
        return value, lam

    def needed(lo: float) -> float:  # the Σ r that closes an interval starting at lo
        return best[0] / (scale * lo) if lo > 0 else math.inf

    low, high = float(times[0]), float(times[-1])
    value, lam = dual(high, None, needed(low), COLD_ROUNDS)
    if not math.isfinite(best[0]):  # no plan to prune against: the bound cannot close anything
        return best, scale * low * value
    # entries: (bound, order, lo, hi, g(hi), λ there, polished); lo and hi are stage times
    heap, cuts = [(scale * low * value, 0, low, high, value, lam, False)], 0
    while heap:
        bound, _, lo, hi, value, lam, polished = heap[0]
        if bound >= best[0] * (1 - 1e-12):
            return best, math.inf
        if time.perf_counter() > deadline or (hi <= lo * NARROW and polished):
            return best, bound
        heapq.heappop(heap)
        cuts += 1
        if value > 0:  # plans of max τ ≥ best / (c·g(hi)) cost at least the best
            hi = min(hi, at_most(best[0] / (scale * value), strictly=True))
        if hi < lo:
            continue
        if hi <= lo * NARROW:  # too narrow to cut: its dual gets more rounds, once
            more, prices = dual(hi, lam, needed(lo), COLD_ROUNDS)
            more = max(more, value)
            heapq.heappush(heap, (scale * lo * more, 2 * cuts, lo, hi, more, prices, True))
            continue
        mid = at_most(math.sqrt(lo * hi))
        below, prices = dual(mid, lam, needed(lo), WARM_ROUNDS)
        below = max(below, value)  # both bound the plans of max τ ≤ mid
        upper = above(mid)
        heapq.heappush(heap, (scale * lo * below, 2 * cuts, lo, mid, below, prices, False))
        heapq.heappush(heap, (scale * upper * value, 2 * cuts + 1, upper, hi, value, lam, False))
    return best, math.inf
