"""Workload zoo: layer tables built from architecture hyperparameters (see `layers` for units)."""

from hps.workloads.registry import ZOO, build_workload, hyperparameters, list_workloads, resolve_workload

__all__ = ["ZOO", "build_workload", "hyperparameters", "list_workloads", "resolve_workload"]
