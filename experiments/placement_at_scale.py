"""Placement at scale: the default placement policy zero-shot on generated instances of 256 and
1,024 layers with 8-16 types, against the exact solver's proven optimum (60 s per instance) and
the best single-type plan.

    hps run experiments/placement_at_scale.py

Uses the policy in runs/placement-policy (trained there first, 10 minutes on 2 CPU cores, when
that folder holds none).
"""

from hps.studies.placement_at_scale import PlacementAtScaleConfig


def config() -> PlacementAtScaleConfig:
    return PlacementAtScaleConfig(
        name="placement_at_scale",
        checkpoint="runs/placement-policy",
        splits=((256, 256, 8, 16), (1024, 1024, 8, 16)),
        count=10,
        seconds=60.0,
        train_minutes=10.0,
    )
