"""`hps evaluate`: one schedule through the placement cost model (SPEC contract)."""

from __future__ import annotations

from hps.cli.common import add_instance_args, print_json, resolve_instance
from hps.config.loaders import parse_schedule
from hps.report.placement import format_report, schedule_report


def register(subparsers) -> None:
    parser = subparsers.add_parser("evaluate", help="evaluate one schedule (type per layer)")
    add_instance_args(parser)
    parser.add_argument("--schedule", required=True, help="comma-separated resource type per layer")
    parser.set_defaults(run=run)


def run(args) -> int:
    workload, catalog, job = resolve_instance(args)
    schedule = parse_schedule(args.schedule, catalog, len(workload.layers))
    report = schedule_report(workload, catalog, job, schedule)
    if args.json:
        print_json(report)
    else:
        print(f"{workload.name} on {catalog.name}: batch {job.batch:g}, floor {job.throughput:g} samples/s")
        print(format_report(report, workload))
    return 0
