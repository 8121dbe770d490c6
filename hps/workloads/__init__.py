"""Workload zoo: layer tables built from architecture hyperparameters (see `layers` for units)."""

from hps.workloads.registry import (
    PRESETS,
    ZOO,
    base_workload,
    build_workload,
    checked_hyperparameters,
    hyperparameters,
    list_workloads,
    resolve_workload,
)

__all__ = [
    "PRESETS",
    "ZOO",
    "base_workload",
    "build_workload",
    "checked_hyperparameters",
    "hyperparameters",
    "list_workloads",
    "resolve_workload",
]
