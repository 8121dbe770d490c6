"""Placement policy on held-out instances: the trained policy's best of 64 sampled plans + greedy,
its greedy plan and its refinement by stage moves against the exhaustive optimum, the genetic
algorithm and the gradient search at the same evaluations on 50 small instances (≤ 10 layers,
≤ 4 types); on 20 instances of 24–32 layers against the genetic algorithm (at the policy's
evaluations and at its default 51,200) and the best single-type plan.

    hps run experiments/placement_policy.py

Uses the policy in runs/placement-policy (trained there first, 10 minutes on 2 CPU cores, when
that folder holds none). also=("runs/placement-ppo",) evaluates a PPO-trained policy alike
(`hps train --algorithm ppo --out runs/placement-ppo`, or one the zoo experiment trained).
"""

from hps.studies.placement_policy import PlacementPolicyConfig


def config() -> PlacementPolicyConfig:
    return PlacementPolicyConfig(
        name="placement_policy",
        checkpoint="runs/placement-policy",
        also=(),
        small=50,
        large=20,
        samples=64,
        train_minutes=10.0,
    )
