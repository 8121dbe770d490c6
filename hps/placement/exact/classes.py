"""The plans the exact solver still considers: every stage of the table whose time is below a
threshold ρ, with the two dynamic programs it runs on them each round.

`SpanBests` serves plans without the HeterPS rule. There a stage's type matters only through
its rate and time, so each span (first, last) keeps only its best allowed type, and lowering ρ
re-examines only the spans whose best type it excludes; the programs run over spans, (L, L).
`TypedStages` keeps every (first, last, type) for HeterPS schedules, whose adjacent stages
must differ in type. Both bound the cost of every allowed plan from below by
Σ_j r_j · max(τ_j, τ_lb), τ_lb being the largest over layers of the least time of an allowed
stage covering the layer (docs/pipeline-plans.md, "The exact solver").
"""

from __future__ import annotations

import math

import numpy as np

from hps.placement.exact.dp import cover_bound, cover_bound_by_last, least_rate, least_span_rate
from hps.placement.exact.table import Table


class TypedStages:
    """Every allowed stage [first, last, type], (L, L, T)."""

    def __init__(self, table: Table, heterps: bool):
        self.table, self.heterps, self.rho = table.dense(), heterps, np.inf
        self.rate, self.time = self.table.rate, self.table.time

    def lower(self, rho: float) -> None:
        """Exclude every stage of time ≥ rho."""
        self.rho = rho
        excluded = self.table.time >= rho
        self.rate, self.time = np.where(excluded, np.inf, self.rate), np.where(excluded, np.inf, self.time)

    def allowed(self) -> np.ndarray:
        return np.isfinite(self.rate)

    def least_and_floor(self, stages: int | None, target: float = math.inf):
        """((least Σ r, plan) over allowed plans, ties to the least bottleneck, (the least
        Σ_j r_j · max(τ_j, τ_lb) over them ($·s/h), τ_lb))."""
        least = least_rate(self.rate, self.time, stages, self.heterps)
        if least[1] is None:
            return least, (math.inf, math.inf)
        cover = cover_bound(np.min(self.time, axis=2))
        mixed = self.rate * np.maximum(self.time, cover)
        return least, (least_rate(mixed, self.time, stages, self.heterps)[0], cover)


def _suffix_bests(rate: np.ndarray, seconds: np.ndarray):
    """For stages sorted by time, longest first, (A, T) each: (T + 1, A) int8 positions of the
    least rate (ties: least time) and of the least r·τ among positions m..T−1 (T: none)."""
    types = rate.shape[1]
    best, least_work = np.full((2, types + 1, rate.shape[0]), types, np.int8)
    best_rate, best_time, best_work = (np.full(rate.shape[0], np.inf) for _ in range(3))
    for m in range(types - 1, -1, -1):
        r, t = rate[:, m], seconds[:, m]
        better = (r < best_rate) | ((r == best_rate) & (t < best_time))
        best_rate, best_time = np.where(better, r, best_rate), np.where(better, t, best_time)
        best[m] = np.where(better, m, best[m + 1])
        work = r * t
        cheaper = work < best_work
        best_work = np.where(cheaper, work, best_work)
        least_work[m] = np.where(cheaper, m, least_work[m + 1])
    return best, least_work


class SpanBests:
    """Per span, over the types still allowed (time < ρ): the least rate (ties: least time),
    its time and type; the least r·τ; the least time. Arrays (L, L) are indexed [last, first],
    the layout the DP reads; inf where a span has no allowed type.

    The spans with some stage are kept apart ((A,) and (A, T)); each one's stages are sorted
    by time once, longest first, with the best of every suffix, so lowering ρ only advances
    each span's first allowed position."""

    def __init__(self, table: Table):
        self.table, self.rho = table, np.inf
        n = table.num_layers
        span = table.first * n + table.last  # table entries are sorted by span, then type
        starts = np.flatnonzero(np.r_[True, span[1:] != span[:-1]]) if len(span) else np.zeros(0, np.int64)
        counts = np.diff(np.r_[starts, len(span)])
        self.first, self.last = table.first[starts], table.last[starts]
        self.types = width = int(counts.max()) if len(counts) else 1  # stages of the fullest span
        group = np.repeat(np.arange(len(starts)), counts)
        order = np.lexsort((-table.time, group))  # within each span, longest time first
        position = np.arange(len(span)) - np.repeat(starts, counts) + np.repeat(width - counts, counts)  # right-aligned
        rate_sorted, time_sorted = np.full((len(starts), width), np.inf), np.full((len(starts), width), np.inf)
        kinds = np.zeros((len(starts), width), np.int64)
        rate_sorted[group, position], time_sorted[group, position] = table.rate[order], table.time[order]
        kinds[group, position] = table.type[order]
        self.best, self.least_work = _suffix_bests(rate_sorted, time_sorted)
        self.start = width - counts  # each span's first allowed position (the padding before it is inf)
        pad = np.full((len(starts), 1), np.inf)
        self.rate_sorted = np.concatenate([rate_sorted, pad], 1)
        self.time_sorted = np.concatenate([time_sorted, pad], 1)
        self.order = kinds
        self._rates = np.full((2, n, n), np.inf)  # the DP's rates, and the floor's
        self.rate, self.time, self.work = self._rates[0], np.full((n, n), np.inf), np.full((n, n), np.inf)
        self.type = np.zeros((n, n), np.int64)
        self.longest = np.empty(len(starts))
        self._refresh(np.arange(len(starts)))
        self.least_time = np.full((n, n), np.inf)
        self.least_time[self.last, self.first] = np.min(time_sorted, axis=1)
        self._cover = None  # τ_lb of least_time, recomputed when a span loses its last type

    def _refresh(self, spans: np.ndarray) -> None:
        """Recompute the bests of the kept spans `spans` from their first allowed positions."""
        m = self.start[spans]
        best = self.best[m, spans].astype(np.int64)
        work = self.least_work[m, spans].astype(np.int64)
        at = (self.last[spans], self.first[spans])
        self.rate[at] = self.rate_sorted[spans, best]
        self.time[at] = self.time_sorted[spans, best]
        self.type[at] = self.order[spans, np.minimum(best, self.types - 1)]
        self.work[at] = self.rate_sorted[spans, work] * self.time_sorted[spans, work]
        self.longest[spans] = self.time_sorted[spans, m]  # inf past the last type

    def lower(self, rho: float) -> None:
        """Exclude every stage of time ≥ rho: only spans with such a stage change."""
        self.rho = rho
        spans = np.flatnonzero((self.longest >= rho) & (self.start < self.types))
        moving = spans
        while moving.size:
            m = self.start[moving]
            moving = moving[(m < self.types) & (self.time_sorted[moving, np.minimum(m, self.types)] >= rho)]
            self.start[moving] += 1
        self._refresh(spans)
        gone = self.least_time >= rho
        if np.any(gone & np.isfinite(self.least_time)):  # some span lost its last type: τ_lb may rise
            self._cover = None
        self.least_time[gone] = np.inf

    def allowed(self) -> np.ndarray:
        dense = self.table.dense()
        return np.isfinite(dense.rate) & (dense.time < self.rho)

    def least_and_floor(self, stages: int | None, target: float = np.inf):
        """((least Σ r, plan), (floor, τ_lb)). The floor is a lower bound on min over allowed
        plans of Σ_j r_j · max(τ_j, τ_lb), by the span bound min_t r_t·max(τ_t, τ_lb) ≥
        max(min_t r_t·τ_t, τ_lb · min_t r_t), through a second DP, but only where it could
        reach `target`: the plan found bounds it from above, and where that is below target
        the floor returned is the cheaper bound τ_lb · least Σ r."""
        total, spans = least_span_rate(self.rate, self.time, stages)
        if spans is None:
            return (total, None), (np.inf, np.inf)
        if self._cover is None:
            self._cover = cover_bound_by_last(self.least_time)
        cover = self._cover
        plan = tuple((first, last, int(self.type[last, first])) for first, last in spans)
        last, first = np.array([e for _, e in spans]), np.array([f for f, _ in spans])
        above = float(np.sum(np.maximum(self.work[last, first], cover * self.rate[last, first])))
        if above < target:  # the floor is at most `above`: it cannot close the class
            return (total, plan), (cover * total, cover)
        np.maximum(self.work, cover * self.rate, out=self._rates[1])
        return (total, plan), (least_span_rate(self._rates[1], self.time, stages)[0], cover)
