"""`hps run EXPERIMENT.py`: run an experiment config module into <out>/<name>/ (results.json,
figures, report.md), resuming from the items a killed run saved; prints the table."""

from __future__ import annotations

from pathlib import Path

from hps.cli.common import print_json
from hps.config.files import check_output_dir
from hps.report.tables import format_table


def register(subparsers) -> None:
    parser = subparsers.add_parser("run", help="run an experiment file (resumes a killed run)")
    parser.add_argument("experiment", help="Python file defining config() (see experiments/)")
    parser.add_argument("--out", default="results", help="results folder; the run goes to OUT/NAME (default: results)")
    parser.add_argument("--fresh", action="store_true", help="recompute every item instead of resuming")
    parser.add_argument("--json", action="store_true", help="print results.json instead of the table")
    parser.set_defaults(run=run)


def run(args) -> int:
    from hps.experiments import load_config, run_experiment

    config = load_config(args.experiment)
    out = check_output_dir(Path(args.out) / config.name, "--out")
    ran = run_experiment(config, out, fresh=args.fresh, progress=not args.json, source=args.experiment)
    if args.json:
        print_json(ran["results"])
        return 0
    print(format_table(ran["headers"], ran["rows"]))
    print()
    for path in ran["files"]:
        print(f"wrote {path}")
    return 0
