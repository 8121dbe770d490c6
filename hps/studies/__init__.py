"""Experiments: typed configs (plain Python files defining `config()`), run item by item with
resume, summarised as results.json, PNG figures and report.md (`hps run EXPERIMENT.py`).

A new kind: a module here defining a frozen `ExperimentConfig` subclass and calling
`register_experiment_kind(ConfigType, items=..., run_item=..., summarize=...)` (see hps.studies.base),
imported below so that `hps run` knows it.
"""

from hps.studies.base import ExperimentConfig, Summary, experiment_kind_of, register_experiment_kind
from hps.studies.loader import load_config
from hps.studies.runner import run_experiment

__all__ = [
    "ExperimentConfig",
    "Summary",
    "experiment_kind_of",
    "load_config",
    "register_experiment_kind",
    "run_experiment",
]

# The kinds: importing each module registers it.
from hps.studies import (  # noqa: E402,F401
    collective_bench,
    collective_policy,
    device_check,
    executor_calibration,
    generalization,
    heterps_zoo,
    llm_plans,
    parallel_hard,
    placement_at_scale,
    placement_policy,
    profile_check,
    published_runs,
    quickstart,
    scaling,
    themis_allreduce,
    themis_end_to_end,
    themis_iteration,
    themis_paper,
)
