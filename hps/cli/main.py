"""Entry point of the `hps` console script.

Exit status: 0 done, 2 an error hps names (one `hps CMD: error: ...` line), 128 + the signal's
number when SIGINT, SIGTERM or SIGHUP stopped it (130, 143, 129), and CLOSED_STDOUT_STATUS (141)
when standard output is a pipe whose reader has gone (`hps workload list | head -1`): the command
ends quietly, as a Unix tool killed by SIGPIPE does.
"""

from __future__ import annotations

import argparse
import errno
import os
import signal
import sys

from hps import __version__
from hps.errors import ConfigError, HpsError


def build_parser() -> argparse.ArgumentParser:
    from hps.cli import (
        bench,
        collective,
        evaluate,
        execute,
        export,
        launch,
        plan,
        profile,
        quickstart,
        run,
        search,
        sweep,
        train,
        workload,
    )

    parser = argparse.ArgumentParser(prog="hps", description="Plan and run training on heterogeneous hardware.")
    parser.add_argument("--version", action="version", version=f"hps {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    commands = (
        quickstart, run, search, sweep, evaluate, collective, train, plan, execute, launch, export, profile, workload,
        bench,
    )  # fmt: skip
    for module in commands:
        module.register(subparsers)
    return parser


MIN_COMPILE_SECONDS = 0.0
"""Compiles shorter than this (seconds) are not written to the persistent cache: 0 keeps every
one, the small programs a command compiles before its main one (catalogue tables, parameter
initialisation) included."""


def enable_compile_cache() -> None:
    """JAX's persistent compilation cache, so repeated commands skip XLA compiles.

    Directory: $JAX_COMPILATION_CACHE_DIR, else ~/.cache/hps/jax; HPS_COMPILE_CACHE=0 turns it off.
    Before JAX is imported this only sets the environment variables JAX reads when it is imported,
    so a command that never needs JAX (`hps workload list`) never imports it.
    """
    if os.environ.get("HPS_COMPILE_CACHE") == "0":
        return
    default = os.path.join(os.path.expanduser("~"), ".cache", "hps", "jax")
    directory = os.environ.get("JAX_COMPILATION_CACHE_DIR", default)
    if "jax" not in sys.modules:
        os.environ["JAX_COMPILATION_CACHE_DIR"] = directory
        os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = str(MIN_COMPILE_SECONDS)
        return
    import jax

    jax.config.update("jax_compilation_cache_dir", directory)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)


HOST_DEVICE_COMMANDS = ("execute", "profile", "quickstart", "run")
"""Commands that run stages on device pools: on a CPU they get HOST_DEVICES host devices."""
HOST_DEVICES = 8


def runs_device_pools(argv: list[str]) -> bool:
    """Whether the command `argv` runs stages on device pools (HOST_DEVICE_COMMANDS)."""
    return bool(argv) and argv[0] in HOST_DEVICE_COMMANDS


def use_host_devices(argv: list[str]) -> None:
    """Ask XLA for HOST_DEVICES CPU devices when the command runs stages on device pools, so
    `--devices cpu=0-3,v100=4-7` has devices to name on a machine with one CPU device. Only
    before JAX is imported and when XLA_FLAGS does not already set a count."""
    if not runs_device_pools(argv) or "jax" in sys.modules:
        return
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={HOST_DEVICES}".strip()


HUGE_PAGES_TUNABLE = "glibc.malloc.hugetlb=1"
"""glibc's allocator asks for transparent huge pages on the memory it maps (glibc ≥ 2.35). Host
devices that free and allocate buffers of tens of MB each micro-batch otherwise fault in every
4 KiB page of them again; HPS_HUGE_PAGES=0 turns it off."""


def exec_with_huge_pages(argv: list[str]) -> None:
    """Start the process again, with the interpreter arguments it was started with and
    HUGE_PAGES_TUNABLE added to GLIBC_TUNABLES (glibc reads it only at start-up), when the
    process is the `hps` script or `python -m hps.cli.main`, the command runs stages on device
    pools, glibc is ≥ 2.35 and JAX is not yet imported; otherwise return."""
    main_module = sys.modules.get("__main__")
    spec = getattr(main_module, "__spec__", None)
    if os.path.basename(sys.argv[0]) != "hps" and getattr(spec, "name", None) != "hps.cli.main":
        return
    if not runs_device_pools(argv) or "jax" in sys.modules:
        return
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    if os.environ.get("HPS_HUGE_PAGES") == "0" or "glibc.malloc.hugetlb" in tunables:
        return
    try:
        major, minor = (int(x) for x in os.confstr("CS_GNU_LIBC_VERSION").split()[1].split(".")[:2])
    except (ValueError, OSError, AttributeError, IndexError):  # not glibc, or a version it cannot read
        return
    if (major, minor) < (2, 35) or len(sys.orig_argv) < 2:
        return
    environ = {**os.environ, "GLIBC_TUNABLES": ":".join(filter(None, (tunables, HUGE_PAGES_TUNABLE)))}
    if sys.stdout is not None:
        sys.stdout.flush()
    # the interpreter arguments as given: the script or -m hps.cli.main, and any -X or -W
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], environ)


CLOSED_STDOUT_STATUS = 128 + signal.SIGPIPE
"""Exit status when standard output's reader has gone: 141, what a shell reports for a tool
that SIGPIPE ended. Python ignores SIGPIPE (a write gets EPIPE instead), and hps keeps it so,
since a default SIGPIPE would also end the process for a socket closed by a peer."""


def main(argv: list[str] | None = None) -> int:
    """Run the `hps` command `argv` (default: sys.argv[1:]) and return its exit status; the
    output buffered for standard output is flushed before, so a closed pipe is seen here."""
    try:
        try:
            return _run_command(argv)
        finally:
            if sys.stdout is not None:  # None when the command started with it closed
                sys.stdout.flush()
    except BrokenPipeError:
        return closed_stdout()


def closed_stdout() -> int:
    """CLOSED_STDOUT_STATUS, after pointing standard output at /dev/null so that the
    interpreter's last flush at exit has nowhere to fail (what it still buffers is dropped)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # a stdout without a descriptor (a test's capture)
        pass
    return CLOSED_STDOUT_STATUS


FIELD_FLAGS = {
    "method": "--method",
    "evaluations": "--evaluations",
    "seconds": "--seconds",
    "seed": "--seed",
    "clock": "--clock",
    "samples": "--samples",
    "replicas": "--replicas",
    "tensor": "--tensor",
    "micro_batches": "--micro-batches",
    "batch": "--batch",
    "workload": "--workload",
    "schedule": "--schedule",
    "stages": "--stages",
    "devices": "--devices",
    "chunks": "--chunks",
    "orders": "--orders",
    "policy": "--policy",
    "checkpoint": "--checkpoint",
    "coordinator": "--coordinator",
    "num_processes": "--num-processes",
    "process_id": "--process-id",
    "virtual_stages": "--virtual-stages",
}
"""The library's argument names a command-line flag sets."""


def as_flags(error: HpsError) -> HpsError:
    """`error` as the command line says it: a ConfigError naming a library argument names its flag."""
    if isinstance(error, ConfigError) and error.source in FIELD_FLAGS:
        return ConfigError(FIELD_FLAGS[error.source], error.field, error.problem)
    return error


WRITE_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS, errno.EIO)
"""Failed writes a command reports in one line (naming the file) instead of a traceback."""


def _run_command(argv: list[str] | None) -> int:
    """Run one command. SIGINT, SIGTERM and SIGHUP end it alike: its locks released and nothing
    half-written (`hps.io.runfolder.stop`), one line on stderr, exit status 128 + signum."""
    from hps.io.runfolder import stop

    if argv is None:  # the console script: the process is ours to start again
        exec_with_huge_pages(sys.argv[1:])
    argv = sys.argv[1:] if argv is None else list(argv)
    use_host_devices(argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = ["hps", *argv]
    enable_compile_cache()
    try:
        with stop.handling():
            return args.run(args)
    except HpsError as error:
        print(f"hps {args.command}: error: {as_flags(error)}", file=sys.stderr)
        return 2
    except MemoryError:  # an allocation no estimate foresaw: said in words, as a refused instance is
        print(f"hps {args.command}: error: out of memory; give a smaller instance or more memory", file=sys.stderr)
        return 2
    except OSError as error:
        if error.errno not in WRITE_ERRORS:
            raise
        where = f"{error.filename}: " if error.filename else ""
        print(f"hps {args.command}: error: {where}{error.strerror or error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as error:
        signum = getattr(error, "signum", signal.SIGINT)
        print(f"hps {args.command}: stopped by {signal.Signals(signum).name}", file=sys.stderr)
        return 128 + signum


if __name__ == "__main__":
    sys.exit(main())
