"""The placement cost model: padded instance params and the vectorised evaluation of schedules
(jnp), and the numpy path for explicit plans at any scale (provisioning, plan)."""

from hps.lazy import lazy_exports

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "cost": (
            "REASONS",
            "ScheduleScores",
            "SegmentTable",
            "evaluate_schedules",
            "evaluate_with_table",
            "layer_time",
            "segment_table",
        ),
        "params": ("PlacementParams", "build_params", "validate_job"),  # validate_job: from config.validation
    },
)
