"""Types that are copies of one another (same hardware, another name, price or cap): the exact
solver searches them as one type and still answers as brute force over the catalogue as it is,
and a catalogue of copies is proven no slower than twice its originals."""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
import time

import numpy as np
import pytest

from hps.api.loading import default_job, load_catalog, load_workload
from hps.config.types import Catalog
from hps.costmodel.parallel.problem import ParallelProblem
from hps.costmodel.parallel.score import score_plan
from hps.methods.exact_parallel import solver
from hps.methods.exact_parallel.copies import assign_copies, copy_classes, merged_problem
from hps.methods.exact_parallel.solver import solve_parallel
from tests.parallel_instances import brute_force, every_plan, plan_count, random_instance

PLANS = 4_000
"""The most plans one brute-force check scores (about a second)."""


def with_copies(catalog: Catalog, rng: random.Random, count: int) -> Catalog:
    """`catalog` with `count` copies of its types after them: each renamed, at its type's price,
    a dearer or a cheaper one, with its type's cap or a tighter one."""
    copies = []
    for k in range(count):
        r = rng.choice(catalog.resources)
        price = r.price_per_hour * rng.choice([1.0, 1.0, rng.uniform(1.0, 2.0), rng.uniform(0.5, 1.0)])
        cap = rng.choice([r.max_units, rng.randint(1, r.max_units)])
        copies.append(dataclasses.replace(r, name=f"{r.name}-copy{k}", price_per_hour=price, max_units=cap))
    return dataclasses.replace(catalog, resources=catalog.resources + tuple(copies))


def copied_instance(seed: int):
    """random_instance with one to three copies, or of the first seed + k·100,000 whose plans
    brute force can score."""
    while True:
        workload, catalog, job = random_instance(seed)
        copied = with_copies(catalog, random.Random(seed), random.Random(-seed).randint(1, 3))
        if plan_count(workload, copied, job) <= PLANS:
            return workload, copied, job
        seed += 100_000


@pytest.mark.parametrize("start", range(0, 120, 30))
def test_copies_searched_as_one_give_the_brute_force_optimum_and_verdict(start, monkeypatch):
    """Cost to 1e-9 and the verdict (a plan proven optimal, or none proven to exist) equal brute
    force's over the catalogue as it is; the merged plan is taken back to the copies directly or
    the catalogue itself is searched from it, and both happen."""
    searched = []
    plain = solver._search

    def counted(problem, **options):
        searched.append(problem.num_types)
        return plain(problem, **options)

    monkeypatch.setattr(solver, "_search", counted)
    merged = fell_back = infeasible = 0
    for seed in range(start, start + 30):
        workload, catalog, job = copied_instance(seed)
        problem = ParallelProblem(workload, catalog, job)
        cost, plan, _ = brute_force(workload, catalog, job)
        searched.clear()
        result = solve_parallel(problem)
        merged += copy_classes(problem) is not None
        fell_back += searched.count(problem.num_types) > 0 and len(searched) > 1
        assert result.gap == 0.0, seed
        if plan is None:
            infeasible += 1
            assert result.plan is None and math.isinf(result.bound), seed
            continue
        assert result.plan is not None, seed
        assert result.cost == pytest.approx(cost, rel=1e-9), seed
        assert score_plan(problem, result.plan.stages, result.plan.micro_batch).feasible, seed
    assert merged >= 20 and 1 <= infeasible < 30 and fell_back >= 1


def test_a_plan_costs_no_less_than_its_stages_on_their_merged_types():
    """Every plan of the catalogue, its stages moved onto their classes' merged types, is a plan
    of the merged problem no dearer (and feasible where it was): the merged bound bounds it."""
    checked = 0
    for seed in range(30):
        workload, catalog, job = copied_instance(seed)
        b = int(job.micro_batch or job.batch)
        job = dataclasses.replace(job, micro_batch=float(b))
        problem = ParallelProblem(workload, catalog, job)
        classes = copy_classes(problem)
        if classes is None:
            continue
        merged = merged_problem(problem, classes)
        name_of = {catalog.names[y]: catalog.names[members[0]] for members in classes for y in members}
        plans = list(every_plan(workload, catalog, b))
        random.Random(seed).shuffle(plans)
        for plan in plans[:40]:
            mine = score_plan(problem, plan)
            moved = tuple(dataclasses.replace(s, type=name_of[s.type]) for s in plan)
            theirs = score_plan(merged, moved)
            assert theirs.cost <= mine.cost * (1 + 1e-12), seed
            assert theirs.feasible or not mine.feasible, seed
            checked += mine.feasible
    assert checked >= 20


def test_assign_copies_finds_the_least_cost_assignment():
    """Against every assignment of the stages to copies within the copies' caps."""
    rng = random.Random(0)
    for _ in range(300):
        units = [rng.choice([1, 2, 3, 4, 6, 8]) for _ in range(rng.randint(1, 5))]
        caps = [rng.randint(1, 12) for _ in range(rng.randint(1, 3))]
        largest = [min(c, rng.choice([c, rng.randint(1, c)])) for c in caps]
        prices = [rng.choice([1.0, 1.5, 2.0]) for _ in caps]
        best = math.inf
        for choice in itertools.product(range(len(caps)), repeat=len(units)):
            used = [0] * len(caps)
            for u, i in zip(units, choice):
                used[i] += u
            if all(u <= c for u, c in zip(used, caps)) and all(u <= largest[i] for u, i in zip(units, choice)):
                best = min(best, sum(u * prices[i] for u, i in zip(units, choice)))
        got = assign_copies(units, caps, largest, prices)
        if math.isinf(best):
            assert got is None
            continue
        used = [0] * len(caps)
        for u, i in zip(units, got):
            used[i] += u
            assert u <= largest[i]
        assert all(u <= c for u, c in zip(used, caps))
        assert sum(u * prices[i] for u, i in zip(units, got)) == pytest.approx(best, rel=1e-12)


def test_types_named_by_measured_times_or_allowed_elsewhere_are_not_merged():
    workload, catalog, job = random_instance(1)
    copied = with_copies(catalog, random.Random(1), 2)
    problem = ParallelProblem(workload, copied, job)
    assert copy_classes(problem) is not None
    layers = tuple(dataclasses.replace(layer, measured=()) for layer in workload.layers)
    calls = dataclasses.replace(workload, layers=layers, measured_call_s=dict.fromkeys(copied.names, 0.0))
    assert copy_classes(ParallelProblem(calls, copied, job)) is None
    one_each = problem.restricted(np.eye(problem.num_types, dtype=bool)[[0] * problem.num_layers])
    assert copy_classes(one_each) is None


def _proof_seconds(problem: ParallelProblem) -> tuple[float, float, float]:
    """(least wall seconds of two solves, cost, gap)."""
    times, result = [], None
    for _ in range(2):
        started = time.perf_counter()
        result = solve_parallel(problem)
        times.append(time.perf_counter() - started)
    return min(times), result.cost, result.gap


def test_a_catalogue_of_copies_proves_the_same_optimum_within_twice_the_time():
    """gnmt on the shipped small catalogue, and on 32 types: its three and 29 copies (at the
    same price, dearer, or with a tighter cap, in turn)."""
    workload = load_workload("gnmt")
    catalog = load_catalog("small")
    job = default_job(workload)
    copies = []
    for k in range(29):
        r = catalog.resources[k % 3]
        change = [{}, {"price_per_hour": r.price_per_hour * (1.05 + 0.01 * k)}, {"max_units": r.max_units // 2}][k % 3]
        copies.append(dataclasses.replace(r, name=f"{r.name}-copy{k}", **change))
    copied = dataclasses.replace(catalog, resources=catalog.resources + tuple(copies))
    seconds, cost, gap = _proof_seconds(ParallelProblem(workload, catalog, job))
    copied_seconds, copied_cost, copied_gap = _proof_seconds(ParallelProblem(workload, copied, job))
    assert gap == copied_gap == 0.0
    assert copied_cost == pytest.approx(cost, rel=1e-12)
    assert copied_seconds <= 2 * seconds
