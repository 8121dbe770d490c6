"""Training checkpoints with orbax's `CheckpointManager` (docs/environments.md, "Checkpoints").

A checkpoint directory holds one numbered step folder per save (the number is the update count),
each with two items: `state`, the whole TrainState (policy parameters, optimizer state, REINFORCE
baseline, PRNG key, step), and `spec`, a JSON document: the policy kind (placement or
collective, `hps.rl.policy_kind`), the format version, the policy architecture and the training
config. `hps plan` and `hps collective --policy learned` rebuild the policy from `spec` alone;
`hps train` resumes from the latest step. Saves are synchronous and atomic (orbax writes to a
temporary folder and renames it), so a run killed mid-save leaves the previous step intact.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import jax
import orbax.checkpoint as ocp

from hps.errors import ConfigError
from hps.rl.policy_kind import PolicyKind, policy_kind_named, policy_kind_of

FORMAT_VERSION = 1


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
    if document.get("format_version") != FORMAT_VERSION:
        raise ConfigError(
            source, "spec.format_version", f"format {document.get('format_version')!r}, this hps reads {FORMAT_VERSION}"
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


def save(manager: ocp.CheckpointManager, state, config) -> int:
    """Save `state` and the spec of `config` under step = state.step; returns the step."""
    step = int(jax.device_get(state.step))
    args = ocp.args.Composite(state=ocp.args.StandardSave(state), spec=ocp.args.JsonSave(spec_document(config)))
    manager.save(step, args=args, force=True)
    manager.wait_until_finished()
    return step


def read_spec(manager: ocp.CheckpointManager, step: int | None = None) -> tuple[int, dict]:
    """(step, spec document) of `step` (default the latest); ConfigError when there is none."""
    source = str(manager.directory)
    step = manager.latest_step() if step is None else step
    if step is None:
        raise ConfigError(source, "", "holds no checkpoint")
    try:
        document = manager.restore(step, args=ocp.args.Composite(spec=ocp.args.JsonRestore())).spec
    except Exception as error:  # orbax raises many types for missing or damaged files
        raise ConfigError(
            f"{source}/{step}",
            "spec",
            f"unreadable checkpoint (a damaged or incomplete step; remove its folder to use the step before): {error}",
        ) from None
    check_document(document, f"{source}/{step}")
    return step, document


def restore(manager: ocp.CheckpointManager, config, *, devices=None, step: int | None = None):
    """The TrainState saved at `step` (default the latest), laid out like a fresh state of
    `config` on `devices`. ConfigError when the checkpoint holds another kind of policy, another
    architecture or algorithm, or when its files are damaged."""
    step, document = read_spec(manager, step)
    source = f"{manager.directory}/{step}"
    saved = config_from_document(document, source)
    kind = policy_kind_of(config)
    if type(saved) is not type(config):
        raise ConfigError(
            source, "spec.kind", f"checkpoint holds a {document['kind']} policy, this run trains {kind.name}"
        )
    for name in ("policy", "algorithm"):
        if getattr(saved, name, None) != getattr(config, name, None):
            raise ConfigError(
                source, f"spec.train.{name}", f"checkpoint has {getattr(saved, name)}, this run {getattr(config, name)}"
            )
    abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, kind.init_state(config, devices=devices))
    try:
        return manager.restore(step, args=ocp.args.Composite(state=ocp.args.StandardRestore(abstract))).state
    except Exception as error:
        raise ConfigError(
            source,
            "state",
            f"cannot restore the training state (a damaged or incomplete step; "
            f"remove its folder to resume from the step before): {error}",
        ) from None


def load_policy(directory: str | os.PathLike, step: int | None = None, kind: str | None = None):
    """(policy functions, parameters, spec document with "step") of a checkpoint, for planning.
    kind: the policy kind the caller needs (ConfigError when the checkpoint holds another)."""
    manager = open_manager(directory, read_only=True)
    step, document = read_spec(manager, step)
    config = config_from_document(document, f"{directory}/{step}", kind)
    state = restore(manager, config, devices=jax.devices()[:1], step=step)
    manager.close()
    return policy_kind_of(config).policy(config), state.params, dict(document, step=step)


def checkpoint_folder(path: str | os.PathLike) -> Path:
    """The checkpoint directory of `path`: a run folder (hps train --out) or its checkpoints/."""
    folder = Path(path)
    nested = folder / "checkpoints"
    if nested.is_dir():
        return nested
    if not folder.is_dir():
        raise ConfigError(str(path), "--checkpoint", "no such directory")
    return folder
