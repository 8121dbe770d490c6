"""`hps evaluate`: one schedule through the placement cost model (docs/placement-model.md)."""

from __future__ import annotations

from hps.cli.common import add_instance_args, print_json, resolve_instance


def register(subparsers) -> None:
    parser = subparsers.add_parser("evaluate", help="evaluate one schedule (type per layer)")
    add_instance_args(parser)
    parser.add_argument("--schedule", required=True, help="comma-separated resource type per layer")
    parser.add_argument(
        "--sensitivity",
        action="store_true",
        help="also d(cost)/d(figure) and elasticity of every catalogue and network figure "
        "(jax.grad, provisioning fixed)",
    )
    parser.set_defaults(run=run)


def run(args) -> int:
    from hps.config.loaders import parse_schedule
    from hps.placement.model import build_params
    from hps.placement.model.sensitivity import sensitivity
    from hps.report.placement import format_report, schedule_report
    from hps.report.sensitivity import format_sensitivity

    workload, catalog, job = resolve_instance(args)
    schedule = parse_schedule(args.schedule, catalog, len(workload.layers))
    report = schedule_report(workload, catalog, job, schedule)
    if args.sensitivity:  # null for an infeasible plan: it has no cost to differentiate
        params = build_params(workload, catalog, job)
        report["sensitivity"] = sensitivity(params, catalog, schedule) if report["feasible"] else None
    if args.json:
        print_json(report)
        return 0
    print(f"{workload.name} on {catalog.name}: batch {job.batch:g}, floor {job.throughput:g} samples/s")
    print(format_report(report, workload))
    if args.sensitivity:
        print()
        if report["sensitivity"] is not None:
            print(format_sensitivity(report["sensitivity"]))
        else:
            print("sensitivity: not defined for an infeasible plan (it has no cost)")
    return 0
