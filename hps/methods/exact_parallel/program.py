"""The least-rate dynamic program of the exact solver over a stage table's spans, one stage count a
step (docs/parallel-plans.md, "The exact solver").

Boundaries k = 0 … K − 1 are the layers a stage may start at and k = K the end of the model; span
i runs from boundary `first[i]` to just before boundary `after[i]`. With q stages left and the
first of them on site s, the least Σ r of the plans from boundary k is

    value[k, q, s] = min over spans i from k of  rate[q, i, s] + handed[after[i], q, s]
    handed[j, q, s] = min over sites s' that site s may hand over to at j of  value[j, q − 1, s']

(handed[K, 1, ·] = 0: the plan ends), ties to 1e-12 relative broken by the least largest τ. Each
step q takes every boundary at once, so a call costs Q + 1 steps of whole-array work rather
than one step of Python per boundary.
"""

from __future__ import annotations

import numpy as np


def lex_argmin(primary: np.ndarray, secondary: np.ndarray, axis: int) -> np.ndarray:
    """argmin of `primary` along `axis`, ties (to 1e-12 relative) broken by the least `secondary`."""
    least = primary.min(axis=axis, keepdims=True)
    tied = primary <= least + 1e-12 * np.abs(np.where(np.isfinite(least), least, 0))
    return np.where(tied, secondary, np.inf).argmin(axis=axis)


def _segment_lex_argmin(primary: np.ndarray, secondary: np.ndarray, starts: np.ndarray, counts: np.ndarray):
    """`lex_argmin` along axis 0 within each run of rows [starts[k], starts[k] + counts[k]) (the
    runs back to back, none empty): (runs, columns) row indices into `primary`."""
    least = np.minimum.reduceat(primary, starts, axis=0)
    bound = least + 1e-12 * np.abs(np.where(np.isfinite(least), least, 0))
    masked = np.where(primary <= np.repeat(bound, counts, axis=0), secondary, np.inf)
    smallest = np.repeat(np.minimum.reduceat(masked, starts, axis=0), counts, axis=0)
    rows = np.arange(len(primary))[:, None]
    return np.minimum.reduceat(np.where(masked == smallest, rows, len(primary)), starts, axis=0)


def _segments(first: np.ndarray, spans: np.ndarray):
    """(spans, run starts, run lengths, boundary of each run) of `spans` (sorted) by their first
    boundary."""
    at = first[spans]
    starts = np.flatnonzero(np.concatenate([[True], at[1:] != at[:-1]])) if len(at) else np.zeros(0, np.int64)
    return spans, starts, np.diff(np.append(starts, len(at))), at[starts]


def boundary_program(rate, time, rows, first, after, link_ok):
    """The least-rate program over boundaries, one stage count q = 0 … Q a step.

    rate, time: (R, spans, sites) the weight ($/hour, or any per-entry weight) and τ (s) of each
    span's chosen entry on each site, in R variants (inf: none); rows: (Q + 1,) the variant a
    stage q from the end uses; first, after: (spans,) the boundary each span starts at and the
    one after its last layer, spans sorted by (first, after), every boundary 0 … K − 1 starting
    one; link_ok: (K − 1, sites, sites) whether a stage on site s may hand over to site s' at
    boundary k = 1 … K − 1. Step q takes only the spans with some entry, and where most of those
    leave no room for q − 1 stages after them (after > K − q + 1), only the others.

    Returns (value, slow, choice, next_site): value and slow (K + 1, Q + 1, sites) the least Σ
    weight from each boundary with q stages left, the first on site s, and the largest τ of that
    plan (value inf: none, and then the other three are meaningless; value[K, 0] = 0); choice
    (K, Q + 1, sites) the span of the first stage; next_site (K, Q + 1, sites) the site that
    stage hands over to.
    """
    q_count, n_sites = len(rows), rate.shape[2]
    k_count = int(first[-1]) + 1
    # internally q-major: [q, boundary, site], contiguous for each step
    value = np.full((q_count, k_count + 1, n_sites), np.inf)
    slow = np.full_like(value, np.inf)
    value[0, k_count], slow[:, k_count] = 0.0, 0.0
    handed = np.full_like(value, np.inf)  # handed[q, j]: the least value past a stage ending before j
    handed_slow = np.full_like(value, np.inf)
    if q_count > 1:
        handed[1, k_count], handed_slow[1:, k_count] = 0.0, 0.0
    choice = np.zeros((q_count, k_count, n_sites), np.int64)
    next_site = np.zeros((q_count, k_count, n_sites), np.int64)
    used, rows = np.unique(rows, return_inverse=True)  # the rows the steps use, and each step's
    rate, time = rate[used], time[used]
    alive = np.flatnonzero(np.isfinite(rate).any(axis=(0, 2)))  # spans with some entry
    rate, time, first, after = np.take(rate, alive, axis=1), np.take(time, alive, axis=1), first[alive], after[alive]
    columns = np.arange(n_sites)[None, :]
    whole = _segments(first, np.arange(len(first)))  # every span with an entry
    for q in range(q_count):
        room = k_count - q  # the last boundary a plan of q stages may start from
        short = np.flatnonzero(after <= room + 1)  # the others leave no room: their candidates are inf
        if 2 * len(short) > len(after) or q < 2:
            spans, starts, counts, reached = whole
            step_rate, step_time = rate[rows[q]], time[rows[q]]
        else:
            spans, starts, counts, reached = _segments(first, short)
            step_rate, step_time = np.take(rate[rows[q]], spans, axis=0), np.take(time[rows[q]], spans, axis=0)
        if len(spans) == 0:
            break
        ahead = after[spans]
        cand = step_rate + np.take(handed[q], ahead, axis=0)
        cand_slow = np.maximum(step_time, np.take(handed_slow[q], ahead, axis=0))
        best = _segment_lex_argmin(cand, cand_slow, starts, counts)
        value[q, reached], slow[q, reached] = cand[best, columns], cand_slow[best, columns]
        choice[q, reached] = alive[spans[best]]
        inner = reached[reached > 0]  # the boundaries with a stage before them
        if q + 1 < q_count and len(inner):  # the value past a stage ending before each boundary
            v, u = value[q, inner], slow[q, inner]
            ok = link_ok[inner - 1]
            if n_sites == 1:
                handed[q + 1, inner] = np.where(ok[:, :, 0], v, np.inf)
                handed_slow[q + 1, inner] = u
                continue
            masked = np.where(ok, v[:, None, :], np.inf)  # (boundaries, s, s')
            arg = lex_argmin(masked, u[:, None, :], axis=2)
            lines = np.arange(len(inner))[:, None]
            handed[q + 1, inner] = masked[lines, columns, arg]
            handed_slow[q + 1, inner] = u[lines, arg]
            next_site[q + 1, inner] = arg
    order = (1, 0, 2)
    return value.transpose(order), slow.transpose(order), choice.transpose(order), next_site.transpose(order)


def least_sums(weight, rows, first, after, link_ok) -> np.ndarray:
    """(Q + 1,) the least Σ weight of the plans of q stages from boundary 0 (inf: none), the
    same recursion as `boundary_program` taking plain minima: the exact least, where the
    program, settling near-ties (1e-12 relative) by τ, may keep a sum up to that much above
    it. Arguments as `boundary_program`'s (no τ)."""
    q_count, n_sites = len(rows), weight.shape[2]
    k_count = int(first[-1]) + 1
    used, rows = np.unique(rows, return_inverse=True)  # the rows the steps use, and each step's
    weight = weight[used]
    alive = np.flatnonzero(np.isfinite(weight).any(axis=(0, 2)))  # spans with some entry
    weight, first, after = np.take(weight, alive, axis=1), first[alive], after[alive]
    least = np.full(q_count, np.inf)
    handed = np.full((k_count + 1, n_sites), np.inf)  # the least sum past a stage ending before j
    for q in range(q_count):
        if q == 1:
            handed[k_count] = 0.0  # the plan ends
        elif q > 1:
            handed[k_count] = np.inf
        spans = np.flatnonzero(after <= k_count - q + 1) if q > 1 else np.arange(len(after))
        if len(spans) == 0:
            break
        _, starts, _, reached = _segments(first, spans)  # the boundaries of this step with a span
        step = np.take(weight[rows[q]], spans, axis=0) + np.take(handed, after[spans], axis=0)
        value = np.minimum.reduceat(step, starts, axis=0)
        if reached[0] == 0:
            least[q] = value[0].min()
        handed[:k_count] = np.inf
        inner = reached > 0
        if q + 1 < q_count and inner.any():
            masked = np.where(link_ok[reached[inner] - 1], value[inner][:, None, :], np.inf)
            handed[reached[inner]] = masked.min(axis=2)
    return least
