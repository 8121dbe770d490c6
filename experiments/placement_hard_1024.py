"""Every planner that runs at 1,024 layers on hard placement instances (HARD_KNOBS) of 8-16
types, against the exact solver's proven optimum (60 s per instance): the policy (best of 64
distinct samples + greedy, greedy alone, refined by stage moves in numpy), the best single
type and the numpy stage-move climb from it. The searches need the jnp model's segment table,
which does not fit at this size, and are left out.

    hps run experiments/placement_hard_1024.py

Uses the policy in runs/placement-policy (trained there first, 10 minutes on 2 CPU cores, when
that folder holds none).
"""

from hps.studies.placement_at_scale import PlacementAtScaleConfig


def config() -> PlacementAtScaleConfig:
    return PlacementAtScaleConfig(
        name="placement_hard_1024",
        checkpoint="runs/placement-policy",
        splits=((1024, 1024, 8, 16),),
        count=6,
        seconds=60.0,
        hard=True,
        train_minutes=10.0,
    )
