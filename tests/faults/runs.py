"""Run folders under faults: two runs into one folder, a stale lock, SIGKILL at each point of a
chunk boundary, flipped bits in checkpoints. The reference is an uninterrupted `hps train` of
tests/helpers.py's TINY run (5 chunks of 2 updates; checkpoints at updates 6, 8 and 10)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import jax
import pytest

from hps.cli.main import main
from hps.errors import CheckpointDamaged
from hps.rl import checkpoint
from hps.rl.session import read_metrics
from tests.helpers import SMALL, TINY, assert_same_params

REPO = Path(__file__).resolve().parents[2]
KILL_CHUNK = 1
KILL_STEP = (KILL_CHUNK + 1) * TINY.updates_per_chunk

# `hps train ARGV…` that SIGKILLs itself at point argv[1] of chunk argv[2]'s boundary (the
# checkpoint of that chunk is step argv[3]), by wrapping what the session calls.
KILLING_RUN = r"""
import json, os, signal, sys
point, chunk, step = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
import hps.rl.checkpoint as checkpoint
from orbax.checkpoint._src.path import atomicity

def die():
    os.kill(os.getpid(), signal.SIGKILL)

import hps.io.runfolder.owned as owned
real_append = owned.append_line
def append_line(path, line):  # the metrics append: dies as it starts writing chunk's line, or once it is synced
    ours = path.name == "metrics.jsonl" and json.loads(line)["chunk"] == chunk
    if point == "before-metrics" and ours:
        die()
    real_append(path, line)
    if point == "after-metrics" and ours:
        die()
owned.append_line = append_line

real_commit = atomicity.on_commit_callback
async def on_commit_callback(tmp_dir, **kwargs):  # orbax: every file written, not yet renamed
    if point == "mid-save" and tmp_dir.get_final().name == str(step):
        die()
    return await real_commit(tmp_dir, **kwargs)
atomicity.on_commit_callback = on_commit_callback

real_save = checkpoint.save
def save(manager, state, config):
    ours = int(state.step) == step
    if point == "before-save" and ours:
        die()
    saved = real_save(manager, state, config)
    if point == "after-save" and ours:  # on_chunk, the progress report, comes next
        die()
    return saved
checkpoint.save = save

from hps.cli.main import main
sys.exit(main(sys.argv[4:]))
"""

# point -> (metrics chunks on disk, latest checkpoint step) right after the kill: the checkpoint
# is saved first, then the metrics record that commits its chunk
KILL_POINTS = {
    "mid-save": ([0], 2),
    "after-save": ([0], 4),
    "before-metrics": ([0], 4),
    "after-metrics": ([0, 1], 4),
}


def env() -> dict:
    return dict(os.environ, JAX_COMPILATION_CACHE_DIR=jax.config.jax_compilation_cache_dir)  # conftest's cache


def train_argv(experiment: Path, out: Path) -> list[str]:
    return ["train", str(experiment), "--out", str(out), "--eval-every", "0", "--json"]


def hps(*argv: str) -> list[str]:
    return [sys.executable, "-m", "hps.cli.main", *argv]


def lock_pid(out: Path) -> int | None:
    try:
        return json.loads((out / ".lock").read_text())["pid"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def wait_until(condition, timeout_s: float = 300.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def contested(tmp_path_factory, experiment):
    """A first `hps train` of TINY and a second one into the same folder, started once the first
    holds it (or, without a lock, once it trains): the reference run of this module."""
    base = tmp_path_factory.mktemp("contested")
    out = base / "run"
    with open(base / "first.out", "w") as stdout, open(base / "first.err", "w") as stderr:
        first = subprocess.Popen(hps(*train_argv(experiment, out)), cwd=REPO, env=env(), stdout=stdout, stderr=stderr)
        wait_until(lambda: lock_pid(out) == first.pid or (out / "metrics.jsonl").exists() or first.poll() is not None)
        second = subprocess.run(
            hps(*train_argv(experiment, out)), cwd=REPO, env=env(), capture_output=True, text=True, timeout=600
        )
        first_running = first.poll() is None
        first.wait(timeout=600)
    return SimpleNamespace(
        out=out,
        first=first,
        first_out=(base / "first.out").read_text(),
        first_err=(base / "first.err").read_text(),
        second=second,
        first_running=first_running,
    )


def assert_same_run(out: Path, reference: Path) -> None:
    """Final parameters bit-identical to the reference's; one metrics line per chunk, equal to
    the reference's but for elapsed_s."""
    lines = [line for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()]
    assert [json.loads(line)["chunk"] for line in lines] == list(range(TINY.num_chunks))

    def strip(records):
        return [{k: v for k, v in r.items() if k != "elapsed_s"} for r in records]

    assert strip(read_metrics(out / "metrics.jsonl")) == strip(read_metrics(reference / "metrics.jsonl"))
    _, params, spec = checkpoint.load_policy(out / "checkpoints")
    _, want, _ = checkpoint.load_policy(reference / "checkpoints")
    assert spec["step"] == TINY.num_chunks * TINY.updates_per_chunk
    assert_same_params(params, want)


def copy_run(contested, tmp_path: Path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(contested.out, out)
    return out


def steps(out: Path) -> list[int]:
    return sorted(int(p.name) for p in (out / "checkpoints").iterdir() if p.name.isdigit())


# ---------------------------------------------------------------- the run-folder lock


def test_a_second_run_into_a_busy_folder_exits_2_at_once_and_writes_nothing(contested):
    second, out, pid = contested.second, contested.out, contested.first.pid
    assert second.returncode == 2, second.stderr[-3000:]
    message = second.stderr.strip().splitlines()[-1]
    assert message.startswith(f"hps train: error: {out}: another run is writing into this run folder")
    assert f"PID {pid} on {socket.gethostname()}" in message and "train" in message.split(f"PID {pid}")[1]
    assert "Traceback" not in second.stderr and second.stdout == ""
    assert contested.first_running  # the second ended while the first trained: it neither waited nor trained
    assert contested.first.returncode == 0, contested.first_err[-3000:]
    assert json.loads(contested.first_out[contested.first_out.index("{") :])["step"] == 10
    lines = (out / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["chunk"] for line in lines] == list(range(TINY.num_chunks))
    assert steps(out) == [6, 8, 10]
    assert (out / ".lock").read_text() == ""  # released at the end


def test_a_stale_lock_is_taken_over_with_a_message(tmp_path, experiment, contested, capsys):
    out = copy_run(contested, tmp_path)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(gone.stdout)
    holder = {"pid": pid, "host": socket.gethostname(), "started": "2025-01-01T00:00:00+00:00", "command": "hps x"}
    (out / ".lock").write_text(json.dumps(holder))
    assert main(train_argv(experiment, out)) == 0  # the run is complete: it resumes and trains nothing
    notices = [line for line in capsys.readouterr().err.splitlines() if "stale lock" in line]
    assert len(notices) == 1, notices
    assert notices[0].startswith(f"hps train: {out}: took over the stale lock") and f"PID {pid} on" in notices[0]
    assert (out / ".lock").read_text() == ""


# ---------------------------------------------------------------- SIGKILL at a chunk boundary


@pytest.mark.slow
@pytest.mark.parametrize("point", list(KILL_POINTS))
def test_a_kill_at_any_point_of_a_chunk_boundary_loses_and_repeats_nothing(
    point, tmp_path, experiment, contested, capsys
):
    """The kill needs its own process; the resume is `hps train` in this one (the same command,
    without another interpreter's start and compiles)."""
    out = tmp_path / "run"
    argv = train_argv(experiment, out)
    script = [sys.executable, "-c", KILLING_RUN, point, str(KILL_CHUNK), str(KILL_STEP), *argv]
    killed = subprocess.run(script, cwd=REPO, env=env(), capture_output=True, text=True, timeout=600)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    chunks, latest = KILL_POINTS[point]  # the kill landed where it was meant to
    assert [r["chunk"] for r in read_metrics(out / "metrics.jsonl")] == chunks
    assert steps(out)[-1] == latest
    if point == "mid-save":
        assert [p for p in (out / "checkpoints").iterdir() if "tmp" in p.name]  # orbax's unfinished step
    code = main(argv)
    assert code == 0, capsys.readouterr().err[-3000:]
    assert_same_run(out, contested.out)
    assert not [p for p in (out / "checkpoints").iterdir() if "tmp" in p.name]


# ---------------------------------------------------------------- flipped bits


def flip_bit(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 1
    path.write_bytes(bytes(data))


def flip_state_bit(step_dir: Path) -> None:
    """One bit in the middle of the array data orbax reads (state/d/, the largest file)."""
    data = max((step_dir / "state" / "d").iterdir(), key=lambda p: p.stat().st_size)
    flip_bit(data, data.stat().st_size // 2)


def flip_spec_bit(step_dir: Path) -> None:
    """One bit of the spec's JSON that leaves it JSON: the split name "ckpt-tiny" turns "bkpt-tiny"."""
    spec = step_dir / "spec" / "metadata"
    flip_bit(spec, spec.read_bytes().index(b"ckpt-tiny"))


def swap_state(step_dir: Path) -> None:
    """The state of the step before in place of this step's: intact files, not the ones saved here."""
    shutil.rmtree(step_dir / "state")
    shutil.copytree(step_dir.parent / str(int(step_dir.name) - TINY.updates_per_chunk) / "state", step_dir / "state")


def test_train_resumes_from_the_newest_intact_step_past_flipped_bits(tmp_path, experiment, contested, capsys):
    out = copy_run(contested, tmp_path)
    flip_state_bit(out / "checkpoints" / "10")
    flip_spec_bit(out / "checkpoints" / "8")
    assert main(train_argv(experiment, out)) == 0
    notices = [line for line in capsys.readouterr().err.splitlines() if "damaged" in line]
    assert len(notices) == 1, notices
    assert notices[0].startswith(f"hps train: {out / 'checkpoints'}: damaged checkpoint steps 10 (state")
    assert "8 (spec damaged)" in notices[0] and notices[0].endswith("resuming from step 6")
    assert sorted(p.name for p in (out / "damaged-checkpoints").iterdir()) == ["10", "8"]
    assert_same_run(out, contested.out)


DAMAGES = {  # how -> (damage, the field the error names, a word of its problem)
    "state-bit": (flip_state_bit, "state", "unreadable"),
    "state-swapped": (swap_state, "state", "digest"),
    "spec-bit": (flip_spec_bit, "spec", "digest"),
}


@pytest.mark.parametrize("how", list(DAMAGES))
def test_plan_refuses_a_damaged_checkpoint_naming_the_step(how, tmp_path, contested):
    out = copy_run(contested, tmp_path)
    latest = out / "checkpoints" / "10"
    damage, field, word = DAMAGES[how]
    damage(latest)
    plan = subprocess.run(
        hps("plan", "--checkpoint", str(out), *SMALL, "--plans", "4"),
        cwd=REPO,
        env=env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert plan.returncode == 2 and plan.stdout == "", plan.stderr[-3000:]
    assert plan.stderr.startswith(f"hps plan: error: {latest}: {field}: ") and word in plan.stderr
    assert plan.stderr.count("\n") == 1, plan.stderr  # the message alone: no traceback, no echo of orbax's reads
    with pytest.raises(CheckpointDamaged, match=word) as caught:
        checkpoint.load_policy(out / "checkpoints")
    assert caught.value.source == str(latest) and caught.value.field == field


def test_train_with_every_step_damaged_exits_2_and_moves_nothing(tmp_path, experiment, contested, capsys):
    out = copy_run(contested, tmp_path)
    for step in steps(out):
        flip_state_bit(out / "checkpoints" / str(step))
    before = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    metrics = (out / "metrics.jsonl").read_text()
    assert main(train_argv(experiment, out)) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"hps train: error: {out / 'checkpoints'}: every checkpoint step is damaged"), err
    assert all(f"checkpoints/{step}: state" in err for step in (6, 8, 10))
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == before
    assert (out / "metrics.jsonl").read_text() == metrics
    from hps.io.runfolder import lock

    lock.release(lock.acquire(out))  # the failed run released the folder


def test_asyncio_echo_of_unawaited_array_reads_is_dropped_and_nothing_else(caplog):
    """A damaged step's other array reads fail too; asyncio logs each one nobody awaited (an orbax
    read task, a tensorstore future) when it is collected. restore reports the damage once, so
    those records go; any other stays."""
    import asyncio
    import gc

    checkpoint._quiet_failed_restore_echo()
    damaged = "DATA_LOSS: CRC-32C checksum verification failed [tensorstore_spec='{}']"

    async def async_deserialize():  # the name of orbax's array read
        raise ValueError("DATA_LOSS: CRC-32C checksum verification failed")

    async def elsewhere():
        raise ValueError("a failure of someone else's")

    loop = asyncio.new_event_loop()
    tasks = [loop.create_task(async_deserialize()), loop.create_task(elsewhere())]
    futures = [loop.create_future(), loop.create_future()]
    futures[0].set_exception(ValueError(damaged))
    futures[1].set_exception(ValueError("another future's own failure"))
    loop.run_until_complete(asyncio.sleep(0.01))
    loop.close()
    gc.collect()  # what earlier tests left to collect is logged before ours
    caplog.clear()
    with caplog.at_level("ERROR", logger="asyncio"):
        del tasks, futures
        gc.collect()
    logged = [record.getMessage() for record in caplog.records if record.name == "asyncio"]
    assert len(logged) == 2, logged
    assert any("elsewhere" in m for m in logged) and any("another future's own failure" in m for m in logged)
    assert not any("async_deserialize" in m or "tensorstore_spec" in m for m in logged)
