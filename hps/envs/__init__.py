"""Placement environments: instance generators (env params) and the functional PlacementEnv."""

from hps.envs.accounting import INFEASIBLE_BASE, PENALTY_CAP, RATIO_CAP, Outcome
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
from hps.envs.placement import PlacementEnv, PlacementObs, PlacementState

__all__ = [
    "HELDOUT",
    "HELDOUT_LARGE",
    "INFEASIBLE_BASE",
    "K_MAX",
    "L_MAX",
    "PENALTY_CAP",
    "RATIO_CAP",
    "T_MAX",
    "TRAIN",
    "InstanceSplit",
    "Outcome",
    "PlacementEnv",
    "PlacementInstance",
    "PlacementObs",
    "PlacementState",
    "generate_instance",
    "generate_instances",
    "make_instance",
]
