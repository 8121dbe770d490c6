"""The workload zoo: names -> factories, and resolving a command-line `--workload FILE|NAME`."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from pathlib import Path

from hps.config.types import Workload
from hps.errors import ConfigError
from hps.workloads.nlp import bert_base
from hps.workloads.recsys import ctr_dnn, deepfm, dlrm, matchnet, wide_deep, word2vec_nce
from hps.workloads.vision import resnet50

ZOO: dict[str, Callable[..., Workload]] = {
    "ctr-dnn": ctr_dnn,
    "wide-deep": wide_deep,
    "deepfm": deepfm,
    "dlrm": dlrm,
    "matchnet": matchnet,
    "word2vec-nce": word2vec_nce,
    "resnet50": resnet50,
    "bert-base": bert_base,
}


def list_workloads() -> list[tuple[str, str]]:
    """(name, one-line description) of every zoo workload, at its default hyperparameters."""
    return [(name, factory().description) for name, factory in ZOO.items()]


def hyperparameters(name: str) -> dict[str, object]:
    """The hyperparameters of zoo workload `name` and their defaults."""
    params = inspect.signature(_factory(name)).parameters
    return {key: p.default for key, p in params.items()}


def build_workload(name: str, **overrides: object) -> Workload:
    """Zoo workload `name` built with its default hyperparameters, replaced by `overrides`.

    Raises ConfigError for an unknown name, an unknown hyperparameter, or a value that is not a
    positive number (or, for widths, a non-empty sequence of positive integers) like its default.
    """
    defaults = hyperparameters(name)
    checked = {}
    for key, value in overrides.items():
        if key not in defaults:
            raise ConfigError(
                "workload", f"{name}.{key}",
                f"unknown hyperparameter; known: {', '.join(defaults)}",
            )
        checked[key] = _check_value(name, key, value, defaults[key])
    return ZOO[name](**checked)


def resolve_workload(spec: str) -> Workload:
    """A workload from `spec`: the TOML file it names if such a file exists, else the zoo entry."""
    if Path(spec).is_file():
        from hps.config.loaders import load_workload

        return load_workload(spec)
    return build_workload(spec)


def _factory(name: str) -> Callable[..., Workload]:
    if name not in ZOO:
        raise ConfigError("workload", "name", f"unknown workload {name!r}; known: {', '.join(ZOO)}")
    return ZOO[name]


def _check_value(name: str, key: str, value: object, default: object) -> object:
    field = f"{name}.{key}"
    if isinstance(default, tuple):
        if isinstance(value, str) or not hasattr(value, "__iter__"):
            raise ConfigError("workload", field, f"must be a sequence of positive integers, got {value!r}")
        widths = tuple(value)
        if not widths or not all(_is_int(w) and w > 0 for w in widths):
            raise ConfigError(
                "workload", field, f"must be a non-empty sequence of positive integers, got {value!r}"
            )
        return tuple(int(w) for w in widths)
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigError("workload", field, f"must be true or false, got {value!r}")
        return value
    if isinstance(default, int):
        if not _is_int(value) or value <= 0:
            raise ConfigError("workload", field, f"must be a positive integer, got {value!r}")
        return int(value)
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or value <= 0:
        raise ConfigError("workload", field, f"must be a positive finite number, got {value!r}")
    return float(value)


def _is_int(value: object) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
