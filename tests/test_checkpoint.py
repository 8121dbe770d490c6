"""Checkpoints, `hps train` and `hps plan`; a SIGKILL at every point of a
chunk boundary, and the resume after it, is tests/faults/runs.py."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import numpy as np
import orbax.checkpoint as ocp
import pytest
from flax import nnx

from hps.cli.main import main
from hps.collective.agent.policy import CollectivePolicy, CollectivePolicySpec
from hps.collective.agent.train import CollectiveTrainConfig
from hps.contract.types import Budget
from hps.errors import ConfigError
from hps.methods.registry import run
from hps.placement.agent.policy import PlacementPolicy, PolicySpec
from hps.placement.agent.train import run_training
from hps.rl import checkpoint
from hps.rl.modules import module_graphdef
from hps.rl.policy_kind import policy_kind_of
from hps.rl.session import final_params, read_metrics, train_session
from tests.helpers import SMALL, TINY, assert_same_params, check_result

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """(run folder, final params) of an uninterrupted session of TINY."""
    out = tmp_path_factory.mktemp("uninterrupted")
    state, records = train_session(TINY, out, evaluate=False)
    assert [r["chunk"] for r in records] == list(range(TINY.num_chunks))
    return out, final_params(state)


@pytest.mark.slow
def test_session_equals_plain_training_and_saves_every_chunk(uninterrupted):
    out, params = uninterrupted
    state, _ = run_training(TINY)
    assert_same_params(final_params(state), params)
    manager = checkpoint.open_manager(out / "checkpoints", read_only=True)
    assert manager.latest_step() == TINY.num_chunks * TINY.updates_per_chunk
    step, document = checkpoint.read_spec(manager)
    assert document["format_version"] == checkpoint.FORMAT_VERSION and document["policy"]["hidden"] == 16
    assert checkpoint.config_from_document(document, "x") == TINY
    assert (out / "learning_curve.png").stat().st_size > 10_000


@pytest.mark.slow
def test_restore_rejects_another_architecture_and_damaged_files(tmp_path, uninterrupted):
    out = tmp_path / "copy"
    shutil.copytree(uninterrupted[0], out)
    manager = checkpoint.open_manager(out / "checkpoints")
    with pytest.raises(ConfigError, match=r"spec\.train\.policy"):
        checkpoint.restore(manager, dataclasses.replace(TINY, policy=PolicySpec(hidden=32)))
    latest = out / "checkpoints" / str(manager.latest_step())
    for path in (latest / "state").rglob("*"):
        if path.is_file() and path.stat().st_size > 0 and "metadata" not in path.name:
            path.write_bytes(b"\0" * 7)
    with pytest.raises(ConfigError, match=r"state: cannot restore"):
        checkpoint.restore(manager, TINY)
    (latest / "spec").rename(latest / "spec-gone")
    with pytest.raises(ConfigError, match=r"spec"):
        checkpoint.read_spec(manager)
    with pytest.raises(ConfigError, match="no such checkpoint directory"):
        checkpoint.open_manager(tmp_path / "nowhere", read_only=True)


@pytest.mark.parametrize("kind", ["placement", "collective"])
def test_the_abstract_state_a_restore_reads_into_is_the_fresh_states_layout(kind):
    """restore reads into shapes traced without initialising anything: the same tree, shapes,
    dtypes and shardings as a real fresh state of either kind, on one device and on eight."""
    config = TINY if kind == "placement" else CollectiveTrainConfig(policy=CollectivePolicySpec(hidden=16))
    for devices in (jax.devices()[:1], jax.devices()):
        real = jax.tree.map(ocp.utils.to_shape_dtype_struct, policy_kind_of(config).init_state(config, devices=devices))
        abstract = checkpoint.abstract_state(config, devices=devices)
        assert jax.tree.structure(abstract) == jax.tree.structure(real)
        for a, b in zip(jax.tree.leaves(abstract), jax.tree.leaves(real)):
            assert (a.shape, a.dtype, a.sharding) == (b.shape, b.dtype, b.sharding)


def test_policy_structure_is_the_eager_builds_without_building_one():
    """The policies' graphdefs come from an abstract build (hps.rl.modules); merged with
    parameters they must be the modules an eager build gives."""
    for module_type, spec in ((PlacementPolicy, PolicySpec(hidden=16)), (CollectivePolicy, CollectivePolicySpec())):
        graphdef, _ = nnx.split(module_type(spec, rngs=nnx.Rngs(0)))
        assert module_graphdef(module_type, spec) == graphdef


def test_hps_plan_refuses_a_checkpoint_of_the_format_before_naming_both_versions(tmp_path, uninterrupted, capsys):
    """A format-2 checkpoint (its policy spec had max_layers: a policy fixed at 32 layers) is
    refused by hps plan with exit 2, naming the file, the field, its format and the one this
    hps reads, and nothing else is printed."""
    out = tmp_path / "old"
    shutil.copytree(uninterrupted[0], out)
    specs = [p for p in (out / "checkpoints").glob("*/spec/*") if p.is_file() and p.read_bytes()[:1] == b"{"]
    assert specs
    for spec_file in specs:  # every step, as an older hps wrote them
        document = json.loads(spec_file.read_text())
        document["format_version"] = 2
        document["policy"]["max_layers"] = 32
        spec_file.write_text(json.dumps(document))
    assert main(["plan", "--checkpoint", str(out), "--workload", "ctr-dnn", "--catalog", "small"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "Traceback" not in captured.err
    assert "spec.format_version" in captured.err and "checkpoint format 2" in captured.err
    assert "reads format 3" in captured.err and "hps train" in captured.err


@pytest.mark.slow
def test_hps_train_resumes_and_hps_plan_plans_an_unseen_workload(tmp_path, experiment, uninterrupted, capsys):
    out = tmp_path / "cli"
    assert main(["train", str(experiment), "--out", str(out), "--chunks", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["step"] == 4
    assert main(["train", str(experiment), "--out", str(out), "--json"]) == 0  # resumes to num_chunks
    assert json.loads(capsys.readouterr().out)["step"] == TINY.num_chunks * TINY.updates_per_chunk
    policy, params, _ = checkpoint.load_policy(out / "checkpoints")
    assert_same_params(jax.tree.map(np.asarray, params), uninterrupted[1])

    plan_file = tmp_path / "plan.json"
    code = main(
        [
            "plan",
            "--checkpoint",
            str(out),
            "--workload",
            "ctr-dnn",
            "--catalog",
            "small",
            "--plans",
            "16",
            "--json",
            "--out",
            str(plan_file),
        ]
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report == json.loads(plan_file.read_text())
    assert len(report["schedule"]) == report["stages"][-1]["last_layer"] + 1
    assert report["plans"] == 17 and 0 < report["plan_seconds"] < 5
    assert set(report["schedule"]) <= {"cpu", "gpu-a", "gpu-b"}
    assert report["instance"]["workload"] == "ctr-dnn" and report["instance"]["catalog"] == "small"
    assert report["refine_evaluations"] == 0
    assert (
        main(
            [
                "plan",
                "--checkpoint",
                str(out),
                "--workload",
                "ctr-dnn",
                "--catalog",
                "small",
                "--plans",
                "16",
                "--refine",
                "--json",
            ]
        )
        == 0
    )
    refined = json.loads(capsys.readouterr().out)  # the same samples, then stage moves from their best
    assert refined["refine_evaluations"] > 0 and refined["cost"] <= report["cost"] * (1 + 1e-6)

    # the plan file drives `hps execute PLAN.json`: a laptop-sized model on groups of the fake devices
    pods = str(Path(__file__).parent / "data" / "pods.toml")
    assert (
        main(
            [
                "plan",
                "--checkpoint",
                str(out),
                "--workload",
                "ctr-dnn-small",
                "--catalog",
                pods,
                "--batch",
                "64",
                "--plans",
                "8",
                "--json",
                "--out",
                str(plan_file),
            ]
        )
        == 0
    )
    planned = json.loads(capsys.readouterr().out)
    assert main(["execute", str(plan_file), "--devices", "cpu=0-3,gpu=4-7", "--steps", "2", "--check", "--json"]) == 0
    executed = json.loads(capsys.readouterr().out)
    assert executed["schedule"] == planned["schedule"] and executed["batch"] == 64
    assert executed["equivalent"] is True


def test_hps_plan_and_train_report_bad_inputs_without_traceback(tmp_path, capsys):
    assert main(["plan", "--checkpoint", str(tmp_path / "none"), "--workload", "ctr-dnn"]) == 2
    assert "no such directory" in capsys.readouterr().err
    bad = tmp_path / "bad.py"
    bad.write_text("CONFIG = 3\n")
    assert main(["train", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "CONFIG: must be a hps.placement.agent.train.TrainConfig" in capsys.readouterr().err
    os.makedirs(tmp_path / "empty")
    assert main(["plan", "--checkpoint", str(tmp_path / "empty"), "--workload", "ctr-dnn"]) == 2
    assert "holds no checkpoint" in capsys.readouterr().err


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_processes_match_the_single_process_run(tmp_path, experiment, uninterrupted):
    """`hps train --coordinator … --num-processes 2 --process-id I`, 4 CPU devices per process,
    against the single-process run on 8 devices: the same 8-way env sharding, gradients summed by
    gloo across processes instead of in-process, so float sums differ in order: Adam turns those
    into parameter differences bounded by a fraction of one learning-rate step."""
    out = tmp_path / "two"
    env = dict(
        os.environ,
        XLA_FLAGS="--xla_force_host_platform_device_count=4",
        JAX_COMPILATION_CACHE_DIR=jax.config.jax_compilation_cache_dir,
    )
    coordinator = f"localhost:{free_port()}"
    commands = [
        [
            sys.executable,
            "-m",
            "hps.cli.main",
            "train",
            str(experiment),
            "--out",
            str(out),
            "--json",
            "--eval-every",
            "0",
            "--coordinator",
            coordinator,
            "--num-processes",
            "2",
            "--process-id",
            str(i),
        ]
        for i in range(2)
    ]
    workers = [
        subprocess.Popen(c, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for c in commands
    ]
    outputs = [w.communicate(timeout=600) for w in workers]
    for worker, (_, stderr) in zip(workers, outputs):
        assert worker.returncode == 0, stderr[-3000:]
    stdout = outputs[0][0]
    last = json.loads(stdout[stdout.index("\n{") + 1 :])  # gloo logs its connections to stdout first
    assert last["step"] == TINY.num_chunks * TINY.updates_per_chunk
    _, params, _ = checkpoint.load_policy(out / "checkpoints")
    single = uninterrupted[1]
    differences = [np.max(np.abs(np.asarray(a) - b)) for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(single))]
    assert max(differences) < 0.5 * TINY.learning_rate * TINY.num_chunks * TINY.updates_per_chunk
    records = read_metrics(out / "metrics.jsonl")
    expected = read_metrics(uninterrupted[0] / "metrics.jsonl")
    np.testing.assert_allclose([r["loss"] for r in records], [r["loss"] for r in expected], rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose([r["reward"] for r in records], [r["reward"] for r in expected], rtol=1e-3)


COLLECTIVE_EXPERIMENT = """
from hps.collective.agent.policy import CollectivePolicySpec
from hps.collective.agent.train import CollectiveTrainConfig
from hps.methods.registry import run
from hps.contract.types import Budget
CONFIG = CollectiveTrainConfig(policy=CollectivePolicySpec(hidden=16), num_envs=64, samples_per_instance=4,
                               updates_per_chunk=2, num_chunks=2)
"""


@pytest.mark.slow
def test_collective_policy_trains_checkpoints_and_drives_hps_collective(tmp_path, capsys):
    from hps.collective.agent.evaluation import learned_orders
    from hps.collective.env.generator import collective_instance
    from hps.config.loaders import load_network
    from hps.config.paths import TOPOLOGIES
    from hps.studies import collectives as studies

    experiment = tmp_path / "collective.py"
    experiment.write_text(textwrap.dedent(COLLECTIVE_EXPERIMENT))
    out = tmp_path / "collective-run"
    assert main(["train", str(experiment), "--out", str(out), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["step"] == 4 and 0 < record["eval_utilization"] <= 1
    policy, params, spec = checkpoint.load_policy(out / "checkpoints", kind="collective")
    assert spec["kind"] == "collective" and spec["train"]["num_envs"] == 64

    network = load_network(TOPOLOGIES / "networks" / "3d-astra-2x8x4-ring-fc-switch.toml")
    assert (
        main(
            [
                "collective",
                "--network",
                "3d-astra-2x8x4-ring-fc-switch",
                "--size",
                "64MiB",
                "--chunks",
                "16",
                "--policy",
                "learned",
                "--checkpoint",
                str(out),
                "--json",
            ]
        )
        == 0
    )
    payload = json.loads(capsys.readouterr().out)
    orders = learned_orders(policy, params, collective_instance(network, 2.0**26, 16))
    want, _ = studies.single_allreduce(network, 2.0**26, 16, "learned", True, orders=orders)
    assert payload == want and len(payload["orders"]) == 16
    assert all(sorted(order) == [0, 1, 2] for order in payload["orders"])

    # the executor's gradient All-Reduce on a 2x2x2 mesh in the learned policy's orders
    pods = str(Path(__file__).parent / "data" / "pods.toml")
    assert (
        main(
            [
                "execute",
                "--workload",
                "mlp",
                "--catalog",
                pods,
                "--schedule",
                "gpu,gpu,gpu,gpu",
                "--batch",
                "32",
                "--devices",
                "gpu=0-7",
                "--replicas",
                "8",
                "--chunks",
                "4",
                "--policy",
                "learned",
                "--checkpoint",
                str(out),
                "--steps",
                "2",
                "--check",
                "--json",
            ]
        )
        == 0
    )
    executed = json.loads(capsys.readouterr().out)
    assert executed["collective_policy"] == "learned" and executed["equivalent"] is True

    assert main(["plan", "--checkpoint", str(out), "--workload", "ctr-dnn"]) == 2  # a collective policy cannot plan
    assert "spec.kind" in capsys.readouterr().err
    assert main(["collective", "--network", "3d-switch-8x8x8", "--policy", "learned"]) == 2
    assert "--checkpoint" in capsys.readouterr().err


def test_the_python_api_trains_and_plans_as_hps_train_and_hps_plan_do(uninterrupted, capsys):
    import hps

    out, params = uninterrupted
    finished = hps.train(TINY, out)  # the folder holds every chunk: nothing more trains
    assert [r["chunk"] for r in finished.records] == list(range(TINY.num_chunks))
    assert list(finished.records) == read_metrics(out / "metrics.jsonl")
    assert_same_params(jax.tree.map(np.asarray, finished.params), params)

    policy = hps.load_policy(out)
    assert policy.step == TINY.num_chunks * TINY.updates_per_chunk
    for workload in ("ctr-dnn", "dlrm"):  # SMALL's job on two workloads
        problem = hps.Problem(workload, "small", hps.Job(batch=1024.0, throughput=1000.0, samples=1e8))
        result = policy.plan(problem, plans=16)
        flags = [workload if arg == "ctr-dnn" else arg for arg in SMALL]
        assert main(["plan", "--checkpoint", str(out), *flags, "--plans", "16", "--json"]) == 0
        document = json.loads(capsys.readouterr().out)
        report = problem.report(result)
        assert report["schedule"] == document["schedule"] and result.cost == document["cost"]
        for key in ("throughput", "stages"):
            assert report[key] == document[key], key
        assert result.evaluations == document["plans"] and policy.step == document["checkpoint_step"]
        planned = run("policy", problem, Budget(60.0, 16, 0), checkpoint=str(out), samples=16)
        check_result(problem, "policy", planned, run("exact", problem, Budget(60.0, None, 0)))
        assert planned.plan == result.plan and planned.cost == result.cost
