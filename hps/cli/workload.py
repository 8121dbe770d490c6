"""`hps workload list|export`: the zoo."""

from __future__ import annotations

import sys

from hps.config.loaders import workload_to_toml, write_workload
from hps.report.tables import format_table
from hps.workloads import build_workload, list_workloads


def register(subparsers) -> None:
    parser = subparsers.add_parser("workload", help="list the workload zoo or export one as TOML")
    actions = parser.add_subparsers(dest="action", required=True)
    actions.add_parser("list", help="list the zoo").set_defaults(run=run_list)
    export = actions.add_parser("export", help="write a zoo workload's layer table as TOML")
    export.add_argument("name")
    export.add_argument("--out", help="file to write (default: stdout)")
    export.set_defaults(run=run_export)


def run_list(args) -> int:
    rows = []
    for name, description in list_workloads():
        workload = build_workload(name)
        sparse_gib = sum(l.sparse_param_bytes for l in workload.layers) / 2**30
        rows.append([name, len(workload.layers), f"{sparse_gib:.0f}", description])
    print(format_table(["name", "layers", "tables_GiB", "description"], rows))
    return 0


def run_export(args) -> int:
    workload = build_workload(args.name)
    if args.out:
        write_workload(workload, args.out)
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        print(workload_to_toml(workload), end="")
    return 0
