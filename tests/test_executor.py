"""Executed plans (docs/executor.md): multi-stage training on groups of the 8 fake CPU devices
equals plain single-device training, with every collective policy and mesh shape."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import pytest

from hps.config.loaders import load_catalog
from hps.config.types import Job, stage_spans
from hps.errors import ConfigError
from hps.executor.devices import assign_stage_devices, parse_device_map
from hps.executor.plan import (
    ExecuteOptions,
    execute_schedule,
    micro_batch_count,
)
from hps.models.registry import build_model_and_workload

PODS = load_catalog(Path(__file__).parent / "data" / "pods.toml")
DEVICES = "cpu=0-3,gpu=4-7"
ALL_GPU = "cpu=0-3,gpu=0-7"  # pools may overlap: an 8-replica gpu stage shares devices with the cpu stage


def job(batch=64, collective="themis", chunks=4):
    return Job(batch=batch, throughput=100.0, samples=1e6, collective=collective, chunks=chunks)


def execute(name, schedule, replicas, *, policy=None, batch=64, steps=5, micro=None):
    devices = ALL_GPU if max(replicas) > 4 else DEVICES
    model, workload = build_model_and_workload(name, seed=0)
    types = [PODS.index(t) for t in schedule.split(",")]
    options = ExecuteOptions(
        steps=steps, devices=devices, check=True, replicas=replicas, policy=policy, micro_batches=micro
    )
    return execute_schedule(model, workload, PODS, job(batch), types, options)


@pytest.mark.parametrize(
    "name, schedule, replicas, meshes",
    [
        ("mlp", "cpu,cpu,gpu,gpu", (2, 8), [[2], [2, 2, 2]]),
        ("mlp", "cpu,gpu,cpu,cpu", (1, 4, 3), None),  # 3 devices do not fill 2x2: error below
        ("ctr-dnn-small", "cpu,cpu,gpu,gpu,gpu,gpu", (4, 4), [[2, 2], [2, 2]]),
        ("ctr-dnn-small", "cpu,cpu,gpu,gpu,gpu,gpu", (2, 1), [[2], [1]]),
        ("ctr-dnn-small", "cpu,gpu,gpu,cpu,cpu,cpu", (4, 2, 1), [[2, 2], [2], [1]]),
    ],
)
def test_executed_training_equals_single_device_training(name, schedule, replicas, meshes):
    if meshes is None:
        with pytest.raises(ConfigError, match="do not fill whole dimensions"):
            execute(name, schedule, replicas)
        return
    report = execute(name, schedule, replicas)
    assert [list(s["mesh"].values()) for s in report["stages"]] == meshes
    assert [s["replicas"] for s in report["stages"]] == list(replicas)
    assert report["equivalent"] is True
    assert report["max_param_rel_diff"] <= 1e-5
    assert report["max_loss_rel_diff"] <= 1e-5
    assert len(report["losses"]) == 5


@pytest.mark.parametrize("policy", ["baseline", "themis", "roundrobin", "best-fixed"])
def test_every_collective_policy_trains_the_same_parameters(policy):
    report = execute("mlp", "cpu,gpu,gpu,gpu", (4, 8), policy=policy, micro=4)
    assert report["collective_policy"] == policy
    assert report["max_param_rel_diff"] <= 1e-5


def test_report_has_measured_and_predicted_terms_for_each_stage():
    report = execute("mlp", "cpu,cpu,gpu,gpu", (2, 4), steps=2)
    for stage in report["stages"]:
        assert stage["measured_time"] == pytest.approx(sum(stage["measured"].values()))
        assert stage["predicted_time"] == pytest.approx(sum(stage["predicted"].values()))
        assert all(v > 0 for v in stage["measured"].values())
        assert stage["predicted"]["sync"] > 0  # k > 1 and dense parameters: an All-Reduce is predicted
    assert report["measured_throughput"] == pytest.approx(report["batch"] / report["measured_step_time"])
    # the prediction is the parallel-plan model's, held to its plain-Python reference: the stages
    # as they ran (tp, dp), under the micro-batch they ran, trained in fp32 with plain SGD
    from hps.config.types import ParallelStage
    from hps.reference.parallel import evaluate
    from hps.workloads import resolve_workload

    micro = report["micro_batches"]
    ran = dataclasses.replace(job(), micro_batch=64 // micro, micro_batches=micro, precision="fp32-sgd")
    plan = [
        ParallelStage(s["first_layer"], s["last_layer"], s["type"], s["tensor"], s["replicas"])
        for s in report["stages"]
    ]
    reference = evaluate(resolve_workload("mlp"), PODS, ran, plan)
    assert report["predicted_throughput"] == pytest.approx(reference["throughput"], rel=1e-9)
    assert report["predicted_step_time"] == pytest.approx(reference["iteration_s"], rel=1e-9)
    for stage, want in zip(report["stages"], reference["stages"]):
        assert stage["predicted"]["compute"] + stage["predicted"]["transfer"] == pytest.approx(micro * want["time"])
        assert stage["predicted"]["sync"] == pytest.approx(want["sync"])


def test_stage_spans_are_maximal_runs_of_one_type():
    assert stage_spans([0, 0, 1, 1, 0]) == [(0, 1, 0), (2, 3, 1), (4, 4, 0)]
    assert stage_spans([2]) == [(0, 0, 2)]


def test_micro_batches_split_evenly_over_every_stage():
    assert micro_batch_count(64, [2, 8], 4) == 4
    assert micro_batch_count(48, [8], 4) == 3  # 48/4 = 12 is not a multiple of 8; 48/3 = 16 is
    with pytest.raises(ConfigError, match="^batch: "):
        micro_batch_count(60, [8], 2)


def test_device_map_names_pools_and_rejects_bad_entries():
    assert parse_device_map("cpu=0-3, gpu=4", PODS, 8) == {"cpu": [0, 1, 2, 3], "gpu": [4]}
    for text, needle in [
        ("tpu=0-1", "unknown resource type"),
        ("cpu=3-9", "LAST < 8"),
        ("cpu", "TYPE=FIRST-LAST"),
        ("cpu=a-b", "integers"),
        ("cpu=0,cpu=1", "mapped twice"),
    ]:
        with pytest.raises(ConfigError, match=needle):
            parse_device_map(text, PODS, 8)


def test_stages_of_one_type_take_consecutive_devices_and_wrap_only_when_short():
    pools = {"cpu": list(range(4))}
    assert assign_stage_devices(["cpu", "cpu"], [2, 2], pools) == [[0, 1], [2, 3]]
    assert assign_stage_devices(["cpu", "cpu"], [2, 4], pools) == [[0, 1], [0, 1, 2, 3]]
    with pytest.raises(ConfigError, match="pool"):
        assign_stage_devices(["cpu"], [5], pools)


def test_without_a_mapping_gpu_types_run_on_gpus_and_cpu_types_on_the_host(monkeypatch):
    """The HeterPS deployment: embedding stages on the host CPU, dense stages on the GPU. On a
    CPU-only machine every type shares the CPU devices (tests use --devices groups instead)."""
    from hps.executor import devices as pools_module

    fake = {"cpu": ["c0", "c1"], "gpu": ["g0"]}
    monkeypatch.setattr(pools_module, "_platform_devices", lambda platform: fake[platform])
    assert pools_module.device_pools(PODS, ["cpu", "gpu"]) == {"cpu": ["c0", "c1"], "gpu": ["g0"]}
    monkeypatch.setattr(pools_module, "_platform_devices", lambda platform: fake[platform] if platform == "cpu" else [])
    everything = jax.devices()
    assert pools_module.device_pools(PODS, ["cpu", "gpu"]) == {"cpu": everything, "gpu": everything}
