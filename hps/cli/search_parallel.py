"""`hps search` in the parallel-plan model: `--method PLANNER|all`, the warm start and `--out
PLAN.json` (docs/parallel-plans.md)."""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import time

from hps.cli.common import output_path, print_json
from hps.config.types import PlanFile
from hps.errors import ConfigError
from hps.report.tables import dollars, finite

MAXIMIZE_FLOOR = 1e-6
"""The floor (samples/s, the least the job ranges allow) under --maximize throughput without
--throughput: the workload's own floor does not bind."""


def objective_budget(args) -> float | None:
    """The dollars per hour of --maximize throughput --budget (None under --maximize cost or
    none); ConfigError naming the flag given without the other, or a budget that is not a
    positive number within its range."""
    from hps.config.ranges import check_in_range

    maximize, budget = getattr(args, "maximize", None), getattr(args, "budget", None)
    if maximize == "throughput" and budget is None:
        raise ConfigError("--maximize", "maximize", "throughput needs --budget DOLLARS_PER_HOUR")
    if budget is None:
        return None
    if maximize != "throughput":
        raise ConfigError(
            "--budget", "budget", "dollars per hour bound --maximize throughput; the evaluations count is --evaluations"
        )
    if not (math.isfinite(budget) and budget > 0):
        raise ConfigError("--budget", "budget", f"must be a positive number of dollars per hour, got {budget:g}")
    return check_in_range(budget, "budget_per_hour", "command line", "--budget")


WARM_SHARE = 0.1
"""The share of --seconds the warm start's incumbent may take."""


def _row(result, comparison) -> dict:
    """One planner's summary: cost, throughput, cost over the exact solver's (x_optimum),
    seconds, evaluations, feasible, bound and gap."""
    return {
        "method": result.planner,
        "feasible": result.feasible,
        "cost": finite(result.cost),
        "throughput": result.throughput if result.feasible else None,
        "x_optimum": comparison.over_optimum(result),
        "seconds": result.seconds,
        "evaluations": result.evaluations,
        "bound": finite(result.bound),
        "gap": result.gap,
        "micro_batch": None if result.plan is None else result.plan.micro_batch,
        "stages": None if result.plan is None else len(result.plan.stages),
    }


def check_whole_samples(args, job) -> None:
    """ConfigError unless the parallel-plan model can take `job` (whole samples: an integer batch
    and micro-batch), naming the flag that set the value, else the workload's defaults field."""
    from hps.config.validation import check_parallel_model_job

    try:
        check_parallel_model_job(job, "command line")
    except ConfigError as error:
        flag = {"batch": "batch", "micro_batch": "job_micro_batch"}[error.field]
        if getattr(args, flag, None) is None:
            raise ConfigError(args.workload, f"defaults.{error.field}", error.problem) from None
        raise ConfigError(f"--{error.field.replace('_', '-')}", error.field, error.problem) from None


def recorded(spec: str) -> str:
    """What a plan file records for --workload or --catalog `spec`: a file's absolute path (so
    the plan reads the same data from any folder), a zoo or shipped name as given."""
    from hps.api.planning import recorded_source

    return recorded_source(spec, spec)


def search_parallel(args, problem, budget, compare, planner_options: dict | None = None) -> int:
    """Plan with --method's planner (exact by default; 'all': every planner beside the exact
    solver) within --seconds each and --evaluations; the best plan written with --out
    (where none is found: nothing written, "written": null, exit status 1). compare: the
    command's comparison (with its progress bar); planner_options: options of planners that
    take them (a policy's checkpoint)."""
    from hps.contract.types import gap_of
    from hps.methods.registry import planner_names
    from hps.report.parallel import format_parallel

    out = output_path(getattr(args, "out", None))
    if out is not None and getattr(args, "overrides", None):
        why = "a plan file names a zoo workload or a file, not --set overrides: export the workload first"
        raise ConfigError("--out", "out", f"{why} (hps workload export NAME --set ... --out W.toml)")
    method = getattr(args, "method", None) or "exact"
    warm = getattr(args, "warm_start", None)
    if warm is not None and method != "exact":
        raise ConfigError("--warm-start", "warm_start", f"starts the exact solver only, not --method {method}")
    incumbent, warm_report = (None, None) if warm is None else _warm_start(warm, problem, budget)
    names = planner_names("parallel") if method == "all" else [method]
    options = dict(planner_options or {}) | ({"exact": {"incumbent": incumbent}} if incumbent is not None else {})
    framework = getattr(args, "framework", None)
    if framework is not None and problem.objective == "throughput":
        raise ConfigError("--framework", "framework", "plans the cheapest uniform plan; not with --maximize throughput")
    if framework is not None:  # the framework's uniform plans beside the optimum
        if getattr(args, "method", None) not in (None, "exact", "uniform"):
            raise ConfigError("--framework", "framework", f"plans with the uniform planner, not --method {method}")
        names, options = ["exact", "uniform"], options | {"uniform": {"framework": framework}}
    compared = compare(problem, names, budget, args, options or None)
    results, reference = compared.results, compared.reference
    rows = [_row(r, compared) for r in results]
    best = compared.best if framework is None else results[-1]
    head = reference if reference is not None else best
    document = problem.report(best)
    gap = best.gap if problem.objective == "throughput" else gap_of(best.cost, head.bound, best.plan is not None)
    document.update(
        bound=finite(head.bound),
        gap=gap,
        results=rows,
        skipped=compared.skipped,
    )
    if framework is not None:
        ratio = compared.over_optimum(best)
        document.update(framework=framework, premium=None if ratio is None else ratio - 1)
    if warm_report is not None:
        warm_report["solver_seconds"] = results[0].seconds
        proven = results[0].gap == 0.0
        warm_report["certificate_seconds"] = warm_report["incumbent_seconds"] + results[0].seconds if proven else None
        document["warm_start"] = warm_report
    job = problem.job
    if out is not None:
        document["written"] = None
        if best.plan is not None:
            from hps.config.planfile import file_sha256, write_plan_file

            job_out = dataclasses.replace(job, micro_batch=float(best.plan.micro_batch), **dict(best.plan.choices))
            workload, catalog = recorded(args.workload), recorded(args.catalog)
            written = PlanFile(
                workload, catalog, job_out, best.plan.stages, problem.clock.name,
                workload_sha256=file_sha256(workload), catalog_sha256=file_sha256(catalog),
            )  # fmt: skip
            write_plan_file(written, out)
            document["written"] = str(out)
    missing = out is not None and best.plan is None
    if args.json:
        print_json(document)
        return _not_written(out) if missing else 0
    print(f"{problem.workload.name} on {problem.catalog.name}: batch {job.batch:g}, {goal_text(job)}, "
          f"{job.precision}, ZeRO {job.zero}, {schedule_text(job)}")  # fmt: skip
    if len(results) > 1 or compared.skipped:
        _print_rows(rows, compared.skipped, reference, problem.objective)
        print(f"\nbest ({best.planner}):")
    if best.plan is None:
        print(verdict_text(document, job.throughput, best))
        return _not_written(out) if missing else 0
    print(format_parallel(document))
    if best.plan.choices:
        print(f"schedule    {schedule_text(dataclasses.replace(job, **dict(best.plan.choices)))} (chosen)")
    if framework is not None:
        print(framework_text(document, reference))
        if out is not None:
            print(f"wrote {out}")
        return 0
    print(f"status      {document['status']}")
    if head.planner == "exact" or document["gap"] is not None:
        gap = document["gap"]
        proven = "gap unknown" if gap is None else "proven optimal" if gap == 0 else f"gap {gap:.2%}"
        most = f"{head.bound:,.6g} samples/s at most" if problem.objective == "throughput" else dollars(head.bound)
        print(f"bound       {most} ({proven}) by {head.planner} in {head.seconds:.2f} s")
        if head.open is not None and gap != 0:
            print(f"open        {head.open}")
        if best is not head:
            print(f"{best.planner}: {best.evaluations} type sequences completed in {best.seconds:.2f} s")
    else:
        done = "plans laid out" if best.planner == "policy" else "type sequences completed"
        print(f"{best.planner}: {best.evaluations} {done} in {best.seconds:.2f} s (no bound)")
    if warm_report is not None:
        w = warm_report
        cost = "none found" if w["incumbent_cost"] is None else dollars(w["incumbent_cost"])
        source = "policy's plan" if w["checkpoint_step"] is not None else "sequence search's plan"
        print(f"warm start  {source} {cost} in {w['incumbent_seconds']:.2f} s, then the solver "
              f"{w['solver_seconds']:.2f} s" + ("" if w["certificate_seconds"] is None else
              f": certificate after {w['certificate_seconds']:.2f} s in all"))  # fmt: skip
    if out is not None:
        print(f"wrote {out}")
    return 0


def goal_text(job) -> str:
    """The job's objective as text: the floor, or the budget (and the floor where one binds)."""
    if job.budget_per_hour is None:
        return f"floor {job.throughput:g} samples/s"
    floor = "" if job.throughput <= MAXIMIZE_FLOOR else f" and a floor of {job.throughput:g} samples/s"
    return f"the most samples/s within ${job.budget_per_hour:,.6g} per hour{floor}"


def verdict_text(document: dict, floor: float, result) -> str:
    """What a search without a feasible plan proved: infeasible (no plan within the caps meets the
    floor, or none is within the budget), or unknown (none found in the time, none excluded),
    with the reach beside the floor."""
    reach = document.get("max_throughput")
    most = "unbounded" if reach is None else f"{reach:,.2f} samples/s"
    if document["status"] == "infeasible" and result.objective == "throughput":
        above = "" if floor <= MAXIMIZE_FLOOR else f" and meets the floor of {floor:,g} samples/s"
        return (
            f"status      infeasible: no plan rents for at most the budget{above} (proven by {result.planner} "
            f"in {result.seconds:.2f} s); the most any plan within the catalogue's caps can reach is {most}"
        )
    if document["status"] == "infeasible":
        return (
            f"status      infeasible: no plan meets the floor of {floor:,g} samples/s (proven by {result.planner} in "
            f"{result.seconds:.2f} s); the most any plan within the catalogue's caps can reach is {most}"
        )
    held = "raise --seconds" if result.open is None else f"left open: {result.open}"
    return (
        f"status      unknown: no feasible plan found in {result.seconds:.2f} s ({result.planner}) and none excluded; "
        f"floor {floor:,g} samples/s, the most any plan within the catalogue's caps can reach {most}; {held}"
    )


def framework_text(document: dict, reference) -> str:
    """The framework's plan against the heterogeneous optimum (or the exact solver's best, with
    its gap, where it is not proven)."""
    framework, premium = document["framework"], document["premium"]
    if premium is None:
        return f"framework   {framework}: no heterogeneous plan to compare with (exact found none)"
    against = "the optimum" if reference.gap == 0.0 else f"the exact solver's best plan (gap {reference.gap:.2%})"
    return (
        f"framework   {framework}: {premium:+.1%} over {against}, {dollars(reference.cost)} by exact in "
        f"{reference.seconds:.2f} s"
    )


def _not_written(out) -> int:
    """Say on standard error that no plan was written to `out` (and that a file already there is
    not this search's plan: it is left as it was); the exit status 1."""
    older = " (the file there is an older plan, not this search's; it was left as it was)"
    print(f"hps search: no plan found; {out} was not written{older if os.path.lexists(out) else ''}", file=sys.stderr)
    return 1


def _warm_start(checkpoint: str, problem, budget) -> tuple:
    """(a plan or None, the warm_start report): the policy's sequences (none where `checkpoint`
    is empty) completed exactly and refined by run moves, then the one- and two-run sequences
    (`hps.methods.sequence.sweep.policy_plan`), within a tenth of the budget's seconds."""
    from hps.config.plan_space import open_fields
    from hps.methods.sequence.sweep import policy_plan

    left = open_fields(problem.job)
    if left:
        flags = ", ".join("--" + name.replace("_", "-") for name in left)
        raise ConfigError(
            "--warm-start", "warm_start", f"starts the exact solver from one schedule: give {flags} a value, not auto"
        )
    started = time.perf_counter()
    base = problem.parallel_problem
    proposals, step = [], None
    if checkpoint:
        from hps.methods.sequence.completion import segments
        from hps.placement.agent.policy_planner import policy_proposals

        proposals, step = policy_proposals(checkpoint, base, segments(base), seed=budget.seed)
    point = policy_plan(base, proposals, WARM_SHARE * budget.seconds)
    report = {
        "checkpoint_step": step,
        "sequences": len(proposals),
        "incumbent_cost": point.cost if point.feasible else None,
        "incumbent_seconds": time.perf_counter() - started,
    }
    return (point.plan if point.feasible else None), report


def _print_rows(rows: list[dict], skipped: dict[str, str], reference, objective: str = "cost") -> None:
    from hps.report.tables import format_table

    value = "throughput" if objective == "throughput" else "cost"
    headers = ["method", "samples/s" if value == "throughput" else "cost_$", "x_optimum", "feasible", "evaluations",
               "search_s", "stages", "micro_batch"]  # fmt: skip
    table = [
        [r["method"], r[value], r["x_optimum"], r["feasible"], r["evaluations"], r["seconds"], r["stages"],
         r["micro_batch"]]
        for r in rows
    ]  # fmt: skip
    print(format_table(headers, table))
    if reference is not None and reference.gap not in (0.0, None):
        print(f"x_optimum is over the exact solver's plan, not proven optimal (gap {reference.gap:.2%})")
    for method, why in skipped.items():
        print(f"{method}: skipped: {why}")


def schedule_text(job) -> str:
    """The job's schedule choices as text, "auto" where it leaves one to the planner."""
    shown = lambda value, text: "auto" if value is None else text  # noqa: E731
    fp8 = shown(job.fp8, "on" if job.fp8 else "off")
    return (
        f"recompute {shown(job.recompute, job.recompute)}, v {shown(job.virtual_stages, job.virtual_stages)}, FP8 {fp8}"
    )
