"""`hps search`: placement baselines (single, greedy, random, genetic, gradient, exhaustive) on one instance."""

from __future__ import annotations

import math
import sys

from hps.cli.common import add_instance_args, print_json, resolve_instance
from hps.errors import SearchSpaceTooLarge
from hps.report.tables import format_table

ALL = "all"
METHOD_NAMES = ("single", "greedy", "random", "genetic", "gradient", "exhaustive")
"""The keys of `hps.placement.search.METHODS`, in its order, named here so that building the
parser (`hps --help`) does not import JAX."""


def register(subparsers) -> None:
    parser = subparsers.add_parser("search", help="find the cheapest feasible placement with a baseline search")
    add_instance_args(parser)
    parser.add_argument(
        "--method",
        default=ALL,
        choices=(ALL, *METHOD_NAMES),
        help="search method, or 'all' to compare every method (default)",
    )
    parser.add_argument(
        "--budget",
        type=int,
        help="evaluations for random/genetic/gradient (so they compare at equal evaluations); "
        "evaluation cap for greedy; space limit for exhaustive",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.set_defaults(run=run)


def _summary(result, catalog) -> dict:
    from hps.placement.model import REASONS

    return {
        "method": result.method,
        "schedule": [catalog.names[t] for t in result.schedule],
        "feasible": result.feasible,
        "reason": None if result.feasible else REASONS[result.reason],
        "cost": result.cost if math.isfinite(result.cost) else None,
        "throughput": result.throughput,
        "dollars_per_hour": result.dollars_per_hour,
        "evaluations": result.evaluations,
        "wall_seconds": result.wall_seconds,
    }


def _run_methods(methods, params, args, show_progress):
    import jax
    from tqdm import tqdm

    from hps.placement.search import run_search

    results, skipped = [], {}
    bar = tqdm(methods, desc="search", disable=not show_progress, file=sys.stderr, leave=False)
    for method in bar:
        bar.set_postfix_str(method)
        try:
            results.append(run_search(method, params, key=jax.random.key(args.seed), budget=args.budget, warmup=True))
        except SearchSpaceTooLarge as error:
            if len(methods) == 1:
                raise
            skipped[method] = str(error)
    return results, skipped


def run(args) -> int:
    from hps.placement.model import build_params
    from hps.placement.search import METHODS
    from hps.report.placement import format_report, schedule_report

    workload, catalog, job = resolve_instance(args)
    params = build_params(workload, catalog, job)
    methods = list(METHODS) if args.method == ALL else [args.method]
    results, skipped = _run_methods(methods, params, args, show_progress=not args.json)
    best = min(results, key=lambda r: (not r.feasible, r.cost, -r.throughput))  # else the closest to the floor
    report = schedule_report(workload, catalog, job, list(best.schedule))
    if args.json:
        payload = {**report, "method": best.method, "results": [_summary(r, catalog) for r in results]}
        payload["skipped"] = skipped
        print_json(payload)
        return 0
    print(
        f"{workload.name} on {catalog.name}: batch {job.batch:g}, floor {job.throughput:g} samples/s, "
        f"{job.samples:g} samples"
    )
    rows = [
        [
            s["method"],
            s["cost"],
            s["feasible"],
            s["throughput"],
            s["evaluations"],
            s["wall_seconds"],
            ",".join(s["schedule"]),
        ]
        for s in map(lambda r: _summary(r, catalog), results)
    ]
    print(format_table(["method", "cost_$", "feasible", "samples_per_s", "evaluations", "search_s", "schedule"], rows))
    for method, why in skipped.items():
        print(f"{method}: skipped: {why}")
    if best.feasible:
        print(f"\nbest ({best.method}):")
    else:
        print(
            f"\nno feasible plan: no method meets the floor of {job.throughput:g} samples/s within the catalogue's "
            f"memory and max_units; the closest plan ({best.method}, highest throughput) fails on:"
        )
    print(format_report(report, workload))
    return 0
