"""Parallel plans on the command line: the job flags they add, `hps evaluate --plan PLAN.json`
and `hps search --parallel [--out PLAN.json]` (docs/parallel-plans.md)."""

from __future__ import annotations

import dataclasses

from hps.cli.common import output_path, print_json, workload_arg
from hps.config.paths import resolve_topology
from hps.config.types import PRECISIONS, RECOMPUTE, Job, PlanFile, Workload


def add_parallel_args(parser) -> None:
    """--micro-batch, --precision, --zero, --recompute (defaults: the workload's)."""
    parser.add_argument("--micro-batch", type=int, dest="job_micro_batch", help="samples per pipeline micro-batch b")
    parser.add_argument("--precision", choices=tuple(PRECISIONS), dest="job_precision")
    parser.add_argument("--zero", type=int, choices=(0, 1, 2, 3), dest="job_zero", help="ZeRO level")
    parser.add_argument("--recompute", choices=RECOMPUTE, dest="job_recompute")


def parallel_job(args, workload: Workload, job: Job) -> Job:
    """`job` with the parallel-plan fields from the flags, else the workload's defaults."""
    from hps.config.validation import validate_job
    from hps.errors import ConfigError

    defaults, values = workload.defaults, {}
    for name in ("micro_batch", "precision", "zero", "recompute"):
        value = getattr(args, f"job_{name}", None)
        if value is None and defaults is not None:
            value = getattr(defaults, name)
        if value is not None:
            values[name] = float(value) if name == "micro_batch" else value
    job = dataclasses.replace(job, **values)
    try:
        validate_job(job, source="command line")
    except ConfigError as error:
        flag = "--" + error.field.replace("_", "-")
        raise ConfigError(flag, error.field, error.problem) from None
    return job


def evaluate_plan_file(args) -> int:
    """Score a plan file and print its report."""
    from hps.config.loaders import load_catalog
    from hps.config.planfile import check_plan_against, read_plan_file
    from hps.placement.model.parallel.problem import ParallelProblem
    from hps.placement.model.parallel.score import score_plan
    from hps.report.parallel import format_parallel, parallel_report

    plan = read_plan_file(args.plan)
    workload = workload_arg(plan.workload, flag=f"{args.plan}: workload")
    catalog = load_catalog(resolve_topology(plan.catalog, "catalogs", f"{args.plan}: catalog"))
    check_plan_against(plan, workload, catalog, str(args.plan))
    report = parallel_report(score_plan(ParallelProblem(workload, catalog, plan.job), plan.stages))
    if args.json:
        print_json(report)
        return 0
    print(f"{workload.name} on {catalog.name}: batch {plan.job.batch:g}, floor {plan.job.throughput:g} samples/s")
    print(format_parallel(report))
    return 0


def search_parallel(args, workload: Workload, catalog, job: Job, seconds: float) -> int:
    """The exact solver of the parallel-plan model; the plan file written with --out."""
    from hps.config.planfile import write_plan_file
    from hps.placement.exact.parallel.solver import solve_parallel
    from hps.placement.model.parallel.problem import ParallelProblem
    from hps.report.parallel import format_parallel, parallel_report

    out = output_path(getattr(args, "out", None))
    job = parallel_job(args, workload, job)
    result = solve_parallel(ParallelProblem(workload, catalog, job), seconds=seconds)
    report = {"feasible": False, "reason": "none_found", "stages": []}
    if result.score is not None:
        report = parallel_report(result.score)
    report.update(
        bound=result.bound if result.bound != float("inf") else None,
        gap=result.gap if result.gap != float("inf") else None,
        search_seconds=result.seconds,
        evaluations=result.evaluations,
    )
    if out is not None and result.plan is not None:
        job_out = dataclasses.replace(job, micro_batch=float(result.micro_batch))
        write_plan_file(PlanFile(args.workload, args.catalog, job_out, result.plan), out)
    if args.json:
        print_json(report)
        return 0
    print(f"{workload.name} on {catalog.name}: batch {job.batch:g}, floor {job.throughput:g} samples/s, "
          f"{job.precision}, ZeRO {job.zero}, recompute {job.recompute}")  # fmt: skip
    if result.score is None:
        print(f"no feasible plan found in {result.seconds:.2f} s")
        return 0
    print(format_parallel(report))
    gap = "proven optimal" if result.gap == 0 else f"gap {result.gap:.2%}"
    print(f"bound       ${result.bound:,.0f} ({gap}) in {result.seconds:.2f} s")
    if out is not None:
        print(f"wrote {out}")
    return 0
