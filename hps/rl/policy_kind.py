"""Trainable policy kinds behind one interface, so checkpoints and training sessions treat the
placement and the collective policy alike.

A `PolicyKind` knows its config type and how to turn it into JSON and back, how to build a
fresh TrainState, the jitted train chunk, the policy functions, and a held-out evaluator
(params -> {"eval_…": float}) for the learning curve. Each agent registers its kind when its
training module is imported (`register_policy_kind`), as experiment kinds do, so this module never
imports an agent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hps.errors import ConfigError


@dataclass(frozen=True)
class PolicyKind:
    name: str
    config_type: type
    config_from_dict: Callable[[dict], Any]
    config_to_dict: Callable[[Any], dict]
    init_state: Callable[..., Any]  # (config, *, devices) -> TrainState
    make_train: Callable[..., Any]  # (config, *, devices) -> jitted train_chunk
    policy: Callable[[Any], Any]  # config -> policy functions
    evaluator: Callable[[Any], Callable[[Any], dict]]  # config -> (params -> metrics)


_POLICY_KINDS: dict[str, PolicyKind] = {}

SHIPPED_KINDS = ("placement", "parallel", "collective")
"""The kinds hps's agents register. A command loads only the agent it needs, so a checkpoint of
another shipped kind is named as the wrong kind, not as an unknown one."""


def register_policy_kind(kind: PolicyKind) -> PolicyKind:
    """Make `kind` known by its name and config type; returns it."""
    _POLICY_KINDS[kind.name] = kind
    return kind


def policy_kind_named(name: str, source: str = "checkpoint") -> PolicyKind:
    """The registered kind called `name` (ConfigError naming `source` otherwise)."""
    if name not in _POLICY_KINDS:
        loaded = sorted(_POLICY_KINDS)
        if name in SHIPPED_KINDS and loaded:  # a kind whose agent this command did not load: not the one it needs
            problem = f"the checkpoint holds a {name} policy; this command needs a {' or '.join(loaded)} policy"
            raise ConfigError(source, "spec.kind", f"{problem} (hps train --kind {loaded[0]} trains one)")
        known = ", ".join(loaded) or "none loaded"
        raise ConfigError(source, "spec.kind", f"unknown policy kind {name!r}; hps knows {known}")
    return _POLICY_KINDS[name]


def policy_kind_of(config) -> PolicyKind:
    """The kind whose config type `config` is (ConfigError otherwise)."""
    for kind in _POLICY_KINDS.values():
        if isinstance(config, kind.config_type):
            return kind
    raise ConfigError(
        "experiment", "CONFIG", f"must be a TrainConfig or CollectiveTrainConfig, got {type(config).__name__}"
    )
