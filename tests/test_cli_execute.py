"""`hps execute` and `hps profile`: the JSON keys, measured times that
reach the cost model, and clear errors (exit 2, no traceback)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hps.cli.main import main
from hps.config.loaders import load_workload

PODS = str(Path(__file__).parent / "data" / "pods.toml")
EXECUTE_KEYS = {"stages", "measured_throughput", "predicted_throughput", "equivalent", "max_param_rel_diff"}
STAGE_KEYS = {"type", "replicas", "measured_time", "predicted_time"}


def run_json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_execute_json_has_the_contract_keys_and_matches_single_device_training(capsys):
    out = run_json(
        capsys,
        [
            "execute",
            "--workload",
            "mlp",
            "--catalog",
            PODS,
            "--schedule",
            "cpu,cpu,gpu,gpu",
            "--batch",
            "64",
            "--devices",
            "cpu=0-3,gpu=4-7",
            "--replicas",
            "2,4",
            "--steps",
            "5",
            "--check",
            "--json",
        ],
    )
    assert EXECUTE_KEYS <= out.keys()
    assert all(STAGE_KEYS <= stage.keys() for stage in out["stages"])
    assert [(s["type"], s["replicas"]) for s in out["stages"]] == [("cpu", 2), ("gpu", 4)]
    assert out["equivalent"] is True and out["max_param_rel_diff"] <= 1e-5


def test_execute_prints_the_measured_vs_predicted_table(capsys):
    assert (
        main(
            [
                "execute",
                "--workload",
                "mlp",
                "--catalog",
                PODS,
                "--schedule",
                "cpu,gpu,gpu,gpu",
                "--batch",
                "32",
                "--devices",
                "cpu=0-1,gpu=2-3",
                "--steps",
                "2",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "measured ms" in text and "predicted ms" in text and "throughput: measured" in text


def test_profile_writes_measured_times_that_the_cost_model_uses(tmp_path, capsys):
    out = tmp_path / "mlp-measured.toml"
    report = run_json(
        capsys,
        [
            "profile",
            "--workload",
            "mlp",
            "--catalog",
            PODS,
            "--devices",
            "cpu=0-1",
            "--batch",
            "64",
            "--repeats",
            "2",
            "--out",
            str(out),
            "--json",
        ],
    )
    seconds = report["seconds_per_sample"]["cpu"]
    workload = load_workload(out)
    assert [layer.measured_time for layer in workload.layers] == [{"cpu": pytest.approx(s)} for s in seconds]
    assert all(s > 0 for s in seconds)
    # one cpu stage of 1 replica: time = B * sum of the measured per-sample times (no boundary, no sync)
    evaluated = run_json(
        capsys,
        [
            "evaluate",
            "--workload",
            str(out),
            "--catalog",
            PODS,
            "--schedule",
            "cpu,cpu,cpu,cpu",
            "--batch",
            "64",
            "--throughput",
            "1",
            "--samples",
            "1e6",
            "--json",
        ],
    )
    assert evaluated["stages"][0]["replicas"] == 1
    assert evaluated["stages"][0]["time"] == pytest.approx(64 * sum(seconds), rel=1e-5)


@pytest.mark.parametrize(
    "argv, needle",
    [
        (
            [
                "execute",
                "--workload",
                "mlp",
                "--catalog",
                PODS,
                "--schedule",
                "cpu,gpu,gpu,gpu",
                "--devices",
                "cpu=0-1",
            ],
            "does not name it",
        ),
        (
            [
                "execute",
                "--workload",
                "mlp",
                "--catalog",
                PODS,
                "--schedule",
                "cpu,gpu,gpu,gpu",
                "--devices",
                "cpu=0-9,gpu=1",
            ],
            "LAST < 8",
        ),
        (["execute", "--workload", "resnet50", "--catalog", PODS, "--schedule", "cpu"], "has no Flax model"),
        (["execute", "--workload", "mlp", "--catalog", PODS], "--schedule"),
        (["execute", "--catalog", PODS, "--schedule", "cpu"], "--workload"),
        (
            [
                "execute",
                "--workload",
                "mlp",
                "--catalog",
                PODS,
                "--schedule",
                "cpu,cpu,cpu,cpu",
                "--replicas",
                "3",
                "--devices",
                "cpu=0-3",
            ],
            "do not fill whole dimensions",
        ),
        (
            ["execute", "--workload", "mlp", "--catalog", PODS, "--schedule", "cpu,cpu,cpu,cpu", "--replicas", "x"],
            "--replicas",
        ),
        (["profile", "--workload", "mlp", "--catalog", PODS, "--types", "tpu"], "not in the catalogue"),
        (["profile", "--workload", "mlp", "--catalog", PODS, "--devices", "cpu=0-2", "--batch", "64"], "do not split"),
    ],
)
def test_bad_inputs_exit_2_with_a_clear_message(argv, needle, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # nothing half-written


def test_a_table_made_with_other_hyperparameters_is_refused(tmp_path, capsys):
    table = tmp_path / "wide.toml"
    assert main(["workload", "export", "mlp", "--set", "hidden=32,16", "--out", str(table)]) == 0
    code = main(
        ["execute", "--workload", str(table), "--catalog", PODS, "--schedule", "cpu,cpu,cpu,cpu", "--steps", "1"]
    )
    assert code == 2
    assert "other hyperparameters" in capsys.readouterr().err


def test_plan_file_fills_the_instance_and_flags_override_it(tmp_path):
    from argparse import Namespace

    from hps.cli.execute import plan_instance

    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "schedule": ["cpu", "gpu"],
                "instance": {
                    "workload": "mlp",
                    "catalog": "pods",
                    "batch": 64.0,
                    "throughput": 10.0,
                    "samples": 1e6,
                    "collective": "themis",
                    "chunks": 8,
                    "overrides": [],
                },
            }
        )
    )
    args = Namespace(
        workload=None,
        catalog=None,
        batch=32.0,
        throughput=None,
        samples=None,
        collective=None,
        chunks=None,
        overrides=[],
        schedule=None,
    )
    merged = plan_instance(str(plan), args)
    assert (merged.workload, merged.catalog, merged.batch, merged.chunks) == ("mlp", "pods", 32.0, 8)
    assert merged.schedule == "cpu,gpu"
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(Exception, match="instance"):
        plan_instance(str(bad), args)
