"""The placement cost model: padded instance params and the vectorised evaluation of schedules."""

from hps.placement.model.cost import (
    REASONS,
    ScheduleResult,
    SegmentTable,
    evaluate_schedules,
    evaluate_with_table,
    layer_time,
    segment_table,
)
from hps.placement.model.params import PlacementParams, build_params, validate_job

__all__ = [
    "REASONS",
    "PlacementParams",
    "ScheduleResult",
    "SegmentTable",
    "build_params",
    "evaluate_schedules",
    "evaluate_with_table",
    "layer_time",
    "segment_table",
    "validate_job",
]
