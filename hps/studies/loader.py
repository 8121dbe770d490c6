"""Loading an experiment file: plain Python defining `config()` that returns an experiment config."""

from __future__ import annotations

import importlib
import runpy
from pathlib import Path

from hps.errors import ConfigError
from hps.studies.base import EXPERIMENT_KINDS, experiment_kind_names

KIND_MODULES = (
    "hps.studies.collective_bench",
    "hps.studies.collective_policy",
    "hps.studies.device_check",
    "hps.studies.executor_calibration",
    "hps.studies.generalization",
    "hps.studies.heterps_zoo",
    "hps.studies.llm_plans",
    "hps.studies.mixing_optima",
    "hps.studies.parallel_hard",
    "hps.studies.parallel_policy",
    "hps.studies.placement_at_scale",
    "hps.studies.placement_policy",
    "hps.studies.profile_check",
    "hps.studies.published_runs",
    "hps.studies.quickstart",
    "hps.studies.scaling",
    "hps.studies.themis_allreduce",
    "hps.studies.themis_end_to_end",
    "hps.studies.themis_iteration",
    "hps.studies.themis_paper",
)
"""The modules of the kinds hps ships; importing one registers its kind."""


def shipped_kinds() -> dict:
    """Every registered experiment kind {config type: kind}, the shipped ones imported first."""
    for module in KIND_MODULES:
        importlib.import_module(module)
    return EXPERIMENT_KINDS


def load_config(path):
    """config() of the experiment file at `path`; ConfigError naming the file when the file is
    missing, fails to run, has no config(), or config() fails or returns no registered kind. The
    file is executed as Python, so only a `.py` module is taken (anything else is refused, naming
    it, before it runs)."""
    source = str(path)
    if Path(path).suffix != ".py":
        raise ConfigError(
            source, "", "an experiment is a Python module (.py) that hps executes; this file is not one and was not run"
        )
    if not Path(path).is_file():
        raise ConfigError(source, "", "no such experiment file")
    try:
        namespace = runpy.run_path(source, run_name="__hps_experiment__")
    except Exception as error:
        raise ConfigError(source, "", f"cannot run the experiment file: {type(error).__name__}: {error}") from error
    make = namespace.get("config")
    if not callable(make):
        shipped_kinds()
        raise ConfigError(
            source, "config", f"must define config() returning one of {', '.join(experiment_kind_names())}"
        )
    try:
        config = make()
    except ConfigError:
        raise
    except Exception as error:
        raise ConfigError(source, "config()", f"{type(error).__name__}: {error}") from error
    if not isinstance(config, tuple(EXPERIMENT_KINDS)):
        shipped_kinds()
        raise ConfigError(
            source,
            "config()",
            f"returned {type(config).__name__}; expected one of {', '.join(experiment_kind_names())}",
        )
    return config
