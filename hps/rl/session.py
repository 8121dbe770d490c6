"""A training session in a run folder: lock, resume, checkpoints, metrics, evaluation, time budget.

Folder layout (`out`):
    .lock             the run folder's lock (hps.io.runfolder.lock): JSON naming the live run here
    manifest.json     the runs of this folder (command, arguments, run id, chunks, status) and
                      the run that wrote each output (hps.io.runfolder.manifest)
    checkpoints/      orbax CheckpointManager steps (state, JSON spec, digests), see hps.rl.checkpoint
    damaged-checkpoints/  steps that failed their digest check, moved aside on resume
    metrics.jsonl     one JSON object per chunk: chunk, step, elapsed_s, the chunk's mean metrics,
                      and eval_* on evaluation chunks (hps.rl.metrics)
    learning_curve.png

`train_session` holds the folder (`hps.io.runfolder.folder.run_folder`: links refused, writability
and free space checked, the lock taken, the run added to the manifest) from start to end, so a
second run into the same folder fails at once with RunFolderBusy. It restores the newest intact
checkpoint and continues from its step. After each chunk it saves the checkpoint, then appends the
chunk's metrics line (flushed to disk) and records both in the manifest, a signal waiting until
all three are done (`stop.deferred`); then it calls `on_chunk`. The metrics line is the chunk's
commit: a resume finds the newest checkpoint without its line (a run killed between the two),
discards that step and runs its chunk again. So a run killed at any point (SIGKILL included) and
started again with the same config ends with the same parameters as an uninterrupted run and one
metrics line per chunk: every chunk is a pure function of the state, whose PRNG key is saved with
it. Records lost or changed after hps wrote them are reported (`on_notice`, or a ConfigError),
never silently rewritten. A resume whose config changes a training setting of the checkpoint
(seed, learning rate, …; not num_chunks) is refused unless `allow_changes`, and then recorded in
the manifest and in the first metrics record after it. A failed write (no space left, permission
denied) ends the run with CannotWrite, leaving no unfinished checkpoint folder behind.

Nothing is printed; `on_chunk` feeds a progress bar and `on_notice` gets one-line notices. In a
multi-process run every process saves its part of the checkpoint (orbax coordinates them) and
process 0 alone locks the folder and writes the metrics, the manifest and the plot.
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
from hps.io.processes import is_primary
from hps.io.runfolder import owned, preflight, stop
from hps.io.runfolder.folder import run_folder
from hps.rl import checkpoint, metrics
from hps.rl.driver import TrainState, run_chunks
from hps.rl.metrics import read_metrics
from hps.rl.policy_kind import policy_kind_of

__all__ = ["SessionPaths", "final_params", "read_metrics", "train_session"]


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
    command: list[str] | None = None,
    allow_changes: bool = False,
) -> tuple[TrainState, list[dict]]:
    """Train `config` (a placement TrainConfig or a CollectiveTrainConfig) in run folder `out`
    until config.num_chunks chunks are done or `minutes` have passed (checked between chunks).
    Returns (state, every metrics record of the run, earlier sessions' included).
    on_chunk(record) runs after each chunk, once its checkpoint and metrics line are saved;
    on_notice(line) gets a line for each thing a user should hear of (a stale lock taken over,
    damaged checkpoint steps set aside, metrics records lost, settings changed on purpose).
    command: the argv the manifest records ("hps" first; default this process's).
    RunFolderBusy, before anything is compiled, when another live run holds the folder's lock;
    CannotWrite when the folder cannot be written or lacks free space, before anything runs,
    or when a write fails on the way."""
    paths = SessionPaths(Path(out))
    with run_folder(paths.out, command, subfolders=("checkpoints",), enabled=is_primary()) as folder:
        _notify(on_notice, folder.stale_notice())
        manager = checkpoint.open_manager(paths.checkpoints)
        try:
            state, records = _train(
                config,
                paths,
                manager,
                folder,
                minutes=minutes,
                devices=devices,
                eval_every=eval_every,
                on_chunk=on_chunk,
                evaluate=evaluate,
                on_notice=on_notice,
                allow_changes=allow_changes,
            )
        finally:
            manager.close()
            checkpoint.remove_unfinished(paths.checkpoints)
        if records and is_primary():
            from hps.rl.learning_curve import save_learning_curve

            name = policy_kind_of(config).name
            try:
                with stop.deferred():
                    save_learning_curve(records, paths.curve, title=f"{name} policy, {config.num_envs} envs")
                    folder.wrote(paths.curve)
            except OSError as error:
                raise preflight.failure(paths.curve, error) from None
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


def updates_of(state) -> int:
    return 0 if state is None else int(jax.device_get(state.step))


def _resume(config, paths, manager, folder, *, devices, on_notice, allow_changes):
    """(state, records, changes) to go on from: the newest intact checkpoint, less a step whose
    metrics record was never appended, the records of the chunks it has done, and the settings
    changed on purpose (`_check_changes`, before anything in the folder changes). Every
    disagreement between the metrics file and the checkpoint is a notice; the file is rewritten
    only to drop a torn last line or records past the checkpoint."""
    state, damaged = checkpoint.restore_intact(manager, config, paths.damaged, devices=devices)
    changes = _check_changes(config, manager, state, folder, allow_changes=allow_changes, on_notice=on_notice)
    _notify(on_notice, damaged_notice(paths, damaged, state))
    if damaged and folder.manifest is not None:  # the steps set aside are this run's doing
        folder.manifest.wrote(paths.damaged)
    parsed = metrics.parse(paths.metrics)
    done = updates_of(state) // config.updates_per_chunk
    reconciled = metrics.reconcile(parsed.records, done)
    previous = updates_of(state) - config.updates_per_chunk
    if reconciled.uncommitted and (previous == 0 or previous in manager.all_steps()):
        checkpoint.discard(manager, updates_of(state))
        state = checkpoint.restore(manager, config, devices=devices, step=previous) if previous else None
        reconciled = metrics.reconcile(parsed.records, done - 1)
    for line in metrics.notices(paths.metrics, parsed, reconciled, updates_of(state)):
        _notify(on_notice, line)
    if is_primary() and (parsed.torn or reconciled.past):
        atomic_write_text(paths.metrics, metrics.text_of(reconciled.kept))
    return state, reconciled.kept, changes


def changed_settings(manager, config, step: int) -> dict[str, list]:
    """{setting: [saved, now]} of the training settings (num_chunks aside) in which `config`
    differs from the spec saved at `step`."""
    _, document = checkpoint.read_spec(manager, step)
    saved = document["train"]
    now = json.loads(json.dumps(policy_kind_of(config).config_to_dict(config)))
    names = sorted((saved.keys() | now.keys()) - {"num_chunks"})
    return {name: [saved.get(name), now.get(name)] for name in names if saved.get(name) != now.get(name)}


def _check_changes(config, manager, state, folder, *, allow_changes, on_notice) -> dict:
    """The settings this resume changes ({} for a fresh run); ConfigError unless allow_changes."""
    if state is None:
        return {}
    step = updates_of(state)
    changes = changed_settings(manager, config, step)
    if not changes:
        return {}
    listed = ", ".join(f"{name} {old!r} → {new!r}" for name, (old, new) in changes.items())
    if not allow_changes:
        raise ConfigError(
            checkpoint.step_folder(manager, step),
            "spec.train",
            f"this run changes the settings the checkpoint was trained with ({listed}); resume with them only "
            "on purpose (hps train --allow-changes, recorded in metrics.jsonl and manifest.json), "
            "or train in another folder",
        )
    if folder.manifest is not None:
        folder.manifest.note(changes=changes)
    _notify(on_notice, f"{paths_of(manager)}: resuming from update {step} with changed settings: {listed}")
    return changes


def paths_of(manager) -> str:
    return str(Path(manager.directory).parent)


def _train(config, paths, manager, folder, *, minutes, devices, eval_every, on_chunk, evaluate, on_notice, **resume):
    """train_session's work in the held folder with its open checkpoint manager."""
    kind = policy_kind_of(config)
    state, records, changes = _resume(config, paths, manager, folder, devices=devices, on_notice=on_notice, **resume)
    if state is not None and int(jax.device_get(state.step)) >= config.num_chunks * config.updates_per_chunk:
        return state, records  # every chunk is trained: nothing to build or compile
    primary = is_primary()
    evaluator = kind.evaluator(config) if evaluate else None
    started = time.perf_counter()
    offset = records[-1]["elapsed_s"] if records else 0.0
    first_chunk = len(records)

    def after_chunk(chunk, state, metrics_):
        record = {
            "chunk": chunk,
            "step": int(jax.device_get(state.step)),
            "elapsed_s": offset + time.perf_counter() - started,
            **metrics_,
        }
        last = chunk == config.num_chunks - 1 or out_of_time()
        if evaluator is not None and (chunk % eval_every == eval_every - 1 or last):
            record.update(evaluator(state.params))
        if changes and chunk == first_chunk:
            record["changes"] = changes
        with stop.deferred():  # the checkpoint, then its record: the record commits the chunk
            step = checkpoint.save(manager, state, config)
            if primary:
                commit(paths, folder, manager, record, step, first_chunk)
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


def commit(paths: SessionPaths, folder, manager, record: dict, step: int, first_chunk: int) -> None:
    """Append the chunk's metrics record and record it, and the checkpoint of `step`, as this
    run's outputs (the manifest lists the steps there are)."""
    try:
        owned.append_line(paths.metrics, json.dumps(record) + "\n")
        if folder.manifest is not None:
            outputs = folder.manifest.document["outputs"]
            steps = {f"checkpoints/{step}" for step in manager.all_steps()}
            for name in [name for name in outputs if name.startswith("checkpoints/") and name not in steps]:
                del outputs[name]
            folder.manifest.run["chunks"] = [first_chunk, record["chunk"]]
            folder.wrote(paths.metrics, paths.checkpoints / str(step))
    except OSError as error:
        raise preflight.failure(getattr(error, "filename", None) or paths.metrics, error) from None


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
