"""The flags of a command that runs as one of several processes (`hps execute`), and joining them.

`--coordinator`, `--num-processes` and `--process-id` each fall back on the cluster's variables
(`hps.io.cluster`: JAX_*, SLURM, SkyPilot); `--timeout` bounds how long a process waits for the
others to join and how long a silent peer lives before every process is ended.
"""

from __future__ import annotations

import functools
import os
import sys

from hps.cli.common import float_range, int_range
from hps.config.limits import MAX_PROCESSES
from hps.errors import HpsError
from hps.io.cluster import ProcessGroup, process_group

EXECUTE_TIMEOUT_S = 30.0
"""Default seconds a process of `hps execute` waits for the others to join, and after which a
peer that sent no heartbeat counts as dead (every other process is then ended)."""

SHUTDOWN_S = 600.0
"""Seconds a finished process waits at exit for the others to finish (process 0 runs the
single-device reference of `--check` after the others are done); a dead peer still ends it
within the heartbeat timeout."""


def give_up(command: str, message: str) -> None:
    """End this process at once, exit status 2, saying why (the others did not join in time):
    called from a timer thread while JAX's join still waits, so no exception can reach the
    command; nothing is written yet (outputs and their locks come after the join)."""
    print(f"hps {command}: error: {message}", file=sys.stderr, flush=True)
    os._exit(2)


def add_process_args(parser) -> None:
    parser.add_argument(
        "--coordinator", help="HOST:PORT of process 0, for a multi-process run (default: JAX_COORDINATOR_ADDRESS, …)"
    )
    parser.add_argument(
        "--num-processes",
        type=int_range(1, MAX_PROCESSES),
        help="processes in a multi-process run (default: JAX_NUM_PROCESSES, SLURM_NTASKS or SKYPILOT_NUM_NODES; 1)",
    )
    parser.add_argument(
        "--process-id",
        type=int_range(0, MAX_PROCESSES - 1),
        help="this process's index, below --num-processes (default: JAX_PROCESS_ID, SLURM_PROCID or "
        "SKYPILOT_NODE_RANK; 0)",
    )
    parser.add_argument(
        "--timeout",
        type=float_range(1, 86_400),
        default=EXECUTE_TIMEOUT_S,
        help="seconds to wait for the other processes to join, and after which a silent peer ends every "
        "process (default: %(default)g)",
    )


def join(args, command: str) -> ProcessGroup | None:
    """Join the other processes the flags and the environment name (None for one process),
    after a line on stderr saying what this process waits for. Call it before anything touches
    JAX devices."""
    group = process_group(args.coordinator, args.num_processes, args.process_id, os.environ)
    if group is None:
        return None
    from hps.io.processes import initialize, waiting_notice

    notice = waiting_notice(group.coordinator, group.num_processes, group.process_id, args.timeout)
    print(f"hps {command}: {notice} ({', '.join(dict.fromkeys(group.sources))})", file=sys.stderr, flush=True)
    initialize(
        group.coordinator,
        group.num_processes,
        group.process_id,
        timeout_s=args.timeout,
        shutdown_s=max(SHUTDOWN_S, args.timeout),
        on_timeout=functools.partial(give_up, command),
    )
    import jax

    print(
        f"hps {command}: process {group.process_id} of {group.num_processes} joined ({jax.device_count()} devices "
        f"in all); a process silent for {args.timeout:g} s ends every process",
        file=sys.stderr,
        flush=True,
    )
    return group


def peer_lost(group: ProcessGroup, error: BaseException) -> HpsError:
    """The error a process reports when a collective with the others fails: a peer stopped."""
    text = str(error).strip()
    cause = text.splitlines()[0] if text else type(error).__name__
    return HpsError(
        f"{group.describe()}: a collective with the other processes failed; a peer process stopped or "
        f"failed (see its output): {cause}"
    )
