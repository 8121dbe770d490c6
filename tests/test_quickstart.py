"""`hps quickstart` end to end on a tiny budget: every step runs and the summary holds real figures;
`hps run` of the same config (the quickstart kind) reuses its policy and reports the same table."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import types
from pathlib import Path

import pytest

from hps.cli.main import main

TINY = ["--chunks", "1", "--envs", "256", "--workloads", "ctr-dnn"]


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory):
    """(folder, printed text) of one tiny `hps quickstart` run."""
    out = tmp_path_factory.mktemp("quickstart") / "qs"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["quickstart", "--out", str(out), *TINY]) == 0
    return out, printed.getvalue()


@pytest.mark.slow
def test_quickstart_trains_compares_plans_and_executes(quickstart):
    out, text = quickstart
    assert "cost / best plan found" in text and "unseen workload ctr-dnn-small" in text
    assert "planning time, ms (compile excluded): ctr-dnn: exact " in text
    summary = json.loads((out / "summary.json").read_text())
    (comparison,) = summary["comparisons"]
    methods = comparison["methods"]
    assert {"exact", "single", "greedy", "random", "genetic", "exhaustive", "policy"} <= methods.keys()
    # the exact solver's proven optimum is what the ratios divide by; exhaustive search, the
    # independent check, finds the same cost, and no method beats it
    assert comparison["optimum_known"] and methods["exact"]["gap"] == 0.0 and methods["exact"]["ratio"] == 1.0
    assert methods["exhaustive"]["ratio"] == pytest.approx(1.0, rel=1e-12)
    assert all(r["ratio"] is None or r["ratio"] >= 1.0 - 1e-12 for r in methods.values())
    unseen = summary["unseen"]
    assert unseen["plan"]["feasible"] and len(unseen["plan"]["schedule"]) == 6
    assert unseen["execution"]["equivalent"] is True
    for key in ("comparison", "learning_curve", "summary", "checkpoint"):
        assert Path(summary["files"][key]).exists()
    assert (out / "policy" / "metrics.jsonl").is_file()


@pytest.mark.slow
def test_hps_run_of_the_quickstart_kind_reuses_the_policy_and_gives_the_same_table(quickstart, tmp_path, capsys):
    out, text = quickstart
    experiment = tmp_path / "quickstart.py"
    experiment.write_text(
        "from hps.studies.quickstart import QuickstartConfig\n"
        "def config():\n"
        f"    return QuickstartConfig(name='qs', out={str(out)!r}, train_chunks=1, num_envs=256,\n"
        "                            workloads=('ctr-dnn',))\n"
    )
    assert main(["run", str(experiment), "--out", str(tmp_path / "results")]) == 0
    printed = capsys.readouterr().out
    table = [line for line in text.splitlines() if line.startswith(("workload ", "---", "ctr-dnn "))]
    assert len(table) == 3 and all(line in printed for line in table)  # the same table, columns in order
    summary = json.loads((out / "summary.json").read_text())
    run = tmp_path / "results" / "qs"
    results = json.loads((run / "results.json").read_text())["results"]
    assert results["training"] == summary["training"]  # the finished policy was reused, not retrained
    (compared,) = results["comparisons"]
    assert {m: r["cost"] for m, r in compared["methods"].items()} == {
        m: r["cost"] for m, r in summary["comparisons"][0]["methods"].items()
    }
    assert results["unseen"]["plan"] == summary["unseen"]["plan"]
    assert results["unseen"]["execution"]["equivalent"] is True
    assert (run / "comparison.png").read_bytes()[:4] == b"\x89PNG"
    assert "unseen workload ctr-dnn-small" in (run / "report.md").read_text()
    assert sorted(p.stem for p in (run / "items").glob("*.json")) == ["compare-ctr-dnn", "plan-and-execute", "train"]


def test_quickstart_rejects_a_bad_workload_before_training(tmp_path, capsys):
    assert main(["quickstart", "--out", str(tmp_path / "qs"), "--workloads", "nope"]) == 2
    assert "nope" in capsys.readouterr().err
    assert not (tmp_path / "qs").exists()


@pytest.mark.slow
def test_quickstart_tells_of_a_stale_lock_it_takes_over(quickstart, tmp_path):
    """The training step's notices reach the caller: a dead run's lock on the policy folder is
    taken over with one line naming its PID (the policy is complete, so nothing trains)."""
    from hps.studies.quickstart import QuickstartConfig, train_policy

    out = tmp_path / "qs"
    shutil.copytree(quickstart[0] / "policy", out / "policy")
    holder = {"pid": 2**22 + 4321, "host": "gone", "started": "2025-01-01T00:00:00+00:00", "command": "hps x"}
    (out / "policy" / ".lock").write_text(json.dumps(holder))
    notices = []
    config = QuickstartConfig(out=str(out), train_chunks=1, num_envs=256, workloads=("ctr-dnn",))
    records = train_policy(config, on_notice=notices.append)
    assert len(records) == 1 and len(notices) == 1
    assert "took over the stale lock" in notices[0] and f"PID {2**22 + 4321} on gone" in notices[0]


@pytest.mark.slow
def test_quickstart_training_is_a_fixed_amount_of_work_on_a_slow_machine(quickstart, tmp_path, monkeypatch):
    """A machine on which every clock reading is ten minutes after the last (far slower than any
    budget) still trains every chunk the quickstart asks for: the result depends on the work
    done, not on the wall clock. Resumed from the tiny run's finished chunk, two more remain."""
    import hps.rl.session
    from hps.studies.quickstart import QuickstartConfig, train_policy

    out = tmp_path / "qs"
    shutil.copytree(quickstart[0] / "policy", out / "policy")
    clock = iter(range(0, 10**9, 600))
    monkeypatch.setattr(hps.rl.session, "time", types.SimpleNamespace(perf_counter=lambda: float(next(clock))))
    config = QuickstartConfig(out=str(out), train_chunks=3, num_envs=256, workloads=("ctr-dnn",))
    records = train_policy(config)
    assert [r["step"] for r in records] == [10, 20, 30]
