"""The workload zoo: names -> factories and laptop-sized presets of them, and resolving a
command-line `--workload FILE|NAME` with hyperparameter overrides (`--set NAME=VALUE`)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from pathlib import Path

from hps.config.types import JobDefaults, Workload
from hps.errors import ConfigError
from hps.workloads.bounds import check_bound
from hps.workloads.entry import ZooEntry
from hps.workloads.llm import gpt3_175b, gpt_mcore, llama2_70b, llama3_8b, llama3_70b, llama3_405b, transformer_1t
from hps.workloads.mlp import mlp_classifier
from hps.workloads.nlp import bert_base, transformer
from hps.workloads.recsys import ctr_dnn, deepfm, dlrm, matchnet, wide_deep, word2vec_nce
from hps.workloads.translation import gnmt
from hps.workloads.vision import resnet50, resnet152

_ENTRIES = (
    ctr_dnn,
    wide_deep,
    deepfm,
    dlrm,
    matchnet,
    word2vec_nce,
    resnet50,
    bert_base,
    mlp_classifier,
    transformer,
    resnet152,
    gnmt,
    gpt3_175b,
    llama3_70b,
    llama3_405b,
    transformer_1t,
    llama3_8b,
    llama2_70b,
    gpt_mcore,
)
FACTORIES: dict[str, ZooEntry] = {entry.name: entry for entry in _ENTRIES}
"""Zoo entries with their own architecture and default job, at production-sized defaults. Only
those with a Flax model (`hps.models.registry`) execute; the others, the published large models
among them, plan only, and `hps execute` and `hps profile` refuse them with a ConfigError."""


@dataclasses.dataclass(frozen=True)
class Preset:
    """Zoo entry `name`: the `base` entry's builder at other default hyperparameters and job, so a
    preset and its base share one layer table builder (and one Flax model, `hps.models.registry`)."""

    name: str
    base: str
    hyperparameters: Mapping[str, object]
    job: JobDefaults

    def __call__(self, **overrides: object) -> Workload:
        workload = FACTORIES[self.base](**{**self.hyperparameters, **overrides})
        description = f"{workload.description} (laptop-sized {self.base})"
        return dataclasses.replace(workload, name=self.name, defaults=self.job, description=description)


_SMALL_JOB = JobDefaults(batch=256.0, throughput=1000.0, samples=1e6)
PRESETS = (
    Preset("ctr-dnn-small", "ctr-dnn", dict(slots=8, ids_per_slot=4, rows=10_000, dim=8, hidden=(64, 32)), _SMALL_JOB),
    Preset(
        "dlrm-small",
        "dlrm",
        dict(tables=8, ids_per_table=4, rows_per_table=1_000, dim=8, bottom_hidden=(32, 16), top=(64, 32)),
        _SMALL_JOB,
    ),
    Preset(
        "matchnet-small",
        "matchnet",
        dict(
            query_slots=2,
            query_ids_per_slot=4,
            query_rows=10_000,
            item_slots=2,
            item_ids_per_slot=4,
            item_rows=5_000,
            dim=8,
            hidden=(32, 16),
        ),
        _SMALL_JOB,
    ),
    Preset(
        "transformer-small",
        "transformer",
        dict(layers=2, hidden=32, heads=2, ffn=64, seq_len=16, vocab=1000, max_position=64),
        JobDefaults(batch=64.0, throughput=500.0, samples=1e6),
    ),
)
"""Laptop-sized variants (well under 1 M parameters; a training step at batch 64 takes
milliseconds on a CPU). "mlp" is laptop-sized already."""

ZOO: dict[str, Callable[..., Workload]] = {**FACTORIES, **{p.name: p for p in PRESETS}}


def list_workloads() -> list[tuple[str, str]]:
    """(name, one-line description) of every zoo workload, at its default hyperparameters."""
    return [(name, factory().description) for name, factory in ZOO.items()]


def base_workload(name: str) -> str:
    """The zoo entry whose builder makes `name`: a preset's base, else `name` itself."""
    factory = _factory(name)
    return factory.base if isinstance(factory, Preset) else name


def hyperparameters(name: str) -> dict[str, object]:
    """The hyperparameters of zoo workload `name` and their defaults."""
    factory = _factory(name)
    defaults = FACTORIES[base_workload(name)].hyperparameters()
    if isinstance(factory, Preset):
        defaults.update(factory.hyperparameters)
    return defaults


def checked_hyperparameters(
    name: str, overrides: Mapping[str, object] | None = None, source: str = "workload"
) -> dict[str, object]:
    """All hyperparameters of zoo workload `name`: its defaults, replaced by `overrides`.

    Raises ConfigError (naming `source`, e.g. "--set", and the field "`name`.KEY") for an
    unknown name, an unknown hyperparameter, a value that is not a positive number like its
    default (for widths, a non-empty sequence of positive integers; a single integer means a
    one-element sequence), a value past its bound (`hps.workloads.bounds`), or values that would
    make a table of more than MAX_WORKLOAD_LAYERS rows; all before any row is built.
    """
    values = hyperparameters(name)
    for key, value in (overrides or {}).items():
        if key not in values:
            raise ConfigError(source, f"{name}.{key}", f"unknown hyperparameter; known: {', '.join(values)}")
        values[key] = _check_value(f"{name}.{key}", value, values[key], source)
        check_bound(f"{name}.{key}", key, values[key], source)
    FACTORIES[base_workload(name)].architecture.replaced(values).check_size(name, source)
    return values


def build_workload(name: str, **overrides: object) -> Workload:
    """Zoo workload `name` built with its default hyperparameters, replaced by `overrides`
    (checked as `checked_hyperparameters` does)."""
    values = checked_hyperparameters(name, overrides)
    return ZOO[name](**values)


def resolve_workload(spec: str, overrides: Mapping[str, object] | None = None, source: str = "workload") -> Workload:
    """A workload from `spec`: the TOML file it names if such a file exists, else the zoo entry
    built with hyperparameter `overrides` (which a file does not take: ConfigError naming `source`)."""
    if Path(spec).is_file():
        if overrides:
            raise ConfigError(
                source, ", ".join(overrides), f"hyperparameters apply to zoo workloads, not to the file {spec}"
            )
        from hps.config.loaders import load_workload

        return load_workload(spec)
    values = checked_hyperparameters(spec, overrides, source)
    return ZOO[spec](**values)


def _factory(name: str) -> Callable[..., Workload]:
    if name not in ZOO:
        raise ConfigError("workload", "name", f"unknown workload {name!r}; known: {', '.join(ZOO)}")
    return ZOO[name]


def _check_value(field: str, value: object, default: object, source: str) -> object:
    if isinstance(default, tuple):
        if _is_int(value):
            value = (value,)
        if isinstance(value, str) or not hasattr(value, "__iter__"):
            raise ConfigError(source, field, f"must be a sequence of positive integers, got {value!r}")
        widths = tuple(value)
        if not widths or not all(_is_int(w) and w > 0 for w in widths):
            raise ConfigError(source, field, f"must be a non-empty sequence of positive integers, got {value!r}")
        return tuple(int(w) for w in widths)
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigError(source, field, f"must be true or false, got {value!r}")
        return value
    if isinstance(default, int):
        if not _is_int(value) or value <= 0:
            raise ConfigError(source, field, f"must be a positive integer, got {value!r}")
        return int(value)
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or value <= 0:
        raise ConfigError(source, field, f"must be a positive finite number, got {value!r}")
    return float(value)


def _is_int(value: object) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
