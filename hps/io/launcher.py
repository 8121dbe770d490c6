"""A local launcher: N processes of one command on this machine, joined as one multi-process run
(`hps launch --processes N -- hps execute PLAN.json`).

Each child gets JAX's process variables (JAX_COORDINATOR_ADDRESS at a free port of 127.0.0.1,
JAX_NUM_PROCESSES, JAX_PROCESS_ID; `hps.io.cluster` reads them) and, with `devices`, XLA_FLAGS
asking for that many host (CPU) devices. Their output comes back line by line through a
callback. When a child exits with a non-zero status the launcher ends the others: SIGTERM, then
SIGKILL after GRACE_S, so every child is gone within GRACE_S + POLL_S of the first failure and
the kernel drops whatever locks they held. The launcher's status is the first failure's (128 +
the signal for a child a signal ended), else 0. Nothing here prints.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence

from hps.errors import ConfigError

GRACE_S = 5.0
"""Seconds a child has to end after SIGTERM before SIGKILL."""

POLL_S = 0.1
"""Seconds between looks at the children's statuses."""

DEVICE_COUNT_FLAG = "--xla_force_host_platform_device_count"


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port of `host` free at the time of asking."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def child_environ(
    base: Mapping[str, str], coordinator: str, processes: int, index: int, devices: int | None
) -> dict[str, str]:
    """The environment of child `index`: `base` with JAX's process variables, and XLA_FLAGS
    asking for `devices` host devices (any count `base` asked for replaced) when given."""
    environ = dict(base)
    environ.update(JAX_COORDINATOR_ADDRESS=coordinator, JAX_NUM_PROCESSES=str(processes), JAX_PROCESS_ID=str(index))
    if devices is not None:
        flags = re.sub(rf"{DEVICE_COUNT_FLAG}=\S*", "", environ.get("XLA_FLAGS", "")).split()
        environ["XLA_FLAGS"] = " ".join([*flags, f"{DEVICE_COUNT_FLAG}={devices}"])
    return environ


def child_command(command: Sequence[str]) -> list[str]:
    """`command` as a child runs it: a leading "hps" runs this interpreter's hps
    (`python -m hps.cli.main`), so the children run the launcher's own installation."""
    command = list(command)
    if command and command[0] == "hps":
        return [sys.executable, "-m", "hps.cli.main", *command[1:]]
    return command


def exit_status(returncode: int) -> int:
    """A child's return code as a shell reports it: 128 + N for a child signal N ended."""
    return 128 - returncode if returncode < 0 else returncode


def describe_status(returncode: int) -> str:
    if returncode < 0:
        return f"signal {signal.Signals(-returncode).name}"
    return f"status {returncode}"


def _stream(index: int, pipe, is_error: bool, on_line: Callable[[int, str, bool], None], said: dict) -> None:
    """Hand every line of `pipe` to on_line; keep the child's last error line in said[index]."""
    for line in iter(pipe.readline, ""):
        line = line.rstrip("\n")
        on_line(index, line, is_error)
        if is_error and "error" in line:
            said[index] = line
    pipe.close()


def stop(children: Sequence[subprocess.Popen], grace_s: float = GRACE_S) -> None:
    """End every child still running: SIGTERM, then SIGKILL for those alive after `grace_s`."""
    running = [child for child in children if child.poll() is None]
    for child in running:
        child.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for child in running:
        try:
            child.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def launch(
    command: Sequence[str],
    processes: int,
    devices: int | None,
    *,
    on_line: Callable[[int, str, bool], None],
    on_notice: Callable[[str], None],
    environ: Mapping[str, str] | None = None,
    grace_s: float = GRACE_S,
) -> int:
    """Run `processes` children of `command` (argv) joined through a free local coordinator
    port, `devices` host devices each (None: the command's own default). on_line(index, line,
    is_stderr) gets every line they write; on_notice(line) what the launcher itself has to say.
    Returns the first failing child's exit status (the others ended), else 0."""
    if not command:
        raise ConfigError("command", "", "give the command to launch after --, e.g. -- hps execute PLAN.json")
    argv = child_command(command)
    coordinator = f"127.0.0.1:{free_port()}"
    base = os.environ if environ is None else environ
    children: list[subprocess.Popen] = []
    readers: list[threading.Thread] = []
    said: dict[int, str] = {}  # each child's last error line
    try:
        for index in range(processes):
            try:
                child = subprocess.Popen(
                    argv,
                    env=child_environ(base, coordinator, processes, index, devices),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    bufsize=1,
                )
            except OSError as error:
                raise ConfigError("command", argv[0], f"cannot start it: {error.strerror or error}") from None
            children.append(child)
            for pipe, is_error in ((child.stdout, False), (child.stderr, True)):
                reader = threading.Thread(target=_stream, args=(index, pipe, is_error, on_line, said), daemon=True)
                reader.start()
                readers.append(reader)
        pids = ", ".join(str(child.pid) for child in children)
        on_notice(f"started {processes} processes, coordinator {coordinator}, pids {pids}")
        status = _watch(children, on_notice, grace_s, readers, said)
    finally:
        stop(children, grace_s)  # on any exit of the launcher, a stop by a signal included
        for reader in readers:
            reader.join(timeout=grace_s)
    return status


def _watch(
    children: Sequence[subprocess.Popen], on_notice: Callable[[str], None], grace_s: float, readers, said: dict
) -> int:
    """Wait for every child to end; at the first that fails, end the others, saying the failed
    child's last error line (`said`, once its two `readers`, two a child, have read it all).
    Returns the launcher's exit status."""
    while True:
        codes = [child.poll() for child in children]
        failed = next(((i, code) for i, code in enumerate(codes) if code not in (None, 0)), None)
        if failed is not None:
            index, code = failed
            others = sum(code is None for code in codes)
            ending = f"; stopping the other {others} (SIGTERM, SIGKILL after {grace_s:g} s)" if others else ""
            for reader in readers[2 * index : 2 * index + 2]:
                reader.join(timeout=grace_s)
            last = f" ({said[index]})" if index in said else ""
            on_notice(f"process {index} exited with {describe_status(code)}{last}{ending}")
            stop(children, grace_s)
            return exit_status(code)
        if all(code == 0 for code in codes):
            return 0
        time.sleep(POLL_S)
