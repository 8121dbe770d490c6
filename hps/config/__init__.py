"""Configuration: typed objects and their validating TOML loaders."""

from hps.config.loaders import (
    load_catalog,
    load_network,
    load_workload,
    parse_schedule,
    workload_to_toml,
    write_workload,
)
from hps.config.types import (
    ALGORITHMS,
    Catalog,
    Dimension,
    Job,
    JobDefaults,
    Layer,
    Network,
    ResourceType,
    Workload,
    steps_per_phase,
)

__all__ = [
    "ALGORITHMS",
    "Catalog",
    "Dimension",
    "Job",
    "JobDefaults",
    "Layer",
    "Network",
    "ResourceType",
    "Workload",
    "steps_per_phase",
    "load_catalog",
    "load_network",
    "load_workload",
    "parse_schedule",
    "workload_to_toml",
    "write_workload",
]
