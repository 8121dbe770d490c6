"""What an experiment kind is: its typed config, its units of work, and its summary.

A kind registers its config type with `register_experiment_kind(ConfigType, items=..., run_item=...,
summarize=...)`:

- `items(config) -> list[(key, params)]`: the independent units of work (one network, one
  workload × floor, ...), in report order. Keys name the item files (letters, digits, `._+=-`).
  Validate the config here (raise ConfigError): the runner calls it before it creates any file.
- `run_item(config, params) -> dict`: one unit's JSON-able result (no NaN/inf: use None).
- `summarize(config, results: {key: result}) -> Summary`: results.json's document, the table,
  the figures and extra Markdown, from the items' results (as read back from JSON).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ITEM_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+=-]*")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


@dataclass(frozen=True, kw_only=True)
class ExperimentConfig:
    """Fields every experiment has. `name` is the run folder under --out; `seed` seeds every
    random choice of the experiment, so the same config and seed give the same results.json."""

    name: str
    seed: int = 0

    def __post_init__(self):
        if not isinstance(self.name, str) or not NAME.fullmatch(self.name):
            raise ValueError(f"name: must be a folder name (letters, digits, '._-'), got {self.name!r}")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise ValueError(f"seed: must be an integer, got {self.seed!r}")

    def check_integers(self, **least: int) -> None:
        """ValueError naming the first field (given as name=lowest value) that is not an integer
        at least that low (bools are not integers here)."""
        for name, lowest in least.items():
            value = getattr(self, name)
            if not (isinstance(value, int) and not isinstance(value, bool) and value >= lowest):
                raise ValueError(f"{name}: must be an integer >= {lowest}, got {value!r}")


Figure = tuple[str, Callable[[Any], None]]
"""(file name ending in .png, draw(path) that draws and saves it with report.figures.save_figure)."""


@dataclass(frozen=True)
class Summary:
    """What an experiment reports: `results` (results.json's "results"), the table (`headers`,
    `rows`: printed, and in report.md), `figures` and extra Markdown for report.md."""

    results: dict
    headers: list[str]
    rows: list[list]
    figures: list[Figure] = field(default_factory=list)
    markdown: str = ""
    title: str = ""


@dataclass(frozen=True)
class ExperimentKind:
    items: Callable[[Any], list[tuple[str, Any]]]
    run_item: Callable[[Any, Any], dict]
    summarize: Callable[[Any, dict[str, dict]], Summary]


EXPERIMENT_KINDS: dict[type, ExperimentKind] = {}


def register_experiment_kind(config_type: type, *, items, run_item, summarize) -> None:
    """Make `hps run` accept configs of `config_type` (a frozen ExperimentConfig dataclass)."""
    if not (isinstance(config_type, type) and issubclass(config_type, ExperimentConfig)):
        raise TypeError(f"{config_type!r} is not an ExperimentConfig subclass")
    EXPERIMENT_KINDS[config_type] = ExperimentKind(items=items, run_item=run_item, summarize=summarize)


def experiment_kind_of(config) -> ExperimentKind:
    """The registered kind of `config` (its exact type, else its nearest registered base)."""
    for cls in type(config).__mro__:
        if cls in EXPERIMENT_KINDS:
            return EXPERIMENT_KINDS[cls]
    raise TypeError(f"no experiment kind is registered for {type(config).__name__}")


def experiment_kind_names() -> list[str]:
    return sorted(cls.__name__ for cls in EXPERIMENT_KINDS)
