"""`hps search`: the exact solver and the placement baselines (single, greedy, random, genetic,
gradient, exhaustive) on one instance; every baseline is reported as cost over the optimum."""

from __future__ import annotations

import math
import sys

from hps.cli.common import add_instance_args, add_seed_arg, int_range, print_json, resolve_instance
from hps.cli.parallel import add_parallel_args, search_parallel
from hps.config.limits import MAX_SEARCH_BUDGET
from hps.errors import ConfigError, InstanceTooLarge, SearchSpaceTooLarge
from hps.report.tables import format_table

ALL = "all"
EXACT = "exact"
EXACT_SECONDS = 60.0
METHOD_NAMES = ("single", "greedy", "random", "genetic", "gradient", "exhaustive")
"""The keys of `hps.planners.search.METHODS` (the jnp searches), in its order, named here so
that building the parser (`hps --help`) does not import JAX."""
PLANNER_NAMES = ("exact", "single", "greedy", "random", "genetic", "refine", "exhaustive")
"""The keys of `hps.planners.sequence.PLANNERS` (the parallel-plan model's planners), in its order."""


def register(subparsers) -> None:
    parser = subparsers.add_parser("search", help="find the cheapest feasible placement with a baseline search")
    add_instance_args(parser)
    parser.add_argument(
        "--method",
        choices=(ALL, *dict.fromkeys((EXACT, *METHOD_NAMES, *PLANNER_NAMES))),
        help="search method: exact (the optimum over every plan, with its certificate) or a baseline "
        "over schedules; 'all': the optimum and every baseline beside it (default; with --parallel the "
        "default is exact, and the baselines are the parallel-plan planners, refine among them, gradient not)",
    )
    parser.add_argument(
        "--budget",
        type=int_range(None, MAX_SEARCH_BUDGET, "minutes of evaluations on a large workload"),
        help="evaluations for random/genetic/gradient (so they compare at equal evaluations); "
        "evaluation cap for greedy; space limit for exhaustive; with --parallel: the type sequences "
        "each planner may complete",
    )
    parser.add_argument(
        "--seconds",
        type=float,
        default=EXACT_SECONDS,
        help="time limit of the exact solver; past it, the best plan found and its proven gap; with --parallel: "
        "of each planner (default: %(default)s)",
    )
    add_seed_arg(parser)
    parser.add_argument(
        "--parallel",
        action="store_true",
        help="plan in the parallel-plan model (tensor, data and pipeline parallelism, integer micro-batches, "
        "sites and links) with --method's planner (default: its exact solver); the default for workloads "
        "whose job names a finite micro-batch count (the LLMs) unless --micro-batches is given",
    )
    parser.add_argument("--out", help="with --parallel: write the plan file (hps-plan/2) here")
    parser.add_argument(
        "--warm-start",
        metavar="CHECKPOINT",
        nargs="?",
        const="",
        help="parallel-plan exact solver only: start it from a plan of type sequences completed exactly and "
        "refined, within a tenth of --seconds: a trained placement policy's sequences first where CHECKPOINT is "
        "given, then every one- and two-run sequence; the time to certificate counts both",
    )
    add_parallel_args(parser)
    parser.set_defaults(run=run)


def _summary(result, catalog) -> dict:
    from hps.costmodel.schedule import REASONS

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


def _run_methods(methods, params, args, show_progress, table=None):
    import jax
    from tqdm import tqdm

    from hps.planners.search import run_search

    results, skipped = [], {}
    bar = tqdm(methods, desc="search", disable=not show_progress, file=sys.stderr, leave=False)
    for method in bar:
        bar.set_postfix_str(method)
        try:
            found = run_search(
                method, params, key=jax.random.key(args.seed), budget=args.budget, warmup=True, table=table
            )
            results.append(found)
        except SearchSpaceTooLarge as error:
            if len(methods) == 1:
                raise
            skipped[method] = str(error)
    return results, skipped


def _exact(workload, catalog, job, seconds: float) -> tuple[dict, dict]:
    """(the `hps evaluate` report of the optimal plan plus its certificate, its summary row)."""
    from hps.api.planning import Problem, exact_schedule_report

    report = exact_schedule_report(Problem(workload, catalog, job, parallel=False), seconds)
    row = {
        "method": EXACT,
        "schedule": report["schedule"],
        "stages": len(report["stages"]),
        "feasible": report["feasible"],
        "reason": report["reason_code"] if not report["feasible"] else None,
        "cost": report["cost"],
        "throughput": report["throughput"],
        "dollars_per_hour": report["dollars_per_hour"],
        "evaluations": None,
        "wall_seconds": report["search_seconds"],
    }
    return report, row


def _baselines(methods, workload, catalog, job, args, skipped):
    """Summary rows of the jnp searches that can run this instance (the rest go to skipped)."""
    if not job.schedule_model:  # the jnp searches score HeterPS schedules only
        why = "the baselines score HeterPS schedules only (--micro-batches inf, --state-sharding none)"
        if len(methods) == 1:
            from hps.errors import ConfigError

            raise ConfigError("--method", "method", f"{why}; use --method exact")
        skipped.update(dict.fromkeys(methods, why))
        return []
    from hps.planners.search.arrays import search_arrays

    try:
        params, table = search_arrays(workload, catalog, job)
    except InstanceTooLarge as error:
        if len(methods) == 1:
            raise
        skipped.update(dict.fromkeys(methods, str(error)))
        return []
    results, skipped_here = _run_methods(methods, params, args, show_progress=not args.json, table=table)
    skipped.update(skipped_here)
    return [_summary(r, catalog) for r in results]


def _optimum(workload, catalog, job, seconds: float, skipped: dict) -> tuple[dict | None, dict | None]:
    """`_exact` for --method all; (None, None), with the reason in `skipped`, when the exact
    solver's arrays would not fit memory (the baselines may still plan the instance)."""
    try:
        return _exact(workload, catalog, job, seconds)
    except InstanceTooLarge as error:
        skipped[EXACT] = str(error)
        return None, None


def _pipelined(args, workload) -> bool:
    """The workload's default job names a finite micro-batch count (a pipelined job: the zoo's
    LLMs) and --micro-batches does not override it: planned in the parallel-plan model."""
    defaults = workload.defaults
    given = getattr(args, "job_micro_batches", None) is not None
    return not given and defaults is not None and math.isfinite(defaults.micro_batches)


def run(args) -> int:
    from hps.report.placement import format_report, schedule_report

    workload, catalog, job = resolve_instance(args)
    if args.parallel or args.out is not None or args.warm_start is not None or _pipelined(args, workload):
        return search_parallel(args, workload, catalog, job, _seconds(args))
    args.method = args.method or ALL
    if args.method not in (ALL, EXACT, *METHOD_NAMES):
        raise ConfigError("--method", "method", f"{args.method} plans in the parallel-plan model only; give --parallel")
    skipped: dict[str, str] = {}
    if args.method == EXACT:
        report, _ = _exact(workload, catalog, job, _seconds(args))
        report["method"] = EXACT
        return _print_exact(report, workload, catalog, job, args)
    methods = list(METHOD_NAMES) if args.method == ALL else [args.method]
    optimum, optimum_row = (None, None)
    if args.method == ALL:
        optimum, optimum_row = _optimum(workload, catalog, job, _seconds(args), skipped)
    rows = _baselines(methods, workload, catalog, job, args, skipped)
    if optimum is None and not rows:
        reasons = "; ".join(f"{method}: {why}" for method, why in skipped.items())
        raise InstanceTooLarge(f"no search method can plan this instance here: {reasons}")
    if optimum is not None:
        rows = [optimum_row, *rows]
        for row in rows:
            row["cost_over_optimum"] = _ratio(row["cost"], optimum["cost"])
        report, best = optimum, optimum_row
    else:
        best = min(rows, key=lambda r: (not r["feasible"], r["cost"] or math.inf, -r["throughput"]))
        report = schedule_report(workload, catalog, job, [catalog.index(n) for n in best["schedule"]])
    if args.json:
        print_json({**report, "method": best["method"], "results": rows, "skipped": skipped})
        return 0
    _print_rows(rows, workload, catalog, job, skipped)
    if best["feasible"]:
        print(f"\nbest ({best['method']}):")
    else:
        print(
            f"\nno feasible plan: no method meets the floor of {job.throughput:g} samples/s within the catalogue's "
            f"memory and max_units; the closest plan ({best['method']}, highest throughput) fails on:"
        )
    print(format_report(report, workload))
    return 0


def _seconds(args) -> float:
    if not args.seconds > 0:
        from hps.errors import ConfigError

        raise ConfigError("--seconds", "seconds", f"must be > 0, got {args.seconds}")
    return args.seconds


def _ratio(cost, optimum):
    return None if cost is None or optimum is None else cost / optimum


def _print_exact(report, workload, catalog, job, args) -> int:
    from hps.report.placement import format_report

    if args.json:
        print_json(report)
        return 0
    print(_heading(workload, job, catalog))
    print(format_report(report, workload))
    if report["gap"] is not None:
        print(f"proven bound ${report['bound']:,.2f} (gap {report['gap']:.2%}) in {report['search_seconds']:.2f} s")
    elif report["bound"] is not None:  # the time ran out before a plan or a proof that none exists
        print(
            f"no feasible plan found in {report['search_seconds']:.2f} s, and none proven impossible: "
            f"a feasible plan would cost at least ${report['bound']:,.2f} (raise --seconds)"
        )
    return 0


def _heading(workload, job, catalog=None) -> str:
    where = f" on {catalog.name}" if catalog is not None else ""
    return (
        f"{workload.name}{where}: batch {job.batch:g}, floor {job.throughput:g} samples/s, {job.samples:g} samples, "
        f"micro-batches {job.micro_batches:g}, state sharding {job.state_sharding}"
    )


def _print_rows(rows, workload, catalog, job, skipped) -> None:
    print(_heading(workload, job, catalog))
    headers = ["method", "cost_$", "x_optimum", "feasible", "samples_per_s", "evaluations", "search_s", "schedule"]
    table = [
        [
            r["method"],
            r["cost"],
            r.get("cost_over_optimum"),
            r["feasible"],
            r["throughput"],
            r["evaluations"],
            r["wall_seconds"],
            _compact(r["schedule"]),
        ]
        for r in rows
    ]
    print(format_table(headers, table))
    for method, why in skipped.items():
        print(f"{method}: skipped: {why}")


def _compact(schedule: list[str]) -> str:
    """cpu,cpu,a100 -> cpu*2,a100: a schedule of hundreds of layers on one line."""
    runs, out = [], []
    for name in schedule:
        if runs and runs[-1][0] == name:
            runs[-1][1] += 1
        else:
            runs.append([name, 1])
    for name, count in runs:
        out.append(name if count == 1 else f"{name}*{count}")
    return ",".join(out)
