"""Collective policy checkpoints: thin wrappers over `hps.rl.checkpoint` for the collective kind."""

from __future__ import annotations

import os

from hps.collective.agent.evaluation import learned_orders
from hps.collective.agent.train import COLLECTIVE
from hps.collective.env.generator import collective_instance
from hps.config.limits import chunks_bucket
from hps.rl import checkpoint


def load_policy(path: str | os.PathLike, step: int | None = None):
    """(policy functions, parameters, spec document with "step") of the collective policy saved
    in `path` (a run folder or its checkpoints/), at `step` (default the latest)."""
    return checkpoint.load_policy(checkpoint.checkpoint_folder(path), step, kind=COLLECTIVE.name)


def checkpoint_orders(checkpoint, network, size_bytes: float, chunks: int):
    """(chunks_bucket(chunks), D) orders the collective policy saved in `checkpoint` (a run
    folder or its checkpoints/) picks for one All-Reduce of size_bytes in `chunks` chunks on
    `network` (any network and chunk count the loaders accept: the policy has no size of its
    own); rows past the chunk count are the identity."""
    policy, params, _ = load_policy(checkpoint)
    instance = collective_instance(network, size_bytes, chunks)
    return learned_orders(policy, params, instance, max_chunks=chunks_bucket(chunks))
