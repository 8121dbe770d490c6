"""Environments: instance generators (env params) and the functional PlacementEnv and CollectiveEnv."""

from hps.envs.accounting import INFEASIBLE_BASE, PENALTY_CAP, RATIO_CAP, Outcome
from hps.envs.collective import CollectiveEnv, CollectiveObs, CollectiveState
from hps.envs.generators import (
    HELDOUT,
    HELDOUT_LARGE,
    K_MAX,
    L_MAX,
    T_MAX,
    TRAIN,
    InstanceSplit,
    PlacementInstance,
    generate_instance,
    generate_instances,
    make_instance,
)
from hps.envs.network_gen import (
    HELDOUT_NETWORKS,
    TRAIN_NETWORKS,
    CollectiveInstance,
    NetworkSplit,
    collective_instance,
    generate_collectives,
)
from hps.envs.placement import PlacementEnv, PlacementObs, PlacementState

__all__ = [
    "HELDOUT",
    "HELDOUT_LARGE",
    "HELDOUT_NETWORKS",
    "INFEASIBLE_BASE",
    "K_MAX",
    "L_MAX",
    "PENALTY_CAP",
    "RATIO_CAP",
    "T_MAX",
    "TRAIN",
    "TRAIN_NETWORKS",
    "CollectiveEnv",
    "CollectiveInstance",
    "CollectiveObs",
    "CollectiveState",
    "InstanceSplit",
    "NetworkSplit",
    "Outcome",
    "PlacementEnv",
    "PlacementInstance",
    "PlacementObs",
    "PlacementState",
    "collective_instance",
    "generate_collectives",
    "generate_instance",
    "generate_instances",
    "make_instance",
]
