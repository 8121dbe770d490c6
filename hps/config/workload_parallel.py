"""The parallel-plan keys of a workload file: per layer and in ``[defaults]``, read and written.

Optional ``[[layer]]`` keys: ``cut_after`` (bool; false: no pipeline stage may end after the
layer), ``stash_bytes``, ``fp8_stash_bytes``, ``selective_stash_bytes`` and ``tp_comm_bytes`` (bytes
per sample, >= 0), ``selective_flops`` (FLOP per sample selective recomputation redoes, >= 0),
``tp_collectives`` (All-Reduces per pass, an integer >= 0), ``serial_mem_bytes`` (bytes per sample of
mem_bytes that memory-bound kernels of their own move, timed in series with the matmuls, >= 0 and
at most mem_bytes), and ``[[layer.measured]]`` tables of measured times per micro-batch on one
device of a t-way tensor-parallel group:

```toml
[[layer.measured]]
type = "h100"        # a resource type name
tp = 8               # devices in the group, a power of two
micro_batch = 4      # samples per replica
forward_s = 0.0021   # seconds per micro-batch
backward_s = 0.0043
```

Optional ``[defaults]`` keys: ``micro_batch`` (samples, a divisor of batch), ``precision`` (one of
PRECISIONS), ``zero`` (0 to 3) and ``recompute`` (one of RECOMPUTE). The writers emit only the
values that differ from the defaults, so that loading what they write gives the same objects.
"""

from __future__ import annotations

from typing import Any

from hps.config.limits import MAX_MEASURED_TIMES
from hps.config.ranges import check_in_range, is_power_of_two
from hps.config.toml_text import toml_float, toml_string
from hps.config.types import PRECISIONS, RECOMPUTE, JobDefaults, Layer, MeasuredTime
from hps.config.validation import (
    check_keys,
    check_micro_batch,
    check_zero,
    describe,
    field_path,
    get_choice,
    get_int,
    get_name,
    get_non_negative,
    get_positive,
    get_table_array,
)
from hps.errors import ConfigError

BYTE_KEYS = ("stash_bytes", "fp8_stash_bytes", "selective_stash_bytes", "tp_comm_bytes")
"""The optional [[layer]] keys in bytes per sample (omitted: None, the Layer's fallback)."""
ZERO_KEYS = ("selective_flops", "serial_mem_bytes")
"""The optional [[layer]] numbers >= 0 whose omission means 0."""
LAYER_PARALLEL_KEYS = ("cut_after", *BYTE_KEYS, *ZERO_KEYS, "tp_collectives", "measured")
"""Optional [[layer]] keys of the parallel-plan model (omitted: true, act_bytes, stash_bytes,
stash_bytes, act_bytes, 0, 0, 1, none)."""
MEASURED_KEYS = ("type", "tp", "micro_batch", "forward_s", "backward_s")
MOVE_KEYS = ("input_move_s", "gradient_move_s")
"""Optional [[layer.measured]] keys: the moves of the layer's input and of its gradient."""
DEFAULTS_PARALLEL_KEYS = ("micro_batch", "precision", "zero", "recompute")
"""Optional [defaults] keys of the parallel-plan model (omitted: none, fp32-adam, 0, none)."""


def parse_measured(table: dict[str, Any], source: str, prefix: str) -> MeasuredTime:
    """One ``[[layer.measured]]``: type (a name), tp (a power of two), micro_batch (samples, >= 1),
    forward_s and backward_s (seconds per micro-batch, > 0), optionally input_move_s and
    gradient_move_s (seconds per micro-batch, >= 0)."""
    check_keys(table, (*MEASURED_KEYS, *MOVE_KEYS), MEASURED_KEYS, source, prefix)
    type_name = get_name(table, "type", source, prefix)
    tp = get_int(table, "tp", source, prefix, minimum=1)
    if not is_power_of_two(tp):
        raise ConfigError(source, field_path(prefix, "tp"), f"must be a power of two (1, 2, 4, 8, ...), got {tp}")
    check_in_range(tp, "tp", source, field_path(prefix, "tp"))
    micro_batch = get_int(table, "micro_batch", source, prefix, minimum=1)
    check_in_range(micro_batch, "micro_batch", source, field_path(prefix, "micro_batch"))
    times = {}
    for key in ("forward_s", "backward_s"):
        times[key] = check_in_range(get_positive(table, key, source, prefix), key, source, field_path(prefix, key))
    for key in MOVE_KEYS:
        if key in table:
            value = get_non_negative(table, key, source, prefix)
            times[key] = check_in_range(value, key, source, field_path(prefix, key))
    return MeasuredTime(type=type_name, tp=tp, micro_batch=micro_batch, **times)


def parse_measured_times(table: dict[str, Any], source: str, prefix: str) -> tuple[MeasuredTime, ...]:
    """A layer's ``[[layer.measured]]`` tables (absent: none), no two for one (type, tp, micro_batch)."""
    path = field_path(prefix, "measured")
    items = get_table_array(table, "measured", source, prefix, min_len=0, max_len=MAX_MEASURED_TIMES)
    measured = []
    seen: dict[tuple[str, int, int], int] = {}
    for j, item in enumerate(items):
        entry = parse_measured(item, source, field_path(path, j))
        key = (entry.type, entry.tp, entry.micro_batch)
        if key in seen:
            raise ConfigError(
                source,
                field_path(path, j),
                f"duplicate measurement for type {entry.type!r}, tp {entry.tp}, micro_batch {entry.micro_batch} "
                f"(also {field_path(path, seen[key])})",
            )
        seen[key] = j
        measured.append(entry)
    return tuple(measured)


def parse_layer_parallel(table: dict[str, Any], source: str, prefix: str) -> dict[str, Any]:
    """The parallel-plan keys the [[layer]] table gives, as Layer keyword arguments."""
    fields: dict[str, Any] = {}
    if "cut_after" in table:
        value = table["cut_after"]
        if not isinstance(value, bool):
            raise ConfigError(source, field_path(prefix, "cut_after"), f"must be true or false, got {describe(value)}")
        fields["cut_after"] = value
    for key in (*BYTE_KEYS, *ZERO_KEYS):
        if key in table:
            value = get_non_negative(table, key, source, prefix)
            fields[key] = check_in_range(value, key, source, field_path(prefix, key))
    if "tp_collectives" in table:
        count = get_int(table, "tp_collectives", source, prefix, minimum=0)
        fields["tp_collectives"] = check_in_range(count, "tp_collectives", source, field_path(prefix, "tp_collectives"))
    if "measured" in table:
        fields["measured"] = parse_measured_times(table, source, prefix)
    return fields


def parse_defaults_parallel(table: dict[str, Any], batch: float, source: str) -> dict[str, Any]:
    """The parallel-plan keys the [defaults] table gives, as JobDefaults keyword arguments;
    `batch` (samples per iteration) is the one the micro-batch must divide."""
    fields: dict[str, Any] = {}
    if "micro_batch" in table:
        value = get_int(table, "micro_batch", source, "defaults", minimum=1)
        fields["micro_batch"] = check_micro_batch(value, batch, source, "defaults.micro_batch")
    if "precision" in table:
        fields["precision"] = get_choice(table, "precision", tuple(PRECISIONS), source, "defaults")
    if "zero" in table:
        value = table["zero"]
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(source, "defaults.zero", f"must be an integer 0 to 3, got {describe(value)}")
        fields["zero"] = check_zero(value, source, "defaults.zero")
    if "recompute" in table:
        fields["recompute"] = get_choice(table, "recompute", RECOMPUTE, source, "defaults")
    return fields


def defaults_parallel_toml(defaults: JobDefaults) -> list[str]:
    """The [defaults] lines of the parallel-plan fields that differ from their defaults."""
    lines = []
    if defaults.micro_batch is not None:
        lines.append(f"micro_batch = {int(defaults.micro_batch)}")
    if defaults.precision != "fp32-adam":
        lines.append(f"precision = {toml_string(defaults.precision)}")
    if defaults.zero != 0:
        lines.append(f"zero = {int(defaults.zero)}")
    if defaults.recompute != "none":
        lines.append(f"recompute = {toml_string(defaults.recompute)}")
    return lines


def layer_parallel_keys_toml(layer: Layer) -> list[str]:
    """The [[layer]] key lines of the parallel-plan fields that differ from their defaults (they
    go before any sub-table of the layer)."""
    lines = []
    if not layer.cut_after:
        lines.append("cut_after = false")
    for key in BYTE_KEYS:
        if getattr(layer, key) is not None:
            lines.append(f"{key} = {toml_float(getattr(layer, key))}")
    for key in ZERO_KEYS:
        if getattr(layer, key):
            lines.append(f"{key} = {toml_float(getattr(layer, key))}")
    if layer.tp_collectives != 1:
        lines.append(f"tp_collectives = {int(layer.tp_collectives)}")
    return lines


def layer_measured_toml(layer: Layer) -> list[str]:
    """The layer's ``[[layer.measured]]`` tables (after its keys and its other sub-tables)."""
    lines = []
    for entry in layer.measured:
        lines += [
            "[[layer.measured]]  # seconds per micro-batch on one device of a tp-way group",
            f"type = {toml_string(entry.type)}",
            f"tp = {int(entry.tp)}",
            f"micro_batch = {int(entry.micro_batch)}",
            f"forward_s = {toml_float(entry.forward_s)}",
            f"backward_s = {toml_float(entry.backward_s)}",
        ]
        lines += [f"{key} = {toml_float(getattr(entry, key))}" for key in MOVE_KEYS if getattr(entry, key) is not None]
    return lines
