"""`hps evaluate --stages` and `hps search --method exact`: the command contracts, the
certificate, and clear errors for bad plans and job fields."""

from __future__ import annotations

import pytest

from hps.cli.main import main
from hps.config.loaders import load_workload, workload_to_toml
from hps.reference.placement import evaluate_plan as reference_plan
from hps.workloads import build_workload
from tests.helpers import SMALL, run_json

EVALUATE_KEYS = {"feasible", "reason", "throughput", "dollars_per_hour", "cost", "stages"}
STAGE_KEYS = {"type", "first_layer", "last_layer", "replicas", "time", "mode"}


def run_error(capsys, argv) -> str:
    """stderr of a command that must fail with status 2 (a typed error or a bad flag)."""
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    assert code == 2
    return capsys.readouterr().err


def test_evaluate_stages_scores_a_plan_whose_stages_share_a_type(capsys):
    argv = ["evaluate", *SMALL, "--stages", "0-1:cpu,2-4:gpu-a,5-6:gpu-a", "--micro-batches", "4", "--json"]
    report = run_json(capsys, argv)
    assert EVALUATE_KEYS <= set(report) and all(STAGE_KEYS <= set(s) for s in report["stages"])
    assert [(s["type"], s["first_layer"], s["last_layer"]) for s in report["stages"]] == [
        ("cpu", 0, 1),
        ("gpu-a", 2, 4),
        ("gpu-a", 5, 6),
    ]
    from hps.config.loaders import load_catalog
    from hps.config.paths import resolve_topology
    from hps.config.types import Job

    catalog = load_catalog(resolve_topology("small", "catalogs", "--catalog"))
    workload = build_workload("ctr-dnn")
    job = Job(1024.0, 1000.0, 1e8, micro_batches=4)
    plan = ((0, 1, catalog.index("cpu")), (2, 4, catalog.index("gpu-a")), (5, 6, catalog.index("gpu-a")))
    want = reference_plan(workload, catalog, job, plan)
    assert report["feasible"] == want["feasible"]
    assert report["throughput"] == pytest.approx(want["throughput"], rel=1e-12)
    assert [s["replicas"] for s in report["stages"]] == [s["replicas"] for s in want["stages"]]


def test_search_exact_returns_a_certified_optimum(capsys):
    report = run_json(capsys, ["search", *SMALL, "--method", "exact", "--json"])
    assert EVALUATE_KEYS | {"schedule", "bound", "gap", "search_seconds"} <= set(report)
    assert report["feasible"] and report["gap"] == 0.0 and report["bound"] == pytest.approx(report["cost"])
    every = run_json(capsys, ["search", *SMALL, "--json"])
    rows = {row["method"]: row for row in every["results"]}
    assert rows["exact"]["cost"] == pytest.approx(report["cost"])
    assert rows["exhaustive"]["cost_over_optimum"] == pytest.approx(1.0, rel=1e-5)
    assert all(row["cost_over_optimum"] >= 1 - 1e-5 for row in rows.values() if row["cost"] is not None)


def test_search_exact_with_general_job_skips_the_schedule_baselines(capsys):
    argv = ["search", *SMALL, "--micro-batches", "8", "--state-sharding", "auto", "--json"]
    report = run_json(capsys, argv)
    assert [row["method"] for row in report["results"]] == ["exact"]
    assert set(report["skipped"]) == {"single", "greedy", "random", "genetic", "gradient", "exhaustive"}
    err = run_error(capsys, ["search", *SMALL, "--micro-batches", "8", "--method", "genetic"])
    assert "--method" in err and "use --method exact" in err


@pytest.mark.parametrize(
    ("stages", "problem"),
    [
        ("0-1:cpu,3-6:gpu-a", "leaves layers 2-2 out"),
        ("0-2:cpu,2-6:gpu-a", "overlaps the stage before"),
        ("0-1:cpu,2-5:gpu-a", "the stages end at layer 5"),
        ("0-1:cpu,2-6:tpu", "unknown type 'tpu'"),
        ("2-6:gpu-a,0-1:cpu", "leaves layers 0-1 out"),
    ],
)
def test_evaluate_names_what_is_wrong_with_a_plan(capsys, stages, problem):
    err = run_error(capsys, ["evaluate", *SMALL, "--stages", stages])
    assert "--stages" in err and problem in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("flags", "problem"),
    [(["--micro-batches", "0"], "positive integer or inf"), (["--state-sharding", "x"], "invalid")],
)
def test_bad_job_flags_are_refused(capsys, flags, problem):
    err = run_error(capsys, ["evaluate", *SMALL, "--schedule", ",".join(["cpu"] * 7), *flags])
    assert problem in err


@pytest.mark.parametrize(
    ("line", "field", "problem"),
    [
        ("micro_batches = 0", "defaults.micro_batches", "must be a positive integer or inf"),
        ("micro_batches = 2.5", "defaults.micro_batches", "must be a positive integer or inf"),
        ('state_sharding = "zero3"', "defaults.state_sharding", "must be one of none, auto"),
    ],
)
def test_workload_files_check_the_job_fields(tmp_path, capsys, line, field, problem):
    text = workload_to_toml(build_workload("ctr-dnn")).replace("samples = ", f"{line}\nsamples = ", 1)
    path = tmp_path / "w.toml"
    path.write_text(text)
    err = run_error(capsys, ["evaluate", "--catalog", "small", "--workload", str(path), "--schedule", "cpu"])
    assert f"{path}: {field}: {problem}" in err


def test_workload_file_job_fields_round_trip(tmp_path):
    text = workload_to_toml(build_workload("gpt3-175b"))
    assert "micro_batches = 128" in text and 'state_sharding = "auto"' in text
    path = tmp_path / "gpt3.toml"
    path.write_text(text)
    assert load_workload(path) == build_workload("gpt3-175b")


def test_a_schedule_report_matches_the_reference(capsys):
    """evaluate --schedule goes through the numpy model: the reference evaluator's figures."""
    from hps.config.loaders import load_catalog
    from hps.config.paths import resolve_topology
    from hps.config.types import Job
    from hps.reference.placement import evaluate as reference_schedule

    names = ["cpu", "cpu", "gpu-a", "gpu-a", "gpu-a", "gpu-b", "gpu-b"]
    report = run_json(capsys, ["evaluate", *SMALL, "--schedule", ",".join(names), "--json"])
    catalog = load_catalog(resolve_topology("small", "catalogs", "--catalog"))
    want = reference_schedule(
        build_workload("ctr-dnn"), catalog, Job(1024.0, 1000.0, 1e8), [catalog.index(n) for n in names]
    )
    assert report["schedule"] == names and report["feasible"] == want["feasible"]
    assert report["throughput"] == pytest.approx(want["throughput"], rel=1e-12)
    assert [(s["replicas"], s["mode"]) for s in report["stages"]] == [
        (s["replicas"], s["mode"]) for s in want["stages"]
    ]
