"""Plan-by-plan search of one region of the dual solver (the most throughput within a budget),
for what the least-rate program relaxes: the pooled caps (docs/parallel-plans.md, "The most
throughput within a budget").

A depth-first search over stages in pipeline order, fastest stage first. A partial plan is
pruned once its Σ r plus the least Σ r of the stages still to place (the program's value for
that suffix, caps relaxed) is over the budget, or once (M + (S − 1)/v)·max(θ, θ_lb) + max(φ, φ_lb)
is no less than the best plan's iteration (θ, φ those of the stages placed).
"""

from __future__ import annotations

import math

import numpy as np

from hps.costmodel.parallel.problem import FLOOR_TOLERANCE
from hps.methods.exact_parallel.dfs import next_stages


def search_region(search, stages: int, lo: float, theta: float, phi: float, deadline) -> tuple[list[list[int]], float]:
    """Plans of `stages` stages whose largest τ lies in [lo, theta] and every φ ≤ phi, within the
    budget and the pooled caps, that beat the best iteration when found (entries in pipeline
    order); and the least iteration bound (s) of the subtrees left when the deadline passed
    (inf when the region was searched through)."""
    micro = search.micro
    table, problem = micro.table, micro.problem
    least, solved, (theta_lb, phi_lb) = micro.solve(theta, phi, stages)
    theta_lb = max(theta_lb, lo, float(micro.work[stages]) / search.budget)
    rest = table.least_from(solved)  # least Σ r from a boundary with q stages
    allowed = (table.time <= theta) & (table.tail <= phi)
    n, m = problem.num_layers, float(search.slots(stages))
    need = table.needs(stages, stages)
    by_start = {}
    for entry in np.flatnonzero(allowed)[np.argsort(table.time[allowed], kind="stable")]:
        by_start.setdefault(int(table.span_first[table.entry_span[entry]]), []).append(int(entry))
    caps = problem.pooled_caps.tolist()
    budget = search.budget * (1 + FLOOR_TOLERANCE)
    found, left, best = [], math.inf, [min(search.best.value, micro.limit * (1 + 1e-12))]
    used = [0] * problem.num_types
    path = []

    def visit(start: int, q: int, rate: float, slow: float, tail: float, site: int):
        nonlocal left
        if start == n:
            iteration = m * slow + tail
            if q == 0 and iteration <= micro.limit and iteration < best[0]:
                found.append(list(path))
                best[0] = iteration
            return
        if q == 0:
            return
        options = next_stages(table, problem, by_start.get(start, ()), q, need, bool(path), site, theta, used, caps)
        for entry, _, last, y, t, d, s_new, hop, _ in options:
            r = rate + table.rate[entry]
            after = last + 1
            suffix = rest[after][q - 1] if after < n else (0.0 if q == 1 else math.inf)
            if not r + suffix <= budget:
                continue
            new_slow, new_tail = max(slow, hop, table.time[entry]), max(tail, table.tail[entry])
            bound = m * max(new_slow, theta_lb) + max(new_tail, phi_lb)
            if bound >= best[0] * (1 - 1e-12):
                continue
            if deadline.passed():
                left = min(left, bound)
                continue
            used[y] += t * d
            path.append(entry)
            visit(after, q - 1, r, new_slow, new_tail, s_new)
            path.pop()
            used[y] -= t * d

    visit(0, stages, 0.0, 0.0, 0.0, -1)
    return found, left
