"""`hps collective`: one All-Reduce on a multi-dimensional network under a scheduling policy,
the topology suite (`--suite`), or a data-parallel iteration (`--iteration WORKLOAD`)."""

from __future__ import annotations

import math
import re

from hps.cli.common import figure_path, float_range, print_json, workload_arg
from hps.config.limits import MAX_BATCH_PER_NPU, MAX_CHUNKS
from hps.config.loaders import load_network
from hps.config.paths import TOPOLOGIES, resolve_topology
from hps.config.ranges import check_in_range
from hps.errors import ConfigError
from hps.report.collective import format_iteration, format_suite
from hps.report.tables import format_table, require_finite

POLICY_CHOICES = ("baseline", "themis", "roundrobin", "best-fixed", "learned")
_UNITS = {"": 1, "B": 1, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "KB": 1e3, "MB": 1e6, "GB": 1e9}


def parse_size(text: str) -> float:
    """'1073741824', '1GiB', '256 MiB', '1e9' -> bytes."""
    match = re.fullmatch(r"\s*([0-9.eE+-]+)\s*([A-Za-z]*)\s*", text)
    unit = match.group(2).upper() if match else None
    try:
        value = float(match.group(1)) * _UNITS[unit] if match else None
    except (KeyError, ValueError):
        value = None
    if value is None or not value > 0:
        raise ConfigError("--size", "size", f"must be a positive size like 1GiB or 1073741824, got {text!r}")
    if value != int(value):
        raise ConfigError("--size", "size", f"must be a whole number of bytes, got {text!r} ({value:g} bytes)")
    return check_in_range(value, "collective_bytes", "--size", "size")


def register(subparsers) -> None:
    parser = subparsers.add_parser("collective", help="simulate an All-Reduce on a multi-dimensional network")
    parser.add_argument("--network", default="3d-switch-8x8x8", help="network TOML file or shipped name")
    parser.add_argument("--size", default="1GiB", help="All-Reduce size in bytes (suffixes KiB, MiB, GiB)")
    parser.add_argument("--chunks", type=int, default=64, help=f"All-Reduce chunks, 1 to {MAX_CHUNKS:,} (default: 64)")
    parser.add_argument("--policy", default="themis", choices=POLICY_CHOICES)
    parser.add_argument("--intra", default="scf", choices=("fifo", "scf"), help="intra-dimension discipline")
    parser.add_argument("--checkpoint", help="trained collective policy (for --policy learned)")
    parser.add_argument(
        "--plot", metavar="FILE.png", help="per-dimension Gantt chart beside the baseline's (.png, .pdf or .svg)"
    )
    parser.add_argument("--suite", action="store_true", help="every policy over topologies/networks/")
    parser.add_argument("--iteration", metavar="WORKLOAD", help="data-parallel iteration time, baseline vs the policy")
    parser.add_argument("--catalog", default="cloud-2024", help="for --iteration: catalogue of the compute type")
    parser.add_argument("--resource", default="a100", help="for --iteration: resource type that computes")
    parser.add_argument(
        "--batch-per-npu",
        type=float_range(1, MAX_BATCH_PER_NPU, "samples per NPU per iteration"),
        default=32.0,
        help=f"for --iteration: samples per NPU, 1 to {MAX_BATCH_PER_NPU:g} (default: %(default)s)",
    )
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(run=run)


def _plot(path, network, size, chunks, policy, intra, result) -> None:
    from hps.report.gantt import save_gantt  # matplotlib: only when a chart is asked for
    from hps.studies import collectives as studies

    panels = [(f"{policy} + {intra}", result)]
    if policy != "baseline":
        baseline = studies.single_allreduce(network, size, chunks, "baseline", False)[1]
        panels.insert(0, ("baseline + fifo", baseline))
    save_gantt(path, network, panels, size)


def _iteration(network, args) -> dict:
    if not (math.isfinite(args.batch_per_npu) and args.batch_per_npu > 0):
        raise ConfigError("--batch-per-npu", "batch_per_npu", f"must be a positive number, got {args.batch_per_npu}")
    check_in_range(args.batch_per_npu, "batch_per_npu", "--batch-per-npu", "batch_per_npu")
    from hps.studies import collectives as studies

    workload = workload_arg(args.iteration, flag="--iteration")
    resource = studies.compute_resource(args.catalog, args.resource)
    return studies.iteration(
        network,
        workload,
        resource,
        batch_per_npu=args.batch_per_npu,
        chunks=min(args.chunks, 16),
        policy=args.policy,
        dense_only=True,
    )


def run(args) -> int:
    from hps.studies import collectives as studies

    size = parse_size(args.size)
    if not 1 <= args.chunks <= MAX_CHUNKS:
        raise ConfigError("--chunks", "chunks", f"must be between 1 and {MAX_CHUNKS}, got {args.chunks}")
    if size < args.chunks and not args.iteration:
        raise ConfigError(
            "--size", "size", f"{size:,.0f} bytes cannot fill {args.chunks} chunks; give at least one byte per chunk"
        )
    plot = figure_path(args.plot)
    if args.policy == "learned" and not args.checkpoint:
        raise ConfigError(
            "--checkpoint", "checkpoint", "--policy learned needs --checkpoint DIR (hps train --kind collective)"
        )
    if args.policy == "learned" and (args.suite or args.iteration):
        raise ConfigError(
            "--policy", "policy", "learned orders are available for one collective, not --suite or --iteration"
        )
    if args.suite:
        payload = studies.suite(sorted(TOPOLOGIES.glob("networks/*.toml")), size, args.chunks)
        require_finite(payload, "the suite's result")
        print_json(payload) if args.json else print(format_suite(payload))
        return 0
    network = load_network(resolve_topology(args.network, "networks", "--network"))
    if args.iteration:
        payload = require_finite(_iteration(network, args), "the iteration's result")
        print_json(payload) if args.json else print(format_iteration(payload))
        return 0
    orders = None
    if args.policy == "learned":
        from hps.collective.agent.checkpoint import checkpoint_orders

        orders = checkpoint_orders(args.checkpoint, network, size, args.chunks)
    payload, result = studies.single_allreduce(
        network, size, args.chunks, args.policy, args.intra == "scf", orders=orders
    )
    require_finite(payload, "the All-Reduce's result")
    if plot:
        _plot(plot, network, size, args.chunks, args.policy, args.intra, result)
    if args.json:
        print_json(payload)
        return 0
    rows = [
        [f"dim {d + 1}", x.size, x.bandwidth / 2**30, busy, busy / payload["time"] if payload["time"] > 0 else 0.0]
        for d, (x, busy) in enumerate(zip(network.dimensions, payload["busy"]))
    ]
    print(f"{network.name}: All-Reduce of {size:,.0f} bytes in {args.chunks} chunks, {args.policy} + {args.intra}")
    print(format_table(["dimension", "size", "GiB_per_s", "busy_s", "busy_share"], rows))
    print(
        f"\ntime {payload['time']:.6g} s   ideal {payload['ideal_time']:.6g} s   "
        f"utilization {payload['utilization']:.1%}"
    )
    if args.plot:
        print(f"wrote {args.plot}")
    return 0
