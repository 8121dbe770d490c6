"""The published-runs table (hps.studies.published_table): every run is a valid plan file of
its workload on cloud-2026 with the run's units, and its predicted/published ratio, computed live,
stays within the bounds docs/results.md reports."""

import statistics

import pytest

from hps.studies.published_runs import plan_json, score_run
from hps.studies.published_table import RUNS
from hps.workloads import build_workload

RATIO_BOUNDS = (0.85, 1.15)
"""Each run's predicted / published throughput per device under the kernel clock at its
fitted constants lies within these (docs/results.md, "Published training runs"), fitted and held
out alike."""
MEDIAN_ERROR_BOUND = 0.10
"""The median |ratio − 1| over the runs is at most this."""


@pytest.fixture(scope="module")
def scores():
    return {run.key: score_run(run) for run in RUNS}


def test_there_are_at_least_ten_published_runs_each_with_a_source_and_date():
    assert len(RUNS) >= 10
    assert len({run.key for run in RUNS}) == len(RUNS)
    for run in RUNS:
        assert run.url.startswith("https://") and run.date and run.source


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r.key)
def test_plan_covers_every_row_with_the_runs_pipeline_stages_and_units(run):
    rows = len(build_workload(run.workload, **run.overrides).layers)
    stages = plan_json(run, rows)["stages"]
    assert len(stages) == run.pp and stages[0]["first"] == 0 and stages[-1]["last"] == rows - 1
    assert all(b["first"] == a["last"] + 1 for a, b in zip(stages, stages[1:]))
    assert all(s["last"] % 2 == 0 for s in stages[:-1])  # a stage ends after a block's FFN row


def test_published_ratios_stay_within_their_bounds_fitted_and_held_out(scores):
    low, high = RATIO_BOUNDS
    for key, score in scores.items():
        assert low <= score["ratio"] <= high, (key, score["ratio"])
    assert statistics.median(abs(s["ratio"] - 1) for s in scores.values()) <= MEDIAN_ERROR_BOUND


def test_no_run_is_declared_infeasible_on_memory(scores):
    failing = sorted(key for key, s in scores.items() if not s["feasible"])
    assert failing == []


def test_the_gb200_405b_fits_by_its_fp8_stashes_and_pipeline_split(scores):
    """NeMo's GB200 405B run: 173.4 GiB of 186 with FP8 stashes, FP8 weight copies and one block
    fewer on its first stage; 8 blocks on its first stage take 185.8 GiB (16 micro-batches in flight)."""
    import dataclasses

    from hps.studies.published_table import RUNS as runs

    run = next(r for r in runs if r.key == "nemo-gb200-405b")
    assert abs(scores[run.key]["memory_gib"] - 173.4) < 0.1
    even = score_run(dataclasses.replace(run, layers_per_stage=None))
    assert abs(even["memory_gib"] - 185.8) < 0.1


def test_every_fitted_constant_names_runs_that_exist_and_every_type_has_one():
    from hps.studies.published_runs import FITTED, _catalog

    keys = {run.key for run in RUNS}
    assert set(FITTED) <= keys
    fitted_types = {run.type for run in RUNS if run.key in FITTED and run.compute == "bf16"}
    fitted_fp8 = {run.type for run in RUNS if run.key in FITTED and run.compute == "fp8"}
    resources = [r for name in {run.catalog for run in RUNS} for r in _catalog(name).resources]
    efficiency = {r.name for r in resources if r.matmul_efficiency_max is not None}
    fp8_efficiency = {r.name for r in resources if r.fp8_matmul_efficiency_max is not None}
    assert efficiency == fitted_types
    assert {"h100", "b200"} <= fitted_fp8 and fp8_efficiency == {"h100", "h200", "b200", "gb200"}
    held = [run for run in RUNS if run.key not in FITTED]
    assert len(held) >= 8 and {r.type for r in held} >= {"h100", "a100-80", "gb200", "trn1"}


def test_the_roofline_is_unchanged_under_the_roofline_clock():
    from hps.studies.published_runs import score_run
    from hps.studies.published_table import RUNS as runs

    roofline = score_run(runs[0], "roofline")
    assert abs(roofline["ratio"] - 1.0763) < 1e-3  # the figure docs/results.md reports for mcore-1.7b
