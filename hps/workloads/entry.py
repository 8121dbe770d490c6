"""A zoo entry: one architecture's hyperparameters, its default job, and the `Workload` they build.

Each family of the zoo is an `Architecture` declared with `@architecture(description)`, a frozen
dataclass: its fields are the hyperparameters (the names `--set NAME=VALUE` and the Flax models
take), `table()` builds the layer table and the `description` template the one-line description.
A `ZooEntry` pairs one instance of it (the entry's default hyperparameters) with the entry's
default job; calling the entry with overrides builds the `Workload`, so every entry assembles its
table, job and description the same way.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Iterable, Mapping

from hps.config.limits import MAX_WORKLOAD_LAYERS
from hps.config.types import JobDefaults, Layer, Workload
from hps.config.validation import printable
from hps.errors import ConfigError
from hps.workloads.layers import FP32_BYTES

A = typing.TypeVar("A", bound="Architecture")


@typing.dataclass_transform(frozen_default=True, kw_only_default=True)
def architecture(description: str = "") -> Callable[[type[A]], type[A]]:
    """Class decorator of a zoo family: a frozen, keyword-only dataclass whose one-line
    description is the `description` template (inherited when empty; see `Architecture.describe`)."""

    def wrap(cls: type[A]) -> type[A]:
        cls = dataclasses.dataclass(frozen=True, kw_only=True)(cls)
        if description:
            cls.description = description
        return cls

    return wrap


class Architecture:
    """Base of a family's hyperparameters (subclasses are declared with `architecture`).

    A field may hold a group of hyperparameters (a frozen dataclass instance, e.g. a sparse input's
    slots, ids per slot and rows): its members are hyperparameters named FIELD_MEMBER, so every
    hyperparameter has a flat name (`hyperparameters`, `replaced`).
    """

    description = ""
    """The one-line description: a `str.format` template naming hyperparameters (written as
    `description_text` writes them) and the keys of `derived`."""

    depth: typing.ClassVar[tuple[str, ...]] = ()
    """The hyperparameters that set how many rows the table has (a class attribute, not a field)."""

    def check(self, entry: str) -> None:
        """Raise ConfigError (field "`entry`.NAME") for hyperparameters that do not fit together."""

    def row_count(self) -> int:
        """How many rows `table()` returns, counted without building them."""
        raise NotImplementedError

    def check_size(self, entry: str, source: str) -> None:
        """ConfigError (source, field "`entry`.DEPTH") when the table would have more rows than
        MAX_WORKLOAD_LAYERS, before any row is built; subclasses add bounds of their own."""
        rows = self.row_count()
        if rows > MAX_WORKLOAD_LAYERS:
            field = f"{entry}.{' + '.join(self.depth)}"
            raise ConfigError(
                source, field, f"makes {rows:,} layer rows, more than the {MAX_WORKLOAD_LAYERS:,} a workload may hold"
            )

    def table(self) -> tuple[Layer, ...]:
        """The ordered layer table (per-sample numbers, units as in `hps.workloads.layers`)."""
        raise NotImplementedError

    def derived(self, layers: tuple[Layer, ...]) -> dict[str, object]:
        """Values the description names besides the hyperparameters (`layers`: this table)."""
        return {}

    def describe(self, layers: tuple[Layer, ...]) -> str:
        """The description of this architecture and its table `layers`."""
        values = {name: description_text(value, annotation) for name, value, annotation in self._flat()}
        return self.description.format(**values, **self.derived(layers))

    def hyperparameters(self) -> dict[str, object]:
        """Flat hyperparameter name -> value, in field order."""
        return {name: value for name, value, _ in self._flat()}

    def replaced(self, overrides: Mapping[str, object]) -> Architecture:
        """This architecture with the flat-named hyperparameters `overrides` replaced."""
        changes = {}
        for field in dataclasses.fields(self):
            group = getattr(self, field.name)
            if dataclasses.is_dataclass(group):
                members = {m.name: f"{field.name}_{m.name}" for m in dataclasses.fields(group)}
                chosen = {m: overrides[flat] for m, flat in members.items() if flat in overrides}
                if chosen:
                    changes[field.name] = dataclasses.replace(group, **chosen)
            elif field.name in overrides:
                changes[field.name] = overrides[field.name]
        known = {name for name, _, _ in self._flat()}
        if unknown := set(overrides) - known:
            raise TypeError(f"unknown hyperparameters {sorted(unknown)} of {type(self).__name__}")
        return dataclasses.replace(self, **changes)

    def _flat(self) -> list[tuple[str, object, object]]:
        """(flat name, value, annotation) of every hyperparameter."""
        flat = []
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if dataclasses.is_dataclass(value):
                flat += [(f"{field.name}_{m.name}", getattr(value, m.name), m.type) for m in dataclasses.fields(value)]
            else:
                flat.append((field.name, value, field.type))
        return flat


@dataclasses.dataclass(frozen=True)
class ZooEntry:
    """Zoo workload `name`: `architecture` holds its default hyperparameters, `job` its default job.

    `entry(**overrides)` builds the Workload at the defaults replaced by `overrides` (flat names,
    checked by the caller, `hps.workloads.registry.checked_hyperparameters`, then by
    `Architecture.check`).
    """

    name: str
    architecture: Architecture
    job: JobDefaults

    def __call__(self, **overrides: object) -> Workload:
        architecture = self.architecture.replaced(overrides)
        architecture.check(self.name)
        architecture.check_size(self.name, "workload")
        layers = tuple(_printable_layer(layer) for layer in architecture.table())
        return Workload(printable(self.name), layers, self.job, architecture.describe(layers))

    def hyperparameters(self) -> dict[str, object]:
        """Hyperparameter name -> default, in the architecture's field order."""
        return self.architecture.hyperparameters()


def _printable_layer(layer: Layer) -> Layer:
    """`layer` with its name's control characters escaped (`hps.config.validation.printable`)."""
    name = printable(layer.name)
    return layer if name == layer.name else dataclasses.replace(layer, name=name)


# --- description text --------------------------------------------------------------------------


def description_text(value: object, annotation: object) -> str:
    """A hyperparameter as descriptions write it: widths (512, 256) as '512-256', a float-annotated
    count as `short_number`, anything else as str."""
    if isinstance(value, tuple):
        return dashed(value)
    if annotation in ("float", float):
        return short_number(value)
    return str(value)


def dashed(widths: Iterable[int]) -> str:
    """(512, 256, 2) -> '512-256-2'."""
    return "-".join(str(w) for w in widths)


def short_number(x: float) -> str:
    """1e9 -> '1e9', 4e7 -> '4e7', 64 -> '64'."""
    return f"{x:.3g}".replace("e+0", "e").replace("e+", "e")


def table_size(size_bytes: float) -> str:
    """'477 GiB' for production tables, '0.3 MiB' for laptop-sized ones."""
    return f"{size_bytes / 2**30:.0f} GiB" if size_bytes >= 2**30 else f"{size_bytes / 2**20:.1f} MiB"


def parameter_count(layers: Iterable[Layer]) -> str:
    """'1.01 T', '175 B', '70.6 B', '160 M': the dense and sparse parameters of `layers` (fp32)."""
    count = sum(layer.dense_param_bytes + layer.sparse_param_bytes for layer in layers) / FP32_BYTES
    for scale, unit in ((1e12, " T"), (1e9, " B"), (1e6, " M")):
        if count >= scale:
            return f"{count / scale:.3g}{unit}"
    return f"{count:.3g}"
