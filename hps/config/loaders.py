"""Validating TOML loaders (and the workload writer) for catalogue, network and workload files.

Files carry units in field names (``bandwidth_GiBps``, ``latency_ns``, ``memory_GiB``,
``peak_TFLOPs``); the typed objects carry bytes, seconds, FLOP and bytes/s (GiB = 2**30 bytes).
Every problem raises ``hps.ConfigError(file, field, problem)`` with a field path such as
``resource[2].memory_GiB``; unknown keys are rejected so that typos never pass silently.
"""

from __future__ import annotations

import math
import os
import tomllib
from typing import Any

from hps.config.catalog_kernel import RESOURCE_KERNEL_KEYS, parse_kernel_fields
from hps.config.catalog_links import RESOURCE_SITE_KEYS, parse_links, parse_site_fields
from hps.config.files import atomic_write_text
from hps.config.inputs import read_toml
from hps.config.limits import MAX_CATALOG_TYPES, MAX_DIMS, MAX_WORKLOAD_LAYERS
from hps.config.ranges import check_in_range, check_network_size, check_workload
from hps.config.toml_text import toml_float as _toml_float
from hps.config.toml_text import toml_string as _toml_string
from hps.config.types import (
    ALGORITHMS,
    LAYER_KINDS,
    LAYER_NUMBERS,
    RESOURCE_KINDS,
    Catalog,
    Dimension,
    JobDefaults,
    Layer,
    Network,
    ResourceType,
    Workload,
)
from hps.config.validation import (
    GIB,
    NANO,
    TERA,
    as_number,
    check_keys,
    check_micro_batches,
    check_micro_batches_split,
    check_state_sharding,
    check_unique,
    describe,
    field_path,
    get_choice,
    get_fraction,
    get_int,
    get_name,
    get_non_negative,
    get_positive,
    get_string,
    get_table_array,
    printable,
    require_table,
)
from hps.config.workload_parallel import (
    DEFAULTS_PARALLEL_KEYS,
    LAYER_PARALLEL_KEYS,
    defaults_parallel_toml,
    layer_measured_toml,
    layer_parallel_keys_toml,
    parse_defaults_parallel,
    parse_layer_parallel,
)
from hps.errors import ConfigError

DIMENSION_KEYS = ("size", "bandwidth_GiBps", "latency_ns", "algorithm")
DIMENSION_OPTIONAL_KEYS = ("in_flight",)
"""Optional [[dimension]] keys (omitted: 1 phase in flight)."""
NETWORK_KEYS = ("name", "dimension")
CATALOG_KEYS = ("name", "resource", "link")
RESOURCE_KEYS = (
    "name",
    "kind",
    "peak_TFLOPs",
    "efficiency_dense",
    "efficiency_sparse",
    "mem_bw_GiBps",
    "io_bw_GiBps",
    "nic_bw_GiBps",
    "memory_GiB",
    "price_per_hour",
    "max_units",
    "dimension",
)
LAYER_KEYS = ("name", "kind", *LAYER_NUMBERS, "measured_time_s")
DEFAULTS_KEYS = ("batch", "throughput", "samples")
PIPELINE_KEYS = ("micro_batches", "state_sharding")
"""Optional [defaults] keys of the general placement model (omitted: inf and "none")."""
WORKLOAD_KEYS = ("name", "description", "defaults", "measured_call_s", "layer")


# ---------------------------------------------------------------- networks


def ranged(getter, table: dict[str, Any], key: str, source: str, prefix: str, **kwargs):
    """`getter`'s value of `key` (its type and sign checked there), within RANGES[key]
    (hps.config.ranges), in the file's unit."""
    return check_in_range(getter(table, key, source, prefix, **kwargs), key, source, field_path(prefix, key))


def parse_dimension(table: dict[str, Any], source: str, prefix: str) -> Dimension:
    """One ``[[dimension]]``: size (NPUs), bandwidth_GiBps (per NPU) -> B/s, latency_ns -> s,
    and optionally in_flight (phases served at once, default 1)."""
    check_keys(table, (*DIMENSION_KEYS, *DIMENSION_OPTIONAL_KEYS), DIMENSION_KEYS, source, prefix)
    in_flight = ranged(get_int, table, "in_flight", source, prefix, minimum=1) if "in_flight" in table else 1
    return Dimension(
        size=ranged(get_int, table, "size", source, prefix, minimum=1),
        bandwidth=ranged(get_positive, table, "bandwidth_GiBps", source, prefix) * GIB,
        latency=ranged(get_non_negative, table, "latency_ns", source, prefix) * NANO,
        algorithm=get_choice(table, "algorithm", ALGORITHMS, source, prefix),
        in_flight=in_flight,
    )


def parse_dimensions(table: dict[str, Any], source: str, prefix: str) -> tuple[Dimension, ...]:
    """The 1 to MAX_DIMS ``[[dimension]]`` tables of `table`, dimension 1 (innermost) first,
    of at most MAX_NETWORK_SIZE NPUs in all."""
    items = get_table_array(table, "dimension", source, prefix, min_len=1, max_len=MAX_DIMS)
    path = field_path(prefix, "dimension")
    dimensions = tuple(parse_dimension(d, source, field_path(path, i)) for i, d in enumerate(items))
    check_network_size([d.size for d in dimensions], source, path)
    return dimensions


def parse_network(data: dict[str, Any], source: str, prefix: str = "") -> Network:
    """A standalone network table (``name`` and ``[[dimension]]``) already parsed from TOML."""
    require_table(data, source, prefix)
    check_keys(data, NETWORK_KEYS, NETWORK_KEYS, source, prefix)
    name = get_string(data, "name", source, prefix)
    return Network(name=name, dimensions=parse_dimensions(data, source, prefix))


def load_network(path: str | os.PathLike[str]) -> Network:
    """Read and validate a network file (``topologies/networks/NAME.toml``)."""
    return parse_network(read_toml(path), str(path))


# ---------------------------------------------------------------- catalogues


def parse_resource(table: dict[str, Any], source: str, prefix: str) -> ResourceType:
    """One ``[[resource]]``: converts TFLOPs -> FLOP/s, GiBps -> B/s, GiB -> bytes; optionally
    its site (a name), tp_max (devices, a power of two) and the kernel clock's constants."""
    check_keys(table, (*RESOURCE_KEYS, *RESOURCE_SITE_KEYS, *RESOURCE_KERNEL_KEYS), RESOURCE_KEYS, source, prefix)
    name = get_name(table, "name", source, prefix)
    network = Network(name=name, dimensions=parse_dimensions(table, source, prefix))
    max_units = ranged(get_int, table, "max_units", source, prefix, minimum=1)
    if max_units > network.total_size:
        raise ConfigError(
            source,
            field_path(prefix, "max_units"),
            f"must be at most the network size {network.total_size} (product of dimension sizes), got {max_units}",
        )
    return ResourceType(
        name=name,
        kind=get_choice(table, "kind", RESOURCE_KINDS, source, prefix),
        peak_flops=ranged(get_positive, table, "peak_TFLOPs", source, prefix) * TERA,
        efficiency_dense=ranged(get_fraction, table, "efficiency_dense", source, prefix),
        efficiency_sparse=ranged(get_fraction, table, "efficiency_sparse", source, prefix),
        mem_bw=ranged(get_positive, table, "mem_bw_GiBps", source, prefix) * GIB,
        io_bw=ranged(get_positive, table, "io_bw_GiBps", source, prefix) * GIB,
        nic_bw=ranged(get_positive, table, "nic_bw_GiBps", source, prefix) * GIB,
        memory=ranged(get_positive, table, "memory_GiB", source, prefix) * GIB,
        price_per_hour=ranged(get_positive, table, "price_per_hour", source, prefix),
        max_units=max_units,
        network=network,
        **parse_site_fields(table, source, prefix, network.total_size),
        **parse_kernel_fields(table, source, prefix),
    )


def parse_catalog(data: dict[str, Any], source: str) -> Catalog:
    """A catalogue (``name``, 1 to MAX_CATALOG_TYPES ``[[resource]]`` with unique names and
    optional ``[[link]]`` tables between their sites) parsed from TOML."""
    require_table(data, source, "")
    check_keys(data, CATALOG_KEYS, CATALOG_KEYS[:2], source, "")
    name = get_string(data, "name", source, "")
    items = get_table_array(data, "resource", source, "", min_len=1, max_len=MAX_CATALOG_TYPES)
    check_unique([_raw_name(r) for r in items], source, "resource", "resource")
    resources = tuple(parse_resource(r, source, f"resource[{i}]") for i, r in enumerate(items))
    return Catalog(name=name, resources=resources, links=parse_links(data, resources, source))


def load_catalog(path: str | os.PathLike[str]) -> Catalog:
    """Read and validate a device catalogue (``topologies/catalogs/NAME.toml``)."""
    return parse_catalog(read_toml(path), str(path))


def _raw_name(table: dict[str, Any]) -> Any:
    """The unvalidated ``name`` of a table (for the duplicate check; validated later)."""
    name = table.get("name")
    return printable(name) if isinstance(name, str) else object()  # as get_name escapes it


# ---------------------------------------------------------------- workloads


def parse_measured_time(table: Any, source: str, prefix: str, key: str = "measured_time_s") -> dict[str, float]:
    """``[layer.measured_time_s]``: resource type name -> seconds per sample (> 0); with key
    "measured_call_s", the workload's ``[measured_call_s]``: seconds per micro-batch (≥ 0)."""
    require_table(table, source, prefix)
    times = {}
    for type_name, value in table.items():
        path = field_path(prefix, type_name)
        seconds = as_number(value, source, path)
        if seconds < 0 or (seconds == 0 and key == "measured_time_s"):
            unit = "seconds per sample" if key == "measured_time_s" else "seconds per micro-batch"
            bound = ">" if key == "measured_time_s" else ">="
            raise ConfigError(source, path, f"must be {bound} 0 {unit}, got {value!r}")
        times[printable(type_name)] = check_in_range(seconds, key, source, path)
    return times


def parse_layer(table: dict[str, Any], source: str, prefix: str) -> Layer:
    """One ``[[layer]]``: per-sample FLOP and bytes (≥ 0), kept in the file's units; optionally
    measured times per sample and the parallel-plan keys (`hps.config.workload_parallel`)."""
    check_keys(table, (*LAYER_KEYS, *LAYER_PARALLEL_KEYS), LAYER_KEYS[:-1], source, prefix)
    numbers = {key: ranged(get_non_negative, table, key, source, prefix) for key in LAYER_NUMBERS}
    measured = {}
    if "measured_time_s" in table:
        path = field_path(prefix, "measured_time_s")
        measured = parse_measured_time(table["measured_time_s"], source, path)
    return Layer(
        name=get_string(table, "name", source, prefix),
        kind=get_choice(table, "kind", LAYER_KINDS, source, prefix),
        measured_time=measured,
        **numbers,
        **parse_layer_parallel(table, source, prefix),
    )


def parse_defaults(table: Any, source: str) -> JobDefaults:
    """``[defaults]``: batch (samples/iteration), throughput (samples/s), samples (all > 0);
    optionally micro_batches (a positive integer or inf), state_sharding ("none"/"auto") and the
    parallel-plan keys micro_batch (samples), precision, zero and recompute."""
    require_table(table, source, "defaults")
    allowed = (*DEFAULTS_KEYS, *PIPELINE_KEYS, *DEFAULTS_PARALLEL_KEYS)
    check_keys(table, allowed, DEFAULTS_KEYS, source, "defaults")
    values = {key: ranged(get_positive, table, key, source, "defaults") for key in DEFAULTS_KEYS}
    if "micro_batches" in table:
        micro = check_micro_batches(table["micro_batches"], source, "defaults.micro_batches")
        values["micro_batches"] = check_in_range(micro, "micro_batches", source, "defaults.micro_batches")
        check_micro_batches_split(micro, values["batch"], source, "defaults.micro_batches")
    if "state_sharding" in table:
        values["state_sharding"] = check_state_sharding(table["state_sharding"], source, "defaults.state_sharding")
    values.update(parse_defaults_parallel(table, values["batch"], source))
    return JobDefaults(**values)


def parse_workload(data: dict[str, Any], source: str) -> Workload:
    """A workload (``name``, 1 to MAX_WORKLOAD_LAYERS ``[[layer]]``, optional ``description``/``[defaults]``)."""
    require_table(data, source, "")
    check_keys(data, WORKLOAD_KEYS, ("name",), source, "")
    name = get_string(data, "name", source, "")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise ConfigError(source, "description", f"must be a string, got {describe(description)}")
    if data.get("layer", []) == []:
        raise ConfigError(source, "layer", "empty workload: at least one [[layer]] is required")
    items = get_table_array(data, "layer", source, "", min_len=1, max_len=MAX_WORKLOAD_LAYERS)
    check_unique([_raw_name(t) for t in items], source, "layer", "layer")
    layers = tuple(parse_layer(t, source, f"layer[{i}]") for i, t in enumerate(items))
    defaults = parse_defaults(data["defaults"], source) if "defaults" in data else None
    call = {}
    if "measured_call_s" in data:
        call = parse_measured_time(data["measured_call_s"], source, "measured_call_s", "measured_call_s")
    workload = Workload(name=name, layers=layers, defaults=defaults, description=description, measured_call_s=call)
    check_workload(workload, source)
    return workload


def load_workload(path: str | os.PathLike[str]) -> Workload:
    """Read and validate a workload file (raw per-sample numbers, as `hps workload export` writes)."""
    return parse_workload(read_toml(path), str(path))


# ---------------------------------------------------------------- workload writer


def workload_to_toml(workload: Workload) -> str:
    """The workload in hps's workload TOML format; ``load_workload`` reads it back equal."""
    lines = [f"name = {_toml_string(workload.name)}"]
    if workload.description:
        lines.append(f"description = {_toml_string(workload.description)}")
    if workload.defaults is not None:
        lines += ["", "[defaults]"]
        lines += [f"{k} = {_toml_float(getattr(workload.defaults, k))}" for k in DEFAULTS_KEYS]
        if not math.isinf(workload.defaults.micro_batches):
            lines.append(f"micro_batches = {int(workload.defaults.micro_batches)}")
        if workload.defaults.state_sharding != "none":
            lines.append(f"state_sharding = {_toml_string(workload.defaults.state_sharding)}")
        lines += defaults_parallel_toml(workload.defaults)
    if workload.measured_call_s:
        lines += ["", "[measured_call_s]  # seconds per micro-batch a stage spends on its calls, on each resource type"]
        lines += [f"{_toml_string(t)} = {_toml_float(s)}" for t, s in workload.measured_call_s.items()]
    for layer in workload.layers:
        lines += ["", "[[layer]]", f"name = {_toml_string(layer.name)}"]
        lines.append(f"kind = {_toml_string(layer.kind)}")
        lines += [f"{k} = {_toml_float(getattr(layer, k))}" for k in LAYER_NUMBERS]
        lines += layer_parallel_keys_toml(layer)
        if layer.measured_time:
            lines.append("[layer.measured_time_s]  # seconds per sample on each resource type")
            for type_name, seconds in layer.measured_time.items():
                lines.append(f"{_toml_string(type_name)} = {_toml_float(seconds)}")
        lines += layer_measured_toml(layer)
    return "\n".join(lines) + "\n"


def write_workload(workload: Workload, path: str | os.PathLike[str]) -> None:
    """Validate, then write the workload atomically (`hps.config.files.atomic_write_text`).

    An invalid workload raises ConfigError naming `path` and nothing is written.
    """
    text = workload_to_toml(workload)
    parse_workload(tomllib.loads(text), str(path))
    atomic_write_text(path, text)


# ---------------------------------------------------------------- command-line schedules


def parse_schedule(text: str, catalog: Catalog, n_layers: int, source: str = "schedule") -> list[int]:
    """``NAME,NAME,...`` (one resource type name per layer) -> resource indices into `catalog`."""
    names = [part.strip() for part in text.split(",")]
    if "" in names:
        raise ConfigError(
            source, f"layer[{names.index('')}]", f"entry {names.index('') + 1} of {text!r} is empty; give a type name"
        )
    if len(names) != n_layers:
        raise ConfigError(
            source,
            "",
            f"gives {len(names)} resource type(s) for a workload of {n_layers} layer(s); "
            f"need one name per layer, got {text!r}",
        )
    indices = []
    for i, name in enumerate(names):
        if name not in catalog.names:
            raise ConfigError(
                source,
                f"layer[{i}]",
                f"unknown resource type {name!r}; catalogue {catalog.name!r} has {', '.join(catalog.names)}",
            )
        indices.append(catalog.index(name))
    return indices
