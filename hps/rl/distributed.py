"""Multi-process training on JAX's own distributed runtime.

Every process runs the same `hps train` with its own process id; `jax.distributed.initialize`
joins them into one set of global devices, the env mesh spans them all, and XLA all-reduces the
gradients across processes (over gloo on CPU). Call `initialize` before anything touches JAX
devices.
"""

from __future__ import annotations

import jax

from hps.errors import ConfigError, HpsError

TIMEOUT_S = 900
"""Seconds to wait for the other processes to join, for a missed heartbeat, and at shutdown.
JAX's defaults (300, 100, 300 s) abort healthy runs on a loaded machine, where a process can
stall for minutes while its peer compiles or writes checkpoints and plots."""


def waiting_notice(coordinator: str, num_processes: int, process_id: int) -> str:
    """The line a process shows while it waits for the others to join."""
    return (
        f"process {process_id} of {num_processes}: waiting up to {TIMEOUT_S} s for the other processes "
        f"to join at {coordinator}"
    )


def initialize(coordinator: str, num_processes: int, process_id: int) -> None:
    """Join the job at `coordinator` (HOST:PORT) as process `process_id` of `num_processes`;
    HpsError naming the coordinator when the others do not join within TIMEOUT_S."""
    host, _, port = coordinator.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError("coordinator", "", f"must be HOST:PORT, got {coordinator!r}")
    if num_processes < 1:
        raise ConfigError("num_processes", "", f"must be ≥ 1, got {num_processes}")
    if not 0 <= process_id < num_processes:
        raise ConfigError("process_id", "", f"must be in [0, {num_processes}), got {process_id}")
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    try:
        jax.distributed.initialize(
            coordinator,  # coordinator_address, num_processes, process_id
            num_processes,
            process_id,
            initialization_timeout=TIMEOUT_S,
            heartbeat_timeout_seconds=TIMEOUT_S,
            shutdown_timeout_seconds=TIMEOUT_S,
        )
    except (RuntimeError, ValueError) as error:  # XlaRuntimeError is a RuntimeError
        cause = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise HpsError(
            f"{coordinator}: the {num_processes} processes did not all join within {TIMEOUT_S} s "
            f"(is every --process-id started, with the same --coordinator?): {cause}"
        ) from None


def is_primary() -> bool:
    """True in the process that writes shared files (metrics, plots): process 0."""
    return jax.process_index() == 0
