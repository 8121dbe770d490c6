"""A training session in a run folder: resume, checkpoints, metrics, evaluation, time budget.

Folder layout (`out`):
    checkpoints/      orbax CheckpointManager steps (state + JSON spec), see hps.rl.checkpoint
    metrics.jsonl     one JSON object per chunk: chunk, step, elapsed_s, the chunk's mean metrics,
                      and eval_* on evaluation chunks
    learning_curve.png

`train_session` restores the latest checkpoint when there is one and continues from its step,
so a run killed at any point (SIGKILL included) and started again with the same config ends
with the same parameters as an uninterrupted run: every chunk is a pure function of the state,
whose PRNG key is saved with it. Nothing is printed; `on_chunk` feeds a progress bar. In a
multi-process run every process saves its part of the checkpoint (orbax coordinates them) and
process 0 alone writes the metrics and the plot.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import jax
import numpy as np

from hps.config.files import atomic_write_text
from hps.errors import ConfigError, TrainingDiverged
from hps.rl import checkpoint
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


def train_session(
    config, out, *, minutes: float | None = None, devices=None, eval_every: int = 5, on_chunk=None, evaluate=True
) -> tuple[TrainState, list[dict]]:
    """Train `config` (a placement TrainConfig or a CollectiveTrainConfig) in run folder `out`
    until config.num_chunks chunks are done or `minutes` have passed (checked between chunks).
    Returns (state, every metrics record of the run, earlier sessions' included).
    on_chunk(record) runs after each chunk."""
    kind = policy_kind_of(config)
    paths = SessionPaths(Path(out))
    try:
        paths.out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigError(str(out), "", f"cannot create the run folder: {error.strerror or error}") from None
    manager = checkpoint.open_manager(paths.checkpoints)
    state = None
    if manager.latest_step() is not None:
        state = checkpoint.restore(manager, config, devices=devices)
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
        checkpoint.save(manager, state, config)
        if primary:
            with paths.metrics.open("a") as stream:
                stream.write(json.dumps(record) + "\n")
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
    finally:
        manager.close()
    if records and primary:
        from hps.report.learning_curve import save_learning_curve

        save_learning_curve(records, paths.curve, title=f"{kind.name} policy, {config.num_envs} envs")
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
