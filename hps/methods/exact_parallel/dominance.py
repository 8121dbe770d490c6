"""Stage-table entries the least-rate program never needs: those a cheaper-or-equal entry of the
same span, type and in-flight count beats on both τ and φ (docs/parallel-plans.md, "The exact
solver").

The entries of one type are ordered within each span by ($/hour, τ, φ, option), and an entry is
dropped when, among the earlier entries of its group (its in-flight count), the one of least τ or
the one of least φ (the earliest on ties, NaN last) has τ and φ no larger. An entry's $/hour is its
option's (units times the type's price), so every span takes its options in the same $/hour
order, those of equal $/hour ordered span by span: the entries are swept place by place (the
k-th entry of each span at once), keeping per (span, group) the least τ and the least φ so far.
"""

from __future__ import annotations

import numpy as np


def _before(new: np.ndarray, old: np.ndarray) -> np.ndarray:
    """Whether `new` comes before `old` in ascending order with NaN last (ties: not before)."""
    return (new < old) | (np.isnan(old) & ~np.isnan(new))


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Whether a and b tie in ascending order with NaN last (NaN ties NaN)."""
    return (a == b) | (np.isnan(a) & np.isnan(b))


def _places(row, col, rate, time, tail) -> np.ndarray:
    """(N,) each entry's place in its row's ($/hour, τ, φ, column) order, counted over the
    columns (a row without some option leaves its place empty)."""
    columns, rows = int(col.max()) + 1, int(row.max()) + 1
    rate_of = np.full(columns, np.inf)
    rate_of[col] = rate
    by_rate = np.argsort(rate_of, kind="stable")
    ranked = rate_of[by_rate]
    place = np.empty(columns, np.int64)
    place[by_rate] = np.searchsorted(ranked, ranked, side="left")  # the first place of the column's $/hour
    out = place[col]
    blocks = np.split(by_rate, np.flatnonzero(ranked[1:] != ranked[:-1]) + 1)
    if all(len(block) == 1 for block in blocks):
        return out
    # options of equal $/hour: each entry's rank among its row's by (τ, φ, column), pair by pair
    present = np.zeros((columns, rows), bool)
    grid_time, grid_tail = np.zeros((columns, rows)), np.zeros((columns, rows))
    present[col, row], grid_time[col, row], grid_tail[col, row] = True, time, tail
    rank = np.zeros((columns, rows), np.int64)
    for block in (b for b in blocks if len(b) > 1):
        for i in block:
            for j in block:
                if i != j:
                    ti, tj, pi, pj = grid_time[i], grid_time[j], grid_tail[i], grid_tail[j]
                    tail_first = _before(pi, pj) | (_same(pi, pj) & (i < j))
                    rank[j] += present[i] & (_before(ti, tj) | (_same(ti, tj) & tail_first))
    return out + rank[col, row]


def undominated(row, col, group, rate, time, tail) -> np.ndarray:
    """Indices, ascending, of the entries no earlier entry of their row and group beats (above).

    row, col: (N,) int, distinct (row, column) pairs in (row, column) order (a span and one
    option of the type); group: (N,) int ≥ 0 (the in-flight count); rate: (N,) $/hour, a function
    of the column (the option's units times the type's price); time, tail: (N,) τ and φ (s)."""
    n = len(row)
    if n == 0:
        return np.zeros(0, np.int64)
    width = int(np.max(group)) + 1
    key = np.asarray(row, np.int64) * width + group  # the (row, group) of each entry
    place = _places(row, col, rate, time, tail)
    order = np.argsort(place.astype(np.int16 if place.max() < 2**15 else np.int64), kind="stable")  # radix
    bounds = np.searchsorted(place[order], np.arange(int(place.max()) + 2))
    size = int(key.max()) + 1
    seen = np.zeros(size, bool)
    least_time, its_tail = np.full(size, np.nan), np.full(size, np.nan)
    least_tail, its_time = np.full(size, np.nan), np.full(size, np.nan)
    dominated = np.zeros(n, bool)
    for low, high in zip(bounds[:-1], bounds[1:]):  # one place: at most one entry a row
        if low == high:
            continue
        entry = order[low:high]
        k, t, p = key[entry], time[entry], tail[entry]
        had = seen[k]
        lt, itp, lp, itt = least_time[k], its_tail[k], least_tail[k], its_time[k]
        dominated[entry] = had & ((lt <= t) & (itp <= p) | (itt <= t) & (lp <= p))
        faster = ~had | _before(t, lt)
        least_time[k], its_tail[k] = np.where(faster, t, lt), np.where(faster, p, itp)
        leaner = ~had | _before(p, lp)
        least_tail[k], its_time[k] = np.where(leaner, p, lp), np.where(leaner, t, itt)
        seen[k] = True
    return np.flatnonzero(~dominated)
