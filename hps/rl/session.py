"""A training session in a run folder: lock, resume, checkpoints, metrics, evaluation, time budget.

Folder layout (`out`):
    .lock             the run folder's lock (hps.rl.lock): JSON naming the live run training here
    checkpoints/      orbax CheckpointManager steps (state, JSON spec, digests), see hps.rl.checkpoint
    damaged-checkpoints/  steps that failed their digest check, moved aside on resume
    metrics.jsonl     one JSON object per chunk: chunk, step, elapsed_s, the chunk's mean metrics,
                      and eval_* on evaluation chunks
    learning_curve.png

`train_session` holds the folder's lock from start to end, so a second run into the same folder
fails at once with RunFolderBusy. It restores the newest intact checkpoint when there is one and
continues from its step. After each chunk it appends the chunk's metrics line (flushed to disk),
then saves the checkpoint, then calls `on_chunk`; a resume drops the metrics lines of chunks past
its checkpoint and runs those chunks again. So a run killed at any point (SIGKILL included) and
started again with the same config ends with the same parameters as an uninterrupted run and one
metrics line per chunk: every chunk is a pure function of the state, whose PRNG key is saved with
it. Nothing is printed; `on_chunk` feeds a progress bar and `on_notice` gets one-line notices. In a
multi-process run every process saves its part of the checkpoint (orbax coordinates them) and
process 0 alone locks the folder and writes the metrics and the plot.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import jax
import numpy as np

from hps.config.files import atomic_write_text
from hps.errors import ConfigError, TrainingDiverged
from hps.rl import checkpoint, lock
from hps.rl.distributed import is_primary
from hps.rl.driver import TrainState, run_chunks
from hps.rl.policy_kind import policy_kind_of


@dataclass(frozen=True)
class SessionPaths:
    out: Path

    @property
    def checkpoints(self) -> Path:
        return self.out / "checkpoints"

    @property
    def metrics(self) -> Path:
        return self.out / "metrics.jsonl"

    @property
    def curve(self) -> Path:
        return self.out / "learning_curve.png"

    @property
    def damaged(self) -> Path:
        return self.out / "damaged-checkpoints"


def read_metrics(path: Path, before_chunk: int | None = None) -> list[dict]:
    """The metrics records of a run folder (those of chunks < before_chunk when given). A last
    line cut short (a run killed while appending it) is dropped; the session rewrites it."""
    if not path.exists():
        return []
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    records = []
    for index, line in enumerate(lines):
        try:
            records.append(json.loads(line))
        except ValueError:
            if index < len(lines) - 1:
                raise ConfigError(str(path), f"line {index + 1}", "not a JSON metrics record") from None
    return [r for r in records if before_chunk is None or r["chunk"] < before_chunk]


def append_record(path: Path, record: dict) -> None:
    """Append one metrics record to `path` as a JSON line, flushed to disk (fsync) before this
    returns, so the line is kept before the checkpoint of its chunk is saved."""
    with path.open("a") as stream:
        stream.write(json.dumps(record) + "\n")
        stream.flush()
        os.fsync(stream.fileno())


def train_session(
    config,
    out,
    *,
    minutes: float | None = None,
    devices=None,
    eval_every: int = 5,
    on_chunk=None,
    evaluate=True,
    on_notice=None,
) -> tuple[TrainState, list[dict]]:
    """Train `config` (a placement TrainConfig or a CollectiveTrainConfig) in run folder `out`
    until config.num_chunks chunks are done or `minutes` have passed (checked between chunks).
    Returns (state, every metrics record of the run, earlier sessions' included).
    on_chunk(record) runs after each chunk, once its metrics line and checkpoint are saved;
    on_notice(line) gets a line for each thing a user should hear of (a stale lock taken over,
    damaged checkpoint steps set aside). RunFolderBusy, before anything is compiled, when
    another live run holds the folder's lock."""
    paths = SessionPaths(Path(out))
    try:
        paths.out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigError(str(out), "", f"cannot create the run folder: {error.strerror or error}") from None
    with lock.holding(paths.out, enabled=is_primary()) as held:
        _notify(on_notice, lock.stale_notice(held))
        manager = checkpoint.open_manager(paths.checkpoints)
        try:
            state, records = _train(
                config,
                paths,
                manager,
                minutes=minutes,
                devices=devices,
                eval_every=eval_every,
                on_chunk=on_chunk,
                evaluate=evaluate,
                on_notice=on_notice,
            )
        finally:
            manager.close()
        if records and is_primary():
            from hps.report.learning_curve import save_learning_curve

            name = policy_kind_of(config).name
            save_learning_curve(records, paths.curve, title=f"{name} policy, {config.num_envs} envs")
    return state, records


def _notify(on_notice, line: str | None) -> None:
    if line is not None and on_notice is not None:
        on_notice(line)


def damaged_notice(paths: SessionPaths, damaged: list, state) -> str | None:
    """One line naming the damaged steps set aside and the step resumed from, or None."""
    if not damaged:
        return None
    steps = ", ".join(f"{step} ({checkpoint.damage_summary(error)})" for step, error in damaged)
    return (
        f"{paths.checkpoints}: damaged checkpoint steps {steps} moved to {paths.damaged}; "
        f"resuming from step {int(jax.device_get(state.step))}"
    )


def _train(config, paths, manager, *, minutes, devices, eval_every, on_chunk, evaluate, on_notice):
    """train_session's work in the locked folder with its open checkpoint manager."""
    kind = policy_kind_of(config)
    state, damaged = checkpoint.restore_intact(manager, config, paths.damaged, devices=devices)
    _notify(on_notice, damaged_notice(paths, damaged, state))
    start_chunk = 0 if state is None else int(jax.device_get(state.step)) // config.updates_per_chunk
    records = read_metrics(paths.metrics, before_chunk=start_chunk)
    primary = is_primary()
    if primary:
        atomic_write_text(paths.metrics, "".join(json.dumps(r) + "\n" for r in records))
    evaluator = kind.evaluator(config) if evaluate else None
    started = time.perf_counter()
    offset = records[-1]["elapsed_s"] if records else 0.0

    def after_chunk(chunk, state, metrics):
        record = {
            "chunk": chunk,
            "step": int(jax.device_get(state.step)),
            "elapsed_s": offset + time.perf_counter() - started,
            **metrics,
        }
        last = chunk == config.num_chunks - 1 or out_of_time()
        if evaluator is not None and (chunk % eval_every == eval_every - 1 or last):
            record.update(evaluator(state.params))
        if primary:
            append_record(paths.metrics, record)  # before the checkpoint: a resume from an older one drops it
        checkpoint.save(manager, state, config)
        records.append(record)
        if on_chunk is not None:
            on_chunk(record)

    def out_of_time():
        return minutes is not None and time.perf_counter() - started >= 60.0 * minutes

    try:
        train_chunk = kind.make_train(config, devices=devices)
        state = kind.init_state(config, devices=devices) if state is None else state
        state, _ = run_chunks(
            train_chunk, state, config.updates_per_chunk, config.num_chunks, on_chunk=after_chunk, stop=out_of_time
        )
    except TrainingDiverged as error:
        raise TrainingDiverged(f"{paths.out}: {error}; {kept(manager)}") from None
    return state, records


def kept(manager) -> str:
    """What a diverged run leaves to resume from."""
    step = manager.latest_step()
    if step is None:
        return "no checkpoint was saved; lower the learning rate and start again"
    return (
        f"its last good checkpoint (update {step}) is kept in {manager.directory}; the same config "
        "repeats the divergence when resumed, so lower the learning rate to go on"
    )


def final_params(state: TrainState):
    """The parameters as host numpy arrays."""
    return jax.tree.map(np.asarray, jax.device_get(state.params))
