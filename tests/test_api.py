"""The Python API against the command line: the same numbers from `hps.plan`, `hps.evaluate`,
`hps.allreduce` and `hps.execute` as from `hps search/evaluate/collective/execute --json` on two
workloads each; typed errors naming the argument; `import hps` as cheap as numpy."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time

import pytest

import hps
from hps.cli.main import main

PARALLEL = ("gpt3-175b", "cloud-2026", {"layers": 2})
"""A zoo LLM cut to two blocks: planned in the parallel-plan model in well under a second."""
SCHEDULE = ("ctr-dnn-small", "cloud-2024", {})
TIMING = {"search_seconds", "wall_seconds", "seconds", "plan_seconds", "compile_seconds"}


def cli_json(capsys, argv: list[str]) -> dict:
    assert main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def without(document, keys=TIMING):
    """The document with its wall-clock figures left out (they differ between two runs)."""
    if isinstance(document, dict):
        return {k: without(v, keys) for k, v in document.items() if k not in keys}
    if isinstance(document, list):
        return [without(v, keys) for v in document]
    return document


def set_flags(overrides: dict) -> list[str]:
    return [arg for name, value in overrides.items() for arg in ("--set", f"{name}={value}")]


@pytest.fixture(scope="module")
def planned():
    """{kind: (problem, exact PlanResult)} for the parallel-plan and the schedule model."""
    out = {}
    for kind, (workload, catalog, overrides) in (("parallel", PARALLEL), ("schedule", SCHEDULE)):
        problem = hps.Problem(workload, catalog, overrides=overrides)
        out[kind] = problem, hps.plan(problem, "exact", seconds=60)
    return out


@pytest.mark.parametrize("kind", ["parallel", "schedule"])
def test_plan_equals_hps_search(kind, planned, capsys):
    workload, catalog, overrides = PARALLEL if kind == "parallel" else SCHEDULE
    problem, result = planned[kind]
    assert problem.parallel == (kind == "parallel")
    argv = ["search", "--workload", workload, "--catalog", catalog, "--method", "exact", "--json"]
    argv += set_flags(overrides)
    document = cli_json(capsys, argv)
    for key in ("results", "skipped"):
        document.pop(key, None)
    assert without(problem.report(result)) == without(document)
    assert result.feasible and result.gap == 0.0 and result.cost == pytest.approx(document["cost"], rel=1e-12)
    assert result.score.throughput == pytest.approx(document["throughput"], rel=1e-12)
    assert result.status == "optimal"


def test_a_parallel_plan_file_evaluates_as_hps_evaluate_does(planned, tmp_path, capsys):
    table = tmp_path / "gpt3-2-blocks.toml"
    assert main(["workload", "export", PARALLEL[0], *set_flags(PARALLEL[2]), "--out", str(table)]) == 0
    problem = hps.Problem(str(table), PARALLEL[1])
    result = hps.plan(problem)
    assert result.cost == pytest.approx(planned["parallel"][1].cost, rel=1e-12)
    with pytest.raises(hps.ConfigError, match="plan file names a zoo workload or a file"):
        planned["parallel"][0].plan_file(planned["parallel"][1])  # overrides a plan file could not name
    path = tmp_path / "plan.json"
    hps.write_plan(problem.plan_file(result), path)
    plan = hps.read_plan(path)
    assert plan.stages == result.plan.stages and plan.job.micro_batch == result.plan.micro_batch
    evaluation = hps.evaluate(problem, plan)
    assert problem.report(evaluation) == cli_json(capsys, ["evaluate", "--plan", str(path), "--json"])
    assert evaluation.cost == pytest.approx(result.cost, rel=1e-12)
    assert evaluation.mfu == problem.report(result)["mfu"]
    assert problem.report(hps.evaluate(problem, result)) == problem.report(evaluation)


def test_a_schedule_evaluates_as_hps_evaluate_does(planned, capsys):
    problem, result = planned["schedule"]
    schedule = ["cpu", *["t4"] * (len(problem.workload.layers) - 1)]
    argv = ["evaluate", "--workload", SCHEDULE[0], "--catalog", SCHEDULE[1], "--schedule", ",".join(schedule), "--json"]
    assert problem.report(hps.evaluate(problem, schedule)) == cli_json(capsys, argv)
    assert hps.evaluate(problem, result).cost == pytest.approx(result.cost, rel=1e-12)


def test_every_parallel_planner_is_registered_and_plans():
    problem = hps.Problem(*PARALLEL[:2], overrides=PARALLEL[2])
    assert hps.planners() == (
        "exact",
        "single",
        "greedy",
        "random",
        "genetic",
        "refine",
        "sequence",
        "exhaustive",
        "uniform",
    )
    optimum = hps.plan(problem).cost
    for name in ("single", "greedy", "refine", "uniform"):
        found = hps.plan(problem, name, seconds=30, evaluations=16)
        assert found.planner == name and found.cost >= optimum * (1 - 1e-12)


@pytest.mark.parametrize("network", ["3d-torus-4x4x4", "2d-dgx-a100-8x16"])
def test_allreduce_equals_hps_collective(network, capsys):
    argv = ["collective", "--network", network, "--size", "64MiB", "--chunks", "16", "--json"]
    result = hps.allreduce(network, 64 * 2**20, chunks=16, policy="themis", intra="scf")
    assert result.to_dict() == cli_json(capsys, argv)
    assert 0 < result.utilization <= 1 and result.time >= result.ideal_time


def test_the_batched_allreduce_equals_one_at_a_time():
    networks = ["3d-torus-4x4x4", "2d-dgx-a100-8x16", "3d-switch-8x8x8"]
    batch = hps.allreduce_batch(networks, 2**26, chunks=16, policy="baseline", intra="fifo")
    for name, got in zip(networks, batch):
        want = hps.allreduce(name, 2**26, chunks=16, policy="baseline", intra="fifo")
        assert got.time == pytest.approx(want.time, rel=1e-6) and got.orders == want.orders
        assert got.busy == pytest.approx(want.busy, rel=1e-6)


@pytest.mark.parametrize("workload", [SCHEDULE[0], "mlp"])
def test_execute_runs_the_plan_as_hps_execute_does(workload, planned, capsys):
    problem, result = planned["schedule"]
    if workload != SCHEDULE[0]:
        problem = hps.Problem(workload, SCHEDULE[1])
        result = hps.plan(problem)
    run = hps.execute(result, problem, steps=2, check=True)
    schedule = problem.report(result)["schedule"]
    argv = ["execute", "--workload", workload, "--catalog", SCHEDULE[1], "--schedule", ",".join(schedule)]
    document = cli_json(capsys, [*argv, "--steps", "2", "--check", "--json"])
    assert run.losses == tuple(document["losses"]) and run.equivalent is True is document["equivalent"]
    assert run.predicted_throughput == pytest.approx(document["predicted_throughput"], rel=1e-12)
    assert run.report["schedule"] == document["schedule"] and run.measured_throughput > 0


def test_load_workload_equals_the_zoo_entry_and_its_export(tmp_path, capsys):
    workload = hps.load_workload("transformer-small", layers=1)
    assert len(workload.layers) == len(hps.load_workload("transformer-small").layers) - 2  # one block (2 rows) fewer
    path = tmp_path / "w.toml"
    assert main(["workload", "export", "transformer-small", "--set", "layers=1", "--out", str(path)]) == 0
    assert hps.load_workload(str(path)).layers == workload.layers
    job = hps.default_job(hps.load_workload("llama3-70b"), throughput=500.0)
    assert job.throughput == 500.0 and job.precision == "bf16-adam" and job.micro_batches == 16


BAD_CALLS = {
    "unknown workload": (lambda: hps.Problem("no-such-model", "cloud-2024"), "workload"),
    "unknown catalogue": (lambda: hps.Problem("mlp", "no-such-catalogue"), "catalog"),
    "job not a Job": (lambda: hps.Problem("mlp", "cloud-2024", job={"batch": 1}), "job"),
    "bad override": (lambda: hps.load_workload("mlp", no_such_knob=3), "overrides"),
    "unknown job field": (lambda: hps.default_job(hps.load_workload("mlp"), speed=3), "job"),
    "unknown planner": (lambda: hps.plan(hps.Problem("mlp", "cloud-2024"), "magic"), "method"),
    "zero seconds": (lambda: hps.plan(hps.Problem("mlp", "cloud-2024"), seconds=0), "seconds"),
    "zero evaluations": (lambda: hps.plan(hps.Problem("mlp", "cloud-2024"), evaluations=0), "evaluations"),
    "seed past uint32": (lambda: hps.plan(hps.Problem("mlp", "cloud-2024"), seed=2**40), "seed"),
    "problem not a Problem": (lambda: hps.plan("mlp"), "problem"),
    "schedule too short": (lambda: hps.evaluate(hps.Problem("mlp", "cloud-2024"), ["cpu"]), "plan"),
    "zero bytes": (lambda: hps.allreduce("3d-torus-4x4x4", 0), "size_bytes"),
    "nan bytes": (lambda: hps.allreduce("3d-torus-4x4x4", math.nan), "size_bytes"),
    "zero chunks": (lambda: hps.allreduce("3d-torus-4x4x4", 1e6, chunks=0), "chunks"),
    "unknown policy": (lambda: hps.allreduce("3d-torus-4x4x4", 1e6, policy="fastest"), "policy"),
    "learned without checkpoint": (lambda: hps.allreduce("3d-torus-4x4x4", 1e6, policy="learned"), "checkpoint"),
    "no networks": (lambda: hps.allreduce_batch([], 1e6), "networks"),
    "unknown network": (lambda: hps.allreduce("no-such-net", 1e6), "network"),
    "execute a dict": (lambda: hps.execute({"stages": []}, hps.Problem("mlp", "cloud-2024")), "plan"),
    "train a dict": (lambda: hps.train({"envs": 1}, "/nonexistent"), "config"),
    "missing policy": (lambda: hps.load_policy("/nonexistent/run"), None),
}


@pytest.mark.parametrize("case", list(BAD_CALLS))
def test_bad_arguments_raise_typed_errors_naming_the_argument(case):
    call, argument = BAD_CALLS[case]
    with pytest.raises(hps.HpsError) as caught:
        call()
    if argument is not None:
        assert isinstance(caught.value, hps.ConfigError) and caught.value.source == argument, str(caught.value)


def test_every_public_name_is_documented():
    for name in hps.__all__:
        if name != "__version__":
            assert (getattr(hps, name).__doc__ or "").strip(), name


def _best_seconds(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], capture_output=True, check=True, timeout=60)
    return time.perf_counter() - start


def test_import_hps_loads_no_jax_and_is_as_cheap_as_numpy():
    heavy = "('jax', 'flax', 'orbax', 'numpy')"
    probe = f"import sys, hps; hps.__all__; print(sorted(m for m in {heavy} if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"
    hps_s = numpy_s = math.inf
    for _ in range(5):  # best of 5, interleaved, so load on the machine hits both sides alike
        hps_s = min(hps_s, _best_seconds("import hps"))
        numpy_s = min(numpy_s, _best_seconds("import numpy"))
    assert hps_s <= 2 * numpy_s, f"import hps {hps_s:.3f} s vs import numpy {numpy_s:.3f} s"
