"""Types that are copies of one another, searched as one by the exact solver (docs/parallel-plans.md,
"Copies of a type").

Two types are copies when they differ only in name, price and max_units: the same hardware,
network, site and kernel constants, allowed on the same layers, and neither named by a measured
time or call (those are looked up by name). A stage on one copy has the same τ, φ, memory and
links on any other copy whose cap holds its t·d units; only its $/hour differs.

The merged problem has one type per class of copies: its least price, its largest cap as the
units a stage may use, the sum of its caps as the units the plan may use. Each plan of the
problem is a plan of the merged problem (every stage on its class) that costs no more, so every
lower bound proven on the merged problem holds for the problem. The merged optimum is taken back
by giving each of its stages a copy (`assign_copies`: the least $/hour with every copy's stages
within its cap); where that costs no more than the merged bound, it is the problem's optimum.
Otherwise the problem itself is searched from that plan, within the time left, and the result's
bound is the larger of the two.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable

from hps.config.types import ResourceType
from hps.contract.types import GAP_ROUNDING, Plan, PlanResult, gap_of
from hps.costmodel.parallel.problem import ParallelProblem
from hps.costmodel.parallel.score import score_plan

NODES = 20_000
"""Partial assignments `assign_copies` extends at most; past them it keeps the best it found."""


def _hardware(resource: ResourceType) -> ResourceType:
    """The type less what its copies may change: its name, price, cap and its network's name."""
    network = dataclasses.replace(resource.network, name="")
    return dataclasses.replace(resource, name="", price_per_hour=0.0, max_units=0, network=network)


def copy_classes(problem: ParallelProblem) -> tuple[tuple[int, ...], ...] | None:
    """The problem's types in classes of copies (type indices in catalogue order; classes in the
    order of their first type), or None where no two types allowed on some layer are copies."""
    workload = problem.workload
    named = {e.type for layer in workload.layers for e in layer.measured} | set(workload.measured_call_s)
    classes: dict[tuple, list[int]] = {}
    for y, resource in enumerate(problem.catalog.resources):
        column = None if problem.allowed is None else problem.allowed[:, y]
        if resource.name in named or (column is not None and not column.any()):
            key = (y,)  # looked up by name, or runs nothing: left alone
        else:
            key = (_hardware(resource), None if column is None else column.tobytes())
        classes.setdefault(key, []).append(y)
    if all(len(members) == 1 for members in classes.values()):
        return None
    return tuple(tuple(members) for members in classes.values())


def merged_problem(problem: ParallelProblem, classes: tuple[tuple[int, ...], ...]) -> ParallelProblem:
    """One type per class, named as its first type: the class's least price, its largest
    max_units (the units one stage may use) and the sum of its pooled caps (the units a plan may
    use). Merged problems of one catalogue's classes share their layer tables."""
    resources = problem.catalog.resources
    types = tuple(
        dataclasses.replace(
            resources[members[0]],
            price_per_hour=min(resources[y].price_per_hour for y in members),
            max_units=max(resources[y].max_units for y in members),
        )
        for members in classes
    )
    pooled = tuple(int(sum(problem.pooled_caps[y] for y in members)) for members in classes)
    allowed = None if problem.allowed is None else problem.allowed[:, [members[0] for members in classes]]
    key = ("copies", tuple(dataclasses.replace(r, price_per_hour=0.0) for r in types))
    memo = problem.memo.setdefault(key, {})  # layer times hang on the types' hardware, not their prices
    catalog = dataclasses.replace(problem.catalog, resources=types)
    return ParallelProblem(problem.workload, catalog, problem.job, allowed, problem.clock, memo, pooled)


def assign_copies(
    units: list[int], caps: list[int], largest: list[int], prices: list[float], nodes: int = NODES
) -> list[int] | None:
    """The copy (an index into `caps`, `largest` and `prices`) of each stage of `units` that makes
    Σ units·price least ($/hour; prices per unit), with every copy's stages within its cap and
    each stage within its copy's `largest`: branch and bound over the stages, most units first,
    copies cheapest first (copies alike in price, room left and largest are tried once). Past
    `nodes` partial assignments, the best found; None where none was."""
    order = sorted(range(len(units)), key=lambda j: -units[j])
    copies = sorted(range(len(caps)), key=lambda i: prices[i])
    rest = [0] * (len(order) + 1)  # units of the stages from position k on
    for k in range(len(order) - 1, -1, -1):
        rest[k] = rest[k + 1] + units[order[k]]
    least = min(prices)
    floor = rest[0] * least * (1 + GAP_ROUNDING)  # no assignment costs less: stop once one does not
    room, chosen = list(caps), [0] * len(units)
    best, best_cost, extended = None, math.inf, 0

    def visit(k: int, cost: float) -> None:
        nonlocal best, best_cost, extended
        if k == len(order):
            if cost < best_cost:
                best, best_cost = list(chosen), cost
            return
        if extended >= nodes or best_cost <= floor:
            return
        extended += 1
        j, tried = order[k], set()
        for i in copies:
            alike = (prices[i], room[i], largest[i])
            if units[j] > min(room[i], largest[i]) or alike in tried:
                continue
            tried.add(alike)
            spent = cost + units[j] * prices[i]
            if spent + rest[k + 1] * least >= best_cost * (1 - GAP_ROUNDING):
                continue
            room[i] -= units[j]
            chosen[j] = i
            visit(k + 1, spent)
            room[i] += units[j]

    visit(0, 0.0)
    return best


def taken_back(problem: ParallelProblem, classes: tuple[tuple[int, ...], ...], plan: Plan) -> Plan | None:
    """A plan of `problem` from a plan of its merged problem: each stage on a copy of its class,
    by `assign_copies`; None where no assignment within the copies' caps was found."""
    resources, names = problem.catalog.resources, problem.catalog.names
    stages = list(plan.stages)
    for members in classes:
        on = [j for j, s in enumerate(stages) if s.type == names[members[0]]]
        if not on or len(members) == 1:
            continue
        copy_of = assign_copies(
            [stages[j].tp * stages[j].dp for j in on],
            [int(problem.pooled_caps[y]) for y in members],
            [resources[y].max_units for y in members],
            [resources[y].price_per_hour for y in members],
        )
        if copy_of is None:
            return None
        for k, j in enumerate(on):
            stages[j] = dataclasses.replace(stages[j], type=names[members[copy_of[k]]])
    return Plan(tuple(stages), plan.micro_batch)


Solve = Callable[..., PlanResult]
"""The exact search of one problem as it is: solve(problem, seconds=, incumbent=) -> PlanResult."""


def solve_merged(
    problem: ParallelProblem,
    classes: tuple[tuple[int, ...], ...],
    solve: Solve,
    *,
    seconds: float = math.inf,
    incumbent: Plan | None = None,
) -> PlanResult:
    """The cheapest plan of `problem` by `solve` on its merged problem, taken back to its own
    types, within `seconds`; the problem itself is searched from it, in the time left, where it
    is not proven optimal. incumbent: a plan of `problem` to prune against."""
    started = time.perf_counter()
    merged = merged_problem(problem, classes)
    names = problem.catalog.names
    as_merged = {names[y]: names[members[0]] for members in classes for y in members}
    offer = None
    if incumbent is not None:
        stages = tuple(dataclasses.replace(s, type=as_merged.get(s.type, s.type)) for s in incumbent.stages)
        offer = Plan(stages, incumbent.micro_batch)
    found = solve(merged, seconds=seconds, incumbent=offer)
    candidates = [] if found.plan is None else [taken_back(problem, classes, found.plan)]
    best, score = None, None
    for plan in [*candidates, incumbent]:
        scored = None if plan is None else score_plan(problem, plan.stages, plan.micro_batch)
        if scored is not None and scored.feasible and (score is None or scored.cost < score.cost):
            best, score = plan, scored
    cost = math.inf if score is None else score.cost
    bound, evaluations, held = found.bound, found.evaluations, found.open
    left = seconds - (time.perf_counter() - started)
    if found.plan is not None and gap_of(cost, bound, score is not None) != 0.0 and left > 0:
        rest = solve(problem, seconds=left, incumbent=best)
        best, score, evaluations = rest.plan, rest.score, evaluations + rest.evaluations
        held = rest.open if rest.bound >= bound else held
        cost, bound = rest.cost, max(bound, rest.bound)
    bound = min(bound, cost)
    held = held if gap_of(cost, bound, score is not None) != 0.0 else None
    return PlanResult("exact", best, score, bound, time.perf_counter() - started, evaluations, open=held)
