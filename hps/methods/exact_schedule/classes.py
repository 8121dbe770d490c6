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

from hps.methods.exact_schedule.dp import cover_bound_by_last, least_rate, least_span_rate
from hps.methods.exact_schedule.table import Table


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
        cover = cover_bound_by_last(np.min(self.time, axis=2).T)
        mixed = self.rate * np.maximum(self.time, cover)
        return least, (least_rate(mixed, self.time, stages, self.heterps)[0], cover)


def _suffix_bests(rate: np.ndarray, seconds: np.ndarray, group_end: np.ndarray):
    """For stages (N,) grouped by span and, within a span, sorted by time, longest first
    (group_end (N,): the index past each stage's span): (N,) the index of the least rate (ties:
    least time) and of the least r·τ among the stage and the later ones of its span. One
    level per position from the end, over the spans that long, so the work is O(N)."""
    size = len(rate)
    best, least_work = np.arange(size), np.arange(size)
    from_end = group_end - 1 - np.arange(size)  # 0 for each span's last stage
    order = np.argsort(from_end, kind="stable")
    bounds = np.searchsorted(from_end[order], np.arange(1, int(from_end.max(initial=0)) + 1))
    work = rate * seconds
    for level in np.split(order, bounds)[1:]:  # level k ≥ 1: the next stage is at level k − 1
        following = level + 1
        b = best[following]
        keep = (rate[level] < rate[b]) | ((rate[level] == rate[b]) & (seconds[level] < seconds[b]))
        best[level] = np.where(keep, level, b)
        w = least_work[following]
        least_work[level] = np.where(work[level] < work[w], level, w)
    return best, least_work


def _by_group_longest_first(group: np.ndarray, seconds: np.ndarray) -> np.ndarray:
    """Indices (N,) ordering stages by group (ints ≥ 0), then by time, longest first: one
    sort by time, then stable radix passes of 16 bits of the group (faster than a lexsort)."""
    order = np.argsort(-seconds)
    shift, top = 0, int(group.max(initial=0))
    while shift == 0 or top >> shift:
        digit = ((group[order] >> shift) & 0xFFFF).astype(np.uint16)
        order = order[np.argsort(digit, kind="stable")]
        shift += 16
    return order


class SpanBests:
    """Per span, over the types still allowed (time < ρ): the least rate (ties: least time),
    its time and type; the least r·τ; the least time. Arrays (L, L) are indexed [last, first],
    the layout the DP reads; inf where a span has no allowed type.

    The stages are kept flat (N,), grouped by span and sorted by time within it, longest
    first, with the best of every suffix: lowering ρ only advances each span's first allowed
    stage (`cursor`, an index into the flat stages; the span's end when none is left)."""

    def __init__(self, table: Table):
        self.table, self.rho = table, np.inf
        n = table.num_layers
        span = table.first * n + table.last  # table entries are sorted by span, then type
        starts = np.flatnonzero(np.r_[True, span[1:] != span[:-1]]) if len(span) else np.zeros(0, np.int64)
        self.end = np.r_[starts[1:], len(span)] if len(span) else np.zeros(0, np.int64)
        counts = self.end - starts
        self.first, self.last = table.first[starts], table.last[starts]
        group = np.repeat(np.arange(len(starts)), counts)
        order = _by_group_longest_first(group, table.time)
        self.rate_flat, self.time_flat = np.r_[table.rate[order], np.inf], np.r_[table.time[order], np.inf]
        self.type_flat = table.type[order]
        self.best, self.least_work = _suffix_bests(table.rate[order], table.time[order], np.repeat(self.end, counts))
        self.cursor = starts.copy()
        self._rates = np.full((2, n, n), np.inf)  # the DP's rates, and the floor's
        self.rate, self.time, self.work = self._rates[0], np.full((n, n), np.inf), np.full((n, n), np.inf)
        self.type = np.zeros((n, n), np.int64)
        self.longest = np.empty(len(starts))
        self._refresh(np.arange(len(starts)))
        least_time = np.full((n, n), np.inf)
        least_time[self.last, self.first] = self.time_flat[self.end - 1]
        # τ_lb never changes as ρ falls while some plan is left: a span loses its last type
        # only when all its times are ≥ ρ, while every layer's least covering time is < ρ
        self.cover = cover_bound_by_last(least_time)

    def _refresh(self, spans: np.ndarray) -> None:
        """Recompute the bests of spans `spans` (indices of kept spans) from their cursors."""
        at = (self.last[spans], self.first[spans])
        cursor = self.cursor[spans]
        alive = cursor < self.end[spans]
        here = np.where(alive, cursor, 0)
        best, work = self.best[here], self.least_work[here]
        self.rate[at] = np.where(alive, self.rate_flat[best], np.inf)
        self.time[at] = np.where(alive, self.time_flat[best], np.inf)
        self.type[at] = self.type_flat[best]
        self.work[at] = np.where(alive, self.rate_flat[work] * self.time_flat[work], np.inf)
        self.longest[spans] = np.where(alive, self.time_flat[here], -np.inf)

    def lower(self, rho: float) -> None:
        """Exclude every stage of time ≥ rho: only spans with such a stage change."""
        self.rho = rho
        spans = np.flatnonzero(self.longest >= rho)
        moving = spans
        while moving.size:
            cursor = self.cursor[moving]
            over = cursor < self.end[moving]
            over[over] = self.time_flat[cursor[over]] >= rho
            moving = moving[over]
            self.cursor[moving] += 1
        self._refresh(spans)

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
        cover = self.cover
        plan = tuple((first, last, int(self.type[last, first])) for first, last in spans)
        last, first = np.array([e for _, e in spans]), np.array([f for f, _ in spans])
        above = float(np.sum(np.maximum(self.work[last, first], cover * self.rate[last, first])))
        if above < target:  # the floor is at most `above`: it cannot close the class
            return (total, plan), (cover * total, cover)
        np.maximum(self.work, cover * self.rate, out=self._rates[1])
        return (total, plan), (least_span_rate(self._rates[1], self.time, stages)[0], cover)
