"""Inputs held to one standard: what a path is, how deep and large a file may be, and messages
that say what is wrong.

Every TOML and JSON input is a regular file of bounded size and nesting (a file nested 100,000
deep is exit status 2 naming it, not a RecursionError); a directory, FIFO, device or symlink
loop is named as what it is; a byte-order mark is accepted; a key given twice is named.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path

import pytest

from tests.helpers import run_cli_output

REPO = Path(__file__).resolve().parents[2]
SMALL_CATALOG = (REPO / "topologies" / "catalogs" / "small.toml").read_text()
EVALUATE = ["evaluate", "--workload", "mlp", "--schedule", "cpu,cpu,cpu,cpu"]


def refused(argv: list[str], capsys) -> str:
    """The one error line of `hps ARGV`, which must exit 2 with no traceback and no output."""
    code, out, err = run_cli_output(argv, capsys)
    assert code == 2, (code, out, err)
    assert "Traceback" not in err and out == "", err
    return err.strip().splitlines()[-1]


# ------------------------------------------------------------------ nesting and size


DEEP_FILES = {
    "inline-tables.toml": "x = " + "{a = " * 5000 + "1" + "}" * 5000 + "\n",
    "arrays.toml": "x = " + "[" * 100_000 + "]" * 100_000 + "\n",
    "arrays.json": "[" * 100_000 + "]" * 100_000,
    "objects.json": '{"a": ' * 5000 + "1" + "}" * 5000,
}


@pytest.mark.parametrize("name", DEEP_FILES)
def test_deeply_nested_toml_and_json_inputs_exit_2_naming_the_file_and_the_depth(tmp_path, name, capsys):
    path = tmp_path / name
    path.write_text(DEEP_FILES[name])
    flag = ["--plan", str(path)] if name.endswith(".json") else ["--catalog", str(path), *EVALUATE[1:]]
    line = refused(["evaluate", *flag], capsys)
    assert str(path) in line and "nested deeper than 32" in line, line


def test_execute_plan_files_nested_deep_are_refused_before_anything_runs(tmp_path, capsys):
    path = tmp_path / "plan.json"
    path.write_text(DEEP_FILES["arrays.json"])
    line = refused(["execute", str(path)], capsys)
    assert str(path) in line and "nested deeper than 32" in line, line


def test_brackets_inside_strings_and_comments_do_not_count_as_nesting(tmp_path, capsys):
    text = SMALL_CATALOG.replace('name = "small"', 'name = "small"  # [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[')
    text += "\n# " + "[" * 100 + "\n"
    path = tmp_path / "catalog.toml"
    path.write_text(text + "\n")
    code, out, err = run_cli_output([EVALUATE[0], "--catalog", str(path), *EVALUATE[1:]], capsys)
    assert code == 0, err


def test_a_toml_input_over_the_size_limit_is_refused_naming_the_limit(tmp_path, capsys):
    path = tmp_path / "big.toml"
    with open(path, "wb") as handle:
        handle.truncate(16 * 2**20 + 1)
    line = refused([EVALUATE[0], "--catalog", str(path), *EVALUATE[1:]], capsys)
    assert "16 MiB" in line, line


# ------------------------------------------------------------------ what a path is


def special_paths(tmp_path: Path) -> dict[str, tuple[str, str]]:
    """name -> (path, what the error must say it is)."""
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    loop = tmp_path / "loop.toml"
    os.symlink(loop, loop)
    folder = tmp_path / "folder.toml"
    folder.mkdir()
    paths = {
        "fifo": (str(fifo), "a FIFO"),
        "zero": ("/dev/zero", "a character device"),
        "folder": (str(folder), "a directory"),
        "loop": (str(loop), "a symlink loop"),
    }
    if Path("/dev/stdin").exists() and not Path("/dev/stdin").is_file():
        paths["stdin"] = ("/dev/stdin", "not a regular file")
    return paths


@pytest.mark.parametrize("kind", ["fifo", "zero", "folder", "loop", "stdin"])
@pytest.mark.parametrize("flag", ["--catalog", "--workload", "plan"])
def test_an_input_that_is_no_regular_file_is_named_as_what_it_is(tmp_path, kind, flag, capsys):
    paths = special_paths(tmp_path)
    if kind not in paths:
        pytest.skip("/dev/stdin is a regular file here")
    path, words = paths[kind]
    argv = {
        "--catalog": [EVALUATE[0], "--catalog", path, *EVALUATE[1:]],
        "--workload": ["evaluate", "--workload", path, "--schedule", "cpu"],
        "plan": ["evaluate", "--plan", path],
    }[flag]
    line = refused(argv, capsys)
    assert "not a regular file" in line and words in line and "no such" not in line, line


# ------------------------------------------------------------------ byte-order marks, repeated keys


def test_a_toml_catalogue_with_a_byte_order_mark_is_read(tmp_path, capsys):
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf" + SMALL_CATALOG.encode())
    code, out, err = run_cli_output([EVALUATE[0], "--catalog", str(path), *EVALUATE[1:]], capsys)
    assert code == 0 and "small" in out, err


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda text: text.replace('name = "small"', 'name = "small"\nname = "again"'), "key 'name' is given twice"),
        (lambda text: text + "\n[[resource]]\nname = 'x'\nkind = 'cpu'\nkind = 'gpu'\n", "key 'kind' in [[resource]]"),
    ],
)
def test_a_toml_key_given_twice_is_named(tmp_path, edit, words, capsys):
    path = tmp_path / "twice.toml"
    path.write_text(edit(SMALL_CATALOG))
    line = refused([EVALUATE[0], "--catalog", str(path), *EVALUATE[1:]], capsys)
    assert words in line, line


# ------------------------------------------------------------------ plan files held to the loaders' standard


def plan_document() -> dict:
    """A plan file as `hps plan --out` writes one: mlp on cloud-2024, one cpu stage."""
    return {
        "feasible": True,
        "reason": None,
        "reason_code": "feasible",
        "throughput": 11596506.9,
        "dollars_per_hour": 11.1571,
        "cost": 0.0027,
        "stages": [
            {
                "type": "cpu",
                "first_layer": 0,
                "last_layer": 3,
                "replicas": 1,
                "time": 2.2e-05,
                "mode": "replicated",
                "dollars_per_hour": 11.1571,
            },
        ],  # fmt: skip
        "schedule": ["cpu", "cpu", "cpu", "cpu"],
        "plan_seconds": 0.01,
        "instance": {
            "workload": "mlp",
            "catalog": "cloud-2024",
            "batch": 256,
            "throughput": 10000,
            "samples": 1e8,
            "collective": "themis",
            "chunks": 64,
            "micro_batches": "inf",
            "state_sharding": "none",
            "overrides": [],
        },  # fmt: skip
    }


def edit_plan(edit):
    def apply(plan: dict) -> dict:
        edit(plan)
        return plan

    return apply


PLAN_EDITS = {
    "unknown-key": (lambda p: p.update(colour="red"), "colour", "unknown key"),
    "unknown-instance-key": (lambda p: p["instance"].update(batchsize=8), "instance.batchsize", "unknown key"),
    "unknown-stage-key": (lambda p: p["stages"][0].update(tp=8), "stages[0].tp", "unknown key"),
    "replicas-negative": (lambda p: p["stages"][0].update(replicas=-5), "stages[0].replicas", "must be in 1.."),
    "replicas-huge": (lambda p: p["stages"][0].update(replicas=1e9), "stages[0].replicas", "must be an integer"),
    "replicas-edited": (lambda p: p["stages"][0].update(replicas=2), "stages[0].replicas", "exactly, or not at all"),
    "stage-moved": (lambda p: p["stages"][0].update(last_layer=2), "stages[0].last_layer", "exactly, or not at all"),
    "micro-batches-zero": (lambda p: p["instance"].update(micro_batches=0), "instance.micro_batches", "positive"),
    "comma-in-schedule": (lambda p: p.update(schedule=["cpu,cpu", "cpu", "cpu"]), "schedule[0]", "no commas"),
    "empty-schedule-entry": (lambda p: p.update(schedule=["cpu", "", "cpu", "cpu"]), "schedule[1]", "no commas"),
    "unknown-type": (lambda p: p.update(schedule=["cpu", "gpu", "cpu", "cpu"]), "schedule[1]", "unknown resource"),
    "batch-negative": (lambda p: p["instance"].update(batch=-1), "instance.batch", "must be a number > 0"),
    "batch-fraction": (lambda p: p["instance"].update(batch=2.5), "instance.batch", "whole number of samples"),
    "chunks-zero": (lambda p: p["instance"].update(chunks=0), "instance.chunks", "must be in 1.."),
    "bad-override": (lambda p: p["instance"].update(overrides=["nope=3"]), "instance.overrides", "unknown"),
    "unknown-catalog": (lambda p: p["instance"].update(catalog="nope"), "instance.catalog", "no such file"),
    "feasible-string": (lambda p: p.update(feasible="yes"), "feasible", "must be bool"),
}
FLAGS = ("--batch", "--chunks", "--set", "--catalog", "--micro-batches", "--schedule", "--workload")


@pytest.mark.parametrize("case", PLAN_EDITS)
def test_a_plan_file_field_is_refused_naming_the_file_and_the_field_never_a_flag(tmp_path, case, capsys):
    edit, field, words = PLAN_EDITS[case]
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(edit_plan(edit)(plan_document())))
    line = refused(["execute", str(path), "--steps", "1"], capsys)
    assert f"{path}: {field}: " in line and words in line, line
    assert not any(flag in line.split(words)[0] for flag in FLAGS), line


def test_a_plan_file_with_a_byte_order_mark_is_read(tmp_path, capsys):
    from argparse import Namespace

    from hps.cli.execute import plan_instance

    path = tmp_path / "plan.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(plan_document()).encode())
    args = plan_instance(str(path), Namespace(workload=None, schedule=None, batch=None, job_micro_batches=None))
    assert args.workload == "mlp" and args.schedule == "cpu,cpu,cpu,cpu" and args.job_micro_batches == math.inf


# ------------------------------------------------------------------ messages that say what is wrong

MLP_EVALUATE = ["evaluate", "--workload", "mlp", "--catalog", "cloud-2024"]


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["workload", "export", "mlp", "--set", "hidden="], "the value is empty in 'hidden='"),
        (["workload", "export", "mlp", "--set", "hidden=64,,32"], "entry 2 of the list '64,,32' is empty"),
        ([*MLP_EVALUATE, "--schedule", "cpu,,cpu,cpu"], "entry 2 of 'cpu,,cpu,cpu' is empty"),
        ([*MLP_EVALUATE, "--schedule", "cpu,cpu,cpu,"], "entry 4 of 'cpu,cpu,cpu,' is empty"),
        (["collective", "--size", "1.5"], "whole number of bytes"),
        (["collective", "--size", "32", "--chunks", "64"], "32 bytes cannot fill 64 chunks"),
    ],
)
def test_a_malformed_value_is_named_for_what_it_is(argv, words, capsys):
    line = refused(argv, capsys)
    assert words in line, line


def test_a_factory_calling_sys_exit_is_reported_not_a_silent_exit_0(tmp_path, capsys):
    module = tmp_path / "quits.py"
    module.write_text("import sys\n\ndef model():\n    sys.exit(0)\n")
    line = refused(["workload", "derive", f"{module}:model"], capsys)
    assert "sys.exit(0)" in line, line


def test_bidirectional_controls_in_names_are_escaped_like_control_characters(tmp_path, capsys):
    from hps.config.loaders import load_catalog

    path = tmp_path / "bidi.toml"
    path.write_text(SMALL_CATALOG.replace('name = "cpu"', 'name = "cpu\u202e1-upg"', 1))
    catalog = load_catalog(path)
    assert "\u202e" not in "".join(catalog.names) and "cpu\\u202e1-upg" in catalog.names
    code, out, err = run_cli_output(
        [EVALUATE[0], "--catalog", str(path), "--workload", "mlp", "--schedule", "x,x,x,x"], capsys
    )
    assert code == 2 and "\u202e" not in err and "\\u202e" in err, err


@pytest.mark.parametrize(("first", "second"), [("fi", "\ufb01"), ("caf\u00e9", "cafe\u0301")])
def test_two_names_equal_after_unicode_normalisation_are_refused(tmp_path, first, second, capsys):
    path = tmp_path / "alike.toml"
    text = SMALL_CATALOG.replace('name = "cpu"', f'name = "{first}"', 1).replace('name = "gpu-a"', f'name = "{second}"')
    path.write_text(text)
    line = refused([EVALUATE[0], "--catalog", str(path), *EVALUATE[1:]], capsys)
    assert "resource[1].name" in line and "Unicode normalisation" in line, line


def test_measured_times_for_a_type_the_catalogue_lacks_are_named(tmp_path, capsys):
    from hps.config.loaders import load_workload, write_workload
    from hps.workloads import resolve_workload

    workload = resolve_workload("mlp")
    layer = dataclasses.replace(workload.layers[0], measured_time={"tpu-v9": 1e-6})
    path = tmp_path / "measured.toml"
    write_workload(dataclasses.replace(workload, layers=(layer, *workload.layers[1:])), path)
    assert load_workload(path).layers[0].measured_time == {"tpu-v9": 1e-6}
    code, out, err = run_cli_output(["evaluate", "--workload", str(path), "--schedule", "cpu,cpu,cpu,cpu"], capsys)
    assert code == 0 and "'tpu-v9'" in err and "not used" in err, err


def test_a_checkpoint_of_the_other_policy_kind_is_named_as_such(monkeypatch):
    from hps.errors import ConfigError
    from hps.rl import policy_kind

    monkeypatch.setattr(policy_kind, "_POLICY_KINDS", {"placement": object()})
    with pytest.raises(ConfigError) as error:
        policy_kind.policy_kind_named("collective", "ckpt/3")
    assert "holds a collective policy" in str(error.value) and "needs a placement policy" in str(error.value)
    assert "unknown" not in str(error.value)


def test_the_throughput_reason_names_the_fastest_unit_count_not_the_cap(capsys):
    argv = ["evaluate", "--catalog", "small", "--workload", "mlp", "--schedule", "cpu,cpu,cpu,cpu"]
    code, out, err = run_cli_output([*argv, "--throughput", "1e7", "--json"], capsys)
    reason = json.loads(out)["reason"]
    assert code == 0 and "all 16 units" not in reason, reason
    assert "fastest provisioning, 1 of the 16 units of cpu" in reason and "more units are slower" in reason


def test_exact_search_out_of_time_gives_one_verdict_in_text_and_json(monkeypatch):
    from hps.api.planning import Problem, plan
    from hps.cli import search
    from hps.config.types import Job
    from hps.contract.types import PlanResult
    from hps.methods.exact_schedule import solver

    timed_out = PlanResult("exact", plan=None, score=None, bound=1e-9, seconds=1e-9, evaluations=None)
    monkeypatch.setattr(solver, "solve_exact", lambda inst, seconds, heterps=False: timed_out)
    problem = Problem("mlp", "small", Job(batch=64, throughput=1, samples=1e6), parallel=False)
    result = plan(problem, "exact", seconds=1e-9)
    report = problem.report(result)
    row = search._schedule_row(result, report)
    assert report["feasible"] and row["feasible"]
    assert report["gap"] is not None and math.isfinite(report["gap"]), report
