"""Multi-process training on JAX's own distributed runtime.

Every process runs the same `hps train` with its own process id; `jax.distributed.initialize`
joins them into one set of global devices, the env mesh spans them all, and XLA all-reduces the
gradients across processes (over gloo on CPU). Call `initialize` before anything touches JAX
devices.
"""

from __future__ import annotations

import jax

from hps.errors import ConfigError

TIMEOUT_S = 900
"""Seconds to wait for the other processes to join, for a missed heartbeat, and at shutdown.
JAX's defaults (300, 100, 300 s) abort healthy runs on a loaded machine, where a process can
stall for minutes while its peer compiles or writes checkpoints and plots."""


def initialize(coordinator: str, num_processes: int, process_id: int) -> None:
    """Join the job at `coordinator` (HOST:PORT) as process `process_id` of `num_processes`."""
    host, _, port = coordinator.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError("--coordinator", "coordinator", f"must be HOST:PORT, got {coordinator!r}")
    if num_processes < 1:
        raise ConfigError("--num-processes", "num_processes", f"must be ≥ 1, got {num_processes}")
    if not 0 <= process_id < num_processes:
        raise ConfigError("--process-id", "process_id", f"must be in [0, {num_processes}), got {process_id}")
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator,  # coordinator_address, num_processes, process_id
        num_processes,
        process_id,
        initialization_timeout=TIMEOUT_S,
        heartbeat_timeout_seconds=TIMEOUT_S,
        shutdown_timeout_seconds=TIMEOUT_S,
    )


def is_primary() -> bool:
    """True in the process that writes shared files (metrics, plots): process 0."""
    return jax.process_index() == 0
