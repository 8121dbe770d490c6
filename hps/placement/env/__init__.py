"""The placement environment: instance generators (env params) and the functional PlacementEnv."""

from hps.placement.env.accounting import (
    INFEASIBLE_BASE,
    PENALTY_CAP,
    RATIO_CAP,
    Outcome,
)
from hps.placement.env.env import PlacementEnv, PlacementObs, PlacementState
from hps.placement.env.generator import (
    HARD_HELDOUT,
    HARD_TRAIN,
    HELDOUT,
    HELDOUT_LARGE,
    TRAIN,
    InstanceSplit,
    PlacementInstance,
    generate_instance,
    generate_instances,
    make_instance,
)

__all__ = [
    "HARD_HELDOUT",
    "HARD_TRAIN",
    "HELDOUT",
    "HELDOUT_LARGE",
    "INFEASIBLE_BASE",
    "PENALTY_CAP",
    "RATIO_CAP",
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
