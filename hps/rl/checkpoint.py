"""Training checkpoints with orbax's `CheckpointManager` (docs/environments.md, "Checkpoints").

A checkpoint directory holds one numbered step folder per save (the number is the update count),
each with three items: `state`, the whole TrainState (policy parameters, optimizer state,
REINFORCE baseline, PRNG key, step); `spec`, a JSON document: the policy kind (placement or
collective, `hps.rl.policy_kind`), the format version, the policy architecture and the training
config; and `integrity`, a JSON record of two sha256 digests, one of the state's arrays (every
leaf's key path, dtype, shape and bytes, in tree order) and one of the spec (its canonical JSON).
Every load recomputes both and raises `CheckpointDamaged`, naming the step's folder and what is
damaged, when one differs or a file cannot be read. `hps plan` and `hps collective --policy
learned` rebuild the policy from `spec` alone; `hps train` resumes from the newest intact step
(`restore_intact`), moving damaged newer steps out of the way. Saves are synchronous and atomic
(orbax writes to a temporary folder and renames it), so a run killed mid-save leaves the previous
step intact, and the temporary folder it leaves is removed when the next run opens the directory.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp

from hps.errors import CannotWrite, CheckpointDamaged, ConfigError
from hps.io.processes import is_primary
from hps.rl.driver import state_sharding
from hps.rl.policy_kind import PolicyKind, policy_kind_named, policy_kind_of

FORMAT_VERSION = 3
"""Checkpoints of another format version are refused, naming both versions. Format 3: the
placement policy has no size of its own (PolicySpec without max_layers; the attention encoder's
positions are sinusoidal), trained by default on the exact solver's labels. Format 2 had the
integrity digests; format 1 had none."""
FORMAT_HISTORY = {
    1: "before checkpoint digests",
    2: "a placement policy fixed at 32 layers and 6 types",
}
AWAY = "the step is damaged or incomplete: move its folder away to use the step before"


def spec_document(config) -> dict:
    """The JSON `spec` item saved beside the state."""
    kind = policy_kind_of(config)
    return {
        "kind": kind.name,
        "format_version": FORMAT_VERSION,
        "policy": config.policy.to_dict(),
        "train": kind.config_to_dict(config),
    }


def check_document(document: Any, source: str) -> PolicyKind:
    """The kind of a spec document; ConfigError unless it is one of this format version."""
    if not isinstance(document, dict) or "kind" not in document:
        raise ConfigError(source, "spec.kind", "not an hps policy checkpoint")
    kind = policy_kind_named(document["kind"], source)
    version = document.get("format_version")
    if version != FORMAT_VERSION:
        written = f" ({FORMAT_HISTORY[version]})" if version in FORMAT_HISTORY else ""
        raise ConfigError(
            source,
            "spec.format_version",
            f"checkpoint format {version!r}{written}; this hps reads format {FORMAT_VERSION} only: "
            "train the policy again with this hps (hps train)",
        )
    return kind


def config_from_document(document: dict, source: str, kind: str | None = None):
    """The training config a `spec` document was saved with (ConfigError when it does not
    parse, or when it is not of policy kind `kind`, if given)."""
    if kind is not None and isinstance(document, dict) and document.get("kind") != kind:
        raise ConfigError(source, "spec.kind", f"holds a {document.get('kind')} policy; this needs a {kind} policy")
    kind = check_document(document, source)
    try:
        return kind.config_from_dict(dict(document["train"]))
    except (KeyError, TypeError, ValueError, ConfigError) as error:
        raise ConfigError(source, "spec.train", f"cannot rebuild the training config: {error}") from None


def open_manager(
    directory: str | os.PathLike, *, max_to_keep: int = 3, read_only: bool = False
) -> ocp.CheckpointManager:
    """An orbax CheckpointManager over `directory` (created unless read_only), synchronous saves."""
    path = Path(directory).absolute()
    if read_only and not path.is_dir():
        raise ConfigError(str(directory), "", "no such checkpoint directory")
    options = ocp.CheckpointManagerOptions(
        max_to_keep=None if read_only else max_to_keep,
        save_interval_steps=0 if read_only else 1,
        enable_async_checkpointing=False,
        read_only=read_only,
        create=not read_only,
        cleanup_tmp_directories=not read_only,  # what a run killed mid-save left
    )
    with _quiet_absl():  # orbax logs a warning for every read-only manager
        return ocp.CheckpointManager(path, options=options)


@contextmanager
def _quiet_absl():
    from absl import logging as absl_logging

    level = absl_logging.get_verbosity()
    absl_logging.set_verbosity(absl_logging.ERROR)
    try:
        yield
    finally:
        absl_logging.set_verbosity(level)


def state_digest(state) -> str:
    """The sha256 (hex) of a pytree of arrays: every leaf's key path, dtype, shape and bytes, in
    tree order, read to the host."""
    digest = hashlib.sha256()
    for path, leaf in jax.tree_util.tree_flatten_with_path(jax.device_get(state))[0]:
        array = np.asarray(leaf)
        digest.update(f"{jax.tree_util.keystr(path)}|{array.dtype.str}|{array.shape}|".encode())
        digest.update(array.tobytes(order="C"))
    return digest.hexdigest()


def spec_digest(document: Any) -> str:
    """The sha256 (hex) of a JSON document's canonical text (sorted keys, no spaces)."""
    return hashlib.sha256(json.dumps(document, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def save(manager: ocp.CheckpointManager, state, config) -> int:
    """Save `state`, the spec of `config` and the digests of both under step = state.step;
    returns the step."""
    step = int(jax.device_get(state.step))
    document = spec_document(config)
    integrity = {
        "format_version": FORMAT_VERSION,
        "state_sha256": state_digest(state),
        "spec_sha256": spec_digest(document),
    }
    args = ocp.args.Composite(
        state=ocp.args.StandardSave(state), spec=ocp.args.JsonSave(document), integrity=ocp.args.JsonSave(integrity)
    )
    try:
        manager.save(step, args=args, force=True)
        manager.wait_until_finished()
    except Exception as error:  # a full disk or a folder taken away: orbax raises many types
        remove_unfinished(manager.directory)
        raise CannotWrite(f"{step_folder(manager, step)}: cannot save the checkpoint: {_cause(error)}") from None
    return step


UNFINISHED = ".orbax-checkpoint-tmp"
"""What the folder of a step orbax has not finished writing has in its name."""


def remove_unfinished(directory) -> None:
    """Remove the unfinished step folders in checkpoint `directory` (the primary process alone)."""
    path = Path(directory)
    if not is_primary() or not path.is_dir():
        return
    for entry in path.iterdir():
        if UNFINISHED in entry.name and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)


def discard(manager: ocp.CheckpointManager, step: int) -> None:
    """Delete checkpoint step `step` (the primary process alone), then reload the list of steps
    on every process."""
    if is_primary():
        shutil.rmtree(Path(manager.directory) / str(step))
    ocp.multihost.sync_global_processes("hps-checkpoint-discard")
    manager.reload()


def _quiet_failed_restore_echo() -> None:
    """Silence the echoes of a failed state restore, which restore reports once as
    CheckpointDamaged: when one array of a step cannot be read, orbax closes its event loop while
    tensorstore still finishes the other reads, and each of their callbacks raises
    RuntimeError("Event loop is closed") into sys.unraisablehook; and the reads of the other
    arrays that failed too are logged by asyncio as "Task (or Future) exception was never
    retrieved" when their tasks and futures are collected, a traceback on stderr per array
    either way. Installed once per process; every other unraisable exception and asyncio record
    goes on as before."""
    previous = sys.unraisablehook
    if getattr(previous, "drops_closed_loop_callbacks", False):
        return

    def hook(unraisable):
        error = unraisable.exc_value
        if not (isinstance(error, RuntimeError) and str(error) == "Event loop is closed"):
            previous(unraisable)

    hook.drops_closed_loop_callbacks = True
    sys.unraisablehook = hook
    logging.getLogger("asyncio").addFilter(_unretrieved_array_reads)


UNRETRIEVED = ("Task exception was never retrieved", "Future exception was never retrieved")


def _unretrieved_array_reads(record: logging.LogRecord) -> bool:
    """False (drop) for asyncio's record of an array read whose failure nobody awaited: an orbax
    read task (async_deserialize) or a tensorstore future (its error names the tensorstore_spec)."""
    message = record.getMessage()
    ours = "async_deserialize" in message or "tensorstore_spec" in message
    return not (message.startswith(UNRETRIEVED) and ours)


def step_folder(manager: ocp.CheckpointManager, step: int) -> str:
    """The folder of checkpoint step `step`, as errors name it."""
    return f"{manager.directory}/{step}"


def _chosen_step(manager: ocp.CheckpointManager, step: int | None) -> int:
    """`step`, or the latest step when None; ConfigError when the directory holds none, or
    holds no step `step` (naming the steps it has)."""
    steps = sorted(manager.all_steps())
    if not steps:
        raise ConfigError(str(manager.directory), "", "holds no checkpoint")
    if step is None:
        return steps[-1]
    if step not in steps:
        shown = ", ".join(map(str, steps)) if len(steps) <= 8 else f"{steps[0]}, {steps[1]}, ..., {steps[-1]}"
        raise ConfigError(str(manager.directory), "", f"no step {step} in this folder (it has steps {shown})")
    return step


def _cause(error: Exception, limit: int = 240) -> str:
    """The first line of an orbax/tensorstore error, without its spec dump, cut to its last
    `limit` characters (tensorstore names the innermost cause last)."""
    lines = str(error).strip().splitlines()
    text = lines[0].split(" [tensorstore_spec")[0] if lines else type(error).__name__
    return text if len(text) <= limit else "…" + text[-limit:]


def _restore_json(manager: ocp.CheckpointManager, step: int, item: str) -> Any:
    """JSON item `item` of `step`; CheckpointDamaged naming the item when it cannot be read."""
    try:
        return manager.restore(step, args=ocp.args.Composite(**{item: ocp.args.JsonRestore()}))[item]
    except Exception as error:  # orbax raises many types for missing or damaged files
        raise CheckpointDamaged(step_folder(manager, step), item, f"unreadable ({_cause(error)}); {AWAY}") from None


def _verified_spec(manager: ocp.CheckpointManager, step: int) -> tuple[dict, dict]:
    """(spec document, integrity record) of `step`, the spec checked against its digest.
    ConfigError for a spec of another format (older checkpoints have no digests),
    CheckpointDamaged for an unreadable item or a spec that does not match its digest."""
    source = step_folder(manager, step)
    document = _restore_json(manager, step, "spec")
    if not isinstance(document, dict) or document.get("format_version") != FORMAT_VERSION:
        check_document(document, source)  # raises: not an hps checkpoint, or another format
    integrity = _restore_json(manager, step, "integrity")
    if not isinstance(integrity, dict) or not {"state_sha256", "spec_sha256"} <= integrity.keys():
        raise CheckpointDamaged(source, "integrity", f"damaged: not a digest record; {AWAY}")
    if integrity["spec_sha256"] != spec_digest(document):
        raise CheckpointDamaged(source, "spec", f"damaged: it does not match the sha256 digest saved with it; {AWAY}")
    check_document(document, source)
    return document, integrity


def read_spec(manager: ocp.CheckpointManager, step: int | None = None) -> tuple[int, dict]:
    """(step, spec document) of `step` (default the latest), checked against its digest.
    ConfigError when there is none or it is of another format; CheckpointDamaged when damaged."""
    step = _chosen_step(manager, step)
    return step, _verified_spec(manager, step)[0]


def _check_same_training(document: dict, config, source: str) -> None:
    """ConfigError unless the spec `document` holds the policy kind, architecture and algorithm
    of `config`."""
    saved = config_from_document(document, source)
    if type(saved) is not type(config):
        raise ConfigError(
            source,
            "spec.kind",
            f"checkpoint holds a {document['kind']} policy, this run trains {policy_kind_of(config).name}",
        )
    for name in ("policy", "algorithm"):
        if getattr(saved, name, None) != getattr(config, name, None):
            raise ConfigError(
                source, f"spec.train.{name}", f"checkpoint has {getattr(saved, name)}, this run {getattr(config, name)}"
            )


def abstract_state(config, *, devices=None):
    """Shapes, dtypes and shardings of a fresh TrainState of `config` on `devices`
    (`driver.state_sharding`, as `driver.fresh_state` lays it), traced without initialising
    anything."""
    sharding = state_sharding(devices)
    shapes = jax.eval_shape(lambda: policy_kind_of(config).init_state(config, devices=devices))
    return jax.tree.map(lambda s: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sharding), shapes)


def restore(manager: ocp.CheckpointManager, config, *, devices=None, step: int | None = None):
    """The TrainState saved at `step` (default the latest), laid out like a fresh state of
    `config` on `devices`, checked against its digest. ConfigError when the checkpoint holds
    another kind of policy, another architecture or algorithm; CheckpointDamaged when its files
    cannot be read or do not match their digests."""
    step = _chosen_step(manager, step)
    document, integrity = _verified_spec(manager, step)
    source = step_folder(manager, step)
    _check_same_training(document, config, source)
    abstract = abstract_state(config, devices=devices)
    _quiet_failed_restore_echo()
    try:
        state = manager.restore(step, args=ocp.args.Composite(state=ocp.args.StandardRestore(abstract))).state
    except Exception as error:
        raise CheckpointDamaged(
            source, "state", f"cannot restore the training state: unreadable ({_cause(error)}); {AWAY}"
        ) from None
    if state_digest(state) != integrity["state_sha256"]:
        raise CheckpointDamaged(
            source, "state", f"damaged: its arrays do not match the sha256 digest saved with them; {AWAY}"
        )
    return state


def restore_intact(manager: ocp.CheckpointManager, config, damaged_dir: Path, *, devices=None):
    """(state, damaged): the TrainState of the newest step that restores and matches its
    digests (None when the directory holds no step), and [(step, CheckpointDamaged)] of the
    newer steps that do not, whose folders are moved to damaged_dir/<step> so that orbax saves
    those steps afresh. CheckpointDamaged when every step is damaged (nothing is moved then);
    other ConfigErrors (another architecture or format) as `restore` raises them."""
    damaged = []
    for step in sorted(manager.all_steps(), reverse=True):
        try:
            state = restore(manager, config, devices=devices, step=step)
        except CheckpointDamaged as error:
            damaged.append((step, error))
            continue
        if damaged:
            set_aside(manager, [s for s, _ in damaged], damaged_dir)
        return state, damaged
    if damaged:
        listed = "; ".join(f"{error.source}: {damage_summary(error)}" for _, error in damaged)
        raise CheckpointDamaged(
            str(manager.directory),
            "",
            f"every checkpoint step is damaged ({listed}); move this folder away to train from the start",
        )
    return None, []


def damage_summary(error: CheckpointDamaged) -> str:
    """What is damaged, in two words: "state unreadable", "spec damaged", …"""
    return f"{error.field or 'step'} {'unreadable' if 'unreadable' in error.problem else 'damaged'}"


def set_aside(manager: ocp.CheckpointManager, steps: list[int], damaged_dir: Path) -> None:
    """Move the folders of `steps` to damaged_dir/<step> (<step>-<n> when taken; the primary
    process alone), then reload the manager's list of steps on every process."""
    if is_primary():
        damaged_dir.mkdir(parents=True, exist_ok=True)
        for step in steps:
            source = Path(manager.directory) / str(step)
            target, n = damaged_dir / str(step), 0
            while target.exists():
                n += 1
                target = damaged_dir / f"{step}-{n}"
            try:
                source.rename(target)
            except OSError as error:
                raise ConfigError(str(source), "", f"cannot move the damaged step to {target}: {error}") from None
    ocp.multihost.sync_global_processes("hps-checkpoint-set-aside")
    manager.reload()


def load_policy(directory: str | os.PathLike, step: int | None = None, kind: str | None = None):
    """(policy functions, parameters, spec document with "step") of a checkpoint, for planning.
    kind: the policy kind the caller needs (ConfigError when the checkpoint holds another);
    CheckpointDamaged when the step does not match its digests."""
    manager = open_manager(directory, read_only=True)
    try:
        step, document = read_spec(manager, step)
        config = config_from_document(document, step_folder(manager, step), kind)
        state = restore(manager, config, devices=jax.devices()[:1], step=step)
    finally:
        manager.close()
    return policy_kind_of(config).policy(config), state.params, dict(document, step=step)


def checkpoint_folder(path: str | os.PathLike) -> Path:
    """The checkpoint directory of `path`: a run folder (hps train --out) or its checkpoints/."""
    folder = Path(path)
    nested = folder / "checkpoints"
    if nested.is_dir():
        return nested
    if not folder.is_dir():
        raise ConfigError(str(path), "", "no such directory")
    return folder
