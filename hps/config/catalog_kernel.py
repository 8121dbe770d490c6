"""The kernel clock's optional constants of a catalogue's resource type (docs/clocks.md).

A ``[[resource]]`` may give any of

```toml
matmul_efficiency_max = 0.68       # e_max: fraction of peak_TFLOPs large BF16 matmul work reaches
matmul_half_work_TFLOP = 0.5       # w_half: TFLOP per device of a layer call at half of e_max
fp8_peak_TFLOPs = 1978.9           # dense FP8 matmul peak per unit
fp8_matmul_efficiency_max = 0.474  # e_max at fp8_peak_TFLOPs (needs fp8_peak_TFLOPs)
tp_comm_exposed = 0.0              # fraction of the tensor-parallel collectives not hidden, 0 to 1
```

The typed `ResourceType` carries FLOP and FLOP/s (TFLOP = 1e12 FLOP). A type without them is
timed by the clock's fallback rule. Every problem raises ``ConfigError(file, field, problem)``
naming a field such as ``resource[3].fp8_peak_TFLOPs``.
"""

from __future__ import annotations

from typing import Any

from hps.config.ranges import check_in_range
from hps.config.validation import TERA, field_path, get_fraction, get_non_negative, get_positive
from hps.errors import ConfigError

RESOURCE_KERNEL_KEYS = (
    "matmul_efficiency_max",
    "fp8_matmul_efficiency_max",
    "matmul_half_work_TFLOP",
    "fp8_peak_TFLOPs",
    "tp_comm_exposed",
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
    """The kernel clock's constants a [[resource]] gives, each checked for its sign and range, as
    ResourceType keyword arguments in FLOP and FLOP/s (only those the table gives)."""
    if "fp8_matmul_efficiency_max" in table and "fp8_peak_TFLOPs" not in table:
        raise ConfigError(
            source,
            field_path(prefix, "fp8_matmul_efficiency_max"),
            "is an efficiency at the FP8 peak: give fp8_peak_TFLOPs too",
        )
    fields = {}
    for key, (name, getter, scale) in _FIELDS.items():
        if key in table:
            value = check_in_range(getter(table, key, source, prefix), key, source, field_path(prefix, key))
            fields[name] = value * scale
    return fields
