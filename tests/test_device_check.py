"""experiments/device_check.py (hps.studies.device_check): the runs it plans for the devices
there are, and one table of real executions with their check and step times."""

from __future__ import annotations

import jax
import pytest

from hps.errors import ConfigError
from hps.studies import experiment_kind_of, load_config
from hps.studies.device_check import DeviceCheckConfig, items, run_item, summarize


def test_the_shipped_config_runs_the_quickstart_and_every_model_workload():
    config = load_config("experiments/device_check.py")
    keys = [key for key, _ in experiment_kind_of(config).items(config)]
    assert keys[0] == "quickstart"
    # 8 host devices: every workload at 1 and 2 stages, t = 1 and 2
    assert len(keys) == 1 + 5 * 2 * 2 and "transformer-small-s2-t2" in keys


def test_tensor_degrees_the_pool_cannot_hold_are_left_out(monkeypatch):
    from hps.executor import devices

    one = jax.devices()[:1]  # as on a machine with one GPU
    monkeypatch.setattr(devices, "device_pools", lambda catalog, types, mapping=None: dict.fromkeys(types, one))
    config = DeviceCheckConfig(workloads=("mlp",), quickstart=False)
    assert [key for key, _ in items(config)] == ["mlp-s1-t1", "mlp-s2-t1"]
    with pytest.raises(ConfigError, match="no Flax model"):
        items(DeviceCheckConfig(workloads=("wide-deep",)))


def test_each_run_is_checked_and_timed_in_one_table():
    config = DeviceCheckConfig(workloads=("mlp",), quickstart=False, steps=3, batch=16)
    results = {key: run_item(config, params) for key, params in items(config) if key.endswith("s2-t2")}
    run = results["mlp-s2-t2"]
    assert run["result"]["equivalent"] is True and run["result"]["max_param_rel_diff"] <= 1e-5
    assert run["result"]["matmul_precision"] == "highest" and run["step_ms"] > 0
    summary = summarize(config, results)
    assert summary.rows[0][:5] == ["mlp-s2-t2", "mlp", 2, 2, True]
    assert "1 of 1 runs equal" in summary.markdown


def test_a_run_that_ends_in_an_error_is_a_row_not_the_end(monkeypatch):
    from hps.errors import TrainingDiverged
    from hps.studies import device_check

    def diverge(*args):
        raise TrainingDiverged("diverged at step 1: the loss is nan; lower --lr")

    monkeypatch.setattr(device_check, "_execute", diverge)
    config = DeviceCheckConfig(workloads=("mlp",), quickstart=False)
    results = {"mlp-s1-t1": run_item(config, ("execute", "mlp", 1, 1))}
    summary = summarize(config, results)
    assert summary.rows[0][4] == "error" and "diverged at step 1" in summary.rows[0][7]
    assert "0 of 1 runs equal" in summary.markdown
