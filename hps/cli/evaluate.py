"""`hps evaluate`: one schedule, or one explicit pipeline plan, through the placement cost model
(docs/placement-model.md)."""

from __future__ import annotations

from hps.cli.common import add_instance_args, print_json, resolve_instance
from hps.cli.parallel import add_clock_arg, evaluate_plan_file


def register(subparsers) -> None:
    parser = subparsers.add_parser("evaluate", help="evaluate one schedule (type per layer) or pipeline plan")
    add_instance_args(parser, workload_required=False)
    plan = parser.add_mutually_exclusive_group(required=True)
    plan.add_argument(
        "--plan", help="a parallel plan file (hps-plan/3 or /2: stages with tensor- and data-parallel degrees)"
    )
    plan.add_argument("--schedule", help="comma-separated resource type per layer")
    plan.add_argument(
        "--stages",
        help="an explicit plan FIRST-LAST:TYPE,... (layers from 0, inclusive, covering every layer in "
        "order; adjacent stages may share a type), e.g. 0-3:cpu,4-9:a100,10-15:a100",
    )
    parser.add_argument(
        "--sensitivity",
        action="store_true",
        help="also d(cost)/d(figure) and elasticity of every catalogue and network figure "
        "(jax.grad, provisioning fixed)",
    )
    add_clock_arg(parser)
    defaults = {dest: parser.get_default(dest) for dest, _, _ in NOT_BESIDE_PLAN}
    parser.set_defaults(run=run, defaults_beside_plan=defaults)


NOT_BESIDE_PLAN = (
    ("workload", "--workload", "the plan file names its workload"),
    ("overrides", "--set", "the plan file names its workload"),
    ("catalog", "--catalog", "the plan file names its catalogue"),
    ("batch", "--batch", "the plan file's job sets it"),
    ("throughput", "--throughput", "the plan file's job sets it"),
    ("samples", "--samples", "the plan file's job sets it"),
    ("job_micro_batches", "--micro-batches", "the plan file's job sets its micro-batch"),
    ("job_state_sharding", "--state-sharding", "the plan file's job sets its ZeRO level"),
    ("collective", "--collective", "the plan file's job sets it"),
    ("chunks", "--chunks", "the plan file's job sets it"),
    ("sensitivity", "--sensitivity", "it is the schedule model's (give --schedule or --stages)"),
)
"""(dest, flag, why) of the flags `hps evaluate --plan FILE` does not read: the file sets what
they set. Beside --plan it reads --clock and --json only."""


def refuse_flags_beside_plan(args) -> None:
    """ConfigError naming the first flag of NOT_BESIDE_PLAN given a value other than its default
    beside --plan (a flag given its default is not told apart from one not given)."""
    from hps.errors import ConfigError

    defaults = getattr(args, "defaults_beside_plan", {})
    for dest, flag, why in NOT_BESIDE_PLAN:
        if dest in defaults and getattr(args, dest, None) != defaults[dest]:
            raise ConfigError(flag, "", f"does not apply beside --plan: {why}")


def run(args) -> int:
    from hps.config.loaders import parse_schedule
    from hps.costmodel.schedule.plan import parse_stages, schedule_plan
    from hps.costmodel.schedule.provisioning import build_instance
    from hps.report.placement import format_report, plan_report

    if args.plan is not None:
        refuse_flags_beside_plan(args)
        return evaluate_plan_file(args)
    if args.workload is None:
        from hps.errors import ConfigError

        raise ConfigError("--workload", "", "required with --schedule or --stages")
    workload, catalog, job = resolve_instance(args)
    if args.stages is not None:
        plan = parse_stages(args.stages, catalog, len(workload.layers), source="--stages")
    else:
        plan = schedule_plan(parse_schedule(args.schedule, catalog, len(workload.layers), source="--schedule"))
    report = plan_report(build_instance(workload, catalog, job), plan)
    if args.sensitivity:
        report["sensitivity"] = _sensitivity(args, workload, catalog, job, plan, report)
    if args.json:
        print_json(report)
        return 0
    print(f"{workload.name} on {catalog.name}: batch {job.batch:g}, floor {job.throughput:g} samples/s")
    print(format_report(report, workload))
    if args.sensitivity:
        from hps.report.sensitivity import format_sensitivity

        print()
        if report["sensitivity"] is not None:
            print(format_sensitivity(report["sensitivity"]))
        else:
            print("sensitivity: not defined for an infeasible plan (it has no cost)")
    return 0


def _sensitivity(args, workload, catalog, job, plan, report):
    """The jax.grad sensitivity of a feasible HeterPS schedule's cost (null when infeasible: it
    has no cost); ConfigError for what the jnp model does not express, InstanceTooLarge naming
    the estimate when its arrays would not fit memory (checked before they are allocated)."""
    from hps.contract.memory import jnp_model_bytes, refuse_past_memory
    from hps.costmodel.schedule import build_params
    from hps.costmodel.schedule.plan import schedule_plan
    from hps.costmodel.schedule.sensitivity import sensitivity
    from hps.errors import ConfigError

    schedule = [t for first, last, t in plan for _ in range(first, last + 1)]
    if plan != schedule_plan(schedule) or not job.schedule_model:
        problem = "needs a schedule (no adjacent stages of one type), --micro-batches inf and --state-sharding none"
        raise ConfigError("--sensitivity", "sensitivity", problem)
    if not report["feasible"]:
        return None
    layers, types, units = len(workload.layers), len(catalog.resources), max(r.max_units for r in catalog.resources)
    what = f"--sensitivity's jnp placement model of {layers} layers x {types} types x {units} units per type"
    refuse_past_memory(what, jnp_model_bytes(layers, types, units))
    return sensitivity(build_params(workload, catalog, job), catalog, schedule)
