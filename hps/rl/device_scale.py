"""The training recipe's env count and chunk size from the device it runs on.

On CPUs an update's time grows with the envs per core, so the recipe keeps CPU_ENVS_PER_CORE
envs per core (at least MIN_ENVS, the count the recipe's figures on 2 cores were measured at)
and CPU_UPDATES updates a chunk. An accelerator runs far more envs in about the same time until
its memory fills: the recipe takes one env per ACCELERATOR_BYTES_PER_ENV bytes of the device's
memory, rounded down to a power of two, within [MIN_ENVS, MAX_ACCELERATOR_ENVS], and
ACCELERATOR_UPDATES updates a chunk (its updates are milliseconds, so a chunk of CPU_UPDATES
would spend its time in the driver between chunks). Both counts are multiples of the recipe's
samples per instance (a power of two no larger than MIN_ENVS).

Sources: on one H200 (JAX 0.11.2) training ran 2.08 M env steps/s at 4,096 envs × 16 layers × 4
types and 7.07 M at 65,536 envs; on 2 CPU cores 0.35–0.42 M at 4,096 (docs/results.md).
"""

from __future__ import annotations

from hps.config.machine import cpu_cores

MIN_ENVS = 4096
CPU_ENVS_PER_CORE = 2048
CPU_UPDATES = 10
MAX_CPU_ENVS = 32_768
ACCELERATOR_BYTES_PER_ENV = 2**20
"""1 MiB of device memory per env: 65,536 envs on an 80 GiB or larger device."""
MAX_ACCELERATOR_ENVS = 65_536
ACCELERATOR_UPDATES = 50


def _power_of_two_below(n: float) -> int:
    return 1 << max(0, int(n).bit_length() - 1)


def recipe_scale(platform: str, cores: int, memory_bytes: float | None) -> tuple[int, int]:
    """(num_envs, updates_per_chunk) for a device of `platform` ("cpu", "gpu", "tpu"), with
    `cores` CPU cores and `memory_bytes` of accelerator memory (None where unknown)."""
    if platform == "cpu" or not memory_bytes:
        envs = min(MAX_CPU_ENVS, max(MIN_ENVS, CPU_ENVS_PER_CORE * max(1, cores)))
        return _power_of_two_below(envs), CPU_UPDATES
    envs = _power_of_two_below(memory_bytes / ACCELERATOR_BYTES_PER_ENV)
    return min(MAX_ACCELERATOR_ENVS, max(MIN_ENVS, envs)), ACCELERATOR_UPDATES


def device_recipe_scale() -> tuple[int, int]:
    """`recipe_scale` of this process's first JAX device (initialises JAX's backend)."""
    import jax

    device = jax.devices()[0]
    stats = device.memory_stats() if device.platform != "cpu" else None
    memory = (stats or {}).get("bytes_limit")
    return recipe_scale(device.platform, cpu_cores(), memory)
