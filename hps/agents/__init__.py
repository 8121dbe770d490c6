"""Placement agents: the Flax policy, rollouts, REINFORCE and PPO, and the training driver."""

from hps.agents.policy import MASKED_LOGIT, PlacementPolicy, PolicyFunctions, PolicySpec
from hps.agents.rollout import Trajectory, replay, rollout
from hps.agents.train import TrainConfig, TrainState, init_train_state, make_train, run_training

__all__ = [
    "MASKED_LOGIT",
    "PlacementPolicy",
    "PolicyFunctions",
    "PolicySpec",
    "TrainConfig",
    "TrainState",
    "Trajectory",
    "init_train_state",
    "make_train",
    "replay",
    "rollout",
    "run_training",
]
