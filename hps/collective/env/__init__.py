"""The collective environment: network generators (env params) and the functional CollectiveEnv."""

from hps.collective.env.env import CollectiveEnv, CollectiveObs, CollectiveState
from hps.collective.env.generator import (
    HELDOUT_NETWORKS,
    TRAIN_NETWORKS,
    CollectiveInstance,
    NetworkSplit,
    collective_instance,
    generate_collectives,
)

__all__ = [
    "HELDOUT_NETWORKS",
    "TRAIN_NETWORKS",
    "CollectiveEnv",
    "CollectiveInstance",
    "CollectiveObs",
    "CollectiveState",
    "NetworkSplit",
    "collective_instance",
    "generate_collectives",
]
