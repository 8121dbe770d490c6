"""Parallel plans on the command line: the job flags they add and `hps evaluate --plan PLAN.json`
(docs/parallel-plans.md); `hps search --parallel` is `hps.cli.search_parallel`."""

from __future__ import annotations

import argparse

from hps.cli.common import print_json, workload_arg
from hps.config.paths import resolve_topology
from hps.config.types import PRECISIONS, RECOMPUTE, Job, Workload


def _chunks(text: str):
    """--virtual-stages: a positive integer or "auto"."""
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer or auto, got {text!r}") from None


def add_parallel_args(parser) -> None:
    """--micro-batch, --precision, --zero, --recompute, --virtual-stages, --fp8, --memory-headroom
    (defaults: the workload's; "auto" leaves a choice to the planner)."""
    parser.add_argument("--micro-batch", type=int, dest="job_micro_batch", help="samples per pipeline micro-batch b")
    parser.add_argument("--precision", choices=tuple(PRECISIONS), dest="job_precision")
    parser.add_argument("--zero", type=int, choices=(0, 1, 2, 3), dest="job_zero", help="ZeRO level")
    parser.add_argument(
        "--recompute",
        choices=(*RECOMPUTE, "auto"),
        dest="job_recompute",
        help="activation recomputation (auto: searched)",
    )
    parser.add_argument(
        "--virtual-stages", type=_chunks, dest="job_virtual_stages", metavar="V|auto",
        help="model chunks a device of the interleaved 1F1B schedule (1: plain 1F1B; auto: searched among 1, 2, 4)",
    )  # fmt: skip
    parser.add_argument(
        "--fp8", choices=("on", "off", "auto"), dest="job_fp8",
        help="matmuls in FP8 on types with an FP8 peak (auto: searched)",
    )  # fmt: skip
    parser.add_argument(
        "--memory-headroom", type=float, dest="job_memory_headroom", metavar="H",
        help="fraction of each device's memory left free, in [0, 1) (default: each type's, else 0.05)",
    )  # fmt: skip


def add_clock_arg(parser) -> None:
    """--clock: what times the parallel-plan model's layers (docs/clocks.md)."""
    from hps.costmodel.clocks.base import CLOCKS

    parser.add_argument(
        "--clock",
        choices=CLOCKS,
        default=None,
        help="what times a parallel plan's layers: the kernel-level model with the catalogue's fitted constants "
        "(the default), or the catalogue's roofline (the schedule model's only clock)",
    )


def parallel_job(args, workload: Workload, job: Job) -> Job:
    """`job` with the parallel-plan fields from the flags, else the workload's defaults."""
    from hps.config.validation import PARALLEL_JOB_FIELDS, with_parallel_fields
    from hps.errors import ConfigError

    given = {name: getattr(args, f"job_{name}", None) for name in PARALLEL_JOB_FIELDS}
    given["fp8"] = {"on": True, "off": False}.get(given["fp8"], given["fp8"])
    try:
        return with_parallel_fields(job, workload.defaults, given, source="command line")
    except ConfigError as error:
        flag = "--" + error.field.replace("_", "-")
        raise ConfigError(flag, error.field, error.problem) from None


def plan_file_data(path: str):
    """(the plan file at `path`, its workload, its catalogue), each error naming the file and the
    field it came from."""
    from hps.config.loaders import load_catalog
    from hps.config.planfile import check_recorded_data, read_plan_file

    plan = read_plan_file(path)
    check_recorded_data(plan, path)
    workload = workload_arg(plan.workload, flag=f"{path}: workload")
    catalog = load_catalog(resolve_topology(plan.catalog, "catalogs", f"{path}: catalog"))
    return plan, workload, catalog


def evaluate_plan_file(args) -> int:
    """Score a plan file and print its report."""
    from hps.api.planning import Problem
    from hps.config.planfile import check_plan_against
    from hps.contract.types import Plan
    from hps.report.parallel import format_parallel

    plan, workload, catalog = plan_file_data(args.plan)
    check_plan_against(plan, workload, catalog, str(args.plan))
    clock = args.clock or plan.clock
    problem = Problem(workload, catalog, plan.job, parallel=True, clock=clock)
    micro_batch = None if plan.job.micro_batch is None else int(plan.job.micro_batch)
    report = problem.report(problem.score(Plan(plan.stages, micro_batch)))
    if args.json:
        print_json(report)
        return 0
    print(f"{workload.name} on {catalog.name}: batch {plan.job.batch:g}, floor {plan.job.throughput:g} samples/s")
    print(format_parallel(report))
    return 0
