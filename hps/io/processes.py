"""Joining the processes of a multi-process run on JAX's own distributed runtime.

Every process runs the same command with its own process id; `jax.distributed.initialize`
joins them into one set of global devices (`jax.devices()` lists every process's, ordered by
process), and XLA runs collectives across processes (over gloo on CPU). `hps train` and
`hps execute` call `initialize` before anything touches JAX devices; where the coordinator,
the process count and the id come from is `hps.io.cluster`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import jax

from hps.errors import ConfigError, HpsError

TIMEOUT_S = 900
"""Seconds a training process waits for the others to join, for a missed heartbeat, and at
shutdown. JAX's defaults (300, 100, 300 s) abort healthy runs on a loaded machine, where a
process can stall for minutes while its peer compiles or writes checkpoints and plots."""


JOIN_GRACE_S = 30
"""Seconds JAX's own join deadline is set past `initialize`'s timeout where a caller ends the
process itself at the timeout (`on_timeout`), so that its message comes first."""


def waiting_notice(coordinator: str, num_processes: int, process_id: int, timeout_s: float = TIMEOUT_S) -> str:
    """The line a process shows while it waits for the others to join."""
    return (
        f"process {process_id} of {num_processes}: waiting up to {timeout_s:g} s for the other processes "
        f"to join at {coordinator}"
    )


def initialize(
    coordinator: str,
    num_processes: int,
    process_id: int,
    *,
    timeout_s: float = TIMEOUT_S,
    heartbeat_s: float | None = None,
    shutdown_s: float | None = None,
    on_timeout: Callable[[str], None] | None = None,
) -> None:
    """Join the job at `coordinator` (HOST:PORT) as process `process_id` of `num_processes`, CPU
    collectives over gloo. timeout_s: seconds to wait for every process to join; heartbeat_s:
    seconds after which a process that sent no heartbeat counts as dead and every other process
    is ended (default timeout_s); shutdown_s: seconds a finished process waits at exit for the
    others (default timeout_s). HpsError naming the coordinator when the others do not join in
    time. on_timeout(message): called (from a timer thread) once timeout_s pass with the join
    unfinished, before JAX's own deadline, which aborts the process with a C++ stack trace
    where a peer never started; it is meant to end the process."""
    host, _, port = coordinator.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError("coordinator", "", f"must be HOST:PORT, got {coordinator!r}")
    if num_processes < 1:
        raise ConfigError("num_processes", "", f"must be ≥ 1, got {num_processes}")
    if not 0 <= process_id < num_processes:
        raise ConfigError("process_id", "", f"must be in [0, {num_processes}), got {process_id}")
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    watchdog = None
    if on_timeout is not None:
        message = (
            f"{coordinator}: the {num_processes} processes did not all join within {timeout_s:g} s "
            "(is every process started, with the same coordinator, process count and a distinct id?)"
        )
        watchdog = threading.Timer(timeout_s, on_timeout, args=(message,))
        watchdog.daemon = True
        watchdog.start()
    try:
        jax.distributed.initialize(
            coordinator,  # coordinator_address, num_processes, process_id
            num_processes,
            process_id,
            initialization_timeout=int(timeout_s) + (JOIN_GRACE_S if watchdog is not None else 0),
            heartbeat_timeout_seconds=int(heartbeat_s or timeout_s),
            shutdown_timeout_seconds=int(shutdown_s or timeout_s),
        )
    except (RuntimeError, ValueError) as error:  # XlaRuntimeError is a RuntimeError
        cause = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise HpsError(
            f"{coordinator}: the {num_processes} processes did not all join within {timeout_s:g} s "
            f"(is every --process-id started, with the same --coordinator?): {cause}"
        ) from None
    finally:
        if watchdog is not None:
            watchdog.cancel()


def is_primary() -> bool:
    """True in the process that writes shared files (metrics, plots, reports): process 0."""
    return jax.process_index() == 0
