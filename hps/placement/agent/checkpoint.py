"""Placement policy checkpoints: thin wrappers over `hps.rl.checkpoint` for the placement kinds
(the schedule model's "placement" policy and the parallel model's "parallel" one)."""

from __future__ import annotations

import os

from hps.errors import ConfigError
from hps.placement.agent.parallel_train import PARALLEL
from hps.placement.agent.train import PLACEMENT
from hps.rl import checkpoint


def load_policy(path: str | os.PathLike, step: int | None = None):
    """(policy functions, parameters, spec document with "step") of the placement policy saved
    in `path` (a run folder or its checkpoints/), at `step` (default the latest)."""
    return checkpoint.load_policy(checkpoint.checkpoint_folder(path), step, kind=PLACEMENT.name)


def load_planning_policy(path: str | os.PathLike, step: int | None = None):
    """(policy functions, parameters, spec document with "step") of the placement or parallel
    policy saved in `path`; ConfigError for a checkpoint of another kind."""
    functions, params, document = checkpoint.load_policy(checkpoint.checkpoint_folder(path), step)
    if document["kind"] not in (PLACEMENT.name, PARALLEL.name):
        raise ConfigError(
            str(path), "spec.kind", f"holds a {document['kind']} policy; planning needs a placement or parallel policy"
        )
    return functions, params, document
