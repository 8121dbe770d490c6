"""Plain-Python reference of the collective model. Slow and obvious on purpose.

Float64, one event at a time, written from docs/collective-model.md. Networks are
lists of hps.config.types.Dimension; orders are lists of dimension indices (all of them).
Times are compared exactly, as the rules are stated; a phase's data is chunk / (integer product
of sizes), so equal data compare equal here and in the jitted simulator alike.
"""

from __future__ import annotations

import dataclasses
import math

from hps.config.types import steps_per_phase

THEMIS_GAP_FRACTION = 1 / 16
LOAD_TIE_RTOL = 1e-4  # loads this close are the same load (the greedy's exact arithmetic, in floats)


def tied(a, b):
    return abs(a - b) <= LOAD_TIE_RTOL * max(abs(a), abs(b))


def least_loaded_first(active, load):
    """Active dims by (load, index), tied loads equal: insertion sort with the tolerant test."""
    order = []
    for d in active:
        i = len(order)
        while i > 0 and load[order[i - 1]] > load[d] and not tied(load[order[i - 1]], load[d]):
            i -= 1
        order.insert(i, d)
    return order


def lane_bandwidth(dim):
    """B/s one phase gets on `dim`: its bandwidth shared by the phases it serves at once."""
    return dim.bandwidth / dim.in_flight


def chunk_phases(dims, chunk_bytes, order):
    """[(slot, dim, duration s, data bytes)] of one chunk, in the order it runs them.

    Reduce-Scatter through `order`, All-Gather back in reverse; slot j is the RS at position j,
    slot 2D−1−j the AG at position j. Dimensions of size 1 take no part. The size a phase enters
    with is chunk_bytes / (the product of the sizes it has been divided by), kept as an integer.
    A dimension with in_flight lanes gives each phase the bandwidth B / in_flight.
    """
    n = len(order)
    phases, divisor = [], 1
    for j, d in enumerate(order):  # Reduce-Scatter: s·(P−1)/P / B, then s ← s/P
        p, dim = dims[d].size, dims[d]
        if p > 1:
            s = chunk_bytes / divisor
            duration = steps_per_phase(dim.algorithm, p) * dim.latency + s * (p - 1) / p / lane_bandwidth(dim)
            phases.append((j, d, duration, s))  # data: its input, the larger
            divisor *= p
    for j in reversed(range(n)):  # All-Gather: s·(P−1) / B, then s ← s·P
        d = order[j]
        p, dim = dims[d].size, dims[d]
        if p > 1:
            s = chunk_bytes / divisor
            duration = steps_per_phase(dim.algorithm, p) * dim.latency + s * (p - 1) / lane_bandwidth(dim)
            divisor //= p
            phases.append((2 * n - 1 - j, d, duration, chunk_bytes / divisor))  # data: its output
    return phases


def kind_phases(dims, chunk_bytes, order, kind, group):
    """chunk_phases of one chunk of a collective `kind` ("ALLREDUCE", "REDUCESCATTER",
    "ALLGATHER", "ALLTOALL") over the dimensions in `group` (a set; the others take no part):
    Reduce-Scatter, All-Gather or both as in chunk_phases (an All-Gather's chunk_bytes is its
    output); an All-to-All exchanges the whole chunk on each dimension in order,
    s·(P−1)/P / B each."""
    n = len(order)
    part = [dim if d in group else dataclasses.replace(dim, size=1) for d, dim in enumerate(dims)]
    if kind == "ALLTOALL":
        phases = []
        for j, d in enumerate(order):
            p, dim = part[d].size, part[d]
            if p > 1:
                duration = steps_per_phase(dim.algorithm, p) * dim.latency + chunk_bytes * (p - 1) / p / lane_bandwidth(
                    dim
                )
                phases.append((j, d, duration, chunk_bytes))
        return phases
    phases = chunk_phases(part, chunk_bytes, order)
    if kind == "REDUCESCATTER":
        return [ph for ph in phases if ph[0] < n]
    if kind == "ALLGATHER":
        return [ph for ph in phases if ph[0] >= n]
    return phases


def simulate(dims, chunk_bytes, release, orders, scf, kinds=None, groups=None):
    """dict(time, busy [D], start {(chunk, slot): s}, end {(chunk, slot): s},
    dim {(chunk, slot): d}, chunk_end [C]). kinds, groups: per chunk, its collective's kind and
    dimensions (kind_phases; None: All-Reduces over every dimension).

    Dimension d serves up to in_flight phases at once, one per lane; a decision takes the
    dimension whose next start max(its first free lane, its earliest ready phase) is smallest,
    and that lane (lowest index among equals). busy[d] is the held time: durations / in_flight.
    """
    n_dims, n_chunks = len(dims), len(chunk_bytes)
    if kinds is None:
        todo = [chunk_phases(dims, b, o) for b, o in zip(chunk_bytes, orders)]
    else:
        todo = [kind_phases(dims, b, o, k, g) for b, o, k, g in zip(chunk_bytes, orders, kinds, groups)]
    done = [0] * n_chunks  # phases started per chunk
    ready = [float(r) for r in release]
    lanes, busy = [[0.0] * dim.in_flight for dim in dims], [0.0] * n_dims
    waiting = [[] for _ in range(n_dims)]  # chunks whose next phase is on d
    for c in range(n_chunks):
        if todo[c]:
            waiting[todo[c][0][1]].append(c)
    start, end, dim_of = {}, {}, {}
    while any(waiting):
        options = [(max(min(lanes[d]), min(ready[c] for c in w)), d) for d, w in enumerate(waiting) if w]
        t, d = min(options)  # smallest next start time, then lower dimension index
        ready_by_t = [c for c in waiting[d] if ready[c] <= t]
        if scf:
            c = min(ready_by_t, key=lambda c: (todo[c][done[c]][3], ready[c], c))
        else:
            c = min(ready_by_t, key=lambda c: (ready[c], c))
        slot, _, duration, _ = todo[c][done[c]]
        start[c, slot], end[c, slot], dim_of[c, slot] = t, t + duration, d
        busy[d] += duration / dims[d].in_flight
        lane = lanes[d].index(min(lanes[d]))
        lanes[d][lane] = ready[c] = t + duration
        done[c] += 1
        waiting[d].remove(c)
        if done[c] < len(todo[c]):
            waiting[todo[c][done[c]][1]].append(c)
    return dict(time=max(ready, default=0.0), busy=busy, start=start, end=end, dim=dim_of, chunk_end=ready)


def allreduce(dims, total_bytes, n_chunks, orders, scf):
    """One All-Reduce of total_bytes in n_chunks equal chunks released at 0."""
    chunk = total_bytes / n_chunks
    return simulate(dims, [chunk] * n_chunks, [0.0] * n_chunks, orders[:n_chunks], scf)


def themis_orders(dims, total_bytes, n_chunks):
    """Themis's greedy: per chunk π over the dimensions of size > 1 (loads reset here)."""
    active = [d for d in range(len(dims)) if dims[d].size > 1]
    load = {d: 0.0 for d in active}
    chunk = total_bytes / n_chunks
    orders = []
    for _ in range(n_chunks):
        order = least_loaded_first(active, load)
        if order:
            lo, hi = order[0], order[-1]
            p_lo = dims[lo].size
            gap = 0.0 if tied(load[hi], load[lo]) else load[hi] - load[lo]
            gap_bytes = gap * dims[lo].bandwidth / ((p_lo - 1) / p_lo)
            threshold = chunk * THEMIS_GAP_FRACTION
            if gap_bytes < threshold and not tied(gap_bytes, threshold):  # balanced: baseline order
                order = list(active)
        s = chunk
        for d in order:
            p = dims[d].size
            load[d] += s * (p - 1) / p / dims[d].bandwidth
            s = s / p
        for d in reversed(order):
            p = dims[d].size
            load[d] += s * (p - 1) / dims[d].bandwidth
            s = s * p
        orders.append(order)
    return orders


def ideal_time(dims, total_bytes):
    """T_ideal = 2·S·(P − 1)/P / Σ B_d over dimensions of size > 1."""
    p = math.prod(d.size for d in dims)
    if p == 1:
        return 0.0
    return 2 * total_bytes * (p - 1) / p / sum(d.bandwidth for d in dims if d.size > 1)
