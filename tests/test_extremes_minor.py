"""The minor cases of issue 55, one test each: flags that do not apply beside `hps evaluate --plan`
refused, `--out` switching `hps search` to the parallel-plan model said on standard error, sweep
floors and price scales held to their ranges, small costs not printed as "$0", no "nan" for a plan
past its type's network, a schedule plan given to `--plan` named as such, `hps profile`'s
micro-batch and `--out` checked before any profiling, a missing checkpoint step not called
damaged, `hps run --fresh` never leaving the old results.json beside new items, and long values
shortened in errors."""

from __future__ import annotations

import dataclasses
import errno
import json
import math
import os

import pytest

import hps
from hps.errors import CheckpointDamaged, ConfigError
from hps.methods.sequence.sweep import Sweep
from hps.studies import ExperimentConfig
from tests.helpers import run_cli_output

TRANSFORMER = ["--workload", "transformer-small", "--catalog", "small"]
SMALL_LLM = ["--workload", "gpt3-175b", "--catalog", "cloud-2026", "--set", "layers=2"]
JOB = {"batch": 64, "micro_batch": 1, "throughput": 500, "samples": 1000000, "precision": "fp32-adam", "zero": 0,
       "recompute": "none"}  # fmt: skip
PLAN = {"format": "hps-plan/2", "workload": "transformer-small", "catalog": "small", "job": JOB,
        "stages": [{"first": 0, "last": 6, "type": "gpu-b", "tp": 1, "dp": 1}]}  # fmt: skip
"""The plan `hps search --workload transformer-small --catalog small --parallel` finds: $0.000619."""


@pytest.fixture
def plan_file(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(PLAN))
    return path


# --- flags that do not apply beside --plan are refused -------------------------------------------


@pytest.mark.parametrize(
    "flags, flag",
    [
        (["--batch", "7"], "--batch"),
        (["--workload", "mlp"], "--workload"),
        (["--catalog", "cloud-2026"], "--catalog"),
        (["--collective", "baseline"], "--collective"),
        (["--chunks", "8"], "--chunks"),
        (["--sensitivity"], "--sensitivity"),
        (["--set", "layers=2"], "--set"),
        (["--micro-batches", "4"], "--micro-batches"),
        (["--throughput", "1e9"], "--throughput"),
    ],
)
def test_a_flag_the_plan_file_sets_is_refused_beside_plan_naming_it(plan_file, flags, flag, capsys):
    code, out, err = run_cli_output(["evaluate", "--plan", str(plan_file), *flags], capsys)
    assert code == 2 and out == ""
    assert err.startswith(f"hps evaluate: error: {flag}: does not apply beside --plan: ")


def test_the_flags_evaluate_plan_reads_are_taken(plan_file, capsys):
    for clock in ("roofline", "kernel"):  # the small catalogue has no kernel constants: both time alike
        code, out, err = run_cli_output(["evaluate", "--plan", str(plan_file), "--clock", clock, "--json"], capsys)
        assert code == 0, err
        assert json.loads(out)["clock"] == clock  # --clock is read
    assert run_cli_output(["evaluate", "--plan", str(plan_file), "--batch", "7"], capsys)[2].startswith(
        "hps evaluate: error: --batch: does not apply beside --plan: the plan file's job sets it"
    )


# --- --out without --parallel says it plans in the parallel-plan model ----------------------------


def test_out_without_parallel_says_on_stderr_that_it_plans_in_the_parallel_model(tmp_path, capsys):
    out = tmp_path / "p.json"
    code, text, err = run_cli_output(["search", *TRANSFORMER, "--out", str(out), "--json"], capsys)
    assert code == 0 and json.loads(text)["stages"][0]["tp"] == 1  # a parallel plan
    note = "--out writes a parallel plan file: planning in the parallel-plan model (give --parallel to silence this)"
    assert f"hps search: note: {note}\n" in err
    code, _, err = run_cli_output(["search", *TRANSFORMER, "--parallel", "--out", str(out), "--json"], capsys)
    assert code == 0 and "note" not in err
    code, _, err = run_cli_output(["search", *TRANSFORMER, "--clock", "kernel", "--json"], capsys)
    assert code == 0 and "hps search: note: --clock plans in the parallel-plan model" in err


# --- sweep floors and price scales within the documented ranges -----------------------------------


@pytest.mark.parametrize(
    "flags, expected",
    [
        (["--floors", "100,1e300"], "--floors: floors[1]: must be between 1e-06 and 1e+15 samples/s, got 1e+300"),
        (["--floors", "1e-300"], "--floors: floors[0]: must be between 1e-06 and 1e+15 samples/s, got 1e-300"),
        (["--floors", "100", "--price-scale", "1,2,1e300"], "--price-scale: price_scale[2]: 1e+300 takes "),
        (["--floors", "100", "--price-scale", "1e-300"], "--price-scale: price_scale[0]: 1e-300 takes "),
    ],
)
def test_sweep_floors_and_price_scales_past_their_ranges_are_refused_naming_the_index(
    flags, expected, capsys, monkeypatch
):
    def never(*args, **kwargs):
        raise AssertionError("a sweep with an out-of-range value started")

    monkeypatch.setattr(Sweep, "run", never)
    code, out, err = run_cli_output(["sweep", *SMALL_LLM, *flags], capsys)
    assert code == 2 and out == "" and expected in err
    if "price" in expected:
        assert "a scaled price must be between 1e-06 and 1e+09 $ per unit-hour" in err


def test_a_price_scale_within_range_for_the_scaled_types_only_is_taken(capsys):
    # 1e8 keeps l4 ($1.67/unit-hour) below 1e9 $/unit-hour, but takes gb200 ($27.04) past it
    argv = ["sweep", *SMALL_LLM, "--floors", "20", "--price-scale", "1e8", "--scale-types", "l4"]
    code, out, err = run_cli_output([*argv, "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["points"][0]["price_scale"] == 1e8
    code, _, err = run_cli_output(argv[:-2] + ["--json"], capsys)
    assert code == 2 and "--price-scale: price_scale[0]: 1e+08 takes cpu-intel's $12.7008/unit-hour to $1" in err


# --- small costs are not "$0" --------------------------------------------------------------------


def test_dollars_keep_three_significant_digits_below_one_dollar():
    from hps.report.tables import dollars

    assert dollars(0.000619123) == "$0.000619" and dollars(0.25, 2) == "$0.25" and dollars(0) == "$0"
    assert dollars(12_823.4) == "$12,823" and dollars(1.5, 2) == "$1.50" and dollars(3e-28) == "$3e-28"


def test_a_small_cost_is_printed_with_three_significant_digits(plan_file, capsys):
    code, out, err = run_cli_output(["search", *TRANSFORMER, "--parallel"], capsys)
    assert code == 0, err
    assert "cost        $0.000619\n" in out and "bound       $0.000619 (proven optimal)" in out
    assert "$0 " not in out and "$0\n" not in out
    code, out, _ = run_cli_output(["evaluate", "--plan", str(plan_file)], capsys)
    assert code == 0 and out.endswith("cost        $0.000619\n")
    schedule = ",".join(["gpu-b"] * 7)
    code, out, _ = run_cli_output(["evaluate", *TRANSFORMER, "--schedule", schedule], capsys)
    assert code == 0 and "cost        $0.000606" in out  # the schedule model's, "$0.00" before


# --- no nan for a plan past its type's network --------------------------------------------------


def test_a_plan_past_its_types_network_shows_no_nan_in_text_or_json(tmp_path, capsys):
    problem = hps.Problem("gpt3-175b", "cloud-2026", parallel=True)
    cut = [i for i, layer in enumerate(problem.workload.layers) if layer.cut_after][1]
    last = len(problem.workload.layers) - 1
    job = {"batch": 1440, "micro_batch": 72, "throughput": 60, "samples": 146484375, "precision": "bf16-adam",
           "zero": 1, "recompute": "none"}  # fmt: skip
    stages = [{"first": 0, "last": cut, "type": "h100", "tp": 8, "dp": 8},
              {"first": cut + 1, "last": last, "type": "gb200", "tp": 64, "dp": 72}]  # fmt: skip
    path = tmp_path / "net.json"
    path.write_text(json.dumps({"format": "hps-plan/2", "workload": "gpt3-175b", "catalog": "cloud-2026",
                                "job": job, "stages": stages}))  # fmt: skip
    code, out, err = run_cli_output(["evaluate", "--plan", str(path)], capsys)
    assert code == 0, err
    assert "infeasible (network): stage 1" in out and "nan" not in out.lower()
    assert "iteration   not reached" in out and "throughput  not reached" in out and "MFU         not reached" in out
    code, out, err = run_cli_output(["evaluate", "--plan", str(path), "--json"], capsys)
    assert code == 0, err  # "the JSON output: iteration_s is not a finite number (nan)" before
    document = json.loads(out)
    assert document["reason"] == "network" and document["cost"] is None
    assert document["iteration_s"] is None and document["throughput"] is None and document["mfu"] is None
    assert document["stages"][1]["tail_s"] is None and math.isfinite(document["stages"][0]["tail_s"])


# --- a schedule plan given to --plan -------------------------------------------------------------


def test_a_schedule_plan_given_to_evaluate_plan_is_named_a_schedule_plan(tmp_path, capsys):
    path = tmp_path / "schedule.json"
    instance = {"workload": "transformer-small", "catalog": "small", "batch": 64, "throughput": 500}
    path.write_text(json.dumps({"schedule": ["gpu-b"] * 7, "instance": instance}))
    code, out, err = run_cli_output(["evaluate", "--plan", str(path)], capsys)
    assert code == 2 and out == "" and "required field is missing" not in err
    assert f"{path}: a schedule plan (what `hps plan --out` writes" in err
    assert "`hps execute PLAN.json` runs it" in err and "--schedule" in err
    with pytest.raises(ConfigError, match="a schedule plan"):
        hps.read_plan(path)


# --- hps profile checks the micro-batch and --out before profiling --------------------------------


@pytest.fixture
def no_profiling(monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("profiling started")

    monkeypatch.setattr("hps.executor.profile.profile_passes", never)


def test_profile_refuses_a_micro_batch_above_the_batch_at_once(tmp_path, capsys, no_profiling):
    argv = ["profile", *TRANSFORMER, "--types", "gpu-b", "--out", str(tmp_path / "m.toml")]
    code, out, err = run_cli_output([*argv, "--micro-batch", "1000"], capsys)
    assert code == 2 and out == ""
    assert "--micro-batch: micro_batch: 1,000 samples is above the batch of 64 samples (the default of zoo " in err
    code, _, err = run_cli_output([*argv, "--micro-batch", "1000", "--batch", "512"], capsys)
    assert code == 2 and "--micro-batch: micro_batch: 1,000 samples is above --batch 512;" in err
    assert not (tmp_path / "m.toml").exists()


def test_profile_tries_its_out_folder_before_profiling(tmp_path, capsys, no_profiling, monkeypatch):
    """A folder that `os.access` calls writable but that takes no file (a read-only mount,
    sysfs, an immutable folder: root passes every os.access check) fails before any profiling."""
    read_only = tmp_path / "ro"
    read_only.mkdir()
    real_open = os.open

    def open_(path, flags, *args, **kwargs):
        if os.fspath(path).startswith(str(read_only)) and flags & os.O_CREAT:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_)
    out = read_only / "deeper" / "m.toml"
    code, text, err = run_cli_output(["profile", *TRANSFORMER, "--types", "gpu-b", "--out", str(out)], capsys)
    assert code == 2 and text == ""
    assert f"hps profile: error: --out: cannot write {out}: {read_only}: cannot write into this folder" in err
    assert "Read-only file system" in err and not (read_only / "deeper").exists() and not list(read_only.iterdir())


# --- a missing checkpoint step is not "damaged" ---------------------------------------------------


def test_a_step_the_checkpoint_lacks_is_named_missing_with_the_steps_it_has(tmp_path):
    from hps.rl import checkpoint
    from hps.rl.policy_kind import policy_kind_of
    from tests.helpers import TINY

    state = policy_kind_of(TINY).init_state(TINY)
    manager = checkpoint.open_manager(tmp_path)
    for step in (2, 4):
        checkpoint.save(manager, state.replace(step=step), TINY)
    manager.close()
    manager = checkpoint.open_manager(tmp_path, read_only=True)
    with pytest.raises(ConfigError) as raised:
        checkpoint.read_spec(manager, 7)
    assert not isinstance(raised.value, CheckpointDamaged)
    assert str(raised.value) == f"{tmp_path}: no step 7 in this folder (it has steps 2, 4)"
    assert checkpoint.read_spec(manager, 2)[0] == 2 and checkpoint.read_spec(manager)[0] == 4
    with pytest.raises(ConfigError, match="no step 3 in this folder") as raised:
        hps.load_policy(tmp_path, step=3)
    assert "damaged" not in str(raised.value)


# --- hps run --fresh never leaves the old results.json beside new items ---------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class CountConfig(ExperimentConfig):
    count: int = 3


def _count_kind(monkeypatch, fail_at: str | None = None):
    from hps.studies import Summary
    from hps.studies.base import EXPERIMENT_KINDS, ExperimentKind

    def run_item(config, i):
        if f"item-{i}" == fail_at:
            raise RuntimeError("stopped in the item")
        return {"value": i + config.seed}

    def summarize(config, results):
        return Summary(results={"values": results}, headers=["item", "value"], rows=[])

    kind = ExperimentKind(items=lambda c: [(f"item-{i}", i) for i in range(c.count)], run_item=run_item,
                          summarize=summarize)  # fmt: skip
    monkeypatch.setitem(EXPERIMENT_KINDS, CountConfig, kind)


@pytest.mark.parametrize("fail_at", ["item-0", "item-1"])
@pytest.mark.parametrize("how", ["fresh", "another config"])
def test_a_fresh_run_stopped_early_leaves_no_results_json_of_the_old_run(tmp_path, monkeypatch, fail_at, how):
    from hps.studies import run_experiment

    _count_kind(monkeypatch)
    out = tmp_path / "count"
    run_experiment(CountConfig(name="count"), out, progress=False)
    assert {"results.json", "timings.json", "report.md"} <= {p.name for p in out.iterdir()}
    _count_kind(monkeypatch, fail_at=fail_at)
    config = CountConfig(name="count", seed=1 if how == "another config" else 0)
    with pytest.raises(RuntimeError, match="stopped in the item"):
        run_experiment(config, out, fresh=how == "fresh", progress=False)
    assert not {"results.json", "timings.json", "report.md"} & {p.name for p in out.iterdir()}
    new = sorted(p.name for p in (out / "items").iterdir())
    assert new == ([] if fail_at == "item-0" else ["item-0.json"])
    outputs = json.loads((out / "manifest.json").read_text())["outputs"]
    assert "results.json" not in outputs and "report.md" not in outputs


# --- long values are shortened in errors ---------------------------------------------------------

LONG = "x" * 100_000


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["search", "--workload", LONG], "--workload"),
        (["profile", *TRANSFORMER, "--types", LONG], "--types"),
        (["profile", *TRANSFORMER, "--types", "gpu-b", "--sizes", LONG], "--sizes"),
        (["search", *TRANSFORMER, "--set", LONG], "--set"),
        (["search", *TRANSFORMER, "--set", f"layers={LONG}"], "--set"),
        (["search", *TRANSFORMER, "--micro-batches", LONG], "--micro-batches"),
        (["search", *TRANSFORMER, "--evaluations", LONG], "--evaluations"),
    ],
)
def test_a_long_value_is_shortened_in_the_error_that_names_it(argv, flag, capsys, no_profiling):
    code, out, err = run_cli_output(argv, capsys)
    assert code == 2 and out == "" and flag in err
    assert len(err) < 2_000 and "(100,000 characters)" in err, err[:300]


def test_a_long_type_name_of_a_schedule_plan_is_shortened(tmp_path):
    from hps.config.schedule_plan import read_schedule_plan

    path = tmp_path / "schedule.json"
    instance = {"workload": "transformer-small", "catalog": "small", "collective": LONG}
    path.write_text(json.dumps({"schedule": [f"{LONG},y"], "instance": instance}))
    with pytest.raises(ConfigError, match=r"schedule\[0\]") as raised:
        read_schedule_plan(path)
    assert len(str(raised.value)) < 500
    path.write_text(json.dumps({"schedule": ["gpu-b"], "instance": instance}))
    with pytest.raises(ConfigError, match=r"instance.collective") as raised:
        read_schedule_plan(path)
    assert len(str(raised.value)) < 500
