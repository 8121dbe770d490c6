"""`hps workload list|export|derive`: the zoo, and layer tables of Flax models."""

from __future__ import annotations

import dataclasses
import sys

from hps.cli.common import add_set_arg, output_path, parse_set
from hps.config.loaders import workload_to_toml, write_workload
from hps.errors import ConfigError
from hps.report.tables import format_table
from hps.workloads import ZOO, build_workload, list_workloads, resolve_workload


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "workload", help="list the workload zoo, export one, or derive one from a Flax model"
    )
    actions = parser.add_subparsers(dest="action", required=True)
    actions.add_parser("list", help="list the zoo").set_defaults(run=run_list)
    export = actions.add_parser("export", help="write a zoo workload's layer table as TOML")
    export.add_argument("name")
    export.add_argument("--out", help="file to write (default: stdout)")
    add_set_arg(export)
    export.set_defaults(run=run_export)
    derive = actions.add_parser(
        "derive", help="derive a layer table from a Flax LayeredModel by XLA cost analysis of each layer"
    )
    derive.add_argument(
        "model",
        metavar="MODULE:FACTORY",
        help="a module (or .py file) and a callable in it returning a hps.models.LayeredModel, or a zoo "
        "workload with a Flax model (e.g. ctr-dnn-small); the module is imported, that is executed as "
        "Python with your permissions, so give only files you trust",
    )
    derive.add_argument("--batch", type=int, default=64, help="sample batch measured (default: %(default)s)")
    derive.add_argument("--name", help="workload name (default: the factory's or zoo workload's name)")
    derive.add_argument("--out", help="file to write (default: stdout)")
    add_set_arg(derive)
    derive.set_defaults(run=run_derive)


def run_list(args) -> int:
    rows = []
    for name, description in list_workloads():
        workload = build_workload(name)
        sparse_gib = sum(l.sparse_param_bytes for l in workload.layers) / 2**30
        rows.append([name, len(workload.layers), f"{sparse_gib:.3g}", description])
    print(format_table(["name", "layers", "tables_GiB", "description"], rows))
    return 0


def run_export(args) -> int:
    output_path(args.out)
    return _emit(resolve_workload(args.name, parse_set(args.overrides), source="--set"), args.out)


def run_derive(args) -> int:
    from hps.models.derive import derive_workload
    from hps.models.registry import model_from_spec

    output_path(args.out)
    if args.batch <= 0:
        raise ConfigError("--batch", "batch", f"must be a positive integer, got {args.batch}")
    overrides = parse_set(args.overrides)
    model = model_from_spec(args.model, overrides, source="--set")
    name = args.name or args.model.rpartition(":")[2]
    workload = derive_workload(
        model,
        batch=args.batch,
        name=name,
        description=f"derived from {args.model} by XLA cost analysis at batch {args.batch}",
    )
    if args.model in ZOO:  # a zoo model keeps its job defaults
        workload = dataclasses.replace(workload, defaults=build_workload(args.model, **overrides).defaults)
    return _emit(workload, args.out)


def _emit(workload, out: str | None) -> int:
    if out:
        write_workload(workload, out)
        print(f"wrote {out}", file=sys.stderr)
    else:
        print(workload_to_toml(workload), end="")
    return 0
