"""The Python API at its extremes (issue 55): a fractional batch refused by the parallel-plan model,
a plan file scored under its own job, plan files naming the files a problem was built from, numpy
scalars and generators accepted, and wrong types refused with a ConfigError naming the argument."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import hps
from hps.cli.main import main
from hps.config.paths import TOPOLOGIES

SMALL = ("gpt3-175b", "cloud-2026", {"layers": 2})
"""A zoo LLM cut to two blocks: planned in the parallel-plan model in well under a second."""


def cli_json(capsys, argv: list[str]) -> dict:
    assert main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def parallel():
    return hps.Problem(*SMALL[:2], overrides=SMALL[2])


# --- cause 2: the parallel-plan model runs whole samples -------------------------------------------


def test_the_parallel_model_refuses_a_fractional_batch_naming_batch_and_the_schedule_model_takes_it():
    workload = hps.load_workload("transformer-small")
    job = hps.default_job(workload, batch=1.99, throughput=400_000.0)
    with pytest.raises(hps.ConfigError) as caught:
        hps.Problem(workload, "small", job, parallel=True)
    assert (caught.value.source, caught.value.field) == ("job", "batch") and "1.99" in str(caught.value)
    schedule = hps.Problem(workload, "small", job, parallel=False)  # fractional replicas: HeterPS
    assert schedule.job.batch == 1.99 and not schedule.parallel
    whole = hps.Problem(workload, "small", hps.default_job(workload, batch=2.0), parallel=True)
    with pytest.raises(hps.ConfigError) as caught:
        whole.with_job(batch=1.99)
    assert (caught.value.source, caught.value.field) == ("with_job", "batch")


# --- cause 3: a plan file is scored under its own job ------------------------------------------------


def test_a_plan_file_is_scored_under_its_own_job_as_hps_evaluate_plan_scores_it(tmp_path, capsys):
    from hps.contract.types import Plan

    path = tmp_path / "plan.json"
    argv = ["search", "--workload", "transformer-small", "--catalog", "small", "--parallel", "--batch", "256"]
    assert main([*argv, "--throughput", "2000", "--out", str(path), "--json"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    plan = hps.read_plan(path)
    problem = hps.Problem(plan.workload, plan.catalog, parallel=True)  # the workload's own job: batch 64
    assert problem.job.batch == 64 and plan.job.batch == 256
    cli = cli_json(capsys, ["evaluate", "--plan", str(path), "--json"])
    score = hps.evaluate(problem, plan)
    assert score.cost == pytest.approx(cli["cost"], rel=1e-12) and score.throughput == pytest.approx(cli["throughput"])
    micro_batch = int(plan.job.micro_batch)
    under_file_job = hps.Problem(plan.workload, plan.catalog, plan.job, parallel=True)
    assert problem.report(score) == under_file_job.report(under_file_job.score(Plan(plan.stages, micro_batch)))
    under_problem_job = problem.score(Plan(plan.stages, micro_batch))
    assert under_problem_job.cost != pytest.approx(score.cost, rel=1e-3)  # the job matters: the test can fail
    with pytest.raises(hps.ConfigError) as caught:  # another workload's problem: refused, not scored
        hps.evaluate(hps.Problem("mlp", "small", parallel=True), plan)
    assert (caught.value.source, caught.value.field) == ("plan", "workload")


# --- cause 4: a plan file names the files a problem was built from --------------------------------


@pytest.fixture(scope="module")
def changed_files(tmp_path_factory):
    """(workload TOML, catalogue TOML): transformer-small cut to one block, and the `small`
    catalogue at twice its prices, each under the name of the zoo entry or shipped catalogue."""
    folder = tmp_path_factory.mktemp("files")
    workload = folder / "w.toml"
    assert main(["workload", "export", "transformer-small", "--set", "layers=1", "--out", str(workload)]) == 0
    catalog = folder / "c.toml"
    text = (TOPOLOGIES / "catalogs" / "small.toml").read_text()
    doubled = [
        f"price_per_hour = {2 * float(line.split('=')[1])}" if line.startswith("price_per_hour") else line
        for line in text.splitlines()
    ]
    catalog.write_text("\n".join(doubled) + "\n")
    assert hps.load_catalog(catalog).name == "small" and hps.load_catalog(catalog) != hps.load_catalog("small")
    return workload, catalog


def test_a_problem_of_pathlib_paths_writes_a_plan_file_naming_those_files(changed_files, tmp_path, capsys):
    workload, catalog = changed_files
    problem = hps.Problem(Path(workload), Path(catalog), parallel=True)
    result = hps.plan(problem)
    plan = problem.plan_file(result)
    assert (plan.workload, plan.catalog) == (str(workload.resolve()), str(catalog.resolve()))
    path = tmp_path / "plan.json"
    hps.write_plan(plan, path)
    evaluated = cli_json(capsys, ["evaluate", "--plan", str(path), "--json"])
    assert evaluated["cost"] == pytest.approx(result.cost, rel=1e-12)
    zoo = hps.plan(hps.Problem("transformer-small", "small", parallel=True))
    assert zoo.cost != pytest.approx(result.cost, rel=1e-3)  # the zoo entry and list prices cost otherwise


def test_relative_paths_are_recorded_absolute_and_objects_only_where_a_name_holds_them(
    changed_files, tmp_path, monkeypatch
):
    workload, catalog = changed_files
    monkeypatch.chdir(workload.parent)
    problem = hps.Problem("w.toml", "c.toml", parallel=True)
    plan = problem.plan_file(hps.plan(problem))
    assert (plan.workload, plan.catalog) == (str(workload.resolve()), str(catalog.resolve()))
    path = tmp_path / "relative.json"
    hps.write_plan(plan, path)
    monkeypatch.chdir(tmp_path)  # read from another folder: the same files
    assert hps.read_plan(path).workload == str(workload.resolve())
    loaded = hps.Problem(hps.load_workload(workload), hps.load_catalog(catalog), parallel=True)
    with pytest.raises(hps.ConfigError) as caught:
        loaded.plan_file(hps.plan(loaded))
    assert caught.value.field == "workload"
    zoo = hps.Problem(hps.load_workload("transformer-small"), hps.load_catalog("small"), parallel=True)
    named = zoo.plan_file(hps.plan(zoo))
    assert (named.workload, named.catalog) == ("transformer-small", "small")


# --- minor kinds: numpy scalars, generators, wrong types ------------------------------------------


def test_numpy_integers_and_floats_are_taken_where_python_numbers_are(parallel):
    plain = hps.plan(parallel, "greedy", seconds=30, evaluations=8, seed=3)
    numpy = hps.plan(parallel, "greedy", seconds=np.float32(30), evaluations=np.int64(8), seed=np.uint32(3))
    assert numpy.cost == plain.cost and numpy.plan == plain.plan
    job = hps.Job(batch=np.int64(1024), throughput=np.float32(1000), samples=np.int64(10**8), chunks=np.int32(16))
    problem = hps.Problem("ctr-dnn", "small", job)
    assert type(problem.job.batch) is float and type(problem.job.chunks) is int
    reference = hps.Problem("ctr-dnn", "small", hps.Job(batch=1024, throughput=1000.0, samples=1e8, chunks=16))
    schedule = ["cpu"] * len(problem.workload.layers)
    got = problem.report(hps.evaluate(problem, schedule))
    assert json.dumps(got) == json.dumps(reference.report(hps.evaluate(reference, schedule)))
    default = hps.default_job(hps.load_workload("llama3-70b"), throughput=np.float64(500), zero=np.int64(2))
    assert default.zero == 2 and type(default.zero) is int and default.throughput == 500.0


def test_generators_are_read_once_as_the_sequence_they_yield(parallel):
    result = hps.plan(parallel)
    assert hps.evaluate(parallel, (stage for stage in result.plan.stages)).cost == pytest.approx(result.cost)
    ctr = hps.Problem("ctr-dnn", "small")
    schedule = ["cpu", *["gpu-b"] * (len(ctr.workload.layers) - 1)]
    assert hps.evaluate(ctr, (name for name in schedule)) == hps.evaluate(ctr, schedule)


BAD_CALLS = {
    "batch past a float": (lambda: hps.Problem("mlp", "small", hps.Job(10**400, 1.0, 1.0)), "job", "batch"),
    "chunks a string": (lambda: hps.Problem("mlp", "small", hps.Job(64, 1.0, 1.0, chunks="64")), "job", "chunks"),
    "chunks a fraction": (lambda: hps.Problem("mlp", "small", hps.Job(64, 1.0, 1.0, chunks=64.5)), "job", "chunks"),
    "micro-batch past a float": (
        lambda: hps.Problem("mlp", "small", hps.Job(64, 1.0, 1.0, micro_batch=10**400)),
        "job",
        "micro_batch",
    ),
    "micro-batches past a float": (
        lambda: hps.Problem("mlp", "small", hps.Job(64, 1.0, 1.0, micro_batches=10**400)),
        "job",
        "micro_batches",
    ),
    "default job micro-batch past a float": (
        lambda: hps.default_job(hps.load_workload("mlp"), micro_batch=10**400),
        "job",
        "micro_batch",
    ),
    "default job of a name": (lambda: hps.default_job("mlp"), "workload", ""),
    "overrides a list": (lambda: hps.Problem("mlp", "small", overrides=[("layers", 2)]), "overrides", ""),
    "overrides with a number key": (lambda: hps.Problem("mlp", "small", overrides={1: 2}), "overrides", ""),
    "parallel a string": (lambda: hps.Problem("mlp", "small", parallel="no"), "parallel", ""),
    "seconds past a float": (lambda: hps.plan(hps.Problem("mlp", "small"), seconds=10**400), "seconds", ""),
    "seconds nan": (lambda: hps.plan(hps.Problem("mlp", "small"), seconds=math.nan), "seconds", ""),
    "read a None path": (lambda: hps.read_plan(None), "path", ""),
    "read a number path": (lambda: hps.read_plan(3), "path", ""),
    "load a None policy": (lambda: hps.load_policy(None), "path", ""),
}


@pytest.mark.parametrize("case", list(BAD_CALLS))
def test_wrong_types_raise_a_config_error_naming_the_argument(case):
    call, source, field = BAD_CALLS[case]
    with pytest.raises(hps.ConfigError) as caught:
        call()
    assert (caught.value.source, caught.value.field) == (source, field), str(caught.value)
    assert len(str(caught.value)) < 300  # a 400-digit number is not echoed whole


def test_write_plan_and_train_refuse_a_none_path():
    from hps.placement.agent.train import TrainConfig

    with pytest.raises(hps.ConfigError) as caught:
        hps.train(TrainConfig(), None)
    assert caught.value.source == "out"
    problem = hps.Problem("transformer-small", "small", parallel=True)
    written = problem.plan_file(hps.plan(problem))
    with pytest.raises(hps.ConfigError) as caught:
        hps.write_plan(written, None)
    assert caught.value.source == "path"
