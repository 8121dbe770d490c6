"""`hps export PLAN.json --to megatron|maxtext|torchtitan|skypilot`: a plan file as the flags or
config file a training framework takes (docs/export.md)."""

from __future__ import annotations

TARGETS = ("megatron", "maxtext", "torchtitan", "skypilot")
"""hps.executor.export.TARGETS, repeated so that `hps --help` imports no export module."""
LAUNCHES = ("megatron", "torchtitan", "maxtext")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "export", help="write a plan file as Megatron-LM flags, a MaxText or torchtitan config, or a SkyPilot task"
    )
    parser.add_argument("plan", help="a parallel plan file (hps-plan/3 or /2), one type, t and d for every stage")
    parser.add_argument("--to", required=True, choices=TARGETS, dest="target", help="the framework to write for")
    parser.add_argument("--out", help="also write the text to this file")
    parser.add_argument("--json", action="store_true", help="print a JSON document: settings, devices, text")
    parser.add_argument(
        "--launch",
        choices=LAUNCHES,
        default="megatron",
        help="skypilot: the framework its run line launches (default: %(default)s)",
    )
    parser.set_defaults(run=run)


def run(args) -> int:
    from hps.cli.common import output_path, print_json
    from hps.cli.parallel import plan_file_data
    from hps.config.files import atomic_write_text
    from hps.executor.export import ExportOptions, decoder_shape, export_plan

    out = output_path(args.out)
    source = str(args.plan)
    plan, workload, catalog = plan_file_data(source)
    shape = decoder_shape(plan.workload, source=source)
    options = ExportOptions(launch=args.launch)
    result = export_plan(plan, workload, catalog, shape, args.target, source=source, options=options)
    if out is not None:
        atomic_write_text(out, result.text)
    if args.json:
        print_json({"plan": source, **result.document(), "out": None if out is None else str(out)})
    else:
        print(result.text, end="")
    return 0
