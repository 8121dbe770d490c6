"""`hps execute` across processes and `hps launch` (docs/executor.md, "Across processes"): two
local processes of 4 CPU devices run a two-stage tp 2 x dp 2 plan and equal single-device
training; a process that dies ends the other within 60 s with a message and a non-zero status,
its output lock free again; the launcher ends the others when one fails."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import jax
import pytest

from hps.io import launcher
from hps.io.runfolder import lock

REPO = Path(__file__).resolve().parents[1]
PODS = REPO / "tests" / "data" / "pods.toml"
DEAD_PEER_LIMIT_S = 60


def two_stage_plan(tmp_path) -> Path:
    """transformer-small as embedding + block 1 | block 2 + head + loss, each stage tp 2 x dp 2:
    on 2 processes of 4 devices, stage 0 on process 0's devices and stage 1 on process 1's."""
    job = {"batch": 16, "micro_batch": 4, "throughput": 100, "samples": 1e6, "precision": "fp32-sgd", "zero": 0}
    stages = [(0, 2, "gpu", 2, 2), (3, 6, "gpu", 2, 2)]
    plan = {
        "format": "hps-plan/2",
        "workload": "transformer-small",
        "catalog": str(PODS),
        "job": job | {"recompute": "none"},
        "stages": [dict(zip(("first", "last", "type", "tp", "dp"), stage)) for stage in stages],
    }
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    return path


def child_environ(**extra) -> dict:
    """This environment without any process variables, on CPU, sharing the tests' compile cache."""
    cluster = ("JAX_", "SLURM_", "SKYPILOT_")
    environ = {key: value for key, value in os.environ.items() if not key.startswith(cluster)}
    cache = jax.config.jax_compilation_cache_dir
    return {**environ, "JAX_PLATFORMS": "cpu", "JAX_COMPILATION_CACHE_DIR": cache, **extra}


@pytest.mark.slow
def test_two_processes_of_four_devices_run_a_two_stage_plan_like_one_device(tmp_path):
    plan = two_stage_plan(tmp_path)
    command = [sys.executable, "-m", "hps.cli.main", "launch", "--processes", "2", "--devices-per-process", "4"]
    command += ["--", "hps", "execute", str(plan), "--steps", "2", "--check", "--json"]
    command += ["--out", str(tmp_path / "r.json")]
    done = subprocess.run(command, cwd=REPO, env=child_environ(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line[4:] for line in done.stdout.splitlines() if line.startswith("[0] ")]
    report = json.loads("\n".join(lines[next(i for i, line in enumerate(lines) if line == "{") :]))
    assert [(s["processes"], s["replicas"], s["tensor"]) for s in report["stages"]] == [([0], 2, 2), ([1], 2, 2)]
    assert report["equivalent"] is True and report["max_param_rel_diff"] <= 1e-5
    assert json.loads((tmp_path / "r.json").read_text())["equivalent"] is True  # process 0 wrote it
    assert not any(line.startswith("[1] {") for line in done.stdout.splitlines())  # process 1 printed no report
    assert "process 1 of 2 joined (8 devices in all)" in done.stderr


@pytest.mark.slow
def test_a_killed_process_ends_the_other_within_60_s_with_a_message_and_its_lock_free(tmp_path):
    """No launcher: two `hps execute` processes joined through JAX's variables; process 1 is
    killed mid-run, and process 0 ends (a failed collective, or the heartbeat timeout) well within
    DEAD_PEER_LIMIT_S, non-zero, saying a peer died; the lock of its --out file is free."""
    plan, out = two_stage_plan(tmp_path), tmp_path / "report.json"
    coordinator = f"127.0.0.1:{launcher.free_port()}"
    argv = [sys.executable, "-m", "hps.cli.main", "execute", str(plan), "--steps", "1000", "--out", str(out)]
    workers = []
    for index in range(2):
        environ = launcher.child_environ(child_environ(), coordinator, 2, index, 4)
        workers.append(subprocess.Popen(argv, cwd=REPO, env=environ, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True))  # fmt: skip
    try:
        for line in workers[1].stderr:  # until process 1 has joined, then let it train a moment
            if "joined" in line:
                break
        time.sleep(8)
        workers[1].kill()
        killed = time.monotonic()
        _, err = workers[0].communicate(timeout=DEAD_PEER_LIMIT_S + 30)
        ended_after = time.monotonic() - killed
    finally:
        launcher.stop(workers, grace_s=1)
    assert workers[0].returncode != 0
    assert ended_after < DEAD_PEER_LIMIT_S, err[-2000:]
    assert "a peer process stopped" in err or "another task died" in err, err[-2000:]
    held = lock.acquire(out, lock_file=out.with_name("report.json.lock"), removable=True, what="output")
    lock.release(held)  # the kernel dropped the dead run's flock: the next run takes the file


@pytest.mark.parametrize("index", [0, 1])
def test_a_process_whose_peer_never_starts_ends_at_its_timeout_with_a_message(tmp_path, index):
    """Process 0 (the coordinator) or 1 alone: each ends with exit status 2 and hps's own line soon
    after --timeout, before JAX's join deadline (which aborts with a C++ stack trace), writing
    nothing."""
    plan, out = two_stage_plan(tmp_path), tmp_path / "report.json"
    environ = launcher.child_environ(child_environ(), f"127.0.0.1:{launcher.free_port()}", 2, index, 4)
    argv = [sys.executable, "-m", "hps.cli.main", "execute", str(plan), "--timeout", "3", "--out", str(out)]
    start = time.monotonic()
    done = subprocess.run(argv, cwd=REPO, env=environ, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and time.monotonic() - start < 3 + 30, done.stderr[-2000:]
    assert "hps execute: error: 127.0.0.1:" in done.stderr and "did not all join within 3 s" in done.stderr
    assert "stack trace" not in done.stderr and not out.exists()


CHILD = """
import os, sys, time
index = int(os.environ["JAX_PROCESS_ID"])
print(f"{index} of {os.environ['JAX_NUM_PROCESSES']} at {os.environ['JAX_COORDINATOR_ADDRESS']}", flush=True)
print(os.environ["XLA_FLAGS"], file=sys.stderr, flush=True)
if index == 1:
    sys.exit(3)
time.sleep(600)
"""


def test_the_launcher_ends_the_others_when_one_fails_and_exits_with_its_status():
    lines, notices = [], []
    start = time.monotonic()
    status = launcher.launch(
        [sys.executable, "-c", CHILD],
        3,
        4,
        on_line=lambda index, line, is_error: lines.append((index, line, is_error)),
        on_notice=notices.append,
        environ={"XLA_FLAGS": "--xla_force_host_platform_device_count=8 --xla_dump_to=x", "PATH": os.environ["PATH"]},
    )
    assert status == 3 and time.monotonic() - start < launcher.GRACE_S + 10
    assert any(index == 1 and line.startswith("1 of 3 at 127.0.0.1:") for index, line, _ in lines)
    assert ("--xla_dump_to=x --xla_force_host_platform_device_count=4") in {line for _, line, err in lines if err}
    assert notices[-1] == "process 1 exited with status 3; stopping the other 2 (SIGTERM, SIGKILL after 5 s)"


def test_hps_launch_runs_hps_and_reports_a_child_a_signal_ended(capsys):
    from hps.cli.main import main

    assert main(["launch", "--processes", "2", "--", "hps", "--version"]) == 0
    assert capsys.readouterr().out.count("hps 0.") == 2
    killed = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    assert main(["launch", "--processes", "1", "--", sys.executable, "-c", killed]) == 128 + 9
    assert "process 0 exited with signal SIGKILL" in capsys.readouterr().err
    assert main(["launch", "--processes", "2"]) == 2
    assert "give the command to launch after --" in capsys.readouterr().err
