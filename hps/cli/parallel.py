"""Parallel plans on the command line: the job flags they add, `hps evaluate --plan PLAN.json`
and `hps search --parallel [--method PLANNER|all] [--out PLAN.json]` (docs/parallel-plans.md)."""

from __future__ import annotations

import dataclasses
import math

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
    from hps.config.validation import PARALLEL_JOB_FIELDS, with_parallel_fields
    from hps.errors import ConfigError

    given = {name: getattr(args, f"job_{name}", None) for name in PARALLEL_JOB_FIELDS}
    try:
        return with_parallel_fields(job, workload.defaults, given, source="command line")
    except ConfigError as error:
        flag = "--" + error.field.replace("_", "-")
        raise ConfigError(flag, error.field, error.problem) from None


def evaluate_plan_file(args) -> int:
    """Score a plan file and print its report."""
    from hps.config.loaders import load_catalog
    from hps.config.planfile import check_plan_against, read_plan_file
    from hps.costmodel.parallel.problem import ParallelProblem
    from hps.costmodel.parallel.score import score_plan
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


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _row(outcome, optimum: float | None) -> dict:
    """One planner's summary: cost, cost over the exact solver's (x_optimum), seconds,
    evaluations, feasible, bound and gap."""
    cost = outcome.cost if outcome.feasible else None
    return {
        "method": outcome.planner,
        "feasible": outcome.feasible,
        "cost": cost,
        "x_optimum": cost / optimum if cost is not None and optimum else None,
        "seconds": outcome.seconds,
        "evaluations": outcome.evaluations,
        "bound": _finite(outcome.bound),
        "gap": outcome.gap,
        "micro_batch": outcome.micro_batch,
        "stages": len(outcome.stages) if outcome.stages else None,
    }


def _run_all(problem, seconds, evaluations, seed) -> tuple[list, dict[str, str]]:
    """Every planner, exact first; (their PlanOutcomes, {planner: why skipped})."""
    from hps.api.planning import planners, solve
    from hps.planners.sequence import SpaceTooLarge

    outcomes, skipped = [], {}
    for name in planners():
        try:
            outcomes.append(solve(problem, name, seconds, evaluations, seed))
        except SpaceTooLarge as error:
            skipped[name] = error.problem
    return outcomes, skipped


def search_parallel(args, workload: Workload, catalog, job: Job, seconds: float) -> int:
    """Plan with --method's planner (exact by default; 'all': every planner beside the exact
    solver) within --seconds each and --budget evaluations; the best plan written with --out."""
    from hps.api.planning import Problem, gap_of, solve
    from hps.config.planfile import write_plan_file
    from hps.errors import ConfigError
    from hps.report.parallel import format_parallel

    out = output_path(getattr(args, "out", None))
    if out is not None and getattr(args, "overrides", None):
        problem = "a plan file names a zoo workload or a file, not --set overrides: export the workload first"
        raise ConfigError("--out", "out", f"{problem} (hps workload export NAME --set ... --out W.toml)")
    job = parallel_job(args, workload, job)
    method = getattr(args, "method", None) or "exact"
    evaluations = getattr(args, "budget", None)
    if evaluations is not None and evaluations < 1:
        raise ConfigError("--budget", "budget", f"must be >= 1, got {evaluations}")
    problem = Problem(workload, catalog, job, parallel=True)
    seed = getattr(args, "seed", 0) or 0
    warm = getattr(args, "warm_start", None)
    if warm is not None and method != "exact":
        raise ConfigError("--warm-start", "warm_start", f"starts the exact solver only, not --method {method}")
    incumbent, warm_report = (None, None) if warm is None else _warm_start(warm, problem, seconds, seed)
    if method == "all":
        outcomes, skipped = _run_all(problem, seconds, evaluations, seed)
    else:
        outcomes, skipped = [solve(problem, method, seconds, evaluations, seed, incumbent)], {}
    reference = outcomes[0] if outcomes[0].planner == "exact" else None
    optimum = reference.cost if reference is not None and reference.feasible else None
    rows = [_row(o, optimum) for o in outcomes]
    best = min(outcomes, key=lambda o: o.cost)  # the first of the cheapest: exact where it ties
    head = reference if reference is not None else best
    report = dict(best.report)
    report.update(
        bound=_finite(head.bound),
        gap=gap_of(best.cost, head.bound, bool(best.stages)),
        results=rows,
        skipped=skipped,
    )
    if warm_report is not None:
        warm_report["solver_seconds"] = outcomes[0].seconds
        proven = outcomes[0].gap == 0.0
        warm_report["certificate_seconds"] = warm_report["incumbent_seconds"] + outcomes[0].seconds if proven else None
        report["warm_start"] = warm_report
    if out is not None and best.stages:
        job_out = dataclasses.replace(job, micro_batch=float(best.micro_batch))
        write_plan_file(PlanFile(args.workload, args.catalog, job_out, best.stages), out)
    if args.json:
        print_json(report)
        return 0
    print(f"{workload.name} on {catalog.name}: batch {job.batch:g}, floor {job.throughput:g} samples/s, "
          f"{job.precision}, ZeRO {job.zero}, recompute {job.recompute}")  # fmt: skip
    if len(outcomes) > 1 or skipped:
        _print_rows(rows, skipped, reference)
        print(f"\nbest ({best.planner}):")
    if not best.stages:
        print(f"no feasible plan found in {best.seconds:.2f} s ({best.planner})")
        return 0
    print(format_parallel(report))
    if head.planner == "exact" or report["gap"] is not None:
        gap = report["gap"]
        proven = "gap unknown" if gap is None else "proven optimal" if gap == 0 else f"gap {gap:.2%}"
        print(f"bound       ${head.bound:,.0f} ({proven}) by {head.planner} in {head.seconds:.2f} s")
        if best is not head:
            print(f"{best.planner}: {best.evaluations} type sequences completed in {best.seconds:.2f} s")
    else:
        print(f"{best.planner}: {best.evaluations} type sequences completed in {best.seconds:.2f} s (no bound)")
    if warm_report is not None:
        w = warm_report
        cost = "none found" if w["incumbent_cost"] is None else f"${w['incumbent_cost']:,.0f}"
        source = "policy's plan" if w["checkpoint_step"] is not None else "sequence search's plan"
        print(f"warm start  {source} {cost} in {w['incumbent_seconds']:.2f} s, then the solver "
              f"{w['solver_seconds']:.2f} s" + ("" if w["certificate_seconds"] is None else
              f": certificate after {w['certificate_seconds']:.2f} s in all"))  # fmt: skip
    if out is not None:
        print(f"wrote {out}")
    return 0


WARM_SHARE = 0.1
"""The share of --seconds the warm start's policy plan may take."""


def _warm_start(checkpoint: str, problem, seconds: float, seed: int) -> tuple:
    """((stages, micro-batch) or None, the warm_start report): the policy's sequences (none where
    `checkpoint` is empty) completed exactly and refined by run moves, then the one- and two-run
    sequences (`hps.planners.sequence.sweep.policy_plan`)."""
    import time

    from hps.planners.sequence.sweep import policy_plan

    started = time.perf_counter()
    base = problem.parallel_problem
    proposals, step = [], None
    if checkpoint:
        from hps.placement.agent.checkpoint import load_policy
        from hps.placement.agent.planner import policy_sequences
        from hps.planners.sequence.completion import segments

        policy, params, spec = load_policy(checkpoint)
        proposals = policy_sequences(policy, params, problem.workload, problem.catalog, problem.job, segments(base),
                                     seed=seed)  # fmt: skip
        step = spec["step"]
    point = policy_plan(base, proposals, WARM_SHARE * seconds)
    report = {
        "checkpoint_step": step,
        "sequences": len(proposals),
        "incumbent_cost": point.cost if point.feasible else None,
        "incumbent_seconds": time.perf_counter() - started,
    }
    return ((point.plan, point.micro_batch) if point.feasible else None), report


def _print_rows(rows: list[dict], skipped: dict[str, str], reference) -> None:
    from hps.report.tables import format_table

    headers = ["method", "cost_$", "x_optimum", "feasible", "evaluations", "search_s", "stages", "micro_batch"]
    table = [
        [r["method"], r["cost"], r["x_optimum"], r["feasible"], r["evaluations"], r["seconds"], r["stages"],
         r["micro_batch"]]
        for r in rows
    ]  # fmt: skip
    print(format_table(headers, table))
    if reference is not None and reference.gap not in (0.0, None):
        print(f"x_optimum is over the exact solver's plan, not proven optimal (gap {reference.gap:.2%})")
    for method, why in skipped.items():
        print(f"{method}: skipped: {why}")
