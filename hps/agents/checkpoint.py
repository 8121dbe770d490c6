"""Training checkpoints with orbax's `CheckpointManager` (SPEC "Environments and agents").

A checkpoint directory holds one numbered step folder per save (the number is the update count),
each with two items: `state`, the whole TrainState (policy parameters, optimizer state, REINFORCE
baseline, PRNG key, step), and `spec`, a JSON document: the format version, the policy
architecture and the training config. `hps plan` rebuilds the policy from `spec` alone;
`hps train` resumes from the latest step. Saves are synchronous and atomic (orbax writes to a
temporary folder and renames it), so a run killed mid-save leaves the previous step intact.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import jax
import orbax.checkpoint as ocp

from hps.agents.policy import PolicyFunctions, PolicySpec
from hps.agents.train import TrainConfig, TrainState, init_train_state
from hps.envs.generators import InstanceSplit
from hps.errors import ConfigError

FORMAT_VERSION = 1
KIND = "hps-placement-policy"


def spec_document(config: TrainConfig) -> dict:
    """The JSON `spec` item saved beside the state."""
    return {"kind": KIND, "format_version": FORMAT_VERSION, "policy": config.policy.to_dict(), "train": config.to_dict()}


def config_from_document(document: dict, source: str) -> TrainConfig:
    """The TrainConfig a `spec` document was saved with (ConfigError when it does not parse)."""
    check_document(document, source)
    try:
        train = dict(document["train"])
        train["policy"] = PolicySpec.from_dict(train["policy"])
        train["split"] = InstanceSplit(**train["split"])
        return TrainConfig(**train)
    except (KeyError, TypeError, ValueError) as error:
        raise ConfigError(source, "spec.train", f"cannot rebuild the training config: {error}") from error


def check_document(document: Any, source: str) -> None:
    """ConfigError unless `document` is a spec of this kind and format version."""
    if not isinstance(document, dict) or document.get("kind") != KIND:
        raise ConfigError(source, "spec.kind", f"not an hps placement-policy checkpoint (kind {_get(document, 'kind')!r})")
    if document.get("format_version") != FORMAT_VERSION:
        raise ConfigError(
            source, "spec.format_version", f"format {document.get('format_version')!r}, this hps reads {FORMAT_VERSION}"
        )


def _get(document: Any, key: str):
    return document.get(key) if isinstance(document, dict) else None


def open_manager(directory: str | os.PathLike, *, max_to_keep: int = 3, read_only: bool = False) -> ocp.CheckpointManager:
    """An orbax CheckpointManager over `directory` (created unless read_only), synchronous saves."""
    path = Path(directory).absolute()
    if read_only and not path.is_dir():
        raise ConfigError(str(directory), "", "no such checkpoint directory")
    options = ocp.CheckpointManagerOptions(
        max_to_keep=max_to_keep, enable_async_checkpointing=False, read_only=read_only, create=not read_only
    )
    return ocp.CheckpointManager(path, options=options)


def save(manager: ocp.CheckpointManager, state: TrainState, config: TrainConfig) -> int:
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
        raise ConfigError(f"{source}/{step}", "spec", f"unreadable checkpoint: {error}") from error
    check_document(document, f"{source}/{step}")
    return step, document


def restore(manager: ocp.CheckpointManager, config: TrainConfig, *, devices=None, step: int | None = None) -> TrainState:
    """The TrainState saved at `step` (default the latest), laid out like a fresh state of
    `config` on `devices`. ConfigError when the checkpoint was trained with another policy
    architecture or algorithm, or when its files are damaged."""
    step, document = read_spec(manager, step)
    source = f"{manager.directory}/{step}"
    saved = config_from_document(document, source)
    for name in ("policy", "algorithm"):
        if getattr(saved, name) != getattr(config, name):
            raise ConfigError(source, f"spec.train.{name}", f"checkpoint has {getattr(saved, name)}, this run {getattr(config, name)}")
    target = init_train_state(config, devices=devices)
    abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, target)
    try:
        restored = manager.restore(step, args=ocp.args.Composite(state=ocp.args.StandardRestore(abstract))).state
    except Exception as error:
        raise ConfigError(source, "state", f"cannot restore the training state: {error}") from error
    return restored


def load_policy(directory: str | os.PathLike, step: int | None = None) -> tuple[PolicyFunctions, Any, dict]:
    """(policy functions, parameters, spec document) of a checkpoint, for planning."""
    manager = open_manager(directory, read_only=True)
    step, document = read_spec(manager, step)
    config = config_from_document(document, f"{directory}/{step}")
    state = restore(manager, config, devices=jax.devices()[:1], step=step)
    manager.close()
    return PolicyFunctions(config.policy), state.params, dict(document, step=step)

