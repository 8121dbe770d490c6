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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

ITEM_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+=-]*")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


TUPLE_ELEMENTS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "tuple[int, ...]": (lambda v: _is_int(v) and v >= 1, "positive integers"),
    "tuple[float, ...]": (lambda v: _is_number(v) and v > 0, "positive numbers"),
    "tuple[str, ...]": (lambda v: isinstance(v, str) and len(v) > 0, "non-empty strings"),
}
"""Each tuple annotation `check_field` knows: (the test of one element, what they must be)."""


def check_field(name: str, value: Any, annotation: str, lowest: float | None) -> None:
    """ValueError naming field `name` when `value` does not fit its annotation (as written in
    the class: "int", "float", "str", "str | None" or a tuple of TUPLE_ELEMENTS;
    other annotations are the config's own to check). `lowest`, when given, is the least value
    of a number or the least length of a string or tuple; by default an int is >= 1, a float
    > 0, a string and a tuple non-empty."""
    if annotation == "int" and not (_is_int(value) and value >= (1 if lowest is None else lowest)):
        raise ValueError(f"{name}: must be an integer >= {1 if lowest is None else lowest}, got {value!r}")
    if annotation == "float" and not (_is_number(value) and (value > 0 if lowest is None else value >= lowest)):
        raise ValueError(f"{name}: must be a number {'> 0' if lowest is None else f'>= {lowest}'}, got {value!r}")
    if annotation in ("str", "str | None") and not (value is None and annotation != "str"):
        if not (isinstance(value, str) and len(value) >= (1 if lowest is None else lowest)):
            raise ValueError(f"{name}: must be a non-empty string, got {value!r}")
    element = TUPLE_ELEMENTS.get(annotation)
    if element is not None:
        valid = isinstance(value, tuple) and all(element[0](v) for v in value)
        if not (valid and len(value) >= (1 if lowest is None else lowest)):
            raise ValueError(f"{name}: must be a tuple of {element[1]}, got {value!r}")


@dataclass(frozen=True, kw_only=True)
class ExperimentConfig:
    """Fields every experiment has. `name` is the run folder under --out; `seed` seeds every
    random choice of the experiment, so the same config and seed give the same results.json.

    Every field of a subclass is checked against its annotation by `check_field`, with the
    bounds of AT_LEAST (field name -> least value or length) where the default does not hold;
    a subclass checks what no annotation says in `check`."""

    AT_LEAST: ClassVar[Mapping[str, float]] = {}

    name: str
    seed: int = 0

    def __post_init__(self):
        if not isinstance(self.name, str) or not NAME.fullmatch(self.name):
            raise ValueError(f"name: must be a folder name (letters, digits, '._-'), got {self.name!r}")
        if not _is_int(self.seed):
            raise ValueError(f"seed: must be an integer, got {self.seed!r}")
        for spec in fields(self):
            if spec.name not in ("name", "seed"):
                check_field(spec.name, getattr(self, spec.name), spec.type, self.AT_LEAST.get(spec.name))
        self.check()

    def check(self) -> None:
        """Raise ValueError naming the field when what the annotations cannot say is wrong."""


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
