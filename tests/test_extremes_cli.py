"""`hps search` and `hps sweep` at their extremes (issue 55): a fractional batch refused by the
parallel-plan model naming the flag (or the file) it came from, plan files naming absolute paths,
a search that finds no plan leaving no stale plan unannounced, and sweeps with a point cap, an
estimate, a progress bar and no finished point lost to a signal."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import hps
from hps.config.types import ParallelStage
from hps.costmodel.parallel.score import score_plan
from hps.errors import Stopped
from hps.methods.sequence.sweep import Sweep, point_problem
from tests.helpers import run_cli_output

TRANSFORMER = ["--workload", "transformer-small", "--catalog", "small"]
SMALL = ["--workload", "gpt3-175b", "--catalog", "cloud-2026", "--set", "layers=2"]
"""A zoo LLM cut to two blocks: each sweep point planned and proven in well under a second."""


# --- cause 2: whole samples in the parallel-plan model ---------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["search", *TRANSFORMER, "--parallel", "--batch", "1.99", "--throughput", "400000"],
        ["search", *TRANSFORMER, "--parallel", "--batch", "1.99", "--method", "greedy"],
        ["sweep", *TRANSFORMER, "--batch", "1.99", "--floors", "400000"],
    ],
)
def test_a_fractional_batch_is_refused_in_the_parallel_model_naming_batch(argv, capsys):
    code, out, err = run_cli_output(argv, capsys)
    assert code == 2 and out == "" and "--batch: batch:" in err and "whole samples" in err and "1.99" in err


def test_a_fractional_default_batch_names_the_workload_file_not_a_flag_and_the_schedule_model_takes_it(
    tmp_path, capsys
):
    path = tmp_path / "w.toml"
    assert run_cli_output(["workload", "export", "transformer-small", "--out", str(path)], capsys)[0] == 0
    text = path.read_text()
    assert "batch = 64.0\n" in text
    path.write_text(text.replace("batch = 64.0\n", "batch = 1.5\n", 1))
    code, _, err = run_cli_output(["search", "--workload", str(path), "--catalog", "small", "--parallel"], capsys)
    assert code == 2 and f"{path}: defaults.batch:" in err and "--batch" not in err
    schedule = ["search", "--workload", "transformer-small", "--catalog", "small", "--batch", "1.99", "--json"]
    code, out, err = run_cli_output([*schedule, "--method", "greedy"], capsys)
    assert code == 0, err
    assert json.loads(out)["stages"] and "tp" not in json.loads(out)["stages"][0]  # the schedule model's plan


# --- cause 4 (command line): plan files name absolute paths ------------------------------------------


def test_search_out_records_absolute_paths_that_read_the_same_from_another_folder(tmp_path, capsys, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert run_cli_output(["workload", "export", "transformer-small", "--out", "w.toml"], capsys)[0] == 0
    code, out, err = run_cli_output(["search", "--workload", "w.toml", "--catalog", "small", "--parallel",
                                     "--out", "p.json", "--json"], capsys)  # fmt: skip
    assert code == 0, err
    searched = json.loads(out)
    assert searched["written"] == "p.json"
    plan = hps.read_plan(work / "p.json")
    assert (plan.workload, plan.catalog) == (str(work / "w.toml"), "small")
    monkeypatch.chdir(tmp_path)  # elsewhere: a relative "w.toml" would name nothing
    code, out, err = run_cli_output(["evaluate", "--plan", str(work / "p.json"), "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["cost"] == pytest.approx(searched["cost"], rel=1e-12)


# --- cause 5: no plan found, no stale plan unannounced --------------------------------------------------


@pytest.mark.parametrize("method", ["exact", "greedy"])
def test_a_search_that_finds_no_plan_exits_1_and_says_the_file_there_is_older(method, tmp_path, capsys):
    path = tmp_path / "p.json"
    argv = ["search", *TRANSFORMER, "--parallel", "--method", method, "--out", str(path), "--json"]
    code, out, err = run_cli_output(argv, capsys)
    assert code == 0 and json.loads(out)["written"] == str(path), err
    before = path.read_bytes()
    code, out, err = run_cli_output([*argv, "--throughput", "1e12"], capsys)
    document = json.loads(out)
    assert code == 1 and document["written"] is None and document["feasible"] is False
    assert document["status"] == ("infeasible" if method == "exact" else "unknown")
    assert document["max_throughput"] < 1e12  # the reach, a certified upper bound, lies below the floor
    assert f"no plan found; {path} was not written (the file there is an older plan" in err
    assert path.read_bytes() == before  # the user's file is left as it was
    fresh = tmp_path / "q.json"
    text_argv = ["search", *TRANSFORMER, "--parallel", "--method", method, "--out", str(fresh), "--throughput", "1e12"]
    code, out, err = run_cli_output(text_argv, capsys)
    verdict = "status      infeasible: no plan meets the floor" if method == "exact" else "status      unknown"
    assert code == 1 and not fresh.exists() and verdict in out
    assert "the most any plan within the catalogue's caps can reach" in out
    assert f"no plan found; {fresh} was not written" in err and "older" not in err


# --- cause 7: sweeps with a cap, an estimate, a progress bar, and no point lost ----------------------


def test_a_sweep_past_the_point_cap_is_refused_before_any_work(capsys, monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("a sweep past the cap started")

    monkeypatch.setattr(Sweep, "run", never)
    floors = ",".join(str(100 + i) for i in range(1000))
    scales = ",".join(str(1 + i / 1000) for i in range(1000))
    code, out, err = run_cli_output(["sweep", *SMALL, "--floors", floors, "--price-scale", scales], capsys)
    assert code == 2 and out == ""
    assert "--floors: floors: 1,000 floors x 1,000 price scales = 1,000,000 points" in err and "10,000" in err
    from hps.cli.sweep import check_points
    from hps.config.limits import MAX_SWEEP_POINTS

    assert MAX_SWEEP_POINTS == 10_000 and check_points(MAX_SWEEP_POINTS, 1) == MAX_SWEEP_POINTS  # the cap is taken
    with pytest.raises(hps.ConfigError, match="--price-scale: price_scale: 2 floors x 5,001 price scales"):
        check_points(2, 5_001)


def test_a_long_sweep_says_how_long_it_may_take_and_shows_its_progress(capsys):
    argv = ["sweep", *SMALL, "--floors", "20,100", "--point-seconds", "30"]
    code, out, err = run_cli_output(argv, capsys)
    assert code == 0, err
    assert "hps sweep: 2 points (2 floors x 1 price scale), at most about 4 min (30 s a point)" in err
    assert re.search(r"\rsweep: +100%\|.*\| 2/2 \[", err)  # the progress bar, on standard error, each point
    assert "2 points planned" in out
    code, _, err = run_cli_output(["sweep", *SMALL, "--floors", "20,100"], capsys)
    assert code == 0 and "at most about" not in err  # under a minute: no estimate


def test_a_signal_mid_sweep_keeps_every_finished_point_and_exits_128_plus_signum(capsys, monkeypatch):
    plan_point, calls = Sweep.plan_point, []

    def stopped_at_the_third(self, *args, **kwargs):
        calls.append(args)
        if len(calls) == 3:  # the start (floor 20), then floors descending: 300, then 100
            raise Stopped(signal.SIGTERM)
        return plan_point(self, *args, **kwargs)

    monkeypatch.setattr(Sweep, "plan_point", stopped_at_the_third)
    code, out, err = run_cli_output(["sweep", *SMALL, "--floors", "20,100,300", "--json"], capsys)
    assert code == 128 + signal.SIGTERM and "stopped by SIGTERM" in err
    document = json.loads(out)
    assert document["interrupted"] == "SIGTERM" and document["points_total"] == 3
    rows = document["points"]
    assert [(r["floor"], r["price_scale"]) for r in rows] == [(20, 1), (300, 1)]
    base = hps.Problem("gpt3-175b", "cloud-2026", overrides={"layers": 2}, parallel=True).parallel_problem
    for row in rows:  # each a finished answer: its plan scored at its point costs what the row says
        stages = tuple(ParallelStage(**stage) for stage in row["plan"]["stages"])
        score = score_plan(point_problem(base, row["floor"], 1.0), stages, row["plan"]["micro_batch"])
        assert score.feasible and row["feasible"] and row["cost"] == pytest.approx(score.cost, rel=1e-12)


@pytest.mark.slow
def test_sigterm_to_a_running_sweep_prints_the_points_it_finished(tmp_path):
    floors = ",".join(str(20 + 5 * i) for i in range(400))
    argv = [sys.executable, "-m", "hps.cli.main", "sweep", *SMALL, "--floors", floors, "--point-seconds", "1"]
    root = Path(__file__).resolve().parents[1]
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path,
                             env={**os.environ, "PYTHONPATH": str(root)})  # fmt: skip
    seen, deadline = b"", time.monotonic() + 120
    while time.monotonic() < deadline and not any(int(n) > 0 for n in re.findall(rb"(\d+)/400 \[", seen)):
        if select.select([child.stderr], [], [], 1.0)[0]:
            seen += os.read(child.stderr.fileno(), 65536)
    child.send_signal(signal.SIGTERM)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 128 + signal.SIGTERM, (seen + err).decode()[-2000:]
    text = out.decode()
    assert "interrupted by SIGTERM:" in text and "of 400 points finished" in text
    finished = int(text.split("interrupted by SIGTERM: ")[1].split()[0])
    assert 1 <= finished < 400 and f"{finished} points planned" in text
