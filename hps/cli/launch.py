"""`hps launch --processes N [--devices-per-process K] -- COMMAND…`: run COMMAND as N local
processes of one multi-process run (docs/executor.md, "Across processes").

Each process's lines are printed with its index ("[1] …", standard error to standard error);
the launcher's own lines start "hps launch:". When one process fails the others are ended within
`hps.io.launcher.GRACE_S` seconds and the launcher exits with the failed one's status.
"""

from __future__ import annotations

import argparse
import sys
import threading

from hps.cli.common import int_range
from hps.config.limits import MAX_PROCESSES
from hps.errors import ConfigError

MAX_DEVICES_PER_PROCESS = 1024


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "launch",
        help="run a command as N local processes of one multi-process run (hps launch --processes 2 -- hps execute P)",
    )
    parser.add_argument("--processes", type=int_range(1, MAX_PROCESSES), required=True, help="processes to start")
    parser.add_argument(
        "--devices-per-process",
        type=int_range(1, MAX_DEVICES_PER_PROCESS),
        help="host (CPU) devices each process gets (XLA_FLAGS); default: the command's own",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command to run, after --")
    parser.set_defaults(run=run)


def run(args) -> int:
    from hps.io.launcher import launch

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise ConfigError("command", "", "give the command to launch after --, e.g. -- hps execute PLAN.json")
    lock = threading.Lock()

    def on_line(index: int, line: str, is_error: bool) -> None:
        with lock:
            stream = sys.stderr if is_error else sys.stdout
            print(f"[{index}] {line}", file=stream, flush=True)

    def on_notice(line: str) -> None:
        with lock:
            print(f"hps launch: {line}", file=sys.stderr, flush=True)

    return launch(command, args.processes, args.devices_per_process, on_line=on_line, on_notice=on_notice)
