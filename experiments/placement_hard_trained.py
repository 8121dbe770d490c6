"""The default placement recipe trained on hard instances (HARD_TRAIN: 16-48 layers, 8-16
types, tight pooled caps, small memories, floors near the single types' reach; 384 instances
labelled by the exact solver), zero-shot on the held-out hard 256-layer split against the exact
solver's proven optimum (30 s per instance), beside the same planners as placement_hard.

    hps run experiments/placement_hard_trained.py

Trains in runs/placement-hard-policy first (10 minutes on 2 CPU cores) when that folder holds
no policy.
"""

from hps.studies.placement_at_scale import PlacementAtScaleConfig


def config() -> PlacementAtScaleConfig:
    return PlacementAtScaleConfig(
        name="placement_hard_trained",
        checkpoint="runs/placement-hard-policy",
        splits=((256, 256, 8, 16),),
        count=8,
        seconds=30.0,
        hard=True,
        train_minutes=10.0,
        train_split="hard-train",
        train_demonstrations=384,
    )
