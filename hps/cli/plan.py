"""`hps plan`: plan a workload on a catalogue with a trained placement policy.

A parallel policy (`hps train --kind parallel`) plans in the parallel-plan model and prints and
writes (`--out`: a plan file for `hps evaluate --plan` and `hps execute`) as `hps search
--parallel` does; a placement policy plans the schedule model.

`--samples` is the job's training samples N, as in every command; `--plans` is how many
distinct plans the policy samples (default 64, drawn without replacement) before the exact model
keeps the best, greedy plan included;
`--refine` then polishes that plan with a hill climb of stage moves (`hps.methods.search.refine`).
"""

from __future__ import annotations

from hps.cli.common import (
    add_instance_args,
    add_seed_arg,
    instance_document,
    int_range,
    output_path,
    print_json,
    resolve_instance,
    write_json,
)
from hps.config.limits import MAX_PLANS


def register(subparsers) -> None:
    parser = subparsers.add_parser("plan", help="plan a placement with a trained policy checkpoint")
    add_instance_args(parser)
    parser.add_argument("--checkpoint", required=True, help="run folder or its checkpoints/ folder (hps train --out)")
    parser.add_argument(
        "--plans",
        type=int_range(1, MAX_PLANS, "their arrays grow with the count"),
        default=64,
        help=f"distinct plans sampled from the policy, 1 to {MAX_PLANS:,} (default: %(default)s)",
    )
    parser.add_argument(
        "--refine",
        action="store_true",
        help="polish the best plan by stage moves (retype or split a stage, move a boundary) "
        "until none improves: a few hundred more exact evaluations, milliseconds",
    )
    add_seed_arg(parser)
    parser.add_argument("--out", help="also write the JSON plan to this file (input of hps execute)")
    parser.set_defaults(run=run)


def run(args) -> int:
    from hps.placement.agent.checkpoint import load_planning_policy
    from hps.placement.agent.planner import plan
    from hps.report.placement import format_report, schedule_report

    out = output_path(args.out)
    workload, catalog, job = resolve_instance(args)
    policy, params, spec = load_planning_policy(args.checkpoint)
    if spec["kind"] == "parallel":
        return _plan_parallel(args, workload, catalog, job)
    result = plan(policy, params, workload, catalog, job, samples=args.plans, seed=args.seed, polish=args.refine)
    report = schedule_report(workload, catalog, job, result.schedule)
    report.update(
        schedule=[catalog.names[t] for t in result.schedule],
        plan_seconds=result.plan_seconds,
        compile_seconds=result.compile_seconds,
        plans=result.candidates,
        feasible_plans=result.feasible_candidates,
        refine_evaluations=result.refine_evaluations,
        checkpoint_step=spec["step"],
        instance=instance_document(args, job),
    )
    if out:
        write_json(out, report)
    if args.json:
        print_json(report)
        return 0
    print(f"{workload.name} on {catalog.name}: batch {job.batch:g}, floor {job.throughput:g} samples/s")
    print(
        f"policy: {args.checkpoint} (step {spec['step']}, {spec['policy']['encoder']}); "
        f"{result.candidates} plans scored, {result.feasible_candidates} feasible"
        + (f", then {result.refine_evaluations} stage moves" if args.refine else "")
    )
    print(f"schedule: {','.join(report['schedule'])}")
    print(format_report(report, workload))
    print(f"planned in {result.plan_seconds * 1e3:.1f} ms (compile {result.compile_seconds:.2f} s, excluded)")
    return 0


def _plan_parallel(args, workload, catalog, job) -> int:
    """A parallel policy's plan of the job in the parallel-plan model (the workload's parallel
    defaults), printed and written as `hps search --parallel` does (--out: a plan file)."""
    from hps.api.planning import Problem
    from hps.cli.parallel import parallel_job
    from hps.cli.search_parallel import search_parallel
    from hps.contract.types import Budget
    from hps.methods.compare import compare

    problem = Problem(workload, catalog, parallel_job(args, workload, job), parallel=True)
    args.method = "policy"
    options = {"policy": {"checkpoint": args.checkpoint, "samples": args.plans}}
    run_compare = lambda problem, names, budget, args, options=None: compare(problem, names, budget, options=options)  # noqa: E731
    return search_parallel(args, problem, Budget(seed=args.seed), run_compare, planner_options=options)
