"""The job's schedule choices at the command line: FP8 only where a type has an FP8 peak, the
flags that switch models or raise the floor saying so, open choices refused where one schedule is
needed (cases the hostile sweep of plan files v3 found)."""

from __future__ import annotations

import json

from hps.config.planfile import write_plan_file
from hps.config.types import Job, ParallelStage, PlanFile
from tests.helpers import run_cli_output

SMALL = ["--workload", "transformer-small", "--catalog", "small", "--seconds", "2"]


def fp8_plan(tmp_path, workload: str, catalog: str, stage: ParallelStage, batch: int = 8):
    path = tmp_path / "fp8.json"
    job = Job(batch=float(batch), throughput=1e-6, samples=1e3, micro_batch=float(batch), fp8=True)
    write_plan_file(PlanFile(workload, catalog, job, (stage,)), path)
    return path


def test_an_fp8_plan_on_a_type_without_an_fp8_peak_is_refused_by_evaluate_execute_and_export(tmp_path, capsys):
    path = fp8_plan(tmp_path, "mlp", "small", ParallelStage(0, 3, "cpu", 1, 1))
    for argv in (["evaluate", "--plan", str(path)], ["execute", str(path), "--steps", "1"]):
        code, printed, error = run_cli_output(argv, capsys)
        assert code == 2 and "Traceback" not in error, argv
        assert "stages[0].type: 'cpu' has no FP8 peak" in error, argv
    llama = fp8_plan(tmp_path, "llama3-8b", "cloud-2026", ParallelStage(0, 65, "a100-80", 8, 8), batch=64)
    for target in ("megatron", "torchtitan"):
        code, printed, error = run_cli_output(["export", str(llama), "--to", target], capsys)
        assert code == 2 and printed == "" and "'a100-80' has no FP8 peak" in error, target


def test_fp8_on_a_catalogue_without_an_fp8_peak_says_so(capsys):
    code, _, error = run_cli_output(["search", *SMALL, "--parallel", "--fp8", "on"], capsys)
    assert code == 2 and "--fp8: fp8: no type of 'small' has an FP8 peak" in error


def test_robust_says_it_plans_in_the_parallel_model_and_blames_itself_for_a_floor_past_range(capsys):
    code, text, error = run_cli_output(["search", "--workload", "ctr-dnn-small", "--catalog", "small",
                                        "--seconds", "2", "--robust", "--json"], capsys)  # fmt: skip
    assert code == 0 and "--robust plans in the parallel-plan model" in error
    assert json.loads(text)["status"] == "optimal"
    code, _, error = run_cli_output(["search", *SMALL, "--parallel", "--throughput", "1e15", "--robust"], capsys)
    assert code == 2 and error.startswith("hps search: error: --robust: throughput: raises the floor 1e+15")
    assert "with_job" not in error


def test_the_warm_start_refuses_an_open_schedule_naming_the_flags(capsys):
    code, _, error = run_cli_output(["search", *SMALL, "--parallel", "--warm-start", "--fp8", "auto",
                                     "--virtual-stages", "auto"], capsys)  # fmt: skip
    assert code == 2 and "--warm-start" in error and "give --virtual-stages, --fp8 a value, not auto" in error
