"""`hps search --parallel --out PLAN.json` and `hps evaluate --plan PLAN.json`: the plan file
round trip, its report, and clear errors for bad plans."""

from __future__ import annotations

import json

import pytest

from hps.config.loaders import load_catalog
from hps.config.paths import resolve_topology
from hps.config.planfile import read_plan_file
from hps.costmodel.parallel.problem import ParallelProblem
from hps.costmodel.parallel.score import score_plan
from hps.workloads import resolve_workload
from tests.helpers import run_cli_output


def test_search_writes_a_plan_that_evaluate_scores_the_same(tmp_path, capsys):
    out = tmp_path / "plan.json"
    argv = ["search", "--workload", "ctr-dnn", "--catalog", "cloud-2024", "--parallel", "--out", str(out), "--json"]
    code, text, _ = run_cli_output(argv, capsys)
    assert code == 0
    searched = json.loads(text)
    assert searched["feasible"] and searched["gap"] == 0.0
    code, text, _ = run_cli_output(["evaluate", "--plan", str(out), "--json"], capsys)
    assert code == 0
    evaluated = json.loads(text)
    assert evaluated["cost"] == pytest.approx(searched["cost"], rel=1e-12)
    for key in ("feasible", "reason", "iteration_s", "throughput", "cost", "mfu"):
        assert key in evaluated
    for stage in evaluated["stages"]:
        assert {"time_per_microbatch_s", "memory_per_device_bytes", "units", "site", "tp", "dp"} <= set(stage)
    plan = read_plan_file(out)
    catalog = load_catalog(resolve_topology("cloud-2024", "catalogs", "--catalog"))
    score = score_plan(ParallelProblem(resolve_workload("ctr-dnn"), catalog, plan.job), plan.stages)
    assert score.cost == pytest.approx(evaluated["cost"], rel=1e-12)


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda d: d["stages"][0].update(tp=3), "stages[0].tp"),
        (lambda d: d.update(format="hps-plan/1"), "format"),
        (lambda d: d["stages"][0].update(type="nope"), "stages[0].type"),
        (lambda d: d["job"].update(micro_batch=5), "micro_batch"),
    ],
)
def test_a_bad_plan_file_is_refused_naming_the_field(tmp_path, capsys, edit, field):
    out = tmp_path / "plan.json"
    argv = ["search", "--workload", "transformer", "--catalog", "cloud-2024", "--parallel", "--micro-batch", "8"]
    assert run_cli_output([*argv, "--out", str(out)], capsys)[0] == 0
    document = json.loads(out.read_text())
    edit(document)
    out.write_text(json.dumps(document))
    code, text, err = run_cli_output(["evaluate", "--plan", str(out)], capsys)
    assert code == 2 and str(out) in err and field in err and "Traceback" not in err


def test_a_pipelined_workload_is_planned_in_the_parallel_model_by_default(tmp_path, capsys):
    """A workload whose default job names a finite micro-batch count (as the zoo's LLMs do) gets
    the parallel-plan solver without --parallel, the same answer as with it; --micro-batches
    keeps the schedule model."""
    from hps.config.loaders import workload_to_toml
    from hps.workloads import build_workload

    text = workload_to_toml(build_workload("transformer-small"))
    path = tmp_path / "pipelined.toml"
    path.write_text(text.replace("samples = 1000000.0\n", "samples = 1000000.0\nmicro_batches = 8.0\n", 1))
    base = ["search", "--workload", str(path), "--catalog", "small", "--json"]
    code, plain, _ = run_cli_output(base, capsys)
    assert code == 0
    code, forced, _ = run_cli_output([*base, "--parallel"], capsys)
    assert code == 0
    plain, forced = json.loads(plain), json.loads(forced)
    assert plain["stages"] and all("tp" in stage for stage in plain["stages"])
    assert plain["cost"] == pytest.approx(forced["cost"], rel=1e-12) and plain["gap"] == 0.0
    code, schedule, _ = run_cli_output([*base, "--micro-batches", "8", "--method", "exact"], capsys)
    assert code == 0 and "tp" not in json.loads(schedule)["stages"][0]
