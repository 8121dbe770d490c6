"""Arguments and input resolution shared by several commands."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

from hps.config.files import atomic_write_text, check_figure_path, check_output_path
from hps.config.inputs import require_regular_file
from hps.config.loaders import load_catalog
from hps.config.paths import resolve_topology
from hps.config.ranges import RANGES, check_workload
from hps.config.types import STATE_SHARDINGS, Job, Workload
from hps.config.validation import printable
from hps.errors import ConfigError
from hps.workloads import ZOO, resolve_workload

DEFAULT_CATALOG = "cloud-2024"

SEED_MAX = 2**32 - 1
"""Seeds are 0 to 2^32 - 1: what numpy's and JAX's generators take without overflow."""

ECHO_LIMIT = 60
"""The most characters of a value the user gave that an error shows (`echoed`)."""


def echoed(text: str, quote: bool = True) -> str:
    """`text` as an error shows it: control characters escaped (`printable`), in quotes, and
    past ECHO_LIMIT characters cut, with its length: 'xxxx...' (100,000 characters)."""
    shown = printable(str(text))
    cut = len(shown) > ECHO_LIMIT
    if cut:
        shown = shown[: ECHO_LIMIT - 3] + "..."
    shown = f"'{shown}'" if quote else shown
    return f"{shown} ({len(text):,} characters)" if cut else shown


def _number_text(text: str) -> float:
    """The number `text` writes (64, 1e6, 0.5); nan where it writes none."""
    try:
        return float(text)
    except ValueError:
        return math.nan


def int_range(low: int | None, high: int, why: str = ""):
    """An argparse type: a whole number (64, or 1e6) from `low` to `high`, inclusive (low None:
    the command checks its least value itself). Past them argparse exits 2 naming the flag, before
    any work or output; `why` says why the upper end is where it is."""

    def parse(text: str) -> int:
        value = _number_text(text)
        if not math.isfinite(value) or value != int(value):
            raise argparse.ArgumentTypeError(f"must be a whole number, got {echoed(text)}")
        if low is not None and value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low:,}, got {text}")
        if value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high:,}{f' ({why})' if why else ''}, got {text}")
        return int(value)

    return parse


def float_range(low: float, high: float, why: str = ""):
    """An argparse type: a finite number from `low` to `high`, inclusive; past them argparse exits 2
    naming the flag. `why` says why the ends are where they are."""

    def parse(text: str) -> float:
        value = _number_text(text)
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {echoed(text)}")
        if not low <= value <= high:
            reason = f" ({why})" if why else ""
            raise argparse.ArgumentTypeError(f"must be between {low:g} and {high:g}{reason}, got {text}")
        return value

    return parse


def add_seed_arg(parser: argparse.ArgumentParser, default: int | None = 0, help: str | None = None) -> None:
    """--seed, a whole number from 0 to SEED_MAX."""
    parser.add_argument(
        "--seed", type=int_range(0, SEED_MAX), default=default, help=help or "random seed, 0 to 2^32 - 1"
    )


def add_instance_args(
    parser: argparse.ArgumentParser, *, workload_required: bool = True, pipeline: bool = True
) -> None:
    """--catalog, --workload and the job flags (defaults: the workload's own job defaults);
    pipeline: also --micro-batches and --state-sharding (`hps execute` has its own
    --micro-batches, the executor's split of each step)."""
    parser.add_argument(
        "--catalog", default=DEFAULT_CATALOG, help="catalogue TOML file or shipped name (default: %(default)s)"
    )
    parser.add_argument(
        "--workload", required=workload_required, help="workload TOML file or zoo name (see `hps workload list`)"
    )
    parser.add_argument("--batch", type=float, help="global batch B, samples per iteration (default: the workload's)")
    parser.add_argument("--throughput", type=float, help="throughput floor R, samples/s (default: the workload's)")
    parser.add_argument("--samples", type=float, help="samples to train N (default: the workload's)")
    parser.add_argument(
        "--collective", choices=("themis", "baseline"), default="themis", help="stage All-Reduce policy"
    )
    parser.add_argument("--chunks", type=int, default=64, help="All-Reduce chunks (default: %(default)s)")
    if pipeline:
        add_pipeline_args(parser)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_set_arg(parser)


def add_pipeline_args(parser: argparse.ArgumentParser) -> None:
    """--micro-batches M|inf and --state-sharding none|auto, the general model's job fields."""
    parser.add_argument(
        "--micro-batches",
        dest="job_micro_batches",
        type=_micro_batches,
        metavar="M|inf",
        help="micro-batches per iteration, whose pipeline bubble is 1 + (stages - 1)/M; inf: none "
        "(default: the workload's, else inf)",
    )
    parser.add_argument(
        "--state-sharding",
        dest="job_state_sharding",
        choices=STATE_SHARDINGS,
        help="auto: a stage may shard its parameter and optimizer state over its replicas "
        "(default: the workload's, else none)",
    )


def _micro_batches(text: str) -> float:
    """--micro-batches M|inf as a float (argparse reports a bad value with the flag)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value > 0 and (math.isinf(value) or value == int(value))):
        raise argparse.ArgumentTypeError(f"must be a positive integer or inf, got {echoed(text)}")
    if not RANGES["micro_batches"].contains(value):
        raise argparse.ArgumentTypeError(f"must be {RANGES['micro_batches'].text()}, got {echoed(text)}")
    return value


def add_set_arg(parser: argparse.ArgumentParser) -> None:
    """--set NAME=VALUE (repeatable): zoo workload hyperparameter overrides, read by `parse_set`."""
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a zoo workload hyperparameter (repeatable); VALUE an integer, a number or a "
        "comma-separated list of integers, e.g. --set rows=10000 --set hidden=64,32",
    )


def parse_set(items: list[str]) -> dict[str, object]:
    """["rows=1e4", "hidden=64,32"] -> {"rows": 10000.0, "hidden": (64, 32)}; ConfigError names --set."""
    overrides: dict[str, object] = {}
    for item in items:
        name, sep, text = (part.strip() for part in item.partition("="))
        if not sep or not name:
            raise ConfigError("--set", echoed(item, quote=False), "expected NAME=VALUE, e.g. --set hidden=64,32")
        if not text:
            raise ConfigError(
                "--set",
                echoed(name, quote=False),
                f"the value is empty in {echoed(item)}; give NAME=VALUE, e.g. --set hidden=64,32",
            )
        if name in overrides:
            raise ConfigError("--set", echoed(name, quote=False), "given twice")
        overrides[name] = _parse_set_value(name, text)
    return overrides


def _parse_set_value(name: str, text: str) -> object:
    """An integer, else a float, else (with commas) a tuple of integers ("16," is a tuple of one;
    an empty entry inside the list is refused)."""
    try:
        if "," in text:
            parts = [part.strip() for part in text.removesuffix(",").split(",")]  # "16,": a list of one
            if not all(parts):
                where = f"entry {parts.index('') + 1} of the list {echoed(text)}"
                raise ConfigError(
                    "--set", echoed(name, quote=False), f"{where} is empty; give integers separated by commas"
                )
            return tuple(int(part) for part in parts)
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)  # a comma list with a non-integer fails here too
    except ValueError:
        raise ConfigError(
            "--set",
            echoed(name, quote=False),
            f"must be an integer, a number or a comma-separated list of integers, got {echoed(text)}",
        ) from None


def resolve_instance(args):
    """(workload, catalog, job) from parsed args; ConfigError names the flag that is missing."""
    workload = workload_arg(args.workload, parse_set(args.overrides))
    catalog = load_catalog(resolve_topology(args.catalog, "catalogs", "--catalog"))
    note = unused_measured_times(workload, catalog)
    if note:
        print(f"hps {args.command}: note: {note}", file=sys.stderr)
    return workload, catalog, resolve_job(args, workload)


def unused_measured_times(workload: Workload, catalog) -> str | None:
    """A sentence naming the resource types the workload has measured times for that the
    catalogue lacks (those times take no part in any figure), or None when every one is used."""
    unused = sorted({name for layer in workload.layers for name in layer.measured_time} - set(catalog.names))
    if not unused:
        return None
    return (
        f"workload {workload.name!r} has measured times for {', '.join(map(repr, unused))}, which catalogue "
        f"{catalog.name!r} lacks (it has {', '.join(catalog.names)}); they are not used"
    )


def workload_arg(spec: str, overrides: dict[str, object] | None = None, flag: str = "--workload") -> Workload:
    """The workload a command-line `spec` names: a TOML file, else a zoo entry built with
    `overrides` (--set). ConfigError naming `flag` for a missing file or an unknown name."""
    if not _is_file(spec) and spec not in ZOO:
        if os.path.lexists(spec):
            require_regular_file(spec, flag, "workload TOML file")
        if spec.endswith(".toml") or os.sep in spec:
            raise ConfigError(flag, "", f"no such workload file {echoed(spec)}")
        raise ConfigError(
            flag, "", f"unknown workload {echoed(spec)}; give a TOML file or a zoo name: {', '.join(ZOO)}"
        )
    workload = resolve_workload(spec, overrides, source="--set")
    if not _is_file(spec):  # a zoo entry: its hyperparameters (--set) set the layers' numbers
        check_workload(workload, "--set" if overrides else flag)
    return workload


def _is_file(spec: str) -> bool:
    """Whether `spec` names a file; False for a path the system refuses (too long, a NUL byte)."""
    try:
        return Path(spec).is_file()
    except (OSError, ValueError):
        return False


def resolve_job(args, workload: Workload) -> Job:
    """The job of the flags, the workload's defaults filling those not given; ConfigError names
    the flag of a bad value (each Job field has the flag of its name)."""
    from hps.config.validation import validate_job

    defaults = workload.defaults
    values = {}
    for name in ("batch", "throughput", "samples"):
        value = getattr(args, name)
        if value is None:
            if defaults is None:
                raise ConfigError(f"--{name}", name, f"workload {workload.name!r} has no default; give --{name}")
            value = getattr(defaults, name)
        values[name] = value
    pipeline = {
        "micro_batches": _flag_or_default(args, defaults, "micro_batches", math.inf),
        "state_sharding": _flag_or_default(args, defaults, "state_sharding", "none"),
    }
    job = Job(**values, collective=args.collective, chunks=args.chunks, **pipeline)
    try:
        validate_job(job, source="command line")
    except ConfigError as error:
        raise ConfigError(f"--{error.field.replace('_', '-')}", error.field, error.problem) from None
    return job


def _flag_or_default(args, defaults, name: str, fallback):
    """The value of --micro-batches / --state-sharding (dest job_NAME) if given, else the
    workload's default, else `fallback`."""
    value = getattr(args, f"job_{name}", None)
    if value is not None:
        return value
    return fallback if defaults is None else getattr(defaults, name)


def to_json(payload, where: str = "the JSON output") -> str:
    """The JSON text of `payload`; NonFiniteResult naming the figure when a number in it is inf
    or NaN (infeasible figures are null, not inf)."""
    from hps.report.tables import require_finite

    return json.dumps(require_finite(payload, where), indent=2, allow_nan=False)


def print_json(payload) -> None:
    print(to_json(payload))


def write_json(path, payload) -> None:
    """The JSON document written atomically (a temporary file, then a rename)."""
    atomic_write_text(path, to_json(payload, str(path)) + "\n")


def output_path(path: str | None, flag: str = "--out"):
    """`path` checked for writing before the command's work starts (None stays None): what
    `check_output_path` checks, then a file created and removed in its folder (`probe_folder`)."""
    if path is None:
        return None
    checked = check_output_path(path, flag)
    probe_folder(checked, flag)
    return checked


def probe_folder(path: Path, flag: str) -> None:
    """ConfigError naming `flag` unless a file can be created in the folder of `path` (or the
    nearest folder above it that exists, where the write creates the rest). Root passes every
    `os.access` check, so the folder is tried: a read-only mount, sysfs or an immutable folder
    fails here, before the work, not at the end. A path written into rather than replaced (a
    device, a FIFO, an open descriptor such as /dev/stdout) is not tried."""
    from hps.config.files import resolve_output  # what `atomic_write` decides: replace or write into
    from hps.errors import CannotWrite
    from hps.io.runfolder.preflight import probe

    target, into = resolve_output(path, flag)
    if into is not None:
        return
    folder = Path(target).parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        return  # check_output_path has named what is in the way
    try:
        probe(folder)
    except CannotWrite as error:
        raise ConfigError(flag, "", f"cannot write {os.fspath(path)}: {error}") from None


def figure_path(path: str | None, flag: str = "--plot"):
    """`output_path` for a figure, whose suffix must name a known format (.png, .pdf, .svg)."""
    return None if path is None else check_figure_path(path, flag)


def instance_document(args, job: Job) -> dict:
    """The instance flags of a command as a plan file records them, so `hps execute PLAN.json`
    rebuilds the same workload, catalogue and job."""
    return {
        "workload": args.workload,
        "catalog": args.catalog,
        "batch": job.batch,
        "throughput": job.throughput,
        "samples": job.samples,
        "collective": job.collective,
        "chunks": job.chunks,
        "micro_batches": job.micro_batches if math.isfinite(job.micro_batches) else "inf",
        "state_sharding": job.state_sharding,
        "overrides": list(args.overrides),
    }
