"""The most throughput within a budget ($/hour): the contract's verdicts, the command line, the
API, plan files and the sweep. Its optimum against brute force: tests/test_parallel_model.py."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

import hps
from hps.contract.types import PlanResult, throughput_gap
from hps.methods.exact_parallel.solver import solve_parallel
from tests.helpers import run_cli_output

SMALL = ["--workload", "transformer-small", "--catalog", "small"]
DUAL = ["search", *SMALL, "--parallel", "--maximize", "throughput"]


def test_the_throughput_gap_and_status_read_the_bound_as_an_upper_bound():
    assert throughput_gap(100.0, 100.0, True) == 0.0
    assert throughput_gap(100.0, 125.0, True) == pytest.approx(0.25)
    assert throughput_gap(0.0, 0.0, False) == 0.0  # proven: none within the budget
    assert throughput_gap(0.0, 50.0, False) is None
    assert throughput_gap(0.0, math.nan, False) is None
    none = PlanResult("exact", None, None, 0.0, 1.0, 0, objective="throughput")
    assert none.status == "infeasible" and none.throughput == 0.0
    assert PlanResult("exact", None, None, 7.0, 1.0, 0, objective="throughput").status == "unknown"


def test_the_dual_at_the_cost_optimums_rate_is_at_least_as_fast_and_no_dearer_per_hour():
    """At the cheapest plan's own $/hour, the fastest plan within that budget is at least as
    fast (the cheapest plan is one of the candidates); at a tenth of the least $/hour any plan
    rents for, none is affordable, proven."""
    problem = hps.Problem("transformer-small", "small", parallel=True)
    cheapest = hps.plan(problem, method="exact", seconds=60)
    rate = cheapest.score.dollars_per_hour
    fastest = hps.plan(problem.with_job(budget_per_hour=rate), method="exact", seconds=60)
    assert fastest.objective == "throughput" and fastest.status == "optimal"
    assert fastest.score.throughput >= cheapest.score.throughput * (1 - 1e-12)
    assert fastest.score.dollars_per_hour <= rate * (1 + 1e-9)
    assert fastest.bound == pytest.approx(fastest.score.throughput, rel=1e-12)
    least = min(r.price_per_hour for r in problem.catalog.resources)
    broke = hps.plan(problem.with_job(budget_per_hour=least / 10), method="exact", seconds=60)
    assert broke.status == "infeasible" and broke.plan is None and broke.bound == 0.0


def test_a_budget_cuts_a_floor_the_cheapest_plan_meets_down_to_infeasible():
    """A floor above what the budget buys: proven infeasible, and a feasible cost plan at that
    floor costs more per hour than the budget (the two verdicts agree)."""
    problem = hps.Problem("transformer-small", "small", parallel=True)
    cheapest = solve_parallel(problem.parallel_problem)
    budget = cheapest.score.dollars_per_hour * 0.999
    floor = problem.job.throughput
    both = hps.plan(problem.with_job(budget_per_hour=budget, throughput=floor), method="exact", seconds=60)
    if both.feasible:  # then a plan at least as fast as the floor, cheaper per hour than the cheapest's
        assert both.score.throughput >= floor * (1 - 1e-9) and both.score.dollars_per_hour <= budget * (1 + 1e-9)
    else:
        assert both.status == "infeasible"


def test_only_the_exact_solver_maximises_throughput():
    problem = hps.Problem("transformer-small", "small", parallel=True).with_job(budget_per_hour=5.0)
    with pytest.raises(hps.ConfigError, match="exact"):
        hps.plan(problem, method="greedy", seconds=5)
    schedule = hps.Problem("ctr-dnn", "cloud-2024")
    with pytest.raises(hps.ConfigError, match="budget_per_hour"):
        schedule.with_job(budget_per_hour=5.0)


def test_search_maximize_throughput_prints_the_budget_and_a_proven_bound(capsys, tmp_path):
    out = tmp_path / "plan.json"
    code, text, _ = run_cli_output([*DUAL, "--budget", "5", "--out", str(out)], capsys)
    assert code == 0, text
    assert "the most samples/s within $5 per hour" in text and "samples/s at most (proven optimal)" in text
    code, text, _ = run_cli_output([*DUAL, "--budget", "5", "--json"], capsys)
    document = json.loads(text)
    assert document["objective"] == "throughput" and document["status"] == "optimal" and document["gap"] == 0.0
    assert document["dollars_per_hour"] <= 5.0 and document["bound"] == pytest.approx(document["throughput"])
    written = hps.read_plan(out)
    assert written.job.budget_per_hour == 5.0
    code, text, _ = run_cli_output(["evaluate", "--plan", str(out), "--json"], capsys)
    assert code == 0 and json.loads(text)["feasible"] is True
    over = json.loads(out.read_text())
    over["job"]["budget_per_hour"] = document["dollars_per_hour"] / 2  # the same plan, half the budget
    out.write_text(json.dumps(over))
    code, text, _ = run_cli_output(["evaluate", "--plan", str(out), "--json"], capsys)
    assert json.loads(text)["reason"] == "budget"


def test_search_proves_a_budget_below_every_plan_infeasible(capsys):
    code, text, _ = run_cli_output([*DUAL, "--budget", "0.01"], capsys)
    assert code == 0 and "status      infeasible: no plan rents for at most the budget" in text


@pytest.mark.parametrize(
    "argv, flag, words",
    [
        ([*DUAL], "--maximize", "needs --budget"),
        (["search", *SMALL, "--parallel", "--budget", "5"], "--budget", "--evaluations"),
        ([*DUAL, "--budget", "-3"], "--budget", "positive"),
        ([*DUAL, "--budget", "nan"], "--budget", "positive"),
        ([*DUAL, "--budget", "1e300"], "--budget", "1e+12 $ per hour"),
    ],
)
def test_search_refuses_a_budget_without_its_objective_or_out_of_range(capsys, argv, flag, words):
    code, _, err = run_cli_output(argv, capsys)
    assert code == 2 and flag in err and words in err


def test_the_budget_sweep_never_loses_throughput_as_the_budget_rises(capsys, tmp_path):
    plot = tmp_path / "budgets.png"
    argv = ["sweep", *SMALL, "--maximize", "throughput", "--budgets", "0.01,1,5,50", "--price-scale", "1,2"]
    code, text, _ = run_cli_output([*argv, "--json"], capsys)
    points = json.loads(text)["points"]
    assert code == 0 and len(points) == 8
    for scale in (1.0, 2.0):
        mine = [p for p in points if p["price_scale"] == scale]
        assert mine[0]["status"] == "infeasible"
        speeds = [p["throughput"] or 0.0 for p in mine]
        assert speeds == sorted(speeds) and all(p["status"] in ("optimal", "infeasible") for p in mine)
    by_point = {(p["budget_per_hour"], p["price_scale"]): p["throughput"] for p in points}
    assert by_point[(50.0, 2.0)] <= by_point[(50.0, 1.0)] and by_point[(5.0, 2.0)] <= by_point[(5.0, 1.0)]
    code, text, _ = run_cli_output([*argv, "--plot", str(plot)], capsys)
    assert code == 0 and plot.stat().st_size > 0 and "budget_$/h" in text
    for extra, flag in ((["--floors", "5"], "--floors"), (["--certify", "2"], "--certify")):
        code, _, err = run_cli_output([*argv, *extra], capsys)
        assert code == 2 and flag in err
    code, _, err = run_cli_output(["sweep", *SMALL, "--budgets", "5"], capsys)
    assert code == 2 and "--maximize throughput" in err


def test_a_price_scale_equals_a_budget_scale():
    """Doubling every price buys at budget 2x what list prices buy at x: the same plan's speed."""
    problem = hps.Problem("transformer-small", "small", parallel=True)
    doubled = dataclasses.replace(
        problem.catalog,
        resources=tuple(dataclasses.replace(r, price_per_hour=2 * r.price_per_hour) for r in problem.catalog.resources),
    )
    one = hps.plan(problem.with_job(budget_per_hour=3.0), method="exact", seconds=60)
    two = hps.plan(hps.Problem(problem.workload, doubled, problem.job.__class__(**{
        **problem.job.__dict__, "budget_per_hour": 6.0}), parallel=True), method="exact", seconds=60)  # fmt: skip
    assert one.status == two.status == "optimal"
    assert two.score.throughput == pytest.approx(one.score.throughput, rel=1e-12)
