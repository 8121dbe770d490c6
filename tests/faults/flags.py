"""Every numeric flag has a range, checked when the arguments are parsed: past it the command
exits 2 naming the flag and the range, before any run folder, lock or array exists.

Ranges (hps.config.limits, hps.cli.common): seeds 0 to 2^32 - 1; `hps plan --plans` 1 to 2^20
(and its beam's memory estimated before it is allocated); `hps search --evaluations` at most 10^7;
`hps train --minutes` 0.1 to 10^6; `hps collective --batch-per-npu` 1 to 10^6.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.helpers import run_cli_output

SEED = "99999999999999999999"
MLP = ["--workload", "mlp", "--catalog", "cloud-2024"]


def refused_at_parse(argv: list[str], capsys) -> str:
    code, out, err = run_cli_output(argv, capsys)
    assert code == 2 and out == "" and "Traceback" not in err, (code, out, err)
    return err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    "argv",
    [
        ["search", *MLP, "--seed", SEED],
        ["plan", *MLP, "--checkpoint", "none", "--seed", SEED],
        ["execute", *MLP, "--schedule", "cpu,cpu,cpu,cpu", "--seed", SEED],
        ["profile", *MLP, "--seed", SEED],
        ["search", *MLP, "--seed", "-1"],
    ],
    ids=["search", "plan", "execute", "profile", "negative"],
)
def test_seeds_past_32_bits_exit_2_naming_the_flag(argv, capsys):
    line = refused_at_parse(argv, capsys)
    assert "--seed" in line and ("4,294,967,295" in line or "at least 0" in line), line


def test_train_refuses_a_huge_seed_before_creating_its_run_folder(tmp_path, capsys):
    out = tmp_path / "run"
    line = refused_at_parse(["train", "--out", str(out), "--seed", SEED], capsys)
    assert "--seed" in line and not out.exists(), line


@pytest.mark.parametrize(
    ("argv", "flag", "words"),
    [
        (["plan", *MLP, "--checkpoint", "none", "--plans", "1000000000"], "--plans", "at most 1,048,576"),
        (["plan", *MLP, "--checkpoint", "none", "--plans", "100000000"], "--plans", "at most 1,048,576"),
        (
            ["search", *MLP, "--method", "random", "--evaluations", "1000000000000"],
            "--evaluations",
            "at most 10,000,000",
        ),
        (["search", *MLP, "--method", "genetic", "--evaluations", "100000000"], "--evaluations", "at most 10,000,000"),
        (["search", *MLP, "--method", "random", "--evaluations", "1.5"], "--evaluations", "whole number"),
        (["train", "--out", "never", "--minutes", "1e-9"], "--minutes", "between 0.1 and"),
        (["collective", "--iteration", "resnet50", "--batch-per-npu", "1e12"], "--batch-per-npu", "between 1 and"),
    ],
)
def test_numeric_flags_past_their_range_exit_2_naming_the_flag_and_the_range(argv, flag, words, capsys):
    line = refused_at_parse(argv, capsys)
    assert flag in line and words in line, line


def test_exposed_communication_hidden_by_compute_is_exactly_zero(capsys):
    argv = ["collective", "--iteration", "resnet50", "--batch-per-npu", "7e5", "--json"]
    code, out, err = run_cli_output(argv, capsys)
    assert code == 0, err
    for result in json.loads(out)["policies"].values():
        assert result["comm_end"] < result["backward"] and result["exposed_comm"] == 0.0, result


def test_a_time_budget_shorter_than_a_chunk_still_trains_one_chunk():
    from hps.rl.driver import run_chunks

    class State:
        step = 0
        params = {"w": np.zeros(2, np.float32)}

    def chunk(state):
        state.step += 2
        return state, {"loss": 0.0}

    state, history = run_chunks(chunk, State(), 2, 5, stop=lambda: True)
    assert len(history) == 1 and state.step == 2


# ------------------------------------------------------------------ execution that cannot be trusted

EXECUTE = ["execute", "--workload", "mlp", "--catalog", "cloud-2024", "--schedule", "cpu,cpu,cpu,cpu"]


def test_execute_with_a_diverging_learning_rate_ends_diverged_at_its_step(capsys):
    line = refused_at_parse([*EXECUTE, "--lr", "1e30", "--check", "--steps", "2"], capsys)
    assert "diverged at step" in line and "parameters equal" not in line, line


def test_the_parameter_comparison_never_passes_on_nan():
    from hps.executor.reference import max_relative_difference

    want = [np.ones(3)]
    assert max_relative_difference([np.array([1.0, np.nan, 1.0])], want) != 0.0
    assert not max_relative_difference([np.array([1.0, np.inf, 1.0])], want) <= 1e-5
    assert max_relative_difference([np.ones(3)], want) == 0.0


@pytest.mark.parametrize(("asked", "most"), [("512", "256"), ("3", "2")])
def test_execute_refuses_a_micro_batch_count_it_would_not_run(asked, most, capsys):
    line = refused_at_parse([*EXECUTE, "--micro-batches", asked, "--steps", "1"], capsys)
    assert "--micro-batches" in line and f"{asked} micro-batches" in line and f"the most that do is {most}" in line


# ------------------------------------------------------------------ jobs no cluster can run


@pytest.mark.parametrize(
    ("micro_batches", "words"),
    [("1000", "1000 micro-batches exceed the batch of 8 samples"), ("3", "do not split the batch of 8 samples")],
)
def test_micro_batches_a_batch_cannot_hold_are_refused_at_load(micro_batches, words, capsys):
    argv = ["evaluate", *MLP, "--schedule", "cpu,cpu,cpu,cpu", "--batch", "8", "--micro-batches", micro_batches]
    line = refused_at_parse(argv, capsys)
    assert "--micro-batches" in line and words in line, line


def test_a_workload_file_whose_default_micro_batches_exceed_its_batch_is_refused(tmp_path):
    from hps.config.loaders import load_workload, workload_to_toml
    from hps.errors import ConfigError
    from hps.workloads import resolve_workload

    path = tmp_path / "w.toml"
    text = workload_to_toml(resolve_workload("mlp"))
    path.write_text(text.replace("[defaults]\n", "[defaults]\nmicro_batches = 100000\n"))
    with pytest.raises(ConfigError) as error:
        load_workload(path)
    assert error.value.field == "defaults.micro_batches" and "exceed the batch" in error.value.problem


@pytest.mark.parametrize(("batch", "micro_batches"), [("1", None), ("3", None), ("8", "4")])
def test_no_stage_gets_more_replicas_than_a_micro_batch_has_samples(batch, micro_batches, capsys):
    """ResNet-50 at a batch of one sample once got 4 T4 replicas for its stem (a quarter sample
    each), proven optimal; each replica now runs whole samples, in every model alike."""
    from hps.config.types import Job
    from hps.costmodel.schedule.provisioning import build_instance, provision
    from hps.reference.placement import provision as reference_provision
    from hps.workloads import resolve_workload

    argv = ["search", "--workload", "resnet50", "--catalog", "cloud-2024", "--batch", batch, "--throughput", "2000"]
    argv += ["--samples", "1e6", "--method", "exact", "--json"] + (
        ["--micro-batches", micro_batches] if micro_batches else []
    )
    code, out, _ = run_cli_output(argv, capsys)
    report = json.loads(out)
    most = int(float(batch) / float(micro_batches or 1))
    assert code == 0 and report["feasible"] and all(s["replicas"] <= most for s in report["stages"])
    job = Job(float(batch), 2000.0, 1e6, micro_batches=float(micro_batches or "inf"))
    workload, inst = resolve_workload("resnet50"), build_instance(resolve_workload("resnet50"), report_catalog(), job)
    for s in report["stages"]:
        t = inst.catalog.index(s["type"])
        got = provision(inst, [s["first_layer"]], [s["last_layer"]], [t], len(report["stages"]))
        want = reference_provision(workload.layers, inst.catalog.resources[t], s["first_layer"], s["last_layer"], job,
                                   len(report["stages"]))  # fmt: skip
        assert int(got.replicas[0]) == want[0] == s["replicas"] and float(got.time[0]) == pytest.approx(want[1])


def report_catalog():
    from hps.config.loaders import load_catalog
    from hps.config.paths import resolve_topology

    return load_catalog(resolve_topology("cloud-2024", "catalogs", "--catalog"))


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["train", "--process-id", "-1", "--out", "{tmp}/r"], "--process-id: must be at least 0"),
        (["train", "--process-id", "5", "--out", "{tmp}/r"], "must be below --num-processes 1"),
        (["train", "--chunks", "1000000000000", "--out", "{tmp}/r"], "--chunks: must be at most 1,000,000"),
        (["train", "--envs", "1000000000000", "--out", "{tmp}/r"], "--envs: must be at most 1,048,576"),
        (["quickstart", "--envs", "1000000000000", "--out", "{tmp}/q"], "--envs: must be at most"),
        (["quickstart", "--chunks", "1000000000000", "--out", "{tmp}/q"], "--chunks: must be at most"),
        (["profile", *MLP, "--repeats", "1000000000"], "--repeats: must be at most 1,000"),
        (["bench", "placement", "--seconds", "1e308"], "--seconds: must be between 0.01 and 3600"),
        (["bench", "placement", "--exact-types", "4,,8"], "entry 2 of '4,,8' is empty"),
        ([*EXECUTE, "--batch", "1e12"], "a batch of 1,000,000,000,000 samples is past"),
        ([*EXECUTE, "--batch", "1e9"], "executing the plan at 1,000,000,000 samples needs about"),
        (["profile", *MLP, "--batch", "1e8", "--micro-batch", "100000000"], "profiling at 100,000,000 samples needs"),
        (["workload", "derive", "ctr-dnn-small", "--batch", "1000000000000"], "deriving the layer table"),
    ],
)
def test_counts_no_run_could_hold_are_refused_before_any_work(argv, words, tmp_path, capsys):
    """A run of 10^12 chunks or environments, 10^9 repeats, an hour-long benchmark side, or a
    batch whose generated samples alone pass memory: each once hung, aborted or ran out of memory."""
    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in argv]
    line = refused_at_parse(argv, capsys)
    assert words in line, line
    assert not (tmp_path / "r").exists() and not (tmp_path / "q").exists()
