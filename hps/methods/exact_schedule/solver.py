"""The exact placement solver: the cheapest plan of the general model, with a certificate.

docs/placement-model.md ("The exact solver") states the algorithm and proves it. For a plan P
of S stages whose stage j has cost rate r_j = k_j·price ($/h) and time τ_j (s per iteration),
cost(P) = c_S · Σ_j r_j · max_j τ_j with c_S = bubble(S) · N / (3600 · B), and (r_j, τ_j)
depend only on the stage's (first layer, last layer, type) and on S. So, per stage count:

1. a dynamic program over stage boundaries (`dp.least_rate`) finds the least Σ r_j of plans whose
   every τ_j ≤ ρ (and, for HeterPS schedules, whose adjacent stages differ in type);
2. starting from ρ = ∞, after each plan ρ drops below that plan's max τ; every plan left costs
   at least c_S · DP(ρ) · τ_lb(ρ), τ_lb being the largest over layers of the least τ of an
   allowed stage covering it, so once that bound reaches the best plan's cost, it is optimal;
3. pooled caps (Σ k_j ≤ max_units over the stages of one type) are met by a best-first search
   over (boundary, stages, last type, units per type) guided by an admissible cap-free bound.

With M = ∞ the bubble is 1 and plans of any stage count share one table; with finite M each
S = 1, 2, … gets its own, and S stops once bubble(S) times a lower bound that holds for every
plan (Σ_j price_j · B · (compute + boundary)_j) reaches the best cost.
"""

from __future__ import annotations

import math
import time

from hps.contract.types import Budget, PlanResult
from hps.costmodel.schedule.plan import IndexPlan, evaluate_plan, planned
from hps.costmodel.schedule.provisioning import Instance
from hps.methods.exact_schedule.best import keep_cheaper
from hps.methods.exact_schedule.caps import NODE_LIMIT, capped_search, meets_caps
from hps.methods.exact_schedule.classes import SpanBests, TypedStages
from hps.methods.exact_schedule.intervals import interval_bound
from hps.methods.exact_schedule.prune import cost_scale, first_bound, pruned_table
from hps.methods.exact_schedule.table import Table, check_table_size


def _solve_count(inst: Instance, table: Table, stages: int | None, heterps: bool, scale: float, best, deadline, nodes):
    """Lower ρ until the bound proves `best` (cost, plan) optimal among plans of this stage
    count, or time.perf_counter() passes `deadline`; a pooled-cap search expands at most
    `nodes` states. Returns (best, the bound left unproven: inf when every class was closed)."""
    plans = TypedStages(table, heterps) if heterps else SpanBests(table)
    while True:
        # Σ r · max τ ≥ Σ_j r_j · max(τ_j, τ_lb) for every plan of the class (the floor)
        (total, plan), (floor, cover) = plans.least_and_floor(stages, best[0] / scale)
        if plan is None:
            return best, math.inf
        if scale * floor >= best[0]:
            return best, math.inf
        if time.perf_counter() > deadline:
            return best, scale * floor
        least, useless = total, math.inf
        if not meets_caps(plan, table, inst):
            dense = table.dense()
            # a plan of Σ r ≥ best / (scale · τ_lb) costs at least the best: the search prunes it
            useless = best[0] / (scale * cover) if cover > 0 else math.inf
            # the search gets half the time left; the interval duals, the rest where it stops open
            now, allowed = time.perf_counter(), plans.allowed()
            total, plan, lowest = capped_search(
                dense, allowed, inst, stages, heterps, now + (deadline - now) / 2, nodes, useless_from=useless
            )
            if lowest >= useless * (1 - 1e-12):  # the rest of the class cannot beat the best
                rho = table.bottleneck(plan) if plan is not None else math.inf
                return keep_cheaper(best, scale, total, rho, plan), math.inf
            # left open by the search: every plan of max τ in [τ_lb, ρ], bounded by interval duals
            if plan is None or lowest < total * (1 - 1e-12):
                best = keep_cheaper(best, scale, total, table.bottleneck(plan), plan) if plan is not None else best
                return interval_bound(dense, allowed, inst, stages, heterps, scale, best, cover, deadline)
        rho = table.bottleneck(plan)
        best = keep_cheaper(best, scale, total, rho, plan)
        # A plan of max τ ≥ best / (scale · least) costs at least the best: skip them all.
        plans.lower(min(rho, best[0] / (scale * least)))


def _stage_counts(inst: Instance, heterps: bool, best, deadline: float, nodes: int, counts, left: dict, w0):
    """Solve plans of each stage count S of `counts` (finite M) in turn, unless bubble(S) times
    the work bound already reaches the best cost or `deadline` has passed. `left` ({S: a proven
    lower bound on the cost of plans of S stages that are not proven no better than the best})
    is updated in place; returns the best (cost, plan). w0: `first_bound(inst)`, whose
    `before[L]` = min over plans of Σ_j price_j·B·(compute + boundary per sample)_j bounds
    Σ r·max τ of every plan, since k·time ≥ B·(compute + boundary) per sample."""
    for stages in counts:
        scale = cost_scale(inst, stages)
        bound = scale * w0.before[-1]
        if bound < best[0] and time.perf_counter() <= deadline:
            table, best = pruned_table(inst, stages, heterps, best, w0)
            best, bound = _solve_count(inst, table, stages, heterps, scale, best, deadline, nodes)
        left[stages] = max(left.get(stages, bound), bound)
    return best


def _starting_best(inst: Instance, heterps: bool, incumbent: IndexPlan | None):
    """(cost, plan) of the incumbent where it is a feasible plan the solver may return, else
    (inf, None)."""
    if incumbent is None:
        return math.inf, None
    plan = tuple((int(f), int(e), int(t)) for f, e, t in incumbent)
    if heterps and any(a[2] == b[2] for a, b in zip(plan, plan[1:])):
        return math.inf, None
    score = evaluate_plan(inst, plan)
    return (score.cost, plan) if score.feasible else (math.inf, None)


def solve_exact(
    inst: Instance, *, heterps: bool = False, seconds: float = math.inf, incumbent: IndexPlan | None = None
) -> PlanResult:
    """The cheapest plan of `inst` (with heterps, the cheapest HeterPS schedule: adjacent
    stages on different types) and its certificate (the result's bound: inf where no plan is
    feasible). The plan's stages have tp 1 and dp the replicas provisioned. Past `seconds` of search the solver stops
    with the best plan found and the bound it has proven (then gap > 0). incumbent: a plan to
    start from (a heuristic's); where it is feasible (and, with heterps, a HeterPS schedule)
    the search prunes against its cost from the start. The result does not depend on it, only
    the time to reach it.

    With finite M, a first pass over the stage counts prices the pooled caps without searching
    (a cap-meeting plan for every S early); a second one searches the counts left open,
    least bound first."""
    check_table_size(inst)
    started = time.perf_counter()
    deadline = started + seconds
    job = inst.job
    best, unproven = _starting_best(inst, heterps, incumbent), math.inf
    if math.isinf(job.micro_batches):
        table, best = pruned_table(inst, 1, heterps, best, first_bound(inst))
        best, unproven = _solve_count(inst, table, None, heterps, cost_scale(inst, 1), best, deadline, NODE_LIMIT)
    else:
        left, w0 = {}, first_bound(inst)
        best = _stage_counts(inst, heterps, best, deadline, 0, range(1, inst.num_layers + 1), left, w0)
        reopen = sorted((bound, stages) for stages, bound in left.items() if bound < best[0])
        best = _stage_counts(inst, heterps, best, deadline, NODE_LIMIT, [s for _, s in reopen], left, w0)
        unproven = min(left.values())
    cost, plan = best
    bound = min(cost, unproven)
    if plan is None:
        return PlanResult("exact", None, None, bound, time.perf_counter() - started, None)
    return planned("exact", inst, plan, bound, time.perf_counter() - started, None)


def plan(problem, budget: Budget, *, heterps: bool = False) -> PlanResult:
    """The planner contract: the schedule model's optimum of `problem` within budget.seconds
    (with heterps, over HeterPS schedules only: adjacent stages on different types)."""
    return solve_exact(problem.instance, heterps=heterps, seconds=budget.seconds)
