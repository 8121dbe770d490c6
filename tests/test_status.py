"""One verdict in text and JSON for every search and every sweep point: optimal, feasible,
infeasible (proven) or unknown, with the reach (max_throughput) beside the floor where no plan
meets it."""

from __future__ import annotations

import json

from hps.cli.main import main
from tests.helpers import run_json

TRANSFORMER = ["--workload", "transformer-small", "--catalog", "small"]


def test_the_parallel_search_says_optimal_or_proven_infeasible_with_the_reach(capsys):
    found = run_json(capsys, ["search", *TRANSFORMER, "--parallel", "--json"])
    assert found["status"] == "optimal" and found["gap"] == 0.0 and "max_throughput" not in found
    assert main(["search", *TRANSFORMER, "--parallel", "--throughput", "1e12", "--json"]) == 0
    none = json.loads(capsys.readouterr().out)
    assert none["status"] == "infeasible" and none["feasible"] is False
    assert found["throughput"] <= none["max_throughput"] < 1e12
    assert main(["search", *TRANSFORMER, "--parallel", "--throughput", "1e12"]) == 0
    text = capsys.readouterr().out
    assert "status      infeasible: no plan meets the floor of 1e+12 samples/s" in text
    assert f"can reach is {none['max_throughput']:,.2f} samples/s" in text


def test_a_heuristic_without_a_plan_says_unknown_not_infeasible(capsys):
    assert main(["search", *TRANSFORMER, "--parallel", "--method", "greedy", "--throughput", "1e12", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["status"] == "unknown" and document["bound"] is None


def test_the_schedule_search_gives_its_status_in_json_and_text(capsys):
    small = ["--workload", "ctr-dnn", "--catalog", "small", "--method", "exact"]
    assert run_json(capsys, ["search", *small, "--json"])["status"] == "optimal"
    assert run_json(capsys, ["search", *small, "--throughput", "1e12", "--json"])["status"] == "infeasible"
    assert main(["search", *small]) == 0
    assert "status: optimal" in capsys.readouterr().out


def test_each_sweep_point_has_a_status_and_the_sweep_its_reach(capsys):
    document = run_json(capsys, ["sweep", *TRANSFORMER, "--floors", "1000,1e12", "--price-scale", "1", "--json"])
    statuses = [point["status"] for point in document["points"]]
    assert statuses[0] in ("optimal", "feasible") and statuses[1] == "infeasible"
    assert document["points"][0]["cost"] is not None and 1000 < document["max_throughput"] < 1e12


def test_a_search_stopped_short_says_what_holds_its_bound_and_what_would_close_it(capsys):
    """Out of time before any micro-batch is searched, the exact solver's bound is the least work
    of those left; the answer names that micro-batch and the flag that searches it alone, and
    fixing it proves the micro-batch's own optimum, no dearer than the early answer."""
    import hps

    problem = hps.Problem("transformer-small", "small", parallel=True)
    early = hps.plan(problem, method="exact", seconds=1e-9)
    assert early.status == "feasible" and early.gap > 0
    assert early.open.startswith("micro-batch ") and "fix --micro-batch" in early.open
    b = int(early.open.split()[1])
    alone = hps.plan(problem.with_job(micro_batch=float(b)), method="exact", seconds=60)
    assert alone.status == "optimal" and alone.open is None
    assert alone.bound >= early.bound * (1 - 1e-12)  # the early bound is the least work left: b's
    whole = hps.plan(problem, method="exact", seconds=60)
    assert whole.open is None and whole.cost <= min(alone.cost, early.cost) * (1 + 1e-12)
    assert early.open in problem.report(early)["open"] and "open" not in problem.report(whole)
    code = main(["search", *TRANSFORMER, "--parallel", "--seconds", "1e-9"])
    assert code == 0 and f"open        {early.open}" in capsys.readouterr().out
