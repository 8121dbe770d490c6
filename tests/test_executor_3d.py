"""3D-parallel execution (docs/executor.md): stages on (d, t) meshes with Megatron tensor
parallelism, embedding tables sharded by rows, 1F1B micro-batch order and the per-device memory
check, each compared with plain single-device training of the same model."""

from __future__ import annotations

import dataclasses
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

from hps.config.loaders import load_catalog
from hps.config.types import Job, ParallelStage
from hps.contract.types import Plan
from hps.errors import StageDoesNotFit
from hps.executor.pipeline import one_f_one_b, stage_order
from hps.executor.plan import ExecuteOptions, execute_schedule
from hps.executor.tensor import copy_to_tensor, layer_roles, reduce_from_tensor
from hps.models.registry import build_model_and_workload

PODS = load_catalog(Path(__file__).parent / "data" / "pods.toml")
SHARED = "cpu=0-7,gpu=0-7"  # both pools span all 8 devices: stages of different types may share them


def execute(name, schedule, replicas, tensor, *, catalog=PODS, overrides=None, batch=16, steps=5):
    model, workload = build_model_and_workload(name, overrides, seed=0)
    options = ExecuteOptions(steps=steps, devices=SHARED, check=True, replicas=replicas, tensor=tensor)
    job = Job(batch=batch, throughput=100.0, samples=1e6, collective="themis", chunks=4)
    types = [catalog.index(t) for t in schedule.split(",")]
    return execute_schedule(model, workload, catalog, job, types, options)


TRANSFORMER = ("transformer-small", {"heads": 4})  # 4 heads of width 8: t up to 4
PLANS_3D = [  # (schedule, d per stage, t per stage): t4·d2 / t2 + t2·d2 / t1·d2 + t4 + t1·d2
    ({"mlp": "cpu,cpu,cpu,cpu", "transformer-small": "cpu," * 6 + "cpu"}, (2,), (4,)),
    ({"mlp": "cpu,cpu,gpu,gpu", "transformer-small": "cpu,cpu,cpu,gpu,gpu,gpu,gpu"}, (1, 2), (2, 2)),
    ({"mlp": "cpu,gpu,gpu,cpu", "transformer-small": "cpu,gpu,gpu,gpu,gpu,cpu,cpu"}, (2, 1, 2), (1, 4, 1)),
]


SLOW = pytest.mark.slow  # 13-18 s each on 2 cores
CASES = [
    pytest.param(model, *plan, id=f"{model}-{name}", marks=[SLOW] if model != "mlp" and name != "t1d2+t4+t1d2" else [])
    for model in ("mlp", "transformer-small")
    for plan, name in zip(PLANS_3D, ["t4d2", "t2+t2d2", "t1d2+t4+t1d2"])
]


@pytest.mark.parametrize("model, schedules, replicas, tensor", CASES)
def test_3d_plans_train_like_one_device(model, schedules, replicas, tensor):
    overrides = TRANSFORMER[1] if model == "transformer-small" else None
    report = execute(model, schedules[model], replicas, tensor, overrides=overrides)
    assert [(s["replicas"], s["tensor"]) for s in report["stages"]] == list(zip(replicas, tensor))
    assert [s["mesh"].get("t", 1) for s in report["stages"]] == list(tensor)
    assert report["max_param_rel_diff"] <= 1e-5, report["worst_parameter"]
    assert report["equivalent"] is True and report["matmul_precision"] == "highest"


def test_tensor_parallel_layers_hold_their_block_of_each_projection():
    model, _ = build_model_and_workload(*TRANSFORMER, seed=0)
    assert layer_roles(list(model.layers), 4, 4) == [
        "plain",
        *["attention", "ffn"] * 2,
        "plain",
        "plain",
    ]  # embedding (dense tables here), head and loss run whole on every rank
    assert layer_roles(list(model.layers), 1, 1) == ["plain"] * 7
    mlp, _ = build_model_and_workload("mlp", seed=0)
    assert layer_roles(list(mlp.layers), 2, 4) == ["column", "row", "plain", "plain"]

    from hps.executor.mesh import stage_mesh
    from hps.executor.stages import build_stage

    net = PODS.resources[PODS.index("cpu")].network
    mesh = stage_mesh(jax.devices()[:8], net, tensor=4)
    assert dict(mesh.mesh.shape) == {"d0": 2, "t": 4}
    assert mesh.mesh.devices[1, 2] == jax.devices()[6]  # tensor ranks adjacent: device t + 4·d
    import optax

    stage = build_stage(0, "cpu", 1, 1, model, mesh.mesh, mesh.axis_names, np.zeros((1, 1), np.int32), optax.sgd(0))
    query = stage.params[0]["query"]["kernel"][...]
    out = stage.params[0]["out"]["kernel"][...]
    assert query.shape == (32, 32) and {s.data.shape for s in query.addressable_shards} == {(32, 8)}
    assert {s.data.shape for s in out.addressable_shards} == {(8, 32)}
    whole = np.asarray(model.layers[1].query.kernel[...])
    shard = next(s for s in query.addressable_shards if s.device == jax.devices()[6])
    np.testing.assert_array_equal(np.asarray(shard.data), whole[:, 16:24])  # rank 2 holds heads 2 (of 4)


def test_megatron_f_and_g_give_the_gradients_of_the_unsplit_block():
    """y = tanh(x·W1)·W2 with W1 split by columns and W2 by rows over t = 4, f before W1 and g
    after W2: per rank, the gradients of x and of its blocks of W1 and W2 equal the unsplit
    block's (x's whole, the weights' the rank's block)."""
    mesh = Mesh(np.array(jax.devices()[:4]), ("t",))
    keys = jax.random.split(jax.random.key(0), 3)
    x, w1, w2 = (jax.random.normal(k, s) for k, s in zip(keys, [(3, 5), (5, 8), (8, 2)]))

    def loss(x, w1, w2, split):
        if split:
            return jnp.sum(reduce_from_tensor(jnp.tanh(copy_to_tensor(x, "t") @ w1) @ w2, "t") ** 2)
        return jnp.sum((jnp.tanh(x @ w1) @ w2) ** 2)

    tp = jax.shard_map(
        jax.grad(partial(loss, split=True), argnums=(0, 1, 2)),
        mesh=mesh,
        in_specs=(P(), P(None, "t"), P("t", None)),
        out_specs=(P(), P(None, "t"), P("t", None)),
        check_vma=False,
    )
    got = tp(x, w1, w2)
    want = jax.grad(partial(loss, split=False), argnums=(0, 1, 2))(x, w1, w2)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)


def test_one_f_one_b_keeps_each_stages_order_and_every_dependency():
    assert stage_order(0, 3, 4) == [("F", 0), ("F", 1), ("F", 2), ("B", 0), ("F", 3), ("B", 1), ("B", 2), ("B", 3)]
    assert stage_order(2, 3, 4) == [("F", 0), ("B", 0), ("F", 1), ("B", 1), ("F", 2), ("B", 2), ("F", 3), ("B", 3)]
    assert stage_order(0, 4, 2) == [("F", 0), ("F", 1), ("B", 0), ("B", 1)]  # warm-up capped at M
    order = one_f_one_b(3, 4)
    assert sorted(order) == sorted((k, s, m) for k in "FB" for s in range(3) for m in range(4))
    position = {op: i for i, op in enumerate(order)}
    for kind, s, m in order:
        if kind == "F" and s > 0:
            assert position["F", s - 1, m] < position[kind, s, m]
        if kind == "B":
            assert position["F", s, m] < position[kind, s, m]
            if s < 2:
                assert position["B", s + 1, m] < position[kind, s, m]
    for s in range(3):
        assert [(k, m) for k, st, m in order if st == s] == stage_order(s, 3, 4)


def small_memory(megabytes: float):
    """PODS with the cpu type's memory set to `megabytes` MiB."""
    index = PODS.index("cpu")
    shrunk = dataclasses.replace(PODS.resources[index], memory=megabytes * 2**20)
    return dataclasses.replace(PODS, resources=(*PODS.resources[:index], shrunk, *PODS.resources[index + 1 :]))


def ctr_bytes() -> tuple[int, int]:
    """(table bytes, dense bytes) of ctr-dnn-small, counted from its layers."""
    model, _ = build_model_and_workload("ctr-dnn-small", seed=0)
    dense = sum(x.size * 4 for i, layer in enumerate(model.layers) if i > 0 for x in jax.tree.leaves(layer))
    return 10_000 * 8 * 4, dense


def test_a_table_too_big_for_one_device_runs_sharded_over_the_stage():
    """ctr-dnn-small's 10,000 x 8 table (0.305 MiB; 0.610 MiB with its gradient) does not fit a
    0.4 MiB cpu, but a quarter of it does: on 4 devices it trains like one device, its gradient
    never All-Reduced (the stage syncs its dense bytes only)."""
    catalog = small_memory(0.4)
    table, dense = ctr_bytes()
    need = 2 * (table + dense) / 2**20  # parameters and gradients, plain SGD keeps no state
    with pytest.raises(StageDoesNotFit, match=rf"stage 0 \(cpu, layers 0-5\) needs {need:.3f} MiB per device"):
        execute("ctr-dnn-small", "cpu," * 5 + "cpu", (1,), (1,), catalog=catalog)
    report = execute("ctr-dnn-small", "cpu," * 5 + "cpu", (4,), (1,), catalog=catalog)
    assert report["equivalent"] is True and report["max_param_rel_diff"] <= 1e-5
    assert report["stages"][0]["synced_bytes"] == dense < table


def test_a_plan_that_does_not_fit_is_refused_before_running(monkeypatch):
    from hps.executor import plan

    monkeypatch.setattr(plan, "place_stage", lambda *a: pytest.fail("placed a stage of a plan that does not fit"))
    table, dense = ctr_bytes()
    need = 2 * (table / 4 + dense) / 2**20
    with pytest.raises(StageDoesNotFit, match=rf"needs {need:.3f} MiB per device .* but a cpu has 0\.050 MiB"):
        execute("ctr-dnn-small", "cpu," * 5 + "cpu", (4,), (1,), catalog=small_memory(0.05))


def plan_file(tmp_path, stages, workload="mlp", catalog=None) -> Path:
    """A plan file (hps-plan/2) of (first, last, type, tp, dp) stages: batch 16 in micro-batches of 4,
    fp32 SGD, on pods.toml unless `catalog` names another."""
    import json

    catalog = catalog or Path(__file__).parent / "data" / "pods.toml"
    job = {"batch": 16, "micro_batch": 4, "throughput": 100, "samples": 1e6, "precision": "fp32-sgd", "zero": 0}
    plan = {
        "format": "hps-plan/2",
        "workload": workload,
        "catalog": str(catalog),
        "job": job | {"recompute": "none"},
        "stages": [dict(zip(("first", "last", "type", "tp", "dp"), stage)) for stage in stages],
    }
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    return path


def executed(capsys, argv) -> dict:
    """The `hps execute --json` document of `argv` (which must succeed)."""
    import json

    from hps.cli.main import main

    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_hps_execute_runs_a_parallel_plan_file_with_its_tp_and_dp(tmp_path, capsys):
    path = plan_file(tmp_path, [(0, 0, "cpu", 1, 2), (1, 2, "gpu", 2, 2), (3, 3, "cpu", 1, 2)])
    out = executed(capsys, ["execute", "--plan", str(path), "--devices", SHARED, "--steps", "2", "--check"])
    assert [(s["type"], s["replicas"], s["tensor"]) for s in out["stages"]] == [
        ("cpu", 2, 1),
        ("gpu", 2, 2),
        ("cpu", 2, 1),
    ]
    assert out["micro_batches"] == 4  # batch / micro_batch
    assert out["equivalent"] is True


def test_adjacent_stages_of_one_type_run_each_on_its_own_devices_and_train_like_one_device(tmp_path, capsys):
    """The shape every LLM plan the solver writes has (stages of one type in a row): each stage is
    its own device group, the plan's micro-batch sets the micro-batch count, and the API runs
    what the command line runs."""
    import hps

    path = plan_file(tmp_path, [(0, 1, "gpu", 2, 2), (2, 3, "gpu", 2, 2)])
    out = executed(capsys, ["execute", "--plan", str(path), "--devices", "gpu=0-7", "--steps", "2", "--check"])
    assert [(s["first_layer"], s["replicas"], s["tensor"]) for s in out["stages"]] == [(0, 2, 2), (2, 2, 2)]
    assert out["micro_batches"] == 4 and out["equivalent"] is True
    assert out["predicted_throughput"] > 0 and out["clock"] == "kernel"  # the default clock

    read = hps.read_plan(path)
    problem = hps.Problem(read.workload, read.catalog, job=read.job, parallel=True)
    run = hps.execute(hps.Plan(read.stages, 4), problem, devices="gpu=0-7", steps=2)
    assert run.report["micro_batches"] == 4
    assert [s["replicas"] for s in run.report["stages"]] == [2, 2]
    assert run.predicted_throughput == pytest.approx(out["predicted_throughput"], rel=1e-12)


def test_a_plan_file_runs_as_the_positional_argument_and_one_too_wide_is_refused_with_its_count(tmp_path, capsys):
    """`hps execute PLAN.json` of a `hps search --out` file runs it as `--plan` does; a stage needing
    more devices than its pool has is refused before anything runs, naming the stage and the count."""
    from hps.cli.main import main

    path = plan_file(tmp_path, [(0, 1, "gpu", 1, 2), (2, 3, "gpu", 2, 2)])
    out = executed(capsys, ["execute", str(path), "--devices", "gpu=0-7", "--steps", "2", "--check"])
    assert [(s["replicas"], s["tensor"]) for s in out["stages"]] == [(2, 1), (2, 2)] and out["equivalent"] is True
    path = plan_file(tmp_path, [(0, 1, "gpu", 1, 2), (2, 3, "gpu", 2, 4)])  # tp 2 x dp 4: 8 devices of 4
    assert main(["execute", str(path), "--devices", "gpu=0-3", "--steps", "2"]) == 2
    err = capsys.readouterr().err
    assert "stages[1].dp" in err and "8 devices of gpu" in err and "has 4" in err and "Traceback" not in err


@pytest.mark.slow
def test_a_three_stage_plan_file_mixing_tp_1_2_and_4_trains_like_one_device(tmp_path, capsys):
    """transformer-small as embedding + block 1 (t 1, d 2) | block 2 (t 2) | head and loss (t 4) on
    8 host devices of a type whose tensor-parallel limit is 4."""
    catalog = tmp_path / "pods4.toml"
    text = (Path(__file__).parent / "data" / "pods.toml").read_text()
    catalog.write_text(text.replace("max_units = 8\n", "max_units = 8\ntp_max = 4\n"))
    stages = [(0, 2, "gpu", 1, 2), (3, 4, "gpu", 2, 1), (5, 6, "gpu", 4, 1)]
    path = plan_file(tmp_path, stages, workload="transformer-small", catalog=catalog)
    out = executed(capsys, ["execute", str(path), "--devices", "gpu=0-7", "--steps", "3", "--check"])
    assert [s["tensor"] for s in out["stages"]] == [1, 2, 4]
    assert out["equivalent"] is True and out["max_param_rel_diff"] <= 1e-5


def test_memory_counts_the_activations_in_flight_before_any_stage_is_placed(tmp_path, monkeypatch):
    """A type whose memory holds a stage's parameters, gradients and (SGD) optimizer state but not
    them plus the activations 1F1B keeps in flight is refused before placing, naming both parts."""
    from hps.executor import plan as executor_plan
    from hps.executor.predict import activation_bytes
    from hps.methods.problem import Problem
    from hps.workloads import resolve_workload

    workload = resolve_workload("mlp")
    job = Job(batch=16, throughput=1.0, samples=1e6, micro_batch=4.0, chunks=4)
    stages = (ParallelStage(0, 1, "gpu", 1, 2), ParallelStage(2, 3, "gpu", 1, 2))
    states = 2 * sum(layer.dense_param_bytes for layer in workload.layers[:2])  # parameters + gradients (SGD)
    flight = activation_bytes(Problem(workload, PODS, job, model="parallel"), stages, 4)[0]
    assert flight > 0
    gpu = PODS.resources[PODS.index("gpu")]
    tight = dataclasses.replace(gpu, memory=states + flight / 2)
    catalog = dataclasses.replace(PODS, resources=tuple(tight if r is gpu else r for r in PODS.resources))
    monkeypatch.setattr(
        executor_plan, "place_stage", lambda *a: pytest.fail("placed a stage of a plan that does not fit")
    )
    model, _ = build_model_and_workload("mlp", seed=0)
    problem = Problem(workload, catalog, job, model="parallel")
    options = ExecuteOptions(steps=1, devices="gpu=0-7")
    with pytest.raises(StageDoesNotFit, match=r"stage 0 .* MiB of activations in flight\) but a gpu has"):
        executor_plan.execute_plan(model, problem, Plan(stages, 4), options)


def test_an_hps_plan_2_file_runs_under_the_flags_collective_policy(tmp_path, capsys):
    """An hps-plan/2 file records no collective policy or chunks: `--collective` and `--chunks`
    give them (an hps-plan/3 file's own are refused beside it)."""
    path = plan_file(tmp_path, [(0, 1, "gpu", 1, 2), (2, 3, "gpu", 1, 2)])
    argv = ["execute", "--plan", str(path), "--devices", "gpu=0-7", "--steps", "1"]
    out = executed(capsys, [*argv, "--collective", "baseline", "--chunks", "8"])
    assert out["collective_policy"] == "baseline"
    assert executed(capsys, argv)["collective_policy"] == "themis"
