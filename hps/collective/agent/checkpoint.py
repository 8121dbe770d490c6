"""Collective policy checkpoints: thin wrappers over `hps.rl.checkpoint` for the collective kind."""

from __future__ import annotations

import os

from hps.collective.agent.evaluation import learned_orders
from hps.collective.agent.train import COLLECTIVE
from hps.collective.env.generator import collective_instance
from hps.config.limits import POLICY_DIMS
from hps.errors import ConfigError
from hps.rl import checkpoint


def load_policy(path: str | os.PathLike, step: int | None = None):
    """(policy functions, parameters, spec document with "step") of the collective policy saved
    in `path` (a run folder or its checkpoints/), at `step` (default the latest)."""
    return checkpoint.load_policy(checkpoint.checkpoint_folder(path), step, kind=COLLECTIVE.name)


def checkpoint_orders(checkpoint, network, size_bytes: float, chunks: int):
    """(max_chunks, D) orders the collective policy saved in `checkpoint` (a run folder or its
    checkpoints/) picks for one All-Reduce of size_bytes in `chunks` chunks on `network`."""
    if len(network.dimensions) > POLICY_DIMS:
        raise ConfigError(
            "--network",
            "dimension",
            f"the learned collective policy plans networks of up to {POLICY_DIMS} dimensions; "
            f"{network.name!r} has {len(network.dimensions)} (use --policy themis or best-fixed)",
        )
    policy, params, spec = load_policy(checkpoint)
    max_chunks = spec["train"]["max_chunks"]
    if chunks > max_chunks:
        raise ConfigError("--chunks", "chunks", f"the policy was trained for at most {max_chunks} chunks, got {chunks}")
    return learned_orders(policy, params, collective_instance(network, size_bytes, chunks), max_chunks=max_chunks)
