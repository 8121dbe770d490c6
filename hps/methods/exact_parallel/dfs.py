"""Plan-by-plan search of one region of the exact solver, for what the least-rate program relaxes:
the pooled caps and the egress between sites (docs/parallel-plans.md, "The exact solver").

A depth-first search over stages in pipeline order. A partial plan is pruned once
(N/B)·((Σ r + R)·((M+(S−1)/v)·max(θ, θ_lb) + max(φ, φ_lb))/3600 + E) reaches the best cost, where
R is the least Σ r of the stages still to place (the program's value for that suffix, caps and
egress relaxed) and θ, φ, E those of the stages placed.
"""

from __future__ import annotations

import math

import numpy as np


def next_stages(table, problem, entries, q: int, need, placed: bool, site: int, theta: float, used, caps):
    """The entries of `entries` (those starting at one boundary) that may come next with q stages
    left, as (entry, first, last, type, t, d, site, hop s, bytes handed over): holding the
    chunks a stage q from the end holds, the last layer only in the last stage, a link to the
    previous stage's `site` (where one was `placed`) whose hop is within theta, and within the
    caps given the units `used` per type."""
    n = problem.num_layers
    bandwidth, latency, _ = problem.link_matrix()
    for entry in entries:
        if table.fits[entry] < need[q]:
            continue
        first, last, y, t, d = table.stage(entry)
        if last == n - 1 and q != 1:
            continue
        s_new = int(table.site[entry])
        hop, nbytes = 0.0, 0.0
        if placed and s_new != site:
            if bandwidth[site, s_new] == 0:
                continue
            nbytes = problem.act_bytes[first - 1]
            hop = table.b * nbytes / bandwidth[site, s_new] + latency[site, s_new]
            if hop > theta:
                continue
        if used[y] + t * d > caps[y]:
            continue
        yield entry, first, last, y, t, d, s_new, hop, nbytes


def search_region(
    micro, stages: int, lo: float, theta: float, phi: float, deadline, lam: np.ndarray | None = None
) -> tuple[list[list[int]], float]:
    """Plans of `stages` stages whose largest τ lies in [lo, theta] and every φ ≤ phi, meeting
    the pooled caps, that beat the best cost when found (entries in pipeline order), and the
    least bound of the subtrees left when the deadline passed (inf when the region was searched
    through). Plans whose largest τ is below lo belong to another region: bounds use θ ≥ lo.
    lam: prices (T,) on the pooled caps; the suffix's least Σ r is then also at least its least
    Σ (r + λ·units) less λ times the units still free (`caps.CapPrices`)."""
    table, problem = micro.table, micro.problem
    least, solved, (theta_lb, phi_lb) = micro.solve(theta, phi, stages)
    theta_lb = max(theta_lb, lo)
    rest = table.least_from(solved)  # least Σ r from a boundary with q stages
    work_rest = table.least_from(  # least Σ r·τ likewise
        table.least_rate(theta, phi, weight=table.rate * table.time, most=max(micro.most, stages), stages=stages)[1]
    )
    allowed = (table.time <= theta) & (table.tail <= phi)
    n, m_bubble = problem.num_layers, problem.bubble_slots_of(table.micro_batches, stages)
    need = table.needs(stages, stages)
    by_start = {}
    for entry in np.flatnonzero(allowed)[np.argsort(table.rate[allowed], kind="stable")]:
        by_start.setdefault(int(table.span_first[table.entry_span[entry]]), []).append(int(entry))
    price = problem.link_matrix()[2]
    caps = problem.pooled_caps.tolist()
    has_prices = lam is not None and bool(lam.any())
    priced_rest = micro.prices.suffix(micro, theta, phi, stages, lam) if has_prices else None
    lam_list = lam.tolist() if has_prices else [0.0] * problem.num_types
    lam_caps = sum(x * c for x, c in zip(lam_list, caps))
    iterations = problem.job.samples / problem.job.batch
    egress_scale = 2 * problem.job.batch * iterations
    found, left, best = [], math.inf, [micro.best.value]
    used = [0] * problem.num_types
    priced = [0.0]  # Σ λ_y·units of the stages placed
    path = []

    def visit(start: int, q: int, rate: float, work: float, slow: float, tail: float, egress: float, site: int):
        nonlocal left
        if start == n:
            cost = micro.scale * rate * (m_bubble * slow + tail) + egress
            if q == 0 and m_bubble * slow + tail <= micro.limit and cost < best[0]:
                found.append(list(path))
                best[0] = cost
            return
        if q == 0:
            return
        options = next_stages(table, problem, by_start.get(start, ()), q, need, bool(path), site, theta, used, caps)
        for entry, _, last, y, t, d, s_new, hop, nbytes in options:
            paid = egress_scale * nbytes * price[site, s_new] if nbytes else 0.0
            r = rate + table.rate[entry]
            after = last + 1
            suffix = rest[after][q - 1] if after < n else (0.0 if q == 1 else math.inf)
            if priced_rest is not None and after < n:
                free = lam_caps - priced[0] - lam_list[y] * t * d  # λ · (caps − units placed)
                suffix = max(suffix, priced_rest[after][q - 1] - free)
            if not math.isfinite(suffix):  # no plan of the stages left completes it
                continue
            new_slow = max(slow, hop, table.time[entry])
            new_tail = max(tail, table.tail[entry])
            w = work + table.rate[entry] * table.time[entry]
            w_suffix = work_rest[after][q - 1] if after < n else (0.0 if q == 1 else math.inf)
            per_rate = max(
                (r + suffix) * (m_bubble * max(new_slow, theta_lb) + max(new_tail, phi_lb)),
                m_bubble * (w + w_suffix) + (r + suffix) * max(new_tail, phi_lb),
            )
            bound = micro.scale * per_rate + egress + paid
            if not math.isfinite(bound) or bound >= best[0] * (1 - 1e-12):
                continue
            if deadline.passed():
                left = min(left, bound)
                continue
            used[y] += t * d
            priced[0] += lam_list[y] * t * d
            path.append(entry)
            visit(after, q - 1, r, w, new_slow, new_tail, egress + paid, s_new)
            path.pop()
            priced[0] -= lam_list[y] * t * d
            used[y] -= t * d

    visit(0, stages, 0.0, 0.0, 0.0, 0.0, 0.0, -1)
    return found, left
