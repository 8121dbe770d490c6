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

import numpy as np

from hps.placement.exact.dp import cover_bound, least_rate, least_span_rate
from hps.placement.exact.table import Table


class TypedStages:
    """Every allowed stage [first, last, type], (L, L, T)."""

    def __init__(self, table: Table, heterps: bool):
        self.table, self.heterps, self.rho = table, heterps, np.inf
        self.rate, self.time = table.rate, table.time

    def lower(self, rho: float) -> None:
        """Exclude every stage of time ≥ rho."""
        self.rho = rho
        excluded = self.table.time >= rho
        self.rate, self.time = np.where(excluded, np.inf, self.rate), np.where(excluded, np.inf, self.time)

    def allowed(self) -> np.ndarray:
        return np.isfinite(self.rate)

    def least(self, stages: int | None):
        """(least Σ r, plan) over allowed plans, ties to the least bottleneck."""
        return least_rate(self.rate, self.time, stages, self.heterps)

    def floor(self, stages: int | None) -> float:
        """min over allowed plans of Σ_j r_j · max(τ_j, τ_lb) ($·s/h); and τ_lb."""
        cover = cover_bound(np.min(self.time, axis=2))
        return least_rate(self.rate * np.maximum(self.time, cover), self.time, stages, self.heterps)[0], cover


def _suffix_bests(rate: np.ndarray, seconds: np.ndarray):
    """For stages sorted by time, longest first, (L, L, T) each: (T + 1, L, L) int8 indices of
    the least rate (ties: least time) and of the least r·τ among positions m..T−1 (T: none)."""
    types = rate.shape[2]
    best, least_work = np.full((2, types + 1, *rate.shape[:2]), types, np.int8)
    best_rate, best_time, best_work = (np.full(rate.shape[:2], np.inf) for _ in range(3))
    for m in range(types - 1, -1, -1):
        r, t = rate[..., m], seconds[..., m]
        better = (r < best_rate) | ((r == best_rate) & (t < best_time))
        best_rate, best_time = np.where(better, r, best_rate), np.where(better, t, best_time)
        best[m] = np.where(better, m, best[m + 1])
        work = r * t
        cheaper = work < best_work
        best_work = np.where(cheaper, work, best_work)
        least_work[m] = np.where(cheaper, m, least_work[m + 1])
    return best, least_work


class SpanBests:
    """Per span [first, last] (L, L), over the types still allowed (time < ρ): the least rate
    (ties: least time), its time and type; the least r·τ; the least time.

    Each span's stages are sorted by time once, longest first, with the best of every suffix:
    lowering ρ only advances each span's first allowed position."""

    def __init__(self, table: Table):
        self.table, self.rho = table, np.inf
        types = table.rate.shape[2]
        self.order = np.argsort(-table.time, axis=2, kind="stable").astype(np.int8)
        self.rate_sorted = np.take_along_axis(table.rate, self.order, 2)
        self.time_sorted = np.take_along_axis(table.time, self.order, 2)
        self.best, self.least_work = _suffix_bests(self.rate_sorted, self.time_sorted)
        self.start = np.sum(np.isinf(self.time_sorted), axis=2).astype(np.int64)  # first allowed position
        padded = lambda values: np.concatenate([values, np.full((*values.shape[:2], 1), np.inf)], 2)  # noqa: E731
        self.rate_sorted, self.time_sorted = padded(self.rate_sorted), padded(self.time_sorted)
        self.order = np.concatenate([self.order, np.zeros((*self.order.shape[:2], 1), np.int8)], 2)
        self.types = types
        self.rate, self.time, self.type, self.work = (None,) * 4
        self._refresh(np.nonzero(np.ones(self.start.shape, bool)))
        self.least_time = np.min(table.time, axis=2)

    def _refresh(self, spans) -> None:
        first, last = spans
        m = self.start[first, last]
        best = self.best[m, first, last].astype(np.int64)
        work = self.least_work[m, first, last].astype(np.int64)
        values = (
            self.rate_sorted[first, last, best],
            self.time_sorted[first, last, best],
            self.order[first, last, best].astype(np.int64),
            self.rate_sorted[first, last, work] * self.time_sorted[first, last, work],
        )
        if self.rate is None:
            self.rate, self.time, self.type, self.work = (v.reshape(self.start.shape) for v in values)
            return
        for target, value in zip((self.rate, self.time, self.type, self.work), values):
            target[first, last] = value

    def lower(self, rho: float) -> None:
        """Exclude every stage of time ≥ rho: only spans with such a stage change."""
        self.rho = rho
        longest = np.take_along_axis(self.time_sorted, self.start[..., None], 2)[..., 0]
        first, last = np.nonzero(longest >= rho)
        moved = np.zeros(len(first), bool)
        while True:
            m = self.start[first, last]
            over = (m < self.types) & (self.time_sorted[first, last, m] >= rho)
            if not over.any():
                break
            moved |= over
            self.start[first[over], last[over]] += 1
        self._refresh((first[moved], last[moved]))
        self.least_time[self.least_time >= rho] = np.inf

    def allowed(self) -> np.ndarray:
        return np.isfinite(self.table.rate) & (self.table.time < self.rho)

    def least(self, stages: int | None):
        total, spans = least_span_rate(self.rate, self.time, stages)
        if spans is None:
            return total, None
        return total, tuple((first, last, int(self.type[first, last])) for first, last in spans)

    def floor(self, stages: int | None) -> tuple[float, float]:
        """A lower bound on min over allowed plans of Σ_j r_j · max(τ_j, τ_lb), by the span
        bound min_t r_t·max(τ_t, τ_lb) ≥ max(min_t r_t·τ_t, τ_lb · min_t r_t); and τ_lb."""
        cover = cover_bound(self.least_time)
        return least_span_rate(np.maximum(self.work, cover * self.rate), self.time, stages)[0], cover
