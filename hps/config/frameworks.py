"""The training frameworks plans are exported to and planned for, and the device families each
runs (docs/export.md): Megatron-LM and torchtitan run NVIDIA GPUs, MaxText TPUs and GPUs."""

from __future__ import annotations

from hps.config.types import ResourceType

FRAMEWORK_FAMILIES = {"megatron": ("gpu",), "maxtext": ("tpu", "gpu"), "torchtitan": ("gpu",)}
"""framework -> the device families it runs."""


def device_family(resource: ResourceType) -> str:
    """The type's family, from its kind and name: gpu, tpu, trainium, cpu or other."""
    if resource.kind in ("gpu", "cpu"):
        return resource.kind
    if resource.name.startswith("tpu"):
        return "tpu"
    return "trainium" if resource.name.startswith("trn") else "other"
