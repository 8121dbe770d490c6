"""`hps run EXPERIMENT.py`: results.json, report.md and figures in <out>/<name>/;
a killed run resumes from its saved items and ends with the results of an uninterrupted run;
the same config and seed give the same results.json bytes; a bad experiment file is one clear
error (exit 2, no traceback) and leaves no output folder."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hps.cli.main import main
from hps.errors import ConfigError
from hps.studies import run_experiment
from hps.studies.themis_allreduce import ThemisAllReduceConfig

TINY = """
from hps.studies.themis_allreduce import ThemisAllReduceConfig

def config():
    return ThemisAllReduceConfig(name="tiny", networks=("3d-switch-8x8x8", "3d-torus-4x4x4"),
                                 size_bytes=2.0**26, chunks=16)
"""

SLOW_KIND = """
import time
from dataclasses import dataclass

from hps.studies import ExperimentConfig, Summary, register_experiment_kind


@dataclass(frozen=True, kw_only=True)
class SlowConfig(ExperimentConfig):
    count: int = 6
    pause_s: float = 0.4


def items(config):
    return [(f"item-{i}", i) for i in range(config.count)]


def run_item(config, i):
    time.sleep(config.pause_s)
    return {"value": (i * 7919 + config.seed) % 1000 / 7.0}


def summarize(config, results):
    rows = [[key, r["value"]] for key, r in results.items()]
    return Summary(results={"values": results}, headers=["item", "value"], rows=rows)


register_experiment_kind(SlowConfig, items=items, run_item=run_item, summarize=summarize)


def config():
    return SlowConfig(name="slow", seed=3)
"""


def tiny_config(**changes) -> ThemisAllReduceConfig:
    fields = dict(name="tiny", networks=("3d-switch-8x8x8", "3d-torus-4x4x4"), size_bytes=2.0**26, chunks=16)
    return ThemisAllReduceConfig(**(fields | changes))


def test_hps_run_writes_results_json_report_and_figure(tmp_path, capsys):
    experiment = tmp_path / "tiny.py"
    experiment.write_text(TINY)
    assert main(["run", str(experiment), "--out", str(tmp_path / "results")]) == 0
    out = tmp_path / "results" / "tiny"
    printed = capsys.readouterr().out
    assert "3d-switch-8x8x8" in printed and "themis+scf" in printed and str(out / "report.md") in printed
    document = json.loads((out / "results.json").read_text())
    assert document["experiment"] == "tiny" and document["kind"] == "ThemisAllReduceConfig"
    results = document["results"]
    assert list(results["networks"]) == ["3d-switch-8x8x8", "3d-torus-4x4x4"]
    assert results["themis_speedup"]["max"] >= results["themis_speedup"]["mean"] > 1.0
    for row in results["networks"].values():
        assert row["ideal_time"] > 0 and all(0 < u <= 1 + 1e-6 for u in row["utilization"].values())
    assert (out / "utilization.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = (out / "report.md").read_text()
    assert "![utilization](utilization.png)" in report and "| 3d-torus-4x4x4 |" in report
    assert f"hps run {experiment}" in report and "jax" in report
    assert "seconds" not in (out / "results.json").read_text()  # timings live in timings.json
    assert set(json.loads((out / "timings.json").read_text())["items"]) == set(results["networks"])
    assert [p.name for p in out.rglob("*") if p.name.startswith(".")] == [".lock"]  # no temporary files left


def test_same_config_and_seed_give_identical_results_json_bytes(tmp_path):
    run_experiment(tiny_config(), tmp_path / "a", progress=False)
    first = (tmp_path / "a" / "results.json").read_bytes()
    run_experiment(tiny_config(), tmp_path / "a", fresh=True, progress=False)
    run_experiment(tiny_config(), tmp_path / "b", progress=False)
    assert (tmp_path / "a" / "results.json").read_bytes() == first
    assert (tmp_path / "b" / "results.json").read_bytes() == first


def test_resume_recomputes_only_the_missing_item_and_gives_the_same_results(tmp_path):
    out = tmp_path / "tiny"
    run_experiment(tiny_config(), out, progress=False)
    complete = (out / "results.json").read_bytes()
    (out / "results.json").unlink()
    (out / "items" / "3d-torus-4x4x4.json").unlink()
    ran = run_experiment(tiny_config(), out, progress=False)
    assert ran["computed"] == ["3d-torus-4x4x4"]
    assert (out / "results.json").read_bytes() == complete


def test_items_of_another_config_are_recomputed_not_reused(tmp_path):
    out = tmp_path / "tiny"
    run_experiment(tiny_config(), out, progress=False)
    ran = run_experiment(tiny_config(chunks=8), out, progress=False)
    assert ran["computed"] == ["3d-switch-8x8x8", "3d-torus-4x4x4"]
    assert ran["results"]["results"]["chunks"] == 8


def _hps_run(experiment: Path, out: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    command = [sys.executable, "-m", "hps.cli.main", "run", str(experiment), "--out", str(out), "--json"]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_killed_run_resumes_and_ends_with_the_uninterrupted_results(tmp_path):
    experiment = tmp_path / "slow.py"
    experiment.write_text(SLOW_KIND)
    items = tmp_path / "killed" / "slow" / "items"
    proc = _hps_run(experiment, tmp_path / "killed")
    deadline = time.monotonic() + 120
    while not list(items.glob("item-*.json")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    done = sorted(p.name for p in items.glob("item-*.json"))
    assert 1 <= len(done) < 6, done
    assert not (tmp_path / "killed" / "slow" / "results.json").exists()

    resumed = _hps_run(experiment, tmp_path / "killed")
    resumed_out, resumed_err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, resumed_err
    timings = json.loads((tmp_path / "killed" / "slow" / "timings.json").read_text())
    assert not set(timings["computed_now"]) & {name.removesuffix(".json") for name in done}
    whole = _hps_run(experiment, tmp_path / "whole")
    whole.communicate(timeout=120)
    assert (tmp_path / "killed" / "slow" / "results.json").read_bytes() == (
        tmp_path / "whole" / "slow" / "results.json"
    ).read_bytes()
    assert json.loads(resumed_out)["results"]["values"]["item-5"]["value"] == pytest.approx((5 * 7919 + 3) % 1000 / 7)


@pytest.mark.parametrize(
    "text, needle",
    [
        (None, "no such experiment file"),
        ("def config(:\n", "SyntaxError"),
        ("raise RuntimeError('boom')\n", "RuntimeError: boom"),
        ("CONFIG = 1\n", "config: must define config()"),
        ("def config():\n    return {'name': 'x'}\n", "returned dict"),
        ("def config():\n    raise KeyError('networks')\n", "config(): KeyError"),
        (TINY.replace("chunks=16", "chunks=0"), "chunks: must be an integer"),
        (TINY.replace('name="tiny"', 'name="../x"'), "name: must be a folder name"),
        (TINY.replace("3d-torus-4x4x4", "no-such-network"), "no-such-network"),
    ],
)
def test_bad_experiment_file_exits_2_without_traceback_or_output(tmp_path, capsys, text, needle):
    experiment = tmp_path / "bad.py"
    if text is not None:
        experiment.write_text(text)
    out = tmp_path / "results"
    assert main(["run", str(experiment), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
    assert "bad.py" in err
    assert not out.exists()


def test_themis_iteration_item_is_the_study_hps_collective_iteration_prints(tmp_path, capsys):
    from hps.studies.themis_iteration import ThemisIterationConfig

    config = ThemisIterationConfig(name="it", workloads=(("mlp", 64.0),), networks=("3d-switch-8x8x8",))
    ran = run_experiment(config, tmp_path / "it", progress=False)
    assert (
        main(["collective", "--network", "3d-switch-8x8x8", "--iteration", "mlp", "--batch-per-npu", "64", "--json"])
        == 0
    )
    cli = json.loads(capsys.readouterr().out)
    assert ran["results"]["results"]["speedup"]["mlp"]["3d-switch-8x8x8"] == cli["speedup"]
    assert (tmp_path / "it" / "speedup.png").is_file()


def test_scaling_sweeps_each_axis_once_and_draws_its_log_log_figure(tmp_path):
    from hps.studies import scaling

    config = scaling.ScalingConfig(
        envs=(256, 1024), layers=(8, 16), base_envs=1024, base_layers=16, train_envs=(256,), chunks=(4, 16)
    )
    keys = [key for key, _ in scaling.items(config)]
    assert keys == ["env-n256-l16", "env-n1024-l16", "env-n1024-l8", "train-n256-l8", "collective-c4", "collective-c16"]
    fake = {
        key: {"what": what, "envs": n, "layers": l, "per_s": 1e6 / n, "compile_s": 1.0}
        for key, (what, n, l) in scaling.items(config)
        if what != "collective"
    }
    fake |= {
        f"collective-c{c}": {
            "what": "collective",
            "chunks": c,
            "dims": 3,
            "networks": 256,
            "per_s": 1e5 / c,
            "compile_s": 2.0,
        }
        for c in config.chunks
    }
    summary = scaling.summarize(config, fake)
    assert len(summary.rows) == len(keys)
    ((name, draw),) = summary.figures
    draw(tmp_path / name)
    assert (tmp_path / name).read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="layers"):
        scaling.ScalingConfig(layers=(2,))


def test_a_collective_checkpoint_adds_the_learned_column(tmp_path, monkeypatch):
    import numpy as np

    seen = []

    def baseline_orders(checkpoint, network, size, chunks):  # a "policy" that keeps the baseline order
        seen.append((checkpoint, network.name, size, chunks))
        return np.tile(np.arange(4, dtype=np.int32), (chunks, 1))

    monkeypatch.setattr("hps.collective.agent.checkpoint.checkpoint_orders", baseline_orders)
    with pytest.raises(ConfigError, match="no such directory"):
        run_experiment(tiny_config(checkpoint=str(tmp_path / "missing")), tmp_path / "x", progress=False)
    assert not (tmp_path / "x").exists()
    ran = run_experiment(tiny_config(checkpoint=str(tmp_path)), tmp_path / "learned", progress=False)
    results = ran["results"]["results"]
    assert results["columns"][-1] == "learned+scf" and ran["headers"][-2] == "learned+scf"
    for row in results["networks"].values():
        assert row["utilization"]["learned+scf"] == row["utilization"]["baseline+scf"]
    assert seen == [(str(tmp_path), name, 2.0**26, 16) for name in ("3d-switch-8x8x8", "3d-torus-4x4x4")]
