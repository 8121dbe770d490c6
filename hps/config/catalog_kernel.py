"""The kernel clock's optional constants of a catalogue's resource type (docs/clocks.md).

A ``[[resource]]`` may give any of

```toml
matmul_efficiency_max = 0.68       # e_max: fraction of peak_TFLOPs large BF16 matmul work reaches
matmul_half_work_TFLOP = 0.5       # w_half: TFLOP per device of a layer call at half of e_max
fp8_peak_TFLOPs = 1978.9           # dense FP8 matmul peak per unit
fp8_matmul_efficiency_max = 0.474  # e_max at fp8_peak_TFLOPs (needs fp8_peak_TFLOPs)
tp_comm_exposed = 0.0              # fraction of the tensor-parallel collectives not hidden, 0 to 1
kernel_derived_from = "h100"       # the constants were derived from this type's fits (extrapolated)
kernel_residual_low = -0.09        # held-out residuals (predicted / published - 1) of the type's family
kernel_residual_high = 0.07
memory_headroom = 0.1              # fraction of memory a parallel plan leaves free, 0 to < 1
```

The typed `ResourceType` carries FLOP and FLOP/s (TFLOP = 1e12 FLOP). A type without them is
timed by the clock's fallback rule. Every problem raises ``ConfigError(file, field, problem)``
naming a field such as ``resource[3].fp8_peak_TFLOPs``.
"""

from __future__ import annotations

from typing import Any

from hps.config.plan_space import check_headroom
from hps.config.ranges import check_in_range
from hps.config.validation import (
    TERA,
    as_number,
    field_path,
    get_fraction,
    get_name,
    get_non_negative,
    get_positive,
)
from hps.errors import ConfigError

RESOURCE_KERNEL_KEYS = (
    "matmul_efficiency_max",
    "fp8_matmul_efficiency_max",
    "matmul_half_work_TFLOP",
    "fp8_peak_TFLOPs",
    "tp_comm_exposed",
    "kernel_derived_from",
    "kernel_residual_low",
    "kernel_residual_high",
    "memory_headroom",
)
"""Optional [[resource]] keys of the kernel clock (omitted: the clock's fallback rule)."""
_FIELDS = {
    # file key: (typed field, getter, file unit -> internal unit)
    "matmul_efficiency_max": ("matmul_efficiency_max", get_fraction, 1.0),
    "fp8_matmul_efficiency_max": ("fp8_matmul_efficiency_max", get_fraction, 1.0),
    "matmul_half_work_TFLOP": ("matmul_half_work_flop", get_non_negative, TERA),
    "fp8_peak_TFLOPs": ("fp8_peak_flops", get_positive, TERA),
    "tp_comm_exposed": ("tp_comm_exposed", get_non_negative, 1.0),
}


def parse_kernel_fields(table: dict[str, Any], source: str, prefix: str) -> dict[str, float]:
    """The kernel clock's constants and the memory headroom a [[resource]] gives, each checked for
    its sign and range, as ResourceType keyword arguments in FLOP and FLOP/s (only those the
    table gives)."""
    if "fp8_matmul_efficiency_max" in table and "fp8_peak_TFLOPs" not in table:
        raise ConfigError(
            source,
            field_path(prefix, "fp8_matmul_efficiency_max"),
            "is an efficiency at the FP8 peak: give fp8_peak_TFLOPs too",
        )
    fields: dict = {}
    if "kernel_derived_from" in table:
        fields["kernel_derived_from"] = get_name(table, "kernel_derived_from", source, prefix)
    if "memory_headroom" in table:
        path = field_path(prefix, "memory_headroom")
        fields["memory_headroom"] = check_headroom(table["memory_headroom"], source, path)
    for key in ("kernel_residual_low", "kernel_residual_high"):
        if key in table:
            value = as_number(table[key], source, field_path(prefix, key))
            if not -1 < value < 10:
                raise ConfigError(source, field_path(prefix, key), f"must be in (-1, 10) (a residual), got {value!r}")
            fields[key] = value
    if fields.get("kernel_residual_low", -0.5) > fields.get("kernel_residual_high", 9.0):
        raise ConfigError(source, field_path(prefix, "kernel_residual_low"), "must be at most kernel_residual_high")
    for key, (name, getter, scale) in _FIELDS.items():
        if key in table:
            value = check_in_range(getter(table, key, source, prefix), key, source, field_path(prefix, key))
            fields[name] = value * scale
    return fields
