"""Loading an experiment file: plain Python defining `config()` that returns an experiment config."""

from __future__ import annotations

import runpy
from pathlib import Path

from hps.errors import ConfigError
from hps.studies.base import EXPERIMENT_KINDS, experiment_kind_names


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
        raise ConfigError(
            source,
            "config()",
            f"returned {type(config).__name__}; expected one of {', '.join(experiment_kind_names())}",
        )
    return config
