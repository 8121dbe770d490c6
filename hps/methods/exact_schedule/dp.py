"""Dynamic programs over stage boundaries: the least Σ r of plans under a stage-time threshold
(ties to the least bottleneck), and the cover bound on any plan's bottleneck."""

from __future__ import annotations

import math

import numpy as np


def lex_argmin(values: np.ndarray, peaks: np.ndarray, axis: int) -> np.ndarray:
    """Indices along `axis` of the least value, ties broken by the least peak."""
    least = np.min(values, axis=axis, keepdims=True)
    return np.argmin(np.where(values == least, peaks, np.inf), axis=axis)


def best_before(values: np.ndarray, peaks: np.ndarray, heterps: bool):
    """For rows (R, T) of bests (and their peaks) by last type: (R, T) the best a stage of each
    type may follow, its peak, and which type gives it (with heterps, never the same type)."""
    rows, types = np.arange(values.shape[0])[:, None], np.arange(values.shape[1])
    first = lex_argmin(values, peaks, 1)[:, None]
    value, peak, which = (
        np.broadcast_to(a, values.shape).copy() for a in (values[rows, first], peaks[rows, first], first)
    )
    if heterps:
        others = np.where(types == first, np.inf, values)
        second = lex_argmin(others, peaks, 1)[:, None]
        own = types == first
        value = np.where(own, others[rows, second], value)
        peak = np.where(own, np.where(np.isfinite(others[rows, second]), peaks[rows, second], np.inf), peak)
        which = np.where(own, second, which)
    return value, peak, which


def least_rate(rate: np.ndarray, seconds: np.ndarray, stages: int | None, heterps: bool):
    """(least Σ r, plan) over plans of layers 0..L−1 with exactly `stages` stages (None: any
    number), adjacent stages on different types when heterps; of the plans with the least Σ r,
    one whose largest stage time (seconds, (L, L, T)) is least. (inf, None) when none exists.
    The state is (stages so far, boundary, last type); every stage count advances at once.
    Without heterps the last type does not matter, so each span keeps its best type only."""
    if not heterps and rate.shape[2] > 1:
        return _least_rate_any_type(rate, seconds, stages)
    n, t = rate.shape[0], rate.shape[2]
    levels = stages or 1
    shape = (levels + 1, n + 1, t)
    best, peak, before, before_peak = (np.full(shape, np.inf) for _ in range(4))
    which, came = np.full(shape, -1), np.zeros(shape, np.int64)
    before[0, 0], before_peak[0, 0] = 0.0, 0.0
    sources, targets = (slice(0, levels), slice(1, levels + 1)) if stages else (slice(0, 1), slice(0, 1))
    rows, columns = np.arange(levels)[:, None], np.arange(t)[None, :]
    for i in range(1, n + 1):
        total = before[sources, :i] + rate[None, :i, i - 1, :]  # (S, i, T): the last stage j..i−1
        peaks = np.maximum(before_peak[sources, :i], seconds[None, :i, i - 1, :])
        j = lex_argmin(total, peaks, 1)  # (S, T)
        best[targets, i], peak[targets, i], came[targets, i] = total[rows, j, columns], peaks[rows, j, columns], j
        done = slice(None) if stages else slice(0, 1)
        before[done, i], before_peak[done, i], which[done, i] = best_before(best[done, i], peak[done, i], heterps)
    level = levels if stages else 0
    last_type = int(lex_argmin(best[level, n], peak[level, n], 0))
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


def _least_rate_any_type(rate: np.ndarray, seconds: np.ndarray, stages: int | None):
    """least_rate without heterps: each span keeps its type of least rate (ties: least time)."""
    best = lex_argmin(rate, seconds, 2)[..., None]  # (L, L, 1)
    pick = lambda values: np.take_along_axis(values, best, 2)[..., 0]  # noqa: E731
    total, spans = least_span_rate(pick(rate).T.copy(), pick(seconds).T.copy(), stages)
    if spans is None:
        return total, None
    return total, tuple((first, last, int(best[first, last, 0])) for first, last in spans)


def least_span_rate(by_last: np.ndarray, time_by_last: np.ndarray, stages: int | None):
    """(least Σ r, spans (first, last)) over plans of spans whose rate and time are
    by_last[last, first] and time_by_last[last, first] ((L, L), inf where a span is not
    allowed), with exactly `stages` stages (None: any number), ties to the least largest time;
    (inf, None) when none exists. The state is (stages so far, boundary). With a leading batch
    axis, by_last (B, L, L) and time_by_last (B or 1, L, L), a list of B such results from one
    pass over the boundaries."""
    if by_last.ndim == 3:
        return _least_span_rates(by_last, time_by_last, stages)
    if stages is None:
        return _least_span_rate_any_count(by_last, time_by_last)
    return _least_span_rates(by_last[None], time_by_last[None], stages)[0]


def _least_span_rate_any_count(by_last: np.ndarray, time_by_last: np.ndarray):
    """least_span_rate over any number of stages, one program: per boundary the least sum, and
    the least peak only among ties (most boundaries have none)."""
    n = by_last.shape[0]
    total, peak, came = np.full(n + 1, np.inf), np.full(n + 1, np.inf), np.zeros(n + 1, np.int64)
    total[0] = peak[0] = 0.0
    finite = np.isfinite(by_last)
    starts = np.where(finite.any(axis=1), np.argmax(finite, axis=1), n)
    for i in range(1, n + 1):
        lo = int(starts[i - 1])
        if lo >= i:
            continue
        sums = total[lo:i] + by_last[i - 1, lo:i]
        j = int(sums.argmin())
        ties = np.flatnonzero(sums == sums[j])
        if len(ties) > 1:
            peaks = np.maximum(peak[lo:i][ties], time_by_last[i - 1, lo:i][ties])
            j = int(ties[peaks.argmin()])
        total[i], came[i] = sums[j], j + lo
        peak[i] = max(peak[j + lo], time_by_last[i - 1, j + lo])
    return _spans(total[None], came[None], None)


def _least_span_rates(by_last: np.ndarray, time_by_last: np.ndarray, stages: int | None) -> list:
    batch, n = by_last.shape[:2]
    levels = stages or 1
    total, peak = np.full((batch, levels + 1, n + 1), np.inf), np.full((batch, levels + 1, n + 1), np.inf)
    came = np.zeros((batch, levels + 1, n + 1), np.int64)
    total[:, 0, 0] = peak[:, 0, 0] = 0.0
    src, dst = (slice(0, levels), slice(1, levels + 1)) if stages else (slice(0, 1), slice(0, 1))
    finite = np.isfinite(by_last).any(axis=0)
    starts = np.where(finite.any(axis=1), np.argmax(finite, axis=1), n)  # each row's first allowed span
    b, s = np.meshgrid(np.arange(batch), np.arange(levels), indexing="ij")
    for i in range(1, n + 1):
        lo = starts[i - 1]
        if lo >= i:
            continue
        sums = total[:, src, lo:i] + by_last[:, None, i - 1, lo:i]  # (B, S, i − lo): the last stage j..i−1
        peaks = np.maximum(peak[:, src, lo:i], time_by_last[:, None, i - 1, lo:i])
        least = np.min(sums, axis=2, keepdims=True)
        j = np.argmin(np.where(sums == least, peaks, np.inf), axis=2)
        total[:, dst, i], peak[:, dst, i], came[:, dst, i] = sums[b, s, j], peaks[b, s, j], j + lo
    return [_spans(total[b], came[b], stages) for b in range(batch)]


def _spans(total: np.ndarray, came: np.ndarray, stages: int | None):
    """(least Σ r, spans) read back from one program's totals and choices."""
    n = total.shape[1] - 1
    level = stages or 0
    if not math.isfinite(total[level, n]):
        return math.inf, None
    spans, i = [], n
    while i > 0:
        j = int(came[level, i])
        spans.append((j, i - 1))
        i, level = j, (level - 1 if stages else 0)
    return float(total[stages or 0, n]), tuple(reversed(spans))


def cover_bound_by_last(least: np.ndarray) -> float:
    """τ_lb from the least allowed stage time of each span, indexed [last, first] (L, L): the
    largest over layers l of the least time of a span covering l, i.e. the least over first ≤ l
    of the least over last ≥ l (inf: some layer has no allowed stage)."""
    n = least.shape[0]
    from_below, covering = least[n - 1].copy(), np.empty(n)  # row e: min over last >= e
    for e in range(n - 1, -1, -1):  # row by row: faster than an accumulate down the columns
        np.minimum(from_below, least[e], out=from_below)
        covering[e] = from_below[: e + 1].min()  # first <= e only
    return float(np.max(covering))
