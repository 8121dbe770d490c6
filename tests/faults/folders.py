"""Run folders held to "nothing destroyed, nothing mixed": the files hps owns are never followed
through a link, records lost or changed after hps wrote them are reported, a resume with other
settings is refused unless asked for, a full disk or an unwritable folder is one error line with
nothing half-written, every command that writes a run folder takes its lock, and SIGTERM/SIGHUP
end a command as SIGINT does. The complete run folder is tests/faults/runs.py's `contested`
(tests/helpers.py's TINY run: 5 chunks of 2 updates)."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from hps.cli.main import main
from hps.errors import ConfigError, Stopped
from hps.io.runfolder import lock, stop
from hps.rl.session import read_metrics
from tests.faults.runs import REPO, assert_same_run, copy_run, env, hps, steps, train_argv, wait_until

PODS = str(REPO / "tests" / "data" / "pods.toml")
EXECUTE = ["execute", "--workload", "mlp", "--catalog", PODS, "--schedule", "cpu,cpu,gpu,gpu", "--batch", "64"]

OUTSIDE = "a file outside the run folder\n"


def outside_file(tmp_path: Path) -> Path:
    path = tmp_path / "outside.txt"
    path.write_text(OUTSIDE)
    return path


def error_line(err: str, command: str = "train") -> str:
    """The one line a failed command ends with; nothing else but progress bars on stderr."""
    lines = [line for line in err.replace("\r", "\n").splitlines() if line.strip() and "chunk" not in line]
    assert "Traceback" not in err and len(lines) == 1, err[-3000:]
    assert lines[0].startswith(f"hps {command}: error: "), lines
    return lines[0]


def manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())


# ---------------------------------------------------------------- files hps owns are never followed


def test_a_lock_symlinked_to_a_file_outside_is_refused_and_the_file_left_as_it_was(tmp_path, experiment, capsys):
    target = outside_file(tmp_path)
    out = tmp_path / "run"
    out.mkdir()
    (out / ".lock").symlink_to(target)
    assert main(train_argv(experiment, out)) == 2
    line = error_line(capsys.readouterr().err)
    assert line.startswith(f"hps train: error: {out / '.lock'}: is a symbolic link")
    with pytest.raises(ConfigError, match="symbolic link"):
        lock.acquire(out)  # the lock itself never opens through a link
    assert target.read_text() == OUTSIDE and (out / ".lock").is_symlink()


def test_a_metrics_file_symlinked_outside_is_refused_and_the_file_left_as_it_was(
    tmp_path, experiment, contested, capsys
):
    out = copy_run(contested, tmp_path)
    target = outside_file(tmp_path)
    (out / "metrics.jsonl").unlink()
    (out / "metrics.jsonl").symlink_to(target)
    assert main(train_argv(experiment, out)) == 2
    assert "metrics.jsonl: is a symbolic link" in error_line(capsys.readouterr().err)
    assert target.read_text() == OUTSIDE and (out / "metrics.jsonl").is_symlink()
    assert (out / ".lock").read_text() == ""


def test_a_deleted_metrics_file_is_reported_on_resume(tmp_path, experiment, contested, capsys):
    out = copy_run(contested, tmp_path)
    (out / "metrics.jsonl").unlink()
    assert main(train_argv(experiment, out)) == 0
    notices = [line for line in capsys.readouterr().err.splitlines() if "no records of chunks" in line]
    assert len(notices) == 1 and notices[0].startswith(f"hps train: {out / 'metrics.jsonl'}: no records of chunks 0–4")


def test_a_complete_last_line_that_is_not_json_is_refused_naming_it(tmp_path, experiment, contested, capsys):
    out = copy_run(contested, tmp_path)
    with (out / "metrics.jsonl").open("a") as stream:
        stream.write("not a record\n")
    before = (out / "metrics.jsonl").read_text()
    assert main(train_argv(experiment, out)) == 2
    line = error_line(capsys.readouterr().err)
    assert line.startswith(f"hps train: error: {out / 'metrics.jsonl'}: line 6: not a JSON metrics record")
    assert (out / "metrics.jsonl").read_text() == before


def test_a_resume_with_another_seed_is_refused_unless_allowed_and_then_recorded(
    tmp_path, experiment, contested, capsys
):
    out = copy_run(contested, tmp_path)
    argv = [*train_argv(experiment, out), "--seed", "8", "--chunks", "6"]
    assert main(argv) == 2
    line = error_line(capsys.readouterr().err)
    assert "changes the settings the checkpoint was trained with (seed 7 → 8)" in line and "--allow-changes" in line
    assert steps(out) == [6, 8, 10]
    assert main([*argv, "--allow-changes"]) == 0
    assert "resuming from update 10 with changed settings: seed 7 → 8" in capsys.readouterr().err
    records = read_metrics(out / "metrics.jsonl")
    assert [r["chunk"] for r in records] == list(range(6)) and records[-1]["changes"] == {"seed": [7, 8]}
    assert manifest(out)["runs"][-1]["changes"] == {"seed": [7, 8]}


# ---------------------------------------------------------------- full disks and unwritable folders


def test_a_full_disk_at_the_third_checkpoint_is_one_error_line_leaving_no_tmp_and_metrics_behind(
    tmp_path, experiment, monkeypatch, capsys
):
    from orbax.checkpoint._src.path import atomicity

    real_commit = atomicity.on_commit_callback

    async def full_disk(tmp_dir, **kwargs):  # every file of the step written, not yet renamed
        if tmp_dir.get_final().name == "6":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return await real_commit(tmp_dir, **kwargs)

    monkeypatch.setattr(atomicity, "on_commit_callback", full_disk)
    out = tmp_path / "run"
    assert main(train_argv(experiment, out)) == 2
    line = error_line(capsys.readouterr().err)
    assert line.startswith(f"hps train: error: {out / 'checkpoints' / '6'}: cannot save the checkpoint")
    assert "No space left on device" in line
    assert not [p for p in (out / "checkpoints").iterdir() if "tmp" in p.name]
    assert steps(out) == [2, 4] and [r["chunk"] for r in read_metrics(out / "metrics.jsonl")] == [0, 1]
    assert (out / ".lock").read_text() == "" and manifest(out)["runs"][-1]["status"] == "failed"


def test_a_checkpoints_folder_that_takes_no_write_fails_before_training(tmp_path, experiment, monkeypatch, capsys):
    real_open = os.open

    def no_write_in_checkpoints(path, flags, *args, **kwargs):  # root passes os.access: refuse the probe
        if Path(path).parent.name == "checkpoints" and flags & os.O_CREAT:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", no_write_in_checkpoints)
    out = tmp_path / "run"
    started = time.perf_counter()
    assert main(train_argv(experiment, out)) == 2
    line = error_line(capsys.readouterr().err)
    assert line == f"hps train: error: {out / 'checkpoints'}: cannot write into this folder: Permission denied"
    assert time.perf_counter() - started < 5 and not (out / "metrics.jsonl").exists()


def test_too_little_free_space_is_refused_before_any_work(tmp_path, experiment, monkeypatch, capsys):
    import shutil

    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage._replace(free=2**20))
    out = tmp_path / "run"
    assert main(train_argv(experiment, out)) == 2
    assert "1.0 MiB free; a run needs at least 64 MiB" in error_line(capsys.readouterr().err)
    assert main([*EXECUTE, "--out", str(tmp_path / "report.json")]) == 2
    assert "MiB free" in error_line(capsys.readouterr().err, "execute")
    assert not (tmp_path / "report.json").exists() and not (out / "metrics.jsonl").exists()


# ---------------------------------------------------------------- one lock for every run folder


def test_execute_out_is_refused_while_another_run_writes_the_file(tmp_path, capsys):
    report = tmp_path / "report.json"
    held = lock.acquire(report, lock_file=tmp_path / "report.json.lock", removable=True)
    try:
        assert main([*EXECUTE, "--out", str(report)]) == 2
    finally:
        lock.release(held)
    line = error_line(capsys.readouterr().err, "execute")
    assert f"{report}: another run is writing into this output (PID {os.getpid()}" in line
    assert not report.exists() and not (tmp_path / "report.json.lock").exists()


SLOW_KIND = """
import time
from dataclasses import dataclass

from hps.studies import ExperimentConfig, Summary, register_experiment_kind


@dataclass(frozen=True, kw_only=True)
class SlowConfig(ExperimentConfig):
    count: int = 40


def items(config):
    return [(f"item-{i}", i) for i in range(config.count)]


def run_item(config, i):
    time.sleep(0.25)
    return {"value": i}


def summarize(config, results):
    return Summary(results=results, headers=["item"], rows=[[key] for key in results])


register_experiment_kind(SlowConfig, items=items, run_item=run_item, summarize=summarize)


def config():
    return SlowConfig(name="slow")
"""


def test_a_second_hps_run_into_a_busy_folder_is_refused_and_sigterm_stops_the_first(tmp_path, capsys):
    experiment = tmp_path / "slow.py"
    experiment.write_text(SLOW_KIND)
    out, folder = tmp_path / "results", tmp_path / "results" / "slow"
    argv = ["run", str(experiment), "--out", str(out), "--json"]
    first = subprocess.Popen(hps(*argv), cwd=REPO, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until(lambda: len(list((folder / "items").glob("item-*.json"))) >= 2 or first.poll() is not None, 120)
    items = {p.name: p.read_text() for p in (folder / "items").glob("item-*.json")}
    assert main(argv) == 2
    line = error_line(capsys.readouterr().err, "run")
    assert line.startswith(f"hps run: error: {folder}: another run is writing into this run folder (PID {first.pid}")
    assert all((folder / "items" / name).read_text() == text for name, text in items.items())  # nothing wiped
    first.send_signal(signal.SIGTERM)
    _, err = first.communicate(timeout=60)
    assert first.returncode == 128 + signal.SIGTERM and err.strip().splitlines()[-1] == "hps run: stopped by SIGTERM"
    assert "Traceback" not in err and (folder / ".lock").read_text() == ""
    document = manifest(folder)
    (run,) = document["runs"]
    assert run["status"] == "stopped" and run["arguments"] == argv
    done = sorted(p.name for p in (folder / "items").glob("item-*.json"))
    assert sorted(Path(k).name for k, v in document["outputs"].items() if v == run["run_id"] and "item-" in k) == done


# ---------------------------------------------------------------- signals


def test_sigterm_stops_train_with_a_line_the_lock_released_metrics_behind_checkpoints_resume_intact(
    tmp_path, experiment, contested, monkeypatch, capsys
):
    from hps.rl import checkpoint

    real_save = checkpoint.save

    def save(manager, state, config):  # SIGTERM while chunk 2's checkpoint is being saved
        if int(state.step) == 6:
            os.kill(os.getpid(), signal.SIGTERM)
        return real_save(manager, state, config)

    monkeypatch.setattr(checkpoint, "save", save)
    out = tmp_path / "run"
    assert main(train_argv(experiment, out)) == 128 + signal.SIGTERM
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == "hps train: stopped by SIGTERM" and "Traceback" not in err
    assert (out / ".lock").read_text() == "" and manifest(out)["runs"][-1]["status"] == "stopped"
    assert steps(out)[-1] == 6 and [r["chunk"] for r in read_metrics(out / "metrics.jsonl")] == [0, 1, 2]
    monkeypatch.setattr(checkpoint, "save", real_save)
    assert main(train_argv(experiment, out)) == 0
    assert_same_run(out, contested.out)


def test_sighup_and_sigterm_end_a_command_as_sigint_does(capsys):
    for signum in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
        with stop.handling(), pytest.raises(Stopped) as stopped:
            os.kill(os.getpid(), signum)
            time.sleep(5)
        assert stopped.value.signum == signum and isinstance(stopped.value, KeyboardInterrupt)
    with stop.handling(), pytest.raises(Stopped):
        with stop.deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)
            deferred_until_the_end = True
    assert deferred_until_the_end
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_a_multi_process_run_whose_peer_never_starts_says_it_waits_then_fails_in_one_line(
    tmp_path, experiment, monkeypatch, capsys
):
    import jax

    def never_joined(*args, **kwargs):
        raise RuntimeError("DEADLINE_EXCEEDED: Barrier timed out. Id: PjRT_Client_Connect")

    monkeypatch.setattr(jax.distributed, "initialize", never_joined)
    argv = [*train_argv(experiment, tmp_path / "run"), "--coordinator", "localhost:1", "--num-processes", "2"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    waiting, failed = err.strip().splitlines()
    assert waiting == "hps train: process 0 of 2: waiting up to 900 s for the other processes to join at localhost:1"
    assert failed.startswith("hps train: error: localhost:1: the 2 processes did not all join within 900 s")


# ---------------------------------------------------------------- quickstart: outputs marked with their run


def test_a_quickstart_rerun_stopped_midway_leaves_each_output_marked_with_its_run(tmp_path, monkeypatch, capsys):
    import hps.placement.agent.checkpoint as placement_checkpoint
    import hps.studies.quickstart as quickstart

    records = [{"chunk": 0, "step": 10, "elapsed_s": 42.0, "reward": -1.0}]
    monkeypatch.setattr(quickstart, "train_policy", lambda *args, **kwargs: records)  # a policy trained before
    monkeypatch.setattr(placement_checkpoint, "load_policy", lambda path: (None, None, {}))
    compared = {"methods": {}, "best_cost": 1.0}
    monkeypatch.setattr(quickstart, "compare_zoo_workload", lambda *a, **k: {"workload": a[3], **compared})
    monkeypatch.setattr(quickstart, "timing_line", lambda comparisons: "")
    monkeypatch.setattr(quickstart, "comparison_figure", lambda comparisons, path: path.write_bytes(b"\x89PNG"))
    unseen = {"workload": "u", "checkpoint_step": 10, "plan": {}, "execution": {}}
    monkeypatch.setattr(quickstart, "plan_and_execute", lambda config, catalog: unseen)
    monkeypatch.setattr(quickstart, "unseen_lines", lambda unseen: [])
    out = tmp_path / "qs"
    argv = ["quickstart", "--out", str(out), "--chunks", "1", "--envs", "16"]
    assert main([*argv, "--workloads", "ctr-dnn"]) == 0
    assert "policy: 10 updates in 42 s of training, resumed complete in " in capsys.readouterr().out
    first = manifest(out)["runs"][0]["run_id"]

    def stopped(config, catalog):
        raise Stopped(signal.SIGTERM)

    monkeypatch.setattr(quickstart, "plan_and_execute", stopped)
    assert main([*argv, "--workloads", "dlrm"]) == 128 + signal.SIGTERM
    assert capsys.readouterr().err.strip().splitlines()[-1] == "hps quickstart: stopped by SIGTERM"
    document = manifest(out)
    second = document["runs"][1]
    assert second["status"] == "stopped" and second["arguments"][-1] == "dlrm"
    assert document["outputs"] == {"comparison.png": second["run_id"], "summary.json": first}
    assert json.loads((out / "summary.json").read_text())["run_id"] == first
    assert (out / ".lock").read_text() == ""
