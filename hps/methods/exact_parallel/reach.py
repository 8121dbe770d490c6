"""The largest throughput any plan within the catalogue's caps can reach: a certified upper bound,
and so a proof that no plan meets a floor above it (docs/parallel-plans.md, "Reach").

A stage of t·d units of type y running m = b/d samples a replica keeps its units busy at least
M·τ ≥ M·Σ_l time_l(y, t, m) of every iteration, so per second of training each of its layers takes
at least w_l,y = min over t and m dividing B of t·time_l(y, t, m)/m device-seconds per sample.
With R samples/s and the units of type y capped at U_y, any plan puts its layers on types with

    R · Σ_{l on y} w_l,y ≤ U_y        for every type y.

Letting each layer split across types (a share x_l,y ≥ 0, Σ_y x_l,y = 1) only widens the choice, so
the largest R of that linear program bounds every plan's throughput, mixtures of types included.
A plan on one site uses only that site's types; a plan on several crosses a link at least once,
and a hop of a micro-batch of b samples after layer l takes b·a_l/bandwidth, so its iteration is at
least B·a_l/bandwidth: R ≤ bandwidth / a_min (a_min the least activation after a layer a stage may
end on). The reach is the larger of the best one-site program and, where links exist, the
all-type program capped by the fastest link.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog

from hps.costmodel.parallel.problem import ParallelProblem


def max_throughput(problem: ParallelProblem) -> float:
    """The reach (samples/s): no plan of `problem` within its caps has a larger throughput (inf
    where every layer runs free of device time on some type)."""
    work = problem.least_unit_seconds()  # (L, T) device-seconds per sample
    allowed = np.isfinite(work) if problem.allowed is None else problem.allowed & np.isfinite(work)
    sites = problem.type_site
    best = max(_program(work, allowed & (sites == s)[None, :], problem) for s in np.unique(sites))
    bandwidth, _, _ = problem.link_matrix()
    linked = bandwidth[~np.eye(len(bandwidth), dtype=bool)]
    linked = linked[linked > 0]
    cuts = [layer.act_bytes for layer in problem.workload.layers[:-1] if layer.cut_after]
    if len(linked) and cuts:
        crossing = float(linked.max()) / min(cuts) if min(cuts) > 0 else np.inf
        best = max(best, min(_program(work, allowed, problem), crossing))
    return best


def max_throughput_within(problem: ParallelProblem, b: int, budget: float) -> float:
    """The most samples/s any plan under micro-batch b whose units rent for at most `budget`
    $/hour can run: the program above over every type (sites and links relaxed) with the
    device-seconds of micro-batch b, and one more row, R·Σ_l price_y·w_l,y ≤ budget (a plan's
    Σ r·T is at least B·Σ_l price·w of its layers, so Σ r ≥ R·Σ_l price·w)."""
    work = problem.least_unit_seconds(b)
    allowed = np.isfinite(work) if problem.allowed is None else problem.allowed & np.isfinite(work)
    return _program(work, allowed, problem, budget)


def _program(work: np.ndarray, allowed: np.ndarray, problem: ParallelProblem, budget: float | None = None) -> float:
    """The largest R of the linear program with layers on the `allowed` (L, T) types only (and,
    with a budget, their $/hour within it)."""
    layers, types = work.shape
    caps = problem.pooled_caps.astype(np.float64)
    # variables: z[l, y] = R·x[l, y] (allowed pairs only), then R; maximise R
    pairs = np.argwhere(allowed)
    n = len(pairs)
    cost = np.zeros(n + 1)
    cost[-1] = -1.0
    each_layer = np.zeros((layers, n + 1))
    each_layer[pairs[:, 0], np.arange(n)] = 1.0
    each_layer[:, -1] = -1.0  # Σ_y z[l, y] = R
    per_type = np.zeros((types, n + 1))
    per_type[pairs[:, 1], np.arange(n)] = work[pairs[:, 0], pairs[:, 1]]  # Σ_l w·z ≤ U_y
    if budget is not None:  # Σ_{l,y} price_y·w·z ≤ budget
        spend = np.zeros((1, n + 1))
        spend[0, :n] = problem.price[pairs[:, 1]] * work[pairs[:, 0], pairs[:, 1]]
        per_type, caps = np.vstack([per_type, spend]), np.append(caps, budget)
    solved = linprog(
        cost, A_ub=per_type, b_ub=caps, A_eq=each_layer, b_eq=np.zeros(layers), bounds=(0, None), method="highs"
    )
    if solved.status == 3:  # unbounded: every layer runs free of device time on some type
        return float("inf")
    return float(solved.x[-1]) if solved.success else 0.0
