"""Hardening: malformed inputs through every command, infeasible floors, NaN
guards in training, damaged checkpoints and determinism.

Inputs: every bad input gives one clear error naming the file (or flag) and the
field, the CLI prints it without a traceback and exits with status 2, and nothing is half-written.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hps.config.files import atomic_write_text, check_output_path
from hps.errors import ConfigError, TrainingDiverged
from hps.rl import checkpoint
from hps.rl.driver import TrainState, run_chunks
from hps.rl.session import read_metrics, train_session
from tests.helpers import TINY as TINY_5_CHUNKS
from tests.helpers import assert_same_params, run_cli_output

REPO = Path(__file__).resolve().parents[1]
SMALL_CATALOG = (REPO / "topologies" / "catalogs" / "small.toml").read_text()
NETWORK = (REPO / "topologies" / "networks" / "3d-switch-8x8x8.toml").read_text()
PODS = str(REPO / "tests" / "data" / "pods.toml")
LAYER = (
    "[[layer]]\nname='a'\nkind='dense'\nflops=1.0\nmem_bytes=1.0\nio_bytes=0.0\nact_bytes=1.0\n"
    "dense_param_bytes=1.0\nsparse_param_bytes=0.0\n"
)
SCHEDULE = ",".join(["cpu"] * 7)
TRAIN_CONFIG = "from hps.placement.agent.train import TrainConfig\n"

# The tiny run of tests/helpers.py (its experiment file trains 5 chunks), here 2 chunks: the
# same compiled programs serve this file and tests/test_checkpoint.py.
TINY = dataclasses.replace(TINY_5_CHUNKS, num_chunks=2)

# name -> file text; each is one kind of malformed input: not TOML, a wrong type, a missing field, a bad value
INPUTS = {
    "catalog-not-toml.toml": "name = 'x'\n[[resource]\n",
    "catalog-wrong-type.toml": SMALL_CATALOG.replace("memory_GiB = 512.0", 'memory_GiB = "lots"'),
    "catalog-missing-price.toml": SMALL_CATALOG.replace("price_per_hour = 2.0\n", "", 1),
    "catalog-zero-price.toml": SMALL_CATALOG.replace("price_per_hour = 2.0", "price_per_hour = 0.0"),
    "catalog-negative-bandwidth.toml": SMALL_CATALOG.replace("bandwidth_GiBps = 5.0", "bandwidth_GiBps = -5.0", 1),
    "catalog-unknown-algorithm.toml": SMALL_CATALOG.replace('algorithm = "ring"', 'algorithm = "tree"', 1),
    "catalog-zero-size.toml": SMALL_CATALOG.replace("size = 16", "size = 0", 1),
    "network-not-toml.toml": "name = \n",
    "network-zero-bandwidth.toml": NETWORK.replace("bandwidth_GiBps = 50.0", "bandwidth_GiBps = 0", 1),
    "network-unknown-algorithm.toml": NETWORK.replace('"halving_doubling"', '"butterfly"', 1),
    "network-wrong-type.toml": NETWORK.replace("size = 8", 'size = "eight"', 1),
    "workload-empty.toml": "name = 'w'\n",
    "workload-not-toml.toml": "name = 'w'\n[[layer]\nname=",
    "workload-negative.toml": "name='w'\n" + LAYER.replace("flops=1.0", "flops=-1.0"),
    "workload-wrong-type.toml": "name='w'\n" + LAYER.replace("flops=1.0", "flops='many'"),
    "workload-missing-field.toml": "name='w'\n" + LAYER.replace("flops=1.0\n", ""),
    "workload-unknown-kind.toml": "name='w'\n" + LAYER.replace("kind='dense'", "kind='conv'"),
    "workload-no-model.toml": "name='w'\n[defaults]\nbatch=8\nthroughput=1\nsamples=1\n" + LAYER,
    "plan-not-json.json": "{not json",
    "plan-list.json": "[1, 2]",
    "plan-schedule-number.json": '{"schedule": 5, "instance": {"workload": "mlp"}}',
    "plan-schedule-ints.json": '{"schedule": [1, 2, 3, 4], "instance": {"workload": "mlp"}}',
    "plan-batch-string.json": '{"schedule": ["cpu", "cpu", "cpu", "cpu"], '
    '"instance": {"workload": "mlp", "batch": "big"}}',
    "plan-workload-number.json": '{"schedule": ["cpu", "cpu", "cpu", "cpu"], "instance": {"workload": 3}}',
    "experiment-syntax.py": "CONFIG = (\n",
    "experiment-zero-envs.py": TRAIN_CONFIG + "CONFIG = TrainConfig(num_envs=0)\n",
    "experiment-negative-lr.py": TRAIN_CONFIG + "CONFIG = TrainConfig(learning_rate=-1.0)\n",
    "experiment-zero-updates.py": TRAIN_CONFIG + "CONFIG = TrainConfig(updates_per_chunk=0)\n",
    "usermodel.py": "def not_layered():\n    return 3\n",
}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("inputs")
    for name, text in INPUTS.items():
        (folder / name).write_text(text)
    return folder


def instance(**flags) -> list[str]:
    """The instance flags of a small job, with `flags` replacing (None: dropping) some."""
    values = {
        "catalog": "small",
        "workload": "ctr-dnn",
        "batch": "1024",
        "throughput": "1000",
        "samples": "1e8",
        **flags,
    }
    return [arg for name, value in values.items() if value is not None for arg in (f"--{name}", value)]


def mlp(*extra) -> list[str]:
    return ["--workload", "mlp", "--catalog", PODS, "--schedule", "cpu,cpu,cpu,cpu", "--batch", "32", *extra]


# (argv, words the error must contain); IN/ stands for the inputs folder, OUT/ for the empty
# working folder of the case, whose output paths must not exist afterwards.
MATRIX = [
    # search: files
    (["search", *instance(catalog="IN/catalog-not-toml.toml")], ["catalog-not-toml.toml", "not valid TOML"]),
    (["search", *instance(catalog="IN/catalog-wrong-type.toml")], ["resource[0].memory_GiB", "must be a number"]),
    (["search", *instance(catalog="IN/catalog-missing-price.toml")], ["resource[0].price_per_hour", "missing"]),
    (["search", *instance(catalog="IN/catalog-zero-price.toml")], ["resource[0].price_per_hour", "must be > 0"]),
    (["search", *instance(workload="IN/workload-empty.toml")], ["workload-empty.toml", "empty workload"]),
    (["search", *instance(workload="IN/workload-negative.toml")], ["layer[0].flops", "must be >= 0"]),
    (["search", *instance(workload="OUT/missing.toml")], ["--workload", "no such workload file"]),
    (["search", *instance(catalog="OUT/missing.toml")], ["--catalog", "no such file"]),
    # search: flags
    (["search", *instance(workload="no-such-model")], ["--workload", "unknown workload 'no-such-model'"]),
    (["search", *instance(batch="0")], ["--batch", "positive"]),
    (["search", *instance(throughput="nan")], ["--throughput", "positive"]),
    (["search", *instance(samples="-1")], ["--samples", "positive"]),
    (["search", *instance(batch="lots")], ["--batch", "invalid float value"]),
    (["search", *instance(), "--chunks", "0"], ["--chunks", "1..1024"]),
    (["search", *instance(), "--method", "annealing"], ["--method", "invalid choice"]),
    (["search", *instance(), "--method", "greedy", "--evaluations", "0"], ["--evaluations", "at least 3"]),
    (["search", *instance(), "--method", "random", "--evaluations", "-5"], ["--evaluations", "at least 1"]),
    (["search", *instance(), "--set", "slots=0"], ["--set", "slots", "positive"]),
    (["search", *instance(), "--set", "bogus"], ["--set", "NAME=VALUE"]),
    # evaluate
    (
        ["evaluate", *instance(catalog="IN/catalog-negative-bandwidth.toml"), "--schedule", SCHEDULE],
        ["dimension[0].bandwidth_GiBps", "must be > 0"],
    ),
    (
        ["evaluate", *instance(catalog="IN/catalog-unknown-algorithm.toml"), "--schedule", SCHEDULE],
        ["dimension[0].algorithm", "'tree'"],
    ),
    (
        ["evaluate", *instance(catalog="IN/catalog-zero-size.toml"), "--schedule", SCHEDULE],
        ["dimension[0].size", ">= 1"],
    ),
    (
        ["evaluate", *instance(workload="IN/workload-wrong-type.toml"), "--schedule", "cpu"],
        ["layer[0].flops", "must be a number"],
    ),
    (
        ["evaluate", *instance(workload="IN/workload-missing-field.toml"), "--schedule", "cpu"],
        ["layer[0].flops", "missing"],
    ),
    (
        ["evaluate", *instance(workload="IN/workload-unknown-kind.toml"), "--schedule", "cpu"],
        ["layer[0].kind", "'conv'"],
    ),
    (["evaluate", *instance(workload="IN/workload-not-toml.toml"), "--schedule", "cpu"], ["not valid TOML"]),
    (
        ["evaluate", *instance(), "--schedule", ",".join(["tpu"] * 7)],
        ["--schedule", "layer[0]", "unknown resource type 'tpu'"],
    ),
    (["evaluate", *instance(), "--schedule", "cpu,,cpu"], ["--schedule", "entry 2 of 'cpu,,cpu' is empty"]),
    (["evaluate", *instance(), "--collective", "ring"], ["--collective", "invalid choice"]),
    # collective
    (["collective", "--network", "IN/network-not-toml.toml"], ["network-not-toml.toml", "not valid TOML"]),
    (["collective", "--network", "IN/network-zero-bandwidth.toml"], ["dimension[0].bandwidth_GiBps", "must be > 0"]),
    (["collective", "--network", "IN/network-unknown-algorithm.toml"], ["dimension[0].algorithm", "'butterfly'"]),
    (["collective", "--network", "IN/network-wrong-type.toml"], ["dimension[0].size", "must be an integer"]),
    (["collective", "--network", "OUT/missing.toml"], ["--network", "no such file"]),
    (["collective", "--size", "0"], ["--size", "positive"]),
    (["collective", "--size", "1XB"], ["--size", "'1XB'"]),
    (["collective", "--chunks", "-1"], ["--chunks", "between 1 and 1024"]),
    (["collective", "--intra", "lifo"], ["--intra", "invalid choice"]),
    (["collective", "--policy", "learned"], ["--checkpoint"]),
    (["collective", "--policy", "learned", "--checkpoint", "OUT/none"], ["none", "no such directory"]),
    (["collective", "--iteration", "resnet50", "--batch-per-npu", "0"], ["--batch-per-npu", "between 1 and"]),
    (["collective", "--iteration", "resnet50", "--resource", "tpu"], ["--resource", "'tpu'"]),
    (["collective", "--iteration", "IN/workload-empty.toml"], ["workload-empty.toml", "empty workload"]),
    (["collective", "--iteration", "no-such-model"], ["--iteration", "unknown workload"]),
    (["collective", "--plot", "OUT/"], ["--plot", "is a directory"]),
    (["collective", "--plot", "IN/plan-list.json/gantt.png"], ["--plot", "not a directory"]),
    # train
    (["train", "OUT/missing.py", "--out", "OUT/run"], ["missing.py", "no such experiment file"]),
    (["train", "IN/experiment-syntax.py", "--out", "OUT/run"], ["experiment-syntax.py", "SyntaxError"]),
    (
        ["train", "IN/experiment-zero-envs.py", "--out", "OUT/run"],
        ["experiment-zero-envs.py", "CONFIG.num_envs", ">= 1"],
    ),
    (["train", "IN/experiment-negative-lr.py", "--out", "OUT/run"], ["CONFIG.learning_rate", "> 0"]),
    (["train", "IN/experiment-zero-updates.py", "--out", "OUT/run"], ["CONFIG.updates_per_chunk", ">= 1"]),
    (
        ["train", "IN/catalog-not-toml.toml", "--out", "OUT/run"],
        ["catalog-not-toml.toml", "Python module (.py)", "was not run"],
    ),
    (["train", "--envs", "0", "--out", "OUT/run"], ["--envs", "must be at least 1"]),
    (["train", "--envs", "24", "--out", "OUT/run"], ["--envs", "multiple of samples_per_instance (16)"]),
    (["train", "--chunks", "-1", "--out", "OUT/run"], ["--chunks", "must be at least 1"]),
    (["train", "--minutes", "0", "--out", "OUT/run"], ["--minutes", "between 0.1 and"]),
    (["train", "--eval-every", "-1", "--out", "OUT/run"], ["--eval-every"]),
    (["train", "--num-processes", "2", "--out", "OUT/run"], ["--num-processes", "--coordinator"]),
    (
        ["train", "--kind", "collective", "--envs", "12", "--out", "OUT/run"],
        ["--envs", "multiple of samples_per_instance (8)"],
    ),
    (["train", "--kind", "tabular", "--out", "OUT/run"], ["--kind", "invalid choice"]),
    (["train", "--out", "IN/plan-list.json"], ["--out", "is a file"]),
    # plan
    (["plan", "--checkpoint", "OUT/none", *instance()], ["none", "no such directory"]),
    (["plan", "--checkpoint", "IN", *instance()], ["holds no checkpoint"]),
    (["plan", "--checkpoint", "IN", *instance(), "--plans", "0"], ["--plans", "at least 1"]),
    (["plan", "--checkpoint", "IN", *instance(), "--out", "OUT/"], ["--out", "is a directory"]),
    (
        ["plan", "--checkpoint", "IN", *instance(catalog="IN/catalog-zero-price.toml")],
        ["price_per_hour", "must be > 0"],
    ),
    # execute
    (
        ["execute", "IN/plan-not-json.json", "--out", "OUT/report.json"],
        ["plan-not-json.json", "not valid JSON"],
    ),
    (["execute", "IN/plan-list.json"], ["plan-list.json", "instance", "not a plan written by `hps plan --out`"]),
    (
        ["execute", "IN/plan-schedule-number.json"],
        ["plan-schedule-number.json", "schedule", "list of resource type names"],
    ),
    (["execute", "IN/plan-schedule-ints.json"], ["plan-schedule-ints.json", "schedule"]),
    (["execute", "IN/plan-batch-string.json"], ["plan-batch-string.json", "instance.batch", "must be a number"]),
    (
        ["execute", "IN/plan-workload-number.json"],
        ["plan-workload-number.json", "instance.workload", "must be a non-empty string"],
    ),
    (["execute", "OUT/missing.json"], ["missing.json", "file not found"]),
    (["execute", *mlp("--steps", "0")], ["--steps", "at least 1"]),
    (["execute", *mlp("--micro-batches", "0")], ["--micro-batches", "at least 1"]),
    (["execute", *mlp("--lr", "nan")], ["--lr", "positive"]),
    (["execute", *mlp("--devices", "tpu=0-3")], ["--devices", "unknown resource type 'tpu'"]),
    (["execute", *mlp("--replicas", "0")], ["--replicas", "1 <= k"]),
    (["execute", *mlp("--policy", "learned", "--checkpoint", "OUT/none")], ["none", "no such directory"]),
    (["execute", *mlp()[:-1], "1.5"], ["--batch", "whole number"]),
    (
        ["execute", "--workload", "IN/workload-no-model.toml", "--catalog", PODS, "--schedule", "cpu"],
        ["w: has no Flax model"],
    ),
    (
        ["execute", "--workload", "mlp", "--catalog", "IN/catalog-zero-price.toml", "--schedule", "cpu"],
        ["price_per_hour"],
    ),
    (["execute", *mlp("--out", "IN/plan-list.json/report.json")], ["--out", "not a directory"]),
    # profile
    (
        ["profile", "--workload", "mlp", "--catalog", PODS, "--repeats", "0", "--out", "OUT/m.toml"],
        ["--repeats", "at least 1"],
    ),
    (
        ["profile", "--workload", "mlp", "--catalog", PODS, "--micro-batch", "0", "--out", "OUT/m.toml"],
        ["--micro-batch", "at least 1"],
    ),
    (
        ["profile", "--workload", "mlp", "--catalog", PODS, "--types", ",", "--out", "OUT/m.toml"],
        ["--types", "names no resource type"],
    ),
    (
        ["profile", "--workload", "mlp", "--catalog", PODS, "--types", "tpu", "--out", "OUT/m.toml"],
        ["--types", "not in the catalogue"],
    ),
    (
        ["profile", "--workload", "mlp", "--catalog", PODS, "--devices", "cpu=0-99", "--out", "OUT/m.toml"],
        ["--devices", "LAST < 8"],
    ),
    (["profile", "--workload", "resnet50", "--catalog", PODS, "--out", "OUT/m.toml"], ["resnet50", "no Flax model"]),
    (["profile", "--workload", "mlp", "--catalog", PODS, "--out", "OUT/"], ["--out", "is a directory"]),
    # workload
    (["workload", "export", "no-such-model", "--out", "OUT/w.toml"], ["unknown workload 'no-such-model'"]),
    (["workload", "export", "ctr-dnn", "--set", "hidden=-1,3", "--out", "OUT/w.toml"], ["--set", "ctr-dnn.hidden"]),
    (["workload", "export", "ctr-dnn", "--out", "OUT/"], ["--out", "is a directory"]),
    (["workload", "export", "ctr-dnn", "--out", "IN/plan-list.json/w.toml"], ["--out", "not a directory"]),
    (["workload", "derive", "mlp", "--batch", "0", "--out", "OUT/w.toml"], ["--batch", "positive"]),
    (["workload", "derive", "no_such_module:factory", "--out", "OUT/w.toml"], ["no_such_module", "cannot import"]),
    (
        ["workload", "derive", "IN/usermodel.py:missing", "--out", "OUT/w.toml"],
        ["usermodel.py", "no callable 'missing'"],
    ),
    (
        ["workload", "derive", "IN/usermodel.py:not_layered", "--out", "OUT/w.toml"],
        ["not_layered", "not a LayeredModel"],
    ),
    (["workload", "derive", "mlp", "--out", "OUT/"], ["--out", "is a directory"]),
    (["workload", "inspect"], ["invalid choice: 'inspect'"]),
    (["workload", "list", "extra"], ["unrecognized arguments"]),
    # bench
    (["bench", "placement", "--seconds", "0"], ["--seconds", "must be between 0.01 and 3600"]),
    (["bench", "collective", "--seconds", "nan"], ["--seconds", "must be a finite number"]),
    (["bench", "gpu"], ["invalid choice: 'gpu'"]),
]


def run_cli(argv: list[str], capsys) -> tuple[int, str]:
    """(exit status, stderr) of `hps ARGV` in-process; argparse's own errors exit too."""
    code, _, err = run_cli_output(argv, capsys)
    return code, err


def run_json(argv: list[str], capsys) -> dict:
    code, out, err = run_cli_output([*argv, "--json"], capsys)
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize(
    "argv, needles", MATRIX, ids=[" ".join(argv[:2]) + f"-{i}" for i, (argv, _) in enumerate(MATRIX)]
)
def test_malformed_input_gives_one_clear_error_exit_2_and_writes_nothing(
    argv, needles, inputs, tmp_path, monkeypatch, capsys
):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # a default output path (profile's NAME-measured.toml) lands here
    argv = [
        arg.replace("IN/", f"{inputs}/").replace("OUT/", f"{work}/") if arg != "IN" else str(inputs) for arg in argv
    ]
    before = sorted(inputs.rglob("*"))
    code, err = run_cli(argv, capsys)
    assert code == 2, err
    assert "Traceback" not in err
    assert all(needle in err for needle in needles), err
    lines = [line for line in err.replace("\r", "\n").splitlines() if line.strip() and "%|" not in line]  # no bars
    assert sum("error:" in line for line in lines) == 1, err
    assert len(lines) == 1 or lines[0].startswith("usage:"), err  # one message (argparse's comes after its usage)
    assert list(work.iterdir()) == []  # no output, no run folder, no temporary file
    assert sorted(inputs.rglob("*")) == before


@pytest.mark.slow
def test_errors_reach_the_process_without_a_traceback_and_leave_no_output(inputs, tmp_path):
    """The same, through the console entry point as a process: stderr holds the message only."""
    cases = [
        [
            "evaluate",
            "--catalog",
            str(inputs / "catalog-wrong-type.toml"),
            "--workload",
            "ctr-dnn",
            "--schedule",
            "cpu",
        ],
        ["execute", str(inputs / "plan-batch-string.json"), "--out", str(tmp_path / "report.json")],
        ["train", str(inputs / "experiment-zero-envs.py"), "--out", str(tmp_path / "run")],
        ["workload", "export", "ctr-dnn", "--out", str(tmp_path)],
    ]
    env = dict(os.environ, JAX_COMPILATION_CACHE_DIR=jax.config.jax_compilation_cache_dir)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "hps.cli.main", *argv],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for argv in cases
    ]
    for argv, proc in zip(cases, procs):
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 2, (argv, stderr[-2000:])
        assert stderr.startswith(f"hps {argv[0]}: error: ") and stderr.count("\n") == 1, stderr[-2000:]  # one line
        assert stdout == ""
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- atomic writes


def test_atomic_write_replaces_the_file_whole_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "sub" / "report.json"
    atomic_write_text(path, "first\n")
    atomic_write_text(path, "second\n")
    assert path.read_text() == "second\n"
    assert [p.name for p in path.parent.iterdir()] == ["report.json"]
    assert oct(path.stat().st_mode & 0o777) == "0o644"


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary_one(tmp_path, monkeypatch):
    path = tmp_path / "report.json"
    path.write_text("old\n")

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(ConfigError, match="report.json: cannot write: No space left on device"):
        atomic_write_text(path, "new\n")
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_output_paths_are_checked_before_the_work(tmp_path):
    (tmp_path / "file").write_text("")
    assert check_output_path(tmp_path / "new" / "x.json", "--out") == tmp_path / "new" / "x.json"
    with pytest.raises(ConfigError, match="--out: .* is a directory"):
        check_output_path(tmp_path, "--out")
    with pytest.raises(ConfigError, match="--out: .*file is not a directory"):
        check_output_path(tmp_path / "file" / "x.json", "--out")
    assert not (tmp_path / "new").exists()  # checking creates nothing


# ---------------------------------------------------------------- a trained run to damage and diverge


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(run folder, parameters) of a clean 2-chunk session of TINY (checkpoints at updates 2 and 4)."""
    out = tmp_path_factory.mktemp("trained")
    state, _ = train_session(TINY, out, evaluate=False)
    return out, jax.tree.map(np.asarray, jax.device_get(state.params))


# ---------------------------------------------------------------- NaN / inf guards


def tiny_state() -> TrainState:
    return TrainState(
        params={"w": jnp.ones(3)},
        opt_state=(),
        baseline=jnp.float32(0.0),
        key=jnp.zeros(2, jnp.uint32),
        step=jnp.int32(0),
    )


def chunk_that_breaks(after_update: int, what: str):
    """A stand-in train chunk of 2 updates whose loss or parameters turn NaN past `after_update`."""

    def train_chunk(state):
        state = state.replace(step=state.step + 2)
        broken = int(state.step) > after_update
        if broken and what == "params":
            state = state.replace(params={"w": state.params["w"].at[1].set(jnp.inf)})
        loss = jnp.nan if broken and what == "loss" else 0.5
        return state, {"loss": jnp.float32(loss)}

    return train_chunk


@pytest.mark.parametrize(
    "what, message", [("loss", "the mean loss is nan"), ("params", "the policy parameters hold NaN or inf")]
)
def test_run_chunks_stops_on_a_non_finite_chunk_before_anyone_sees_its_state(what, message):
    seen = []
    with pytest.raises(TrainingDiverged, match=rf"chunk 2 \(updates 4-5\): {message}"):
        run_chunks(chunk_that_breaks(4, what), tiny_state(), 2, 5, on_chunk=lambda chunk, state, m: seen.append(chunk))
    assert seen == [0, 1]  # the broken chunk never reaches on_chunk, where a session saves its checkpoint


@pytest.mark.slow
def test_hps_train_stops_on_divergence_exit_2_and_keeps_the_last_good_checkpoint(
    tmp_path, experiment, trained, monkeypatch, capsys
):
    """A chunk whose parameters turn NaN (injected after the real jitted chunk 2): `hps train`
    exits 2 with a message naming the run folder and the chunk, saves nothing of that chunk, and
    the latest checkpoint restores the parameters of the clean run's 2 chunks."""
    from hps.placement.agent import train as train_module

    real_make_train = train_module.make_train

    def make_poisoned_train(config, **kwargs):
        real_chunk = real_make_train(config, **kwargs)

        def train_chunk(state):
            state, metrics = real_chunk(state)
            if int(state.step) > 2 * config.updates_per_chunk:
                state = state.replace(params=jax.tree.map(lambda x: x * jnp.nan, state.params))
            return state, metrics

        return train_chunk

    monkeypatch.setattr(train_module, "make_train", make_poisoned_train)
    out = tmp_path / "run"
    code, err = run_cli(
        ["train", str(experiment), "--out", str(out), "--chunks", "4", "--eval-every", "0", "--json"], capsys
    )
    assert code == 2 and "Traceback" not in err
    message = err.strip().splitlines()[-1]
    assert message.startswith(f"hps train: error: {out}: training diverged in chunk 2 (updates 4-5)"), err
    assert "parameters hold NaN or inf" in message and "last good checkpoint (update 4)" in message
    assert [r["chunk"] for r in read_metrics(out / "metrics.jsonl")] == [0, 1]
    _, params, spec = checkpoint.load_policy(out / "checkpoints")
    assert spec["step"] == 4
    assert all(np.all(np.isfinite(np.asarray(leaf))) for leaf in jax.tree.leaves(params))
    assert_same_params(params, trained[1])


# ---------------------------------------------------------------- damaged checkpoints


def damage(run: Path, how: str) -> Path:
    """Damage the latest checkpoint step of a copy of `run` in one of the ways a disk or a
    person can: state files overwritten, the spec not JSON, the state folder gone."""
    latest = max((p for p in (run / "checkpoints").iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    if how == "state-bytes":
        for path in (latest / "state").rglob("*"):
            if path.is_file() and path.stat().st_size > 0 and "metadata" not in path.name:
                path.write_bytes(b"\0" * 7)
    elif how == "spec-garbage":
        for path in (latest / "spec").rglob("*"):
            if path.is_file():
                path.write_text("{not json")
    elif how == "state-missing":
        shutil.rmtree(latest / "state")
    return latest


DAMAGES = ["state-bytes", "spec-garbage", "state-missing"]


@pytest.mark.parametrize("how", DAMAGES)
@pytest.mark.slow
def test_plan_from_a_damaged_checkpoint_exits_2_naming_the_folder(how, tmp_path, trained, capsys):
    run = tmp_path / "run"
    shutil.copytree(trained[0], run)
    latest = damage(run, how)
    plan_file = tmp_path / "plan.json"
    code, err = run_cli(
        ["plan", "--checkpoint", str(run), *instance(), "--plans", "16", "--out", str(plan_file)], capsys
    )
    assert code == 2 and "Traceback" not in err
    assert f"hps plan: error: {latest}" in err
    assert not plan_file.exists()


@pytest.mark.parametrize("how", DAMAGES)
@pytest.mark.slow
def test_train_resumes_past_a_damaged_checkpoint_from_the_step_before(how, tmp_path, experiment, trained, capsys):
    """A damaged latest step is moved aside with one message naming it, and training resumes
    from the step before to the clean run's parameters, every chunk's metrics once."""
    run = tmp_path / "run"
    shutil.copytree(trained[0], run)
    chunks = len(read_metrics(run / "metrics.jsonl"))
    latest = damage(run, how)
    code, err = run_cli(
        ["train", str(experiment), "--out", str(run), "--chunks", str(chunks), "--eval-every", "0"], capsys
    )
    assert code == 0 and "Traceback" not in err
    assert f"damaged checkpoint steps {latest.name}" in err and "resuming from step" in err
    assert (run / "damaged-checkpoints" / latest.name).is_dir()  # moved aside; the step is saved anew
    document = json.loads((run / "manifest.json").read_text())
    assert document["outputs"]["damaged-checkpoints"] == document["runs"][-1]["run_id"]  # the resume set them aside
    assert [r["chunk"] for r in read_metrics(run / "metrics.jsonl")] == list(range(chunks))
    _, params, spec = checkpoint.load_policy(run / "checkpoints")
    assert spec["step"] == int(latest.name)
    assert_same_params(params, trained[1])


@pytest.mark.slow
def test_damaged_checkpoint_error_reaches_the_process_without_a_traceback(tmp_path, trained):
    run = tmp_path / "run"
    shutil.copytree(trained[0], run)
    latest = damage(run, "state-bytes")
    env = dict(os.environ, JAX_COMPILATION_CACHE_DIR=jax.config.jax_compilation_cache_dir)
    proc = subprocess.run(
        [sys.executable, "-m", "hps.cli.main", "plan", "--checkpoint", str(run), *instance()],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert proc.stderr.startswith(f"hps plan: error: {latest}: state: cannot restore the training state")
    assert proc.stderr.count("\n") == 1 and proc.stdout == ""  # the message alone: no traceback, no log lines


@pytest.mark.slow
def test_removing_the_damaged_step_resumes_from_the_one_before_to_the_clean_result(
    tmp_path, experiment, trained, capsys
):
    """What the error message advises: without the damaged latest step, `hps train` resumes from
    the step before and reaches the clean run's parameters."""
    run = tmp_path / "run"
    shutil.copytree(trained[0], run)
    shutil.rmtree(damage(run, "state-bytes"))
    code, _ = run_cli(
        ["train", str(experiment), "--out", str(run), "--chunks", "2", "--eval-every", "0", "--json"], capsys
    )
    assert code == 0
    assert [r["chunk"] for r in read_metrics(run / "metrics.jsonl")] == [0, 1]
    _, params, spec = checkpoint.load_policy(run / "checkpoints")
    assert spec["step"] == 4
    assert_same_params(params, trained[1])


# ---------------------------------------------------------------- infeasible throughput floors


def reached(report: dict, stage: int, batch: float) -> str:
    """The throughput a stage of a report reaches, as the reason prints it."""
    return f"{batch / report['stages'][stage]['time']:,.0f} samples/s"


@pytest.mark.parametrize(
    "schedule, throughput, want",
    [
        (
            "cpu,cpu,gpu-a,gpu-a,gpu-a,gpu-a,gpu-a",
            "1e12",
            "throughput at the stage starting at layer 0 (embedding): all 16 units of cpu (its max_units) "
            "reach {reached}, below the floor of 1e+12 samples/s",
        ),
        (
            ",".join(["gpu-b"] * 7),
            "4e5",
            "memory at the stage starting at layer 0 (embedding): it does not fit in 16 GiB per unit even on all "
            "8 units of gpu-b (its max_units)",
        ),
        (
            "cpu,gpu-b,cpu,gpu-b,cpu,gpu-b,cpu",
            "4e5",
            "pooled_cap at the stage starting at layer 1 (concat): the stages on gpu-b together need 9 units, "
            "above its max_units of 8",
        ),
    ],
)
def test_evaluate_says_which_stage_fails_which_constraint_and_by_how_much(schedule, throughput, want, capsys):
    argv = ["evaluate", *instance(throughput=throughput), "--schedule", schedule]
    report = run_json(argv, capsys)
    assert report["feasible"] is False and report["cost"] is None
    assert report["reason"] == want.format(reached=reached(report, 0, 1024))
    code, out, _ = run_cli_output(argv, capsys)
    assert code == 0 and f"INFEASIBLE: {report['reason']}" in out and "cost        -" in out


@pytest.mark.slow
def test_search_says_plainly_when_no_method_meets_the_floor(capsys):
    code, out, err = run_cli_output(["search", *instance(throughput="1e12")], capsys)
    assert code == 0, err
    rows = [
        line.split()
        for line in out.splitlines()
        if line.split()[:1]
        in (["exact"], ["single"], ["greedy"], ["random"], ["genetic"], ["gradient"], ["exhaustive"])
    ]
    assert len(rows) == 7 and all(row[1:4] == ["-", "-", "no"] for row in rows)  # no cost, no ratio, not feasible
    assert "no feasible plan: no method meets the floor of 1e+12 samples/s" in out
    assert "INFEASIBLE: throughput at the stage starting at layer 0 (embedding)" in out and "below the floor" in out
    assert "best (" not in out
    report = run_json(["search", *instance(throughput="1e12"), "--method", "exhaustive"], capsys)
    assert report["feasible"] is False and report["cost"] is None and "below the floor" in report["reason"]
    assert report["results"][0]["cost"] is None and report["results"][0]["reason"] == "throughput"


@pytest.mark.slow
def test_plan_says_why_no_sampled_plan_is_feasible(trained, capsys):
    argv = ["plan", "--checkpoint", str(trained[0]), *instance(throughput="1e12"), "--plans", "16"]
    report = run_json(argv, capsys)
    assert report["feasible"] is False and report["cost"] is None and report["feasible_plans"] == 0
    # the 16 plans are distinct, so the least infeasible of them (by the graded penalty) may fail
    # on memory before the unreachable floor: either way the reason names the stage and the limit
    reason = report["reason"]
    assert (
        reason.startswith("throughput at the stage starting at layer ") and "below the floor of 1e+12" in reason
    ) or (reason.startswith("memory at the stage starting at layer ") and "does not fit in" in reason), reason
    code, out, _ = run_cli_output(argv, capsys)
    assert code == 0 and "17 plans scored, 0 feasible" in out and f"INFEASIBLE: {report['reason']}" in out


# ---------------------------------------------------------------- determinism


@pytest.mark.parametrize("method", ["genetic", "random"])
def test_search_with_the_same_seed_gives_the_same_json(method, capsys):
    """Everything but the wall-clock timings is identical between two runs with one seed."""

    def without_timings(report):
        return {**report, "results": [{k: v for k, v in r.items() if k != "wall_seconds"} for r in report["results"]]}

    argv = ["search", *instance(), "--method", method, "--seed", "3", "--evaluations", "4096"]
    first, second = run_json(argv, capsys), run_json(argv, capsys)
    assert 0 < first["results"][0]["evaluations"] <= 4096
    assert without_timings(first) == without_timings(second)


def test_a_metrics_line_cut_short_by_a_kill_is_dropped_and_a_damaged_one_is_an_error(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"chunk": 0, "step": 2}\n{"chunk": 1, "st')
    assert read_metrics(path) == [{"chunk": 0, "step": 2}]
    path.write_text('{"chunk": 0, "step": 2}\nnot json\n{"chunk": 2, "step": 6}\n')
    with pytest.raises(ConfigError, match="metrics.jsonl: line 2: not a JSON metrics record"):
        read_metrics(path)
