"""Placement: padded instance params and SPEC's vectorised cost model."""

from hps.placement.model import (
    REASONS,
    ScheduleResult,
    SegmentTable,
    evaluate_schedules,
    evaluate_with_table,
    layer_time,
    segment_table,
)
from hps.placement.params import PlacementParams, build_params, validate_job

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
