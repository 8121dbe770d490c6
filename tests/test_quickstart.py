"""`hps quickstart` end to end on a tiny budget: every step runs and the summary holds real figures."""

from __future__ import annotations

import json
from pathlib import Path

from hps.cli.main import main


def test_quickstart_trains_compares_plans_and_executes(tmp_path, capsys):
    out = tmp_path / "qs"
    assert main(["quickstart", "--out", str(out), "--chunks", "1", "--envs", "256", "--workloads", "ctr-dnn"]) == 0
    text = capsys.readouterr().out
    assert "cost / best plan found" in text and "unseen workload ctr-dnn-small" in text
    summary = json.loads((out / "summary.json").read_text())
    (comparison,) = summary["comparisons"]
    methods = comparison["methods"]
    assert {"single", "greedy", "random", "genetic", "exhaustive", "policy"} <= methods.keys()
    # exhaustive search is the optimum: no method may beat it, and it is what the ratios divide by
    assert methods["exhaustive"]["ratio"] == 1.0
    assert all(r["ratio"] is None or r["ratio"] >= 1.0 for r in methods.values())
    unseen = summary["unseen"]
    assert unseen["plan"]["feasible"] and len(unseen["plan"]["schedule"]) == 6
    assert unseen["execution"]["equivalent"] is True
    for key in ("comparison", "learning_curve", "summary", "checkpoint"):
        assert Path(summary["files"][key]).exists()


def test_quickstart_rejects_a_bad_workload_before_training(tmp_path, capsys):
    assert main(["quickstart", "--out", str(tmp_path / "qs"), "--workloads", "nope"]) == 2
    assert "nope" in capsys.readouterr().err
    assert not (tmp_path / "qs").exists()
