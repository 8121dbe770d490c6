"""What-if sweeps (`hps sweep`, hps.methods.sequence.sweep): the stage tables a sweep shares do not
depend on the floor or the prices; every point's plan is checked against the exact solver run
on that point alone; the JSON document has the promised keys."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from hps.api.planning import Problem
from hps.cli.main import main
from hps.costmodel.parallel.problem import ParallelProblem
from hps.methods.exact_parallel.solver import solve_parallel
from hps.methods.exact_parallel.table import SharedTables, StageTable
from hps.methods.sequence.sweep import Sweep, point_problem

SMALL = ("gpt3-175b", "cloud-2026", {"layers": 2})
"""A zoo LLM cut to two blocks: each point planned and proven in well under a second."""


@pytest.fixture(scope="module")
def base():
    workload, catalog, overrides = SMALL
    return Problem(workload, catalog, overrides=overrides, parallel=True).parallel_problem


def test_stage_tables_do_not_depend_on_the_floor_or_the_prices(base):
    """A table built at one floor and price level, re-priced for another point, equals the table
    built at that point from scratch: entries, τ, φ, in-flight counts, units and rates."""
    scaled = ("h100", "tpu-v6e")
    shared = SharedTables()
    b = base.micro_batch_choices()[0]
    shared.get(point_problem(base, 10.0, 1.0), b)  # built at floor 10, list prices
    for floor, scale in ((10.0, 0.5), (300.0, 3.0)):
        point = point_problem(base, floor, scale, scaled)
        reused, fresh = shared.get(point, b), StageTable(point, b)
        for name in ("entry_span", "entry_opt", "time", "tail", "fits", "units", "site"):
            np.testing.assert_array_equal(getattr(reused, name), getattr(fresh, name), err_msg=name)
        np.testing.assert_allclose(reused.rate, fresh.rate, rtol=1e-15)
    assert shared.builds == 1 and shared.hits == 2
    other = dataclasses.replace(base.job, batch=base.job.batch / 2)
    with pytest.raises(ValueError, match="differ only"):
        shared.get(ParallelProblem(base.workload, base.catalog, other), b)
    with pytest.raises(ValueError, match="differs only"):
        base.repriced(base.catalog, other)


def test_point_problem_scales_only_the_named_types(base):
    point = point_problem(base, 123.0, 2.0, ("h100",))
    assert point.job.throughput == 123.0
    for mine, theirs in zip(point.catalog.resources, base.catalog.resources):
        want = theirs.price_per_hour * (2.0 if theirs.name == "h100" else 1.0)
        assert mine.price_per_hour == want


def test_every_point_equals_the_exact_solver_on_that_point_alone(base):
    """Points of two price levels (one scaling only h100 and tpu-v6e): each plan's cost equals
    the proven optimum of the exact solver run cold on the point, and no point has a plan where
    the solver proves none feasible."""
    floors, scales, scaled = [20.0, 100.0, 300.0, 3000.0], [0.25, 1.0], ("h100", "tpu-v6e")
    points = Sweep(base, scaled).run(floors, scales)
    assert [(p.floor, p.price_scale) for p in points] == [(f, s) for s in scales for f in floors]
    for p in points:
        found = solve_parallel(point_problem(base, p.floor, p.price_scale, scaled), seconds=60)
        assert found.gap == 0.0
        if found.plan is None:
            assert not p.feasible
            continue
        assert p.feasible and p.result.score.throughput >= p.floor * (1 - 1e-9)
        assert p.cost == pytest.approx(found.score.cost, rel=1e-9)
    for scale in scales:  # a higher floor only removes plans
        costs = [p.cost for p in points if p.price_scale == scale]
        assert costs == sorted(costs)


def test_hps_sweep_json_has_every_point_and_the_proven_optimum_only_where_certified(capsys, tmp_path):
    workload, catalog, overrides = SMALL
    argv = ["sweep", "--workload", workload, "--catalog", catalog, "--set", "layers=2", "--floors", "20,100",
            "--price-scale", "1,2", "--certify", "2", "--json", "--plot", str(tmp_path / "pareto.png")]  # fmt: skip
    assert main(argv) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["seconds"] > 0 and (tmp_path / "pareto.png").stat().st_size > 0
    points = document["points"]
    assert [(p["floor"], p["price_scale"]) for p in points] == [(20, 1), (100, 1), (20, 2), (100, 2)]
    certified = [p for p in points if "proven_optimum" in p]
    assert len(certified) == 2
    for p in points:
        assert {"floor", "price_scale", "cost", "feasible", "plan"} <= set(p)
        assert p["feasible"] and p["plan"]["stages"] and p["plan"]["micro_batch"] >= 1
    for p in certified:
        assert p["cost"] == pytest.approx(p["proven_optimum"], rel=1e-9)
    doubled = {p["floor"]: p["cost"] for p in points if p["price_scale"] == 2}
    for p in points:  # every type's price doubled (no links used): every cost doubles
        if p["price_scale"] == 1:
            assert doubled[p["floor"]] == pytest.approx(2 * p["cost"], rel=1e-9)


def test_hps_sweep_refuses_an_unknown_scaled_type(capsys):
    argv = ["sweep", "--workload", "gpt3-175b", "--catalog", "cloud-2026", "--set", "layers=2", "--floors", "20"]
    argv += ["--scale-types", "v100"]
    assert main(argv) == 2
    assert "--scale-types" in capsys.readouterr().err


def test_an_infeasible_floor_has_no_plan(base):
    (point,) = Sweep(base).run([1e12], [1.0])
    assert not point.feasible and point.plan is None and math.isinf(point.cost)


def test_a_floor_proven_infeasible_rules_out_higher_floors_at_every_price_scale(base, monkeypatch):
    """The solver proves floors 2e12 and 1e12 have no plan at price scale 1; at scale 0.5 both
    are answered without calling the solver, and the points below keep their optima."""
    from hps.methods.sequence import sweep as module

    solved = []

    def counted(problem, **kwargs):
        solved.append((problem.job.throughput, problem.price.max()))
        return solve_parallel(problem, **kwargs)

    monkeypatch.setattr(module, "solve_parallel", counted)
    sweep = Sweep(base)
    points = sweep.run([30.0, 1e12, 2e12], [1.0, 0.5])
    assert sweep.no_plan_from == 1e12
    full_price = base.price.max()
    assert {floor for floor, top in solved if top < full_price} == {30.0}  # scale 0.5: only floor 30
    assert {floor for floor, top in solved if top == full_price} == {30.0, 1e12, 2e12}
    by_point = {(p.floor, p.price_scale): p for p in points}
    for key in ((2e12, 1.0), (1e12, 1.0), (1e12, 0.5), (2e12, 0.5)):
        assert not by_point[key].feasible and by_point[key].result.evaluations == 0
    for scale in (1.0, 0.5):
        found = solve_parallel(point_problem(base, 30.0, scale), seconds=60)
        assert found.gap == 0.0 and by_point[(30.0, scale)].cost == pytest.approx(found.score.cost, rel=1e-9)


def test_a_sequence_proven_without_a_plan_stays_so_at_higher_floors_and_other_scales(base):
    sweep = Sweep(base)
    sequence = (0,) * len(sweep.segments)
    problem = point_problem(base, 1e12, 1.0)
    done, solved = sweep._complete(problem, 1e12, 1.0, sequence, None, math.inf)
    assert solved and done.plan is None and done.proven and sweep.no_plan[sequence] == 1e12
    reused, solved = sweep._complete(point_problem(base, 2e12, 0.5), 2e12, 0.5, sequence, None, math.inf)
    assert not solved and reused.plan is None and reused.proven


def test_a_plan_found_at_another_price_scale_answers_a_point_left_no_time(base):
    """Feasibility does not depend on prices: a point given no search time (no earlier point at
    its scale) takes the plan found at another scale that meets its floor, costed at its own
    prices."""
    floor = 100.0
    found = solve_parallel(point_problem(base, floor, 1.0), seconds=60)
    assert found.plan is not None and found.gap == 0.0
    sweep = Sweep(base, point_seconds=1e-9, first_seconds=1e-9, seed_seconds=0.0)
    sweep.found[found.plan] = found.score.throughput
    point = sweep.plan_point(floor, 0.5)
    from hps.costmodel.parallel.score import score_plan

    want = score_plan(point_problem(base, floor, 0.5), found.plan.stages, found.plan.micro_batch)
    assert point.plan == found.plan and point.cost == pytest.approx(want.cost, rel=1e-12)
    assert sweep.plan_point(found.score.throughput * 1.01, 0.5).plan is None  # too slow for that floor


def test_no_point_costs_more_than_a_plan_found_elsewhere_that_meets_its_floor(base):
    """With little time per point, every point still ends at most as dear as each plan found at
    any point (any scale) that runs fast enough for its floor, costed at its own prices."""
    from hps.costmodel.parallel.score import score_plan

    sweep = Sweep(base, point_seconds=0.02, first_seconds=5.0)
    floors, scales = [20.0, 60.0, 100.0, 300.0], [0.5, 1.0, 2.0]
    points = sweep.run(floors, scales)
    assert len(sweep.found) >= 2
    for p in points:
        problem = point_problem(base, p.floor, p.price_scale)
        for plan in sweep.found:
            score = score_plan(problem, plan.stages, plan.micro_batch)
            if score.feasible:
                assert p.feasible and p.cost <= score.cost * (1 + 1e-12)


def test_a_warm_started_exact_solve_keeps_the_cold_answer_and_certificate(base):
    """The exact solver started from a sweep point's plan (a policy's sequence completed and
    refined, as hps search --warm-start builds it) proves the same optimum as cold."""
    from hps.contract.types import Budget
    from hps.methods.registry import run
    from hps.methods.sequence.sweep import policy_plan

    workload, catalog, overrides = SMALL
    problem = Problem(workload, catalog, overrides=overrides, parallel=True)
    start = policy_plan(problem.parallel_problem, [(0,) * len(Sweep(base).segments)], seconds=5.0)
    assert start.feasible
    cold = run("exact", problem, Budget(60.0))
    warm = run("exact", problem, Budget(60.0), incumbent=start.plan)
    assert cold.gap == warm.gap == 0.0
    assert warm.cost == pytest.approx(cold.cost, rel=1e-12) and start.cost >= cold.cost * (1 - 1e-12)


def test_hps_search_warm_start_without_a_checkpoint_certifies_the_cold_optimum(capsys):
    """`--warm-start` alone: the incumbent comes from the one- and two-run sequence search (no
    policy), and the solver still proves the cold optimum; the report says no checkpoint."""
    workload, catalog, overrides = SMALL
    argv = ["search", "--workload", workload, "--catalog", catalog, "--set", "layers=2", "--parallel"]
    assert main([*argv, "--seconds", "60", "--json"]) == 0
    cold = json.loads(capsys.readouterr().out)
    assert main([*argv, "--seconds", "60", "--warm-start", "--json"]) == 0
    warm = json.loads(capsys.readouterr().out)
    assert cold["gap"] == warm["gap"] == 0.0 and warm["cost"] == pytest.approx(cold["cost"], rel=1e-12)
    report = warm["warm_start"]
    assert report["checkpoint_step"] is None and report["sequences"] == 0
    assert report["incumbent_cost"] >= cold["cost"] * (1 - 1e-12)
    assert report["certificate_seconds"] == pytest.approx(report["incumbent_seconds"] + report["solver_seconds"])


def test_proposals_go_least_bound_first_and_leave_half_the_point_to_the_search(base, monkeypatch):
    """On a clock that advances one second a completion, a point of ten seconds completes the
    proposals in order of their work bound for five seconds, then the search's own sequences."""
    from hps.methods.sequence import sweep as module
    from hps.methods.sequence.completion import WorkBound

    clock = [0.0]
    monkeypatch.setattr(module.time, "perf_counter", lambda: clock[0])
    done = []

    def complete(self, problem, floor, scale, sequence, best, deadline):
        clock[0] += 1.0
        done.append(sequence)
        return module._Done(None, None, math.inf, False), True

    monkeypatch.setattr(module.Sweep, "_complete", complete)
    sweep = Sweep(base, point_seconds=10.0, first_seconds=10.0, seed_seconds=0.0)
    count, types = len(sweep.segments), base.num_types
    proposals = [tuple((k + j) % types for j in range(count)) for k in range(types)]  # every rotation
    proposals += [tuple((k + j) % types for j in range(count))[::-1] for k in range(types)]
    bound = WorkBound(point_problem(base, 10.0, 1.0), sweep.segments)
    given = proposals[::-1]
    fresh = list(dict.fromkeys(given))
    sweep.plan_point(10.0, 1.0, given)
    tried = [s for s in done if s in fresh]
    assert len(tried) == 5 and done[:5] == tried  # five seconds of proposals, then the search's own
    assert tried == sorted(fresh, key=bound)[:5]
    assert len(done) == 10 and set(done[5:]).isdisjoint(tried)


@pytest.mark.parametrize("paying", [False, True])
def test_proposals_keep_their_share_only_while_one_of_them_gives_a_point_its_best_plan(base, monkeypatch, paying):
    """Proposals none of which ever gives a point's best plan are completed at the first three
    points only; where one does, they are offered at every point."""
    from hps.methods.sequence import sweep as module

    optimum = solve_parallel(point_problem(base, 10.0, 1.0))
    clock, tried = [0.0], []
    monkeypatch.setattr(module.time, "perf_counter", lambda: clock[0])
    sweep = Sweep(base, point_seconds=10.0, first_seconds=10.0, seed_seconds=0.0)
    winner = sweep.sequence_of(optimum.plan)
    count, types = len(sweep.segments), base.num_types
    others = [tuple((k + j) % types for j in range(count)) for k in range(types)]
    others = [s for s in others if s != winner]
    proposals = [winner, *others] if paying else others

    def complete(self, problem, floor, scale, sequence, best, deadline):
        clock[0] += 1.0
        tried.append(sequence)
        if sequence == winner and paying:
            score = module.score_plan(problem, optimum.plan.stages, optimum.plan.micro_batch)
            return module._Done(optimum.plan, score, score.cost, True), True
        return module._Done(None, None, math.inf, False), True

    monkeypatch.setattr(module.Sweep, "_complete", complete)
    per_point = []
    for _ in range(5):
        before = len(tried)
        sweep.plan_point(10.0, 1.0, proposals)
        per_point.append(sum(s in others for s in tried[before:]))
    if paying:  # the others' bounds reach the optimum's cost, so they are offered but not completed
        assert sweep.proposal_points == 5 and sweep.proposal_wins == 1
    else:
        assert all(n > 0 for n in per_point[:3]) and per_point[3:] == [0, 0] and sweep.proposal_points == 3
