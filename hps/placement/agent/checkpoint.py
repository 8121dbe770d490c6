"""Placement policy checkpoints: thin wrappers over `hps.rl.checkpoint` for the placement kind."""

from __future__ import annotations

import os

from hps.placement.agent.train import PLACEMENT
from hps.rl import checkpoint


def load_policy(path: str | os.PathLike, step: int | None = None):
    """(policy functions, parameters, spec document with "step") of the placement policy saved
    in `path` (a run folder or its checkpoints/), at `step` (default the latest)."""
    return checkpoint.load_policy(checkpoint.checkpoint_folder(path), step, kind=PLACEMENT.name)
