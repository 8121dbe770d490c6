"""The accepted range of every numeric input of hps, defined once, and its checks.

Each `Range` is in the unit the value is written in: a file's field (``peak_TFLOPs``,
``latency_ns``), a job field or a command-line flag. The loaders, `validate_job` and the CLI
check every value where it enters and raise ``ConfigError(source, field, "must be ...")`` naming
the range. The ranges reach far beyond any real hardware or job, and are tight enough that no
combination of in-range values overflows float32 (3.4e38) or underflows to 0 in a model's
results (internal units; L ≤ 4,096 layers, T ≤ 32 types, k ≤ 65,536 units):

- a layer's time per sample is at most 1e21 FLOP / (1e6 FLOP/s · 1e-4) + 2 · 1e18 B / 1.07 B/s
  ≈ 1.2e19 s (or a measured 1e9 s), a stage's sum at most 5e22 s, times B ≤ 1e12 samples at most
  5e34 s per iteration; 4·W + sparse + B·Σact ≤ 5e33 bytes; the pipeline bubble ≤ 4,096;
- a positive time is at least 1 FLOP / 1e18 FLOP/s = 1e-18 s per sample (or 1 B / 1.07e15 B/s,
  or a measured 1e-15 s); with B ≥ 1 and k ≤ 65,536 a stage that does any work takes ≥ 1e-23 s;
- a feasible plan's cost is at most Σ_t max_units_t · price_t · N / R / 3600 ≤ 32 · 65,536 ·
  1e9 · 1e16 / 1e-6 / 3600 ≈ 6e33 $, and at least 1e-6 $/h · 1 sample · 1e-18 s / 3600 ≈ 3e-28 $;
- an All-Reduce phase takes at most 65,535 steps · 1,000 s + 1e18 B / 1.07 B/s ≈ 1e18 s, and its
  bandwidth term is at least 1 B / 1,024 chunks / 2^30 NPUs / 1.07e15 B/s ≈ 8.5e-28 s.

This module imports only the limits, the config types and the errors, so every layer of hps may
import it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from hps.config.limits import MAX_CHUNKS, MAX_DIMENSION_SIZE, MAX_IN_FLIGHT, MAX_NETWORK_SIZE, MAX_UNITS
from hps.config.types import LAYER_NUMBERS, Layer, Workload
from hps.errors import ConfigError


@dataclass(frozen=True)
class Range:
    """Values low..high (inclusive), in `unit`; zero: 0 is accepted too (values strictly between 0
    and low are not); infinite: inf is accepted too. reason: why the bounds are where they are."""

    low: float
    high: float
    unit: str
    reason: str
    zero: bool = False
    infinite: bool = False

    def contains(self, value: float) -> bool:
        """Whether `value` (a finite or infinite number) lies in the range."""
        if value == 0 and self.zero or value == math.inf and self.infinite:
            return True
        return self.low <= value <= self.high

    def text(self) -> str:
        """The range in words: ``0, or between 1 and 1e+21 FLOP per sample``."""
        span = f"between {self.low:g} and {self.high:g} {self.unit}"
        return f"0, or {span}" if self.zero else f"{span}, or inf" if self.infinite else span


BANDWIDTH = Range(1e-9, 1e6, "GiB/s", "about 1 B/s to 1e15 B/s per unit or NPU")
EFFICIENCY = Range(1e-4, 1.0, "(fraction of peak)", "0.01 % of peak to all of it")
LAYER_BYTES = Range(1.0, 1e18, "bytes per sample", "an exabyte; a positive count below a byte is no layer", zero=True)
BATCH = Range(1.0, 1e12, "samples", "a trillion samples per iteration (or per NPU)")
MICRO_BATCH_TIME = Range(1e-15, 1e9, "s per micro-batch", "a femtosecond to 30 years per micro-batch")

RANGES: dict[str, Range] = {
    # resource types (catalogue files), in the files' units
    "peak_TFLOPs": Range(1e-6, 1e6, "TFLOP/s", "a MFLOP/s microcontroller to an EFLOP/s per unit"),
    "efficiency_dense": EFFICIENCY,
    "efficiency_sparse": EFFICIENCY,
    "mem_bw_GiBps": BANDWIDTH,
    "io_bw_GiBps": BANDWIDTH,
    "nic_bw_GiBps": BANDWIDTH,
    "memory_GiB": Range(1e-6, 1e9, "GiB", "a KiB to an EiB per unit"),
    "price_per_hour": Range(1e-6, 1e9, "$ per unit-hour", "a millionth of a dollar to a billion dollars"),
    "max_units": Range(1, MAX_UNITS, "units", "the replica counts the placement models provision"),
    # network dimensions (network files and resource types)
    "size": Range(1, MAX_DIMENSION_SIZE, "NPUs", "halving-doubling's step count is exact up to it"),
    "network_size": Range(1, MAX_NETWORK_SIZE, "NPUs", "int32 counts of NPUs hold it with room"),
    "bandwidth_GiBps": BANDWIDTH,
    "latency_ns": Range(0.0, 1e12, "ns", "up to 1,000 s per step"),
    "in_flight": Range(1, MAX_IN_FLIGHT, "phases at once", "the lanes the collective simulator keeps per dimension"),
    # layers (workload files), per sample
    "flops": Range(1.0, 1e21, "FLOP per sample", "a zettaFLOP; a positive count below one FLOP is no layer", zero=True),
    "mem_bytes": LAYER_BYTES,
    "io_bytes": LAYER_BYTES,
    "act_bytes": LAYER_BYTES,
    "dense_param_bytes": LAYER_BYTES,
    "sparse_param_bytes": LAYER_BYTES,
    "measured_time_s": Range(1e-15, 1e9, "s per sample", "a femtosecond to 30 years per sample"),
    "stash_bytes": LAYER_BYTES,
    "fp8_stash_bytes": LAYER_BYTES,
    "selective_stash_bytes": LAYER_BYTES,
    "selective_flops": Range(1.0, 1e21, "FLOP per sample", "as flops; 0: nothing recomputed", zero=True),
    "serial_mem_bytes": LAYER_BYTES,
    "tp_comm_bytes": LAYER_BYTES,
    "tp_collectives": Range(1, 1e6, "All-Reduces", "a million collectives per layer and pass", zero=True),
    "forward_s": MICRO_BATCH_TIME,
    "input_move_s": Range(1e-15, 1e9, "s per micro-batch", "as forward_s; 0: nothing to move", zero=True),
    "gradient_move_s": Range(1e-15, 1e9, "s per micro-batch", "as forward_s; 0: nothing to move", zero=True),
    "measured_call_s": Range(1e-15, 1e9, "s per micro-batch", "as forward_s; 0: a profile found none", zero=True),
    "backward_s": MICRO_BATCH_TIME,
    # parallel plans: resource types, links between sites, jobs and plan stages
    "tp_max": Range(1, MAX_DIMENSION_SIZE, "devices", "a tensor-parallel group within one network dimension's reach"),
    "matmul_efficiency_max": EFFICIENCY,
    "fp8_matmul_efficiency_max": EFFICIENCY,
    "matmul_half_work_TFLOP": Range(1e-9, 1e6, "TFLOP", "a kFLOP to an EFLOP per device and layer call", zero=True),
    "fp8_peak_TFLOPs": Range(1e-6, 1e6, "TFLOP/s", "as peak_TFLOPs"),
    "tp_comm_exposed": Range(0.0, 1.0, "(fraction of the collectives' time)", "none of it hidden to all of it"),
    "tp": Range(1, MAX_DIMENSION_SIZE, "devices", "as tp_max"),
    "dp": Range(1, MAX_UNITS, "replicas", "the units one type may provide"),
    "dollars_per_GiB": Range(1e-9, 1e6, "$ per GiB", "a billionth of a dollar to a million dollars a GiB", zero=True),
    "micro_batch": BATCH,
    # jobs ([defaults] of workload files, job flags)
    "batch": BATCH,
    "throughput": Range(1e-6, 1e15, "samples/s", "a sample per 11 days to a quadrillion per second"),
    "samples": Range(1.0, 1e16, "samples", "ten quadrillion samples to train"),
    "budget_per_hour": Range(1e-6, 1e12, "$ per hour", "a ten-thousandth of a cent to a trillion dollars an hour"),
    "micro_batches": Range(1, 1e12, "micro-batches", "a trillion per iteration; inf: no bubble", infinite=True),
    "chunks": Range(1, MAX_CHUNKS, "chunks", "orders pad to 256 rows up to 256 chunks, to 1,024 rows past"),
    # collectives (hps collective)
    "collective_bytes": Range(1.0, 1e18, "bytes", "an exabyte in one All-Reduce"),
    "batch_per_npu": BATCH,
}
"""Every numeric input's range, keyed by the name it has in files (or ``network_size``,
``collective_bytes`` and ``batch_per_npu`` for the product of a network's sizes, ``hps
collective --size`` and ``--batch-per-npu``)."""


def check_in_range(value: float, name: str, source: str, path: str) -> float:
    """`value` itself when RANGES[name] holds it, else ConfigError naming source, path and the
    range. Callers check the type and the sign first (their messages say "must be > 0")."""
    allowed = RANGES[name]
    if not allowed.contains(value):
        raise ConfigError(source, path, f"must be {allowed.text()}, got {value!r}")
    return value


def check_network_size(sizes: Sequence[int], source: str, path: str) -> None:
    """ConfigError naming the ``[[dimension]]`` array at `path` when the product of `sizes`
    (NPUs) passes MAX_NETWORK_SIZE."""
    total = math.prod(sizes)
    if total > MAX_NETWORK_SIZE:
        shown = " x ".join(f"{size:,}" for size in sizes)
        problem = (
            f"must have at most {MAX_NETWORK_SIZE:,} NPUs in all (the product of the sizes), got {shown} = {total:,}"
        )
        raise ConfigError(source, path, problem)


def check_layer(layer: Layer, source: str, prefix: str) -> None:
    """ConfigError naming ``prefix.field`` for a per-sample number or measured time of `layer`
    outside its range (or not a finite number at or above 0)."""
    for name in LAYER_NUMBERS:
        value = getattr(layer, name)
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
            raise ConfigError(source, f"{prefix}.{name}", f"must be a finite number >= 0, got {value!r}")
        check_in_range(value, name, source, f"{prefix}.{name}")
    for type_name, seconds in layer.measured_time.items():
        check_in_range(seconds, "measured_time_s", source, f"{prefix}.measured_time_s.{type_name}")
    check_layer_parallel(layer, source, prefix)


def is_power_of_two(value: object) -> bool:
    """Whether `value` is an int (not a bool) 1, 2, 4, 8, ..."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1 and value & (value - 1) == 0


def _check_count(value: object, name: str, low: int, source: str, path: str) -> None:
    """ConfigError unless `value` is an int (not a bool) >= low within RANGES[name]."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(source, path, f"must be an integer >= {low}, got {value!r}")
    check_in_range(value, name, source, path)


def _check_number(value: object, name: str, source: str, path: str, *, positive: bool) -> None:
    """ConfigError unless `value` is a finite number (> 0 if positive, else >= 0) within RANGES[name]."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not number or (value <= 0 if positive else value < 0):
        raise ConfigError(source, path, f"must be a finite number {'> 0' if positive else '>= 0'}, got {value!r}")
    check_in_range(value, name, source, path)


def check_layer_parallel(layer: Layer, source: str, prefix: str) -> None:
    """ConfigError naming ``prefix.field`` for a parallel-plan field of `layer` out of its type or
    range: stash_bytes and tp_comm_bytes (bytes per sample, None or >= 0), serial_mem_bytes (bytes
    per sample, >= 0 and at most mem_bytes), tp_collectives (an int >= 0), cut_after (a bool) and
    each measured time (tp a power of two, micro_batch >= 1 samples, forward_s and backward_s > 0
    seconds per micro-batch)."""
    if not isinstance(layer.cut_after, bool):
        raise ConfigError(source, f"{prefix}.cut_after", f"must be true or false, got {layer.cut_after!r}")
    for name in ("stash_bytes", "fp8_stash_bytes", "selective_stash_bytes", "tp_comm_bytes", "selective_flops"):
        if getattr(layer, name) is not None:
            _check_number(getattr(layer, name), name, source, f"{prefix}.{name}", positive=False)
    _check_number(layer.serial_mem_bytes, "serial_mem_bytes", source, f"{prefix}.serial_mem_bytes", positive=False)
    if layer.serial_mem_bytes > layer.mem_bytes:
        raise ConfigError(
            source,
            f"{prefix}.serial_mem_bytes",
            f"must be at most mem_bytes ({layer.mem_bytes!r}), got {layer.serial_mem_bytes!r}",
        )
    _check_count(layer.tp_collectives, "tp_collectives", 0, source, f"{prefix}.tp_collectives")
    for j, measured in enumerate(layer.measured):
        path = f"{prefix}.measured[{j}]"
        if not is_power_of_two(measured.tp):
            raise ConfigError(source, f"{path}.tp", f"must be a power of two (1, 2, 4, 8, ...), got {measured.tp!r}")
        check_in_range(measured.tp, "tp", source, f"{path}.tp")
        _check_count(measured.micro_batch, "micro_batch", 1, source, f"{path}.micro_batch")
        for name in ("forward_s", "backward_s"):
            _check_number(getattr(measured, name), name, source, f"{path}.{name}", positive=True)
        for name in ("input_move_s", "gradient_move_s"):
            if getattr(measured, name) is not None:
                _check_number(getattr(measured, name), name, source, f"{path}.{name}", positive=False)


WORK_FIELDS = ("flops", "mem_bytes", "io_bytes")
"""The per-sample numbers that take time on every resource type (the roofline's terms)."""


def check_workload(workload: Workload, source: str) -> None:
    """ConfigError for a layer number out of range, or for a workload whose every layer has 0
    flops, mem_bytes and io_bytes (no stage would take time: its throughput would be infinite)."""
    for i, layer in enumerate(workload.layers):
        check_layer(layer, source, f"layer[{i}]")
    for type_name, seconds in workload.measured_call_s.items():
        check_in_range(seconds, "measured_call_s", source, f"measured_call_s.{type_name}")
    if not any(getattr(layer, name) > 0 for layer in workload.layers for name in WORK_FIELDS):
        raise ConfigError(source, "layer", f"every layer has 0 {', '.join(WORK_FIELDS)}: the workload takes no time")
