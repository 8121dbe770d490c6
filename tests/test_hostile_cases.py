"""The newer hostile sweep's case list and its runner's checks: at least 300 cases beyond the
288 of the earlier sweep, none repeated, each in a group; a special file replaced, an outside
file changed behind a link or a run folder's outputs left unattributed are failures the runner
sees; a few fast cases run end to end through the runner."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from hps.errors import ConfigError
from tools.hostile import setup as hostile_setup
from tools.hostile.cases import all_cases
from tools.hostile.flags import PROCEDURES
from tools.hostile.setup import SPECIAL_KINDS
from tools.hostile.sweep import HostileSweepConfig, classify, items, new_cases, run_item

NEW = new_cases()
KEYS = {"group", "argv", "files", "steps", "special", "fixture", "timeout", "expect", "not_said", "said", "check"}
KEYS |= {"escape", "pipe"}
AS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="mknod needs root")


def identity(case: dict) -> str:
    """What makes two cases the same run: the command line, the files, the setup."""
    files = {name: text if isinstance(text, str) else text.hex() for name, text in case["files"].items()}
    setup = [case.get(key) for key in ("special", "steps", "pipe", "fixture")]
    return json.dumps([case["argv"], files, setup], sort_keys=True)


def test_the_newer_sweep_holds_at_least_300_cases_beyond_the_earlier_288():
    earlier = {identity(case) for case in all_cases()}
    assert len(all_cases()) == 288
    assert len([case for case in NEW if identity(case) not in earlier]) >= 300


def test_no_two_cases_of_both_sweeps_share_command_files_and_setup():
    seen = [identity(case) for case in [*all_cases(), *NEW]]
    assert len(seen) == len(set(seen))


def test_every_newer_case_names_a_group_and_only_keys_the_runner_reads():
    for case in NEW:
        assert isinstance(case["group"], str) and case["group"]
        assert set(case) <= KEYS, set(case) - KEYS
        assert set(case.get("special", {}).values()) <= set(SPECIAL_KINDS)
        assert case.get("expect") in (None, "refusal", "notice")
        assert set(case.get("check", ())) <= {"format", "batch", "verdict", "checkpoint"}
        assert case.get("steps") in (None, *PROCEDURES)
        assert case["argv"] or case.get("steps")


def test_the_groups_filter_keeps_the_keys_and_refuses_a_group_no_case_is_in():
    keys = dict(items(HostileSweepConfig(name="x", cases="all")))
    piped = items(HostileSweepConfig(name="x", cases="new", groups=("broken pipe",)))
    assert piped and all(keys[key] == case and case["group"] == "broken pipe" for key, case in piped)
    assert len(items(HostileSweepConfig(name="x"))) == 288
    with pytest.raises(ConfigError, match="groups"):
        items(HostileSweepConfig(name="x", cases="new", groups=("nothing",)))


@AS_ROOT
def test_a_replaced_device_fifo_or_link_and_a_changed_outside_file_are_seen(tmp_path):
    cwd, outside = tmp_path / "case", tmp_path / "outside"
    cwd.mkdir()
    outside.mkdir()
    for name, kind in (("dev", "chardev"), ("pipe", "fifo"), ("link", "link-in"), ("lock", "link-out")):
        hostile_setup.make_special(cwd, outside, name, kind)
    before = hostile_setup.snapshot(cwd, outside)
    assert hostile_setup.changes(before, cwd, outside, set()) is None
    (outside / "lock.target").write_text("{}")
    assert "changed" in hostile_setup.changes(before, cwd, outside, set())
    assert hostile_setup.changes(before, cwd, outside, {"lock.target"}) is None
    for name in ("dev", "pipe", "link"):
        (cwd / name).unlink()
        (cwd / name).write_text("a regular file now")
        assert name in hostile_setup.changes(before, cwd, outside, {"lock.target"})
        before = hostile_setup.snapshot(cwd, outside)


def test_outputs_of_two_runs_are_mixed_unless_the_manifest_names_each_ones_run(tmp_path):
    run = tmp_path / "qs"
    run.mkdir()
    (run / "summary.json").write_text("{}")
    (run / "comparison.png").write_text("png")
    assert hostile_setup.unmarked_outputs(tmp_path) is None  # no manifest: nothing to hold it to
    runs = [{"run_id": "a"}, {"run_id": "b"}]
    manifest = {"format": 1, "runs": runs, "outputs": {"summary.json": "b"}}
    (run / "manifest.json").write_text(json.dumps(manifest))
    assert "comparison.png" in hostile_setup.unmarked_outputs(tmp_path)
    manifest["outputs"]["comparison.png"] = "a"
    (run / "manifest.json").write_text(json.dumps(manifest))
    assert hostile_setup.unmarked_outputs(tmp_path) is None


def test_classes_of_an_accepted_impossible_input_and_a_misleading_refusal(tmp_path):
    case = {"group": "g", "argv": ["x"], "expect": "refusal", "not_said": "no such file"}
    accepted = {"rc": 0, "out": "", "err": "", "hung": False}
    assert classify(accepted, case, tmp_path) == "silently accepted"
    misleading = {**accepted, "rc": 2, "err": "hps search: error: --catalog: no such file 'c.toml'\n"}
    assert classify(misleading, case, tmp_path) == "misleading message"
    assert classify({**misleading, "err": "hps search: error: c.toml: a FIFO\n"}, case, tmp_path) == "refused"
    said = {"group": "g", "argv": ["x"], "said": "name"}
    assert classify({**misleading, "err": "hps x: error: key given twice\n"}, said, tmp_path) == "misleading message"
    bidi = {"group": "g", "argv": ["x"], "escape": True}
    assert classify({**accepted, "out": "evil\u202etxt"}, bidi, tmp_path) == "raw control characters"
    assert classify({**accepted, "out": "evil\\u202etxt"}, bidi, tmp_path) == "ok"


def test_impossible_figures_and_two_verdicts_are_seen():
    stages = {"batch": 1, "stages": [{"replicas": 7}]}
    assert "7 replicas" in hostile_setup.impossible_figure(json.dumps(stages))
    assert hostile_setup.impossible_figure(json.dumps({"batch": 8, "stages": [{"dp": 8}], "micro_batches": 8})) is None
    assert "micro-batches" in hostile_setup.impossible_figure(json.dumps({"batch": 8, "micro_batches": 1000}))
    assert hostile_setup.two_verdicts("plan\nfeasible\ncost $1\nno feasible plan found in 0.27 s\n")
    assert hostile_setup.two_verdicts("plan\nfeasible\ncost $1\n") is None


@AS_ROOT
def test_sample_cases_run_end_to_end_through_the_runner():
    config = HostileSweepConfig(name="x", cases="new", timeout_s=30.0)
    export = [case for case in NEW if case["argv"][:3] == ["workload", "export", "mlp"] and "special" in case]
    device = next(case for case in export if case["special"] == {"o.toml": "chardev"})
    result = run_item(config, device)
    assert result["class"] in ("ok", "refused") and "o.toml as chardev" in result["command"]
    piped = next(case for case in NEW if case["argv"] == ["workload", "list"] and case["pipe"] == 0)
    assert run_item(config, piped)["class"] == "ok"


@AS_ROOT
def test_a_scratch_device_is_a_copy_of_dev_null(tmp_path):
    hostile_setup.make_special(tmp_path, tmp_path, "d", "chardev")
    assert stat.S_ISCHR(os.lstat(tmp_path / "d").st_mode) and os.lstat(tmp_path / "d").st_rdev == os.makedev(1, 3)
    assert Path(tmp_path / "d").read_bytes() == b""
