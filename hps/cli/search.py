"""`hps search`: one planner, or every planner of the problem's model beside the exact solver
(`--method all`), each reported as cost over the optimum; in either cost model."""

from __future__ import annotations

import dataclasses
import math
import sys

from hps.cli.common import add_instance_args, add_seed_arg, int_range, print_json, resolve_instance
from hps.cli.parallel import add_clock_arg, add_parallel_args, parallel_job
from hps.config.limits import MAX_SEARCH_BUDGET
from hps.errors import ConfigError
from hps.report.tables import dollars, format_table

ALL = "all"
EXACT_SECONDS = 60.0
OUT_NOTE = "--out writes a parallel plan file: planning in the parallel-plan model (give --parallel to silence this)"
"""Said on standard error where --out, not --parallel, puts a schedule-model job in the parallel-plan model."""
SWITCH_NOTE = "{flag} plans in the parallel-plan model: planning there (give --parallel to silence this)"
"""The same where --warm-start, --clock, --robust or --maximize throughput does."""


def register(subparsers) -> None:
    from hps.methods.registry import planner_names

    parser = subparsers.add_parser("search", help="find the cheapest feasible placement with a baseline search")
    add_instance_args(parser)
    parser.add_argument(
        "--method",
        choices=(ALL, *planner_names()),
        help="planner: exact (the optimum over every plan, with its certificate) or a baseline; 'all': the "
        "optimum and every baseline of the problem's model beside it (default; with --parallel the default is "
        "exact); policy needs --warm-start's checkpoint",
    )
    parser.add_argument(
        "--evaluations",
        type=int_range(None, MAX_SEARCH_BUDGET, "minutes of evaluations on a large workload"),
        help="evaluations for random/genetic/gradient (so they compare at equal evaluations); "
        "evaluation cap for greedy; space limit for exhaustive; with --parallel: the type sequences "
        "each planner may complete",
    )
    parser.add_argument(
        "--maximize",
        choices=("cost", "throughput"),
        help="throughput: plan the most samples/s whose units rent for at most --budget dollars per hour (the "
        "parallel-plan model's exact solver; the workload's floor no longer applies unless --throughput gives "
        "one); default: the least cost that meets the floor",
    )
    parser.add_argument(
        "--budget", type=float, metavar="DOLLARS_PER_HOUR", help="with --maximize throughput: dollars per hour"
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
    parser.add_argument(
        "--out",
        help="with --parallel: write the plan file (hps-plan/3) here; where no plan is found, nothing is written "
        "(a file already there is left as it was) and the exit status is 1",
    )
    parser.add_argument(
        "--warm-start",
        metavar="CHECKPOINT",
        nargs="?",
        const="",
        help="parallel-plan exact solver only: start it from a plan of type sequences completed exactly and "
        "refined, within a tenth of --seconds: a trained placement policy's sequences first where CHECKPOINT is "
        "given, then every one- and two-run sequence; the time to certificate counts both",
    )
    parser.add_argument(
        "--framework",
        choices=("megatron", "maxtext", "torchtitan"),
        help="plan only what that framework launches (one type, t and d in every stage, the blocks split evenly, "
        "on the types it runs; hps export writes its inputs) beside the exact optimum, and report the premium",
    )
    parser.add_argument(
        "--robust",
        action="store_true",
        help="parallel plans: raise the floor so that it holds at the low end of every plan's throughput range "
        "(the clock's held-out errors on the catalogue's types)",
    )
    add_parallel_args(parser)
    add_clock_arg(parser)
    parser.set_defaults(run=run)


def _pipelined(args, workload) -> bool:
    """The workload's default job names a finite micro-batch count (a pipelined job: the zoo's
    LLMs) and --micro-batches does not override it: planned in the parallel-plan model."""
    defaults = workload.defaults
    given = getattr(args, "job_micro_batches", None) is not None
    return not given and defaults is not None and math.isfinite(defaults.micro_batches)


def _seconds(args) -> float:
    if not args.seconds > 0:
        raise ConfigError("--seconds", "seconds", f"must be > 0, got {args.seconds}")
    return args.seconds


def _budget(args):
    from hps.contract.types import Budget

    return Budget(_seconds(args), getattr(args, "evaluations", None), getattr(args, "seed", 0) or 0)


def _compare(problem, names, budget, args, options=None):
    """The comparison of `names` (`hps.methods.compare`), with a progress bar on standard error
    (not with --json); a single planner that cannot plan this job names --method."""
    from tqdm import tqdm

    from hps.contract.types import NotApplicable
    from hps.methods.compare import compare

    bar = tqdm(total=len(names), desc="search", disable=args.json or len(names) == 1, file=sys.stderr, leave=False)
    begun = []

    def started(name: str) -> None:
        bar.update(len(begun) > 0)
        bar.set_postfix_str(name)
        begun.append(name)

    try:
        return compare(problem, names, budget, options=options, on_start=started)
    except NotApplicable as error:
        raise ConfigError("--method", "method", f"{error.problem}; use --method exact") from None
    finally:
        bar.close()


def run(args) -> int:
    from hps.api.planning import Problem

    workload, catalog, job = resolve_instance(args)
    kernel = args.clock not in (None, "roofline")  # the schedule model has the roofline only
    from hps.cli.search_parallel import MAXIMIZE_FLOOR, objective_budget

    maximize = objective_budget(args)
    switches = args.warm_start is not None or kernel or args.robust or maximize is not None
    parallel = args.parallel or args.out is not None or switches or args.framework is not None
    pipelined = _pipelined(args, workload)
    if not args.parallel and args.framework is None and not pipelined:
        if args.out is not None:
            print(f"hps search: note: {OUT_NOTE}", file=sys.stderr)
        elif switches:
            given = (("--warm-start", args.warm_start is not None), ("--clock", kernel), ("--robust", args.robust))
            flag = next((name for name, on in given if on), "--maximize throughput")
            print(f"hps search: note: {SWITCH_NOTE.format(flag=flag)}", file=sys.stderr)
    if parallel or pipelined:
        from hps.cli.search_parallel import check_whole_samples, search_parallel

        job = parallel_job(args, workload, job)
        if maximize is not None:
            floor = job.throughput if args.throughput is not None else MAXIMIZE_FLOOR
            job = dataclasses.replace(job, budget_per_hour=maximize, throughput=floor)
        check_whole_samples(args, job)
        if job.fp8 and all(r.fp8_peak_flops is None for r in catalog.resources):
            raise ConfigError("--fp8", "fp8", f"no type of {catalog.name!r} has an FP8 peak (fp8_peak_TFLOPs)")
        problem = Problem(workload, catalog, job, parallel=True, clock=args.clock)
        if args.robust:
            try:
                problem = problem.robust()
            except ConfigError as error:
                raise ConfigError(
                    "--robust", "throughput", f"raises the floor {job.throughput:g}: {error.problem}"
                ) from None
            print(
                f"hps search: note: --robust plans for {problem.job.throughput:,.6g} samples/s, the floor "
                f"{job.throughput:,.6g} at the low end of the {problem.clock.name} clock's errors",
                file=sys.stderr,
            )
        return search_parallel(args, problem, _budget(args), _compare)
    from hps.methods.registry import planner_names

    method = args.method or ALL
    if method != ALL and method not in planner_names("schedule"):
        raise ConfigError("--method", "method", f"{method} plans in the parallel-plan model only; give --parallel")
    problem = Problem(workload, catalog, job, parallel=False)
    names = list(planner_names("schedule")) if method == ALL else [method]
    compared = _compare(problem, names, _budget(args), args)
    return _print_schedule(problem, compared, args, every=method == ALL)


def _schedule_row(result, plan: dict) -> dict:
    """A schedule-model planner's summary row, from its result and the result's report."""
    row = {"method": result.planner, "schedule": plan["schedule"]}
    if result.planner == "exact":
        row["stages"] = len(plan["stages"])
    return row | {
        "feasible": plan["feasible"],
        "reason": None if plan["feasible"] else plan["reason_code"],
        "cost": plan["cost"],
        "throughput": plan["throughput"],
        "dollars_per_hour": plan["dollars_per_hour"],
        "evaluations": result.evaluations,
        "wall_seconds": result.seconds,
    }


def _print_schedule(problem, compared, args, every: bool) -> int:
    from hps.report.placement import format_report

    workload, job = problem.workload, problem.job
    reference = compared.reference
    if not every and reference is not None:  # --method exact: the optimum and its certificate
        document = problem.report(reference)
        if args.json:
            print_json(document)
            return 0
        print(_heading(workload, job, problem.catalog))
        print(format_report(document, workload))
        print(f"status: {document['status']}")
        if document["gap"] is not None:
            bound = dollars(document["bound"], 2)
            print(f"proven bound {bound} (gap {document['gap']:.2%}) in {reference.seconds:.2f} s")
        elif document["bound"] is not None:  # the time ran out before a plan or a proof that none exists
            print(
                f"no feasible plan found in {reference.seconds:.2f} s, and none proven impossible: "
                f"a feasible plan would cost at least {dollars(document['bound'], 2)} (raise --seconds)"
            )
        return 0
    reports = [problem.report(result) for result in compared.results]
    rows = [_schedule_row(result, report) for result, report in zip(compared.results, reports)]
    if reference is not None:
        best = rows[0]
        for row in rows:
            row["cost_over_optimum"] = (
                None if row["cost"] is None or best["cost"] is None else row["cost"] / best["cost"]
            )
        document = reports[0]  # the yardstick's: compare plans it first
    else:
        best = min(rows, key=lambda r: (not r["feasible"], r["cost"] or math.inf, -r["throughput"]))
        document = reports[rows.index(best)]
        for key in ("method", "evaluations", "wall_seconds"):
            document.pop(key, None)
    if args.json:
        print_json({**document, "method": best["method"], "results": rows, "skipped": compared.skipped})
        return 0
    _print_rows(rows, workload, problem.catalog, job, compared.skipped)
    if best["feasible"]:
        print(f"\nbest ({best['method']}):")
    else:
        print(
            f"\nno feasible plan: no method meets the floor of {job.throughput:g} samples/s within the catalogue's "
            f"memory and max_units; the closest plan ({best['method']}, highest throughput) fails on:"
        )
    print(format_report(document, workload))
    if "status" in document:
        print(f"status: {document['status']}")
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
