"""`hps profile`: measure each layer's time per sample, and its forward and backward time per
micro-batch on one device, on each resource type's device pool, and write them into the workload
TOML (`[layer.measured_time_s]` and `[[layer.measured]]`), so the cost models plan with measured
numbers."""

from __future__ import annotations

import sys

from hps.cli.common import (
    add_instance_args,
    add_seed_arg,
    echoed,
    int_range,
    output_path,
    parse_set,
    print_json,
    resolve_instance,
)
from hps.cli.execute import add_device_args
from hps.config.limits import MAX_PROFILE_REPEATS
from hps.config.loaders import write_workload
from hps.errors import ConfigError


def register(subparsers) -> None:
    parser = subparsers.add_parser("profile", help="measure per-layer times per device pool into a workload TOML")
    add_instance_args(parser)
    add_device_args(parser)
    parser.add_argument(
        "--types", help="comma-separated resource types to profile (default: those --devices names, else all)"
    )
    parser.add_argument(
        "--micro-batch",
        type=int,
        help="samples per measured micro-batch over a type's whole pool, each device running micro-batch / "
        "pool size of them (default: batch / 2)",
    )
    parser.add_argument(
        "--sizes",
        help="comma-separated further micro-batch sizes (samples over a type's whole pool) to time every layer "
        "at, each written as its own [[layer.measured]] entry; the parallel-plan model interpolates between "
        "measured sizes and uses its roofline outside them",
    )
    parser.add_argument(
        "--tp",
        help="comma-separated further tensor-parallel degrees to time every layer at (besides 1), each pool "
        "running as pool size / t replicas of t-way groups; written as [[layer.measured]] entries with that tp",
    )
    parser.add_argument(
        "--repeats",
        type=int_range(1, MAX_PROFILE_REPEATS),
        default=3,
        help="measurements per layer; the median is kept (default: %(default)s)",
    )
    add_seed_arg(parser)
    parser.add_argument("--out", help="workload TOML to write (default: NAME-measured.toml)")
    parser.set_defaults(run=run)


def parse_sizes(text: str | None, flag: str = "--sizes") -> list[int]:
    """The positive integers of a list flag ("8,32,128"), ascending and distinct; [] for None."""
    if text is None:
        return []
    field = flag.removeprefix("--")
    sizes = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) < 1:
            raise ConfigError(flag, field, f"must be positive integers, got {echoed(part)}")
        sizes.append(int(part))
    if not sizes:
        raise ConfigError(flag, field, "names no size" if flag == "--sizes" else "names no degree")
    return sorted(set(sizes))


def check_split(size: int, tp: int, devices: int, name: str, flag: str) -> None:
    """ConfigError unless `devices` split into t-way groups and `size` samples over those groups."""
    if devices % tp:
        raise ConfigError("--tp", "tp", f"the {devices} devices of {name!r} do not split into groups of {tp}")
    replicas = devices // tp
    if size < replicas or size % replicas:
        over = f"the {replicas} groups of {tp} devices" if tp > 1 else f"the {devices} devices"
        raise ConfigError(flag, "micro_batch", f"{size} samples do not split over {over} of {name!r}")


def _batch_source(args, job) -> str:
    """Where the job's batch came from, in words: --batch, else the workload file's
    defaults.batch, else the zoo workload's default."""
    from pathlib import Path

    if args.batch is not None:
        return f"--batch {job.batch:,g}"
    if Path(args.workload).is_file():
        return f"the batch of {job.batch:,g} samples ({args.workload}: defaults.batch)"
    return f"the batch of {job.batch:,g} samples (the default of zoo workload {args.workload!r}; --batch sets another)"


def run(args) -> int:
    import jax
    from tqdm import tqdm

    from hps.executor.devices import device_pools, parse_device_map
    from hps.executor.profile import measurements_per_pool, profile_passes, with_profiles
    from hps.models.registry import build_model
    from hps.report.execution import format_profile

    if args.repeats < 1:
        raise ConfigError("--repeats", "repeats", f"must be at least 1, got {args.repeats}")
    if args.micro_batch is not None and args.micro_batch < 1:
        raise ConfigError("--micro-batch", "micro_batch", f"must be at least 1, got {args.micro_batch}")
    workload, catalog, job = resolve_instance(args)
    if args.micro_batch is not None and args.micro_batch > job.batch:
        above = f"{args.micro_batch:,} samples is above {_batch_source(args, job)}"
        raise ConfigError("--micro-batch", "micro_batch", f"{above}; a micro-batch is a part of the batch")
    out = output_path(args.out or f"{workload.name}-measured.toml")  # tried before any profiling
    model = build_model(workload.name, seed=args.seed, **parse_set(args.overrides))
    if args.types is not None:
        types = [t.strip() for t in args.types.split(",") if t.strip()]
        if not types:
            raise ConfigError(
                "--types", "types", f"names no resource type; the catalogue has {', '.join(catalog.names)}"
            )
    elif args.devices:
        types = list(parse_device_map(args.devices, catalog, len(jax.devices())))
    else:
        types = list(catalog.names)
    unknown = [t for t in types if t not in catalog.names]
    if unknown:
        raise ConfigError(
            "--types", echoed(",".join(unknown), quote=False), f"not in the catalogue ({', '.join(catalog.names)})"
        )
    pools = device_pools(catalog, types, args.devices)
    micro_batch = int(job.batch) // 2 if args.micro_batch is None else args.micro_batch
    sizes = [s for s in parse_sizes(args.sizes) if s != micro_batch] + [micro_batch]
    degrees = [t for t in parse_sizes(args.tp, "--tp") if t != 1] + [1]
    for size in sizes:
        for tp in degrees:
            for name, pool in pools.items():
                check_split(size, tp, len(pool), name, "--sizes" if size != micro_batch else "--micro-batch")
    total = len(types) * measurements_per_pool(len(workload.layers)) * len(sizes) * len(degrees)
    runs = {}
    with tqdm(total=total, desc="profile", unit="layer", file=sys.stderr, disable=args.json) as bar:
        step = lambda *_: bar.update()  # noqa: E731
        for size in sizes:
            for tp in degrees:
                runs[size, tp] = profile_passes(
                    model,
                    pools,
                    size,
                    repeats=args.repeats,
                    seed=args.seed,
                    progress=step,
                    tensor=tp,
                    micro_batches=max(1, round(job.batch / size)),
                )
                workload = with_profiles(workload, runs[size, tp])
    write_workload(workload, out)
    profiles = runs[micro_batch, 1]
    times = {name: p.per_sample for name, p in profiles.items()}
    entry = lambda p: {"tp": p.tp, "micro_batch": p.micro_batch, "forward_s": p.forward_s, "backward_s": p.backward_s}  # noqa: E731
    measured = {name: entry(p) for name, p in profiles.items()}
    every_size = {name: [entry(runs[key][name]) for key in runs] for name in profiles}
    if args.json:
        print_json(
            {
                "workload": workload.name,
                "out": str(out),
                "micro_batch": micro_batch,
                "seconds_per_sample": times,
                "measured": measured,
                "measured_by_micro_batch": every_size,
                "measured_call_s": {name: p.call_s for name, p in profiles.items()},
            }
        )
        return 0
    print(format_profile([layer.name for layer in workload.layers], times, every_size))
    calls = ", ".join(f"{name} {p.call_s * 1e3:.3f} ms" for name, p in profiles.items())
    print(f"a stage's fixed call cost per micro-batch (counted once per stage, not in the layer times): {calls}")
    print(f"wrote {out}: re-plan with measured times, e.g. hps search --workload {out} --catalog {args.catalog}")
    return 0
