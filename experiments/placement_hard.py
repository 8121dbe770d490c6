"""Every planner on hard placement instances (HARD_KNOBS: tight pooled caps, smaller memories,
floors near the single types' reach) of 64 and 256 layers with 8-16 types, against the exact
solver's proven optimum (60 s per instance): the policy (best of 64 samples + greedy, greedy
alone, refined by stage moves), the best single type, and where the segment table fits (64
layers) the greedy, random, genetic and gradient searches at their default budgets and the hill
climb from the best single type.

    hps run experiments/placement_hard.py

Uses the policy in runs/placement-policy (trained there first, 10 minutes on 2 CPU cores, when
that folder holds none).
"""

from hps.studies.placement_at_scale import PlacementAtScaleConfig


def config() -> PlacementAtScaleConfig:
    return PlacementAtScaleConfig(
        name="placement_hard",
        checkpoint="runs/placement-policy",
        splits=((64, 64, 8, 16), (256, 256, 8, 16)),
        count=8,
        seconds=60.0,
        hard=True,
        train_minutes=10.0,
    )
