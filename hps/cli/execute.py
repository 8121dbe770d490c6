"""`hps execute [PLAN.json]`: run a plan as real sharded JAX training (docs/executor.md).

The plan is a schedule (`--schedule`, or the "schedule" of `hps plan --out PLAN.json`, whose
"instance" also names the workload, catalogue and job), or a parallel plan file (`PLAN.json` or
`--plan FILE`, hps-plan/3 or /2: stages with tensor- and data-parallel degrees and a micro-batch). `--tensor` and
`--replicas` override the degrees. Stages run on device pools per resource type (`--devices
cpu=0-3,v100=4-7`, or by device kind). Prints measured vs predicted (the parallel-plan model on
`--clock`) time per stage and throughput; `--check` also trains the same model on one device and
compares.
With `--out FILE` the folder of FILE is checked for a write and free space before anything
runs, FILE.lock is held while the plan runs (a second run writing FILE is refused, naming the
first), and the report, printed first, is written with "produced_by": the run id and command.
`--shrink` runs a parallel plan wider than this machine as its stages with tp and dp capped by the
devices here, on a narrower model of its family. `--coordinator`, `--num-processes` and
`--process-id` (or the cluster's variables, `hps.io.cluster`) run it as one process of several,
each stage on its own processes' devices; process 0 prints and writes the report.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from argparse import Namespace

from hps.cli.common import (
    DEFAULT_CATALOG,
    add_instance_args,
    add_seed_arg,
    output_path,
    parse_set,
    print_json,
    resolve_instance,
    write_json,
)
from hps.cli.parallel import add_clock_arg
from hps.cli.processes import add_process_args, join, peer_lost
from hps.config.limits import MAX_EXECUTE_STEPS
from hps.config.loaders import parse_schedule
from hps.errors import ConfigError
from hps.io.runfolder.folder import output_file

FLAG_DEFAULTS = {"catalog": DEFAULT_CATALOG, "collective": "themis", "chunks": 64}
PLAN_KEYS = ("workload", "catalog", "batch", "throughput", "samples", "collective", "chunks", "overrides")


def register(subparsers) -> None:
    parser = subparsers.add_parser("execute", help="run a plan as real sharded JAX training and measure it")
    parser.add_argument(
        "plan",
        nargs="?",
        help="a plan file: `hps search --out` (hps-plan/3, as --plan) or `hps plan --out` (instead of the flags)",
    )
    add_instance_args(parser, workload_required=False, pipeline=False)
    parser.set_defaults(**dict.fromkeys(FLAG_DEFAULTS))  # unset, so a plan file can fill them
    parser.add_argument("--schedule", help="comma-separated resource type per layer")
    add_device_args(parser)
    parser.add_argument(
        "--plan",
        dest="parallel_plan",
        help="a parallel plan file (hps-plan/3 or /2): its stages' types, tp and dp, its job's batch and micro-batch",
    )
    parser.add_argument("--replicas", help="comma-separated replicas per stage to run instead of the plan's (e.g. 2,4)")
    parser.add_argument(
        "--tensor", help="comma-separated tensor-parallel degree per stage (e.g. 2,4; default 1 each): d·t devices"
    )
    add_clock_arg(parser)
    parser.add_argument("--steps", type=int, default=5, help="training steps (default: %(default)s)")
    parser.add_argument("--micro-batches", type=int, help="micro-batches per step (default: one per stage, at least 2)")
    parser.add_argument(
        "--policy",
        choices=("baseline", "themis", "roundrobin", "best-fixed", "learned"),
        help="collective policy of the gradient All-Reduce (default: --collective)",
    )
    parser.add_argument("--checkpoint", help="trained collective policy, for --policy learned")
    parser.add_argument(
        "--lr", type=float, help="SGD learning rate (default: the model's own; 0.05, transformer 0.002)"
    )
    add_seed_arg(parser, help="seed of the model's initial parameters and data, 0 to 2^32 - 1")
    parser.add_argument("--check", action="store_true", help="also train on one device and compare parameters")
    parser.add_argument(
        "--shrink",
        action="store_true",
        help="run the plan's stages with tp and dp capped by the devices here, on a narrower model of its family "
        "(the report says what was shrunk)",
    )
    parser.add_argument("--out", help="also write the JSON report to this file (process 0 writes it)")
    add_process_args(parser)
    parser.set_defaults(run=run)


def add_device_args(parser) -> None:
    parser.add_argument(
        "--devices",
        help="device pools by index into jax.devices(), e.g. cpu=0-3,v100=4-7 "
        "(default: GPU types on GPUs, CPU types on CPUs; one kind: all share)",
    )


FILE_FIELDS = {  # flag an instance error names -> the plan file's instance key it came from
    "--workload": "workload",
    "--catalog": "catalog",
    "--batch": "batch",
    "--throughput": "throughput",
    "--samples": "samples",
    "--collective": "collective",
    "--chunks": "chunks",
    "--micro-batches": "micro_batches",
    "--state-sharding": "state_sharding",
    "--set": "overrides",
    "--schedule": "schedule",
}


def plan_instance(path: str, args: Namespace) -> Namespace:
    """args with the plan file's instance and schedule filled in where the flags left them unset
    (`plan_file`: the checked file, `from_file`: the instance keys it filled). ConfigError naming
    the file and the field when the plan is not a plan `hps plan --out` writes."""
    from hps.config.schedule_plan import read_schedule_plan

    plan = read_schedule_plan(path)
    merged = vars(args).copy()
    from_file = set()
    for key, value in plan.instance.items():
        dest = f"job_{key}" if key in ("micro_batches", "state_sharding") else key
        if merged.get(dest) in (None, []):
            merged[dest] = value
            from_file.add(key)
    if merged.get("schedule") is None:
        merged["schedule"] = ",".join(plan.schedule)
        from_file.add("schedule")
    return Namespace(**merged, plan_file=plan, from_file=from_file)


def blamed_on_file(error: ConfigError, args: Namespace) -> ConfigError:
    """`error` naming the plan file and its instance field where the value it names came from
    the file, not from a flag the user gave."""
    key = FILE_FIELDS.get(error.source)
    if key is None or key not in getattr(args, "from_file", ()):
        return error
    if key == "schedule":  # parse_schedule names an entry layer[i]
        return ConfigError(args.plan, error.field.replace("layer", "schedule") or key, error.problem)
    detail = f" ({error.field})" if error.field and error.field != key else ""
    return ConfigError(args.plan, f"instance.{key}", f"{error.problem}{detail}")


def check_run_flags(args: Namespace) -> None:
    """ConfigError naming the flag for a value no execution can use."""
    if args.steps < 1:
        raise ConfigError("--steps", "steps", f"must be at least 1, got {args.steps}")
    if args.steps > MAX_EXECUTE_STEPS:
        raise ConfigError("--steps", "steps", f"must be at most {MAX_EXECUTE_STEPS:,}, got {args.steps}")
    if args.micro_batches is not None and args.micro_batches < 1:
        raise ConfigError("--micro-batches", "micro_batches", f"must be at least 1, got {args.micro_batches}")
    if args.lr is not None and not (math.isfinite(args.lr) and args.lr > 0):
        raise ConfigError("--lr", "lr", f"must be a positive number, got {args.lr}")
    if args.policy == "learned" and args.checkpoint:
        from hps.collective.agent.checkpoint import load_policy
        from hps.rl.checkpoint import checkpoint_folder

        checkpoint_folder(args.checkpoint)  # a missing folder fails now, not when a stage first syncs
        load_policy(args.checkpoint)  # and a placement policy's folder is named as such


def whole_batch(batch: float) -> int:
    """The job's batch as the whole number of samples a real step trains on."""
    if batch != int(batch) or batch < 1:
        raise ConfigError("--batch", "batch", f"executing needs a whole number of samples (>= 1), got {batch:g}")
    return int(batch)


def run(args) -> int:
    from hps.contract.types import Plan
    from hps.executor.plan import ExecuteOptions, execute_plan
    from hps.methods.problem import Problem
    from hps.models.registry import build_model
    from hps.report.execution import format_execution

    group = join(args, "execute")  # before anything touches JAX devices
    primary = group is None or group.process_id == 0
    out = output_path(args.out) if primary else None
    if args.plan and plan_format(args.plan) is not None:  # a plan file (hps-plan/N) runs as --plan does
        if args.parallel_plan:
            raise ConfigError("--plan", "plan", "give the plan file once (PLAN.json or --plan), not both")
        args = Namespace(**{**vars(args), "parallel_plan": args.plan, "plan": None})
    if args.plan and args.parallel_plan:
        raise ConfigError("--plan", "plan", "give a schedule plan (PLAN.json) or a parallel plan (--plan), not both")
    if args.parallel_plan and args.schedule:
        raise ConfigError("--schedule", "schedule", "give a schedule or a parallel plan (--plan), not both")
    parallel = None
    if args.parallel_plan:
        args, parallel = parallel_plan_instance(args.parallel_plan, args)
    if args.plan:
        args = plan_instance(args.plan, args)
    for key, default in FLAG_DEFAULTS.items():
        if getattr(args, key) is None:
            setattr(args, key, default)
    if not args.workload:
        raise ConfigError("--workload", "workload", "give --workload (or a plan file)")
    if not args.schedule and parallel is None:
        raise ConfigError("--schedule", "schedule", "give --schedule (or a plan file)")
    check_run_flags(args)
    try:
        workload, catalog, job = resolve_instance(args)
        if parallel is not None:
            from hps.config.planfile import check_plan_against

            check_plan_against(parallel, workload, catalog, args.parallel_plan)
            if parallel.job.virtual_stages != 1:
                raise ConfigError(
                    args.parallel_plan, "job.virtual_stages", f"{parallel.job.virtual_stages} model chunks a device: "
                    "the executor runs plain 1F1B only (virtual_stages 1)",
                )  # fmt: skip
            if parallel.version == "hps-plan/2":  # it records no collective policy or chunks: the flags'
                job = dataclasses.replace(parallel.job, collective=job.collective, chunks=job.chunks)
            else:
                job = parallel.job
        whole_batch(job.batch)
        shrunk = None
        if args.shrink:
            shrunk, model, workload, job, parallel = shrunk_run(args, workload, catalog, job, parallel)
        else:
            model = build_model(workload.name, seed=args.seed, **parse_set(args.overrides))
        check_model_matches(model, workload)
        if parallel is None:
            schedule = parse_schedule(args.schedule, catalog, len(workload.layers), source="--schedule")
    except ConfigError as error:
        raise blamed_on_file(error, args) from None
    clock = args.clock or (parallel.clock if parallel is not None else None)  # the clock that planned it
    problem = Problem(workload, catalog, job, model="parallel" if parallel else "schedule", clock=clock)
    if parallel is not None:
        plan = Plan(parallel.stages, int(job.micro_batch))
    else:
        from hps.costmodel.schedule.plan import provisioned, schedule_plan

        plan = provisioned(problem.instance, schedule_plan(schedule))
    if args.plan:
        from hps.config.schedule_plan import check_stages_match

        check_stages_match(
            args.plan_file,
            [{"type": s.type, "first_layer": s.first, "last_layer": s.last, "replicas": s.dp} for s in plan.stages],
            args.plan,
        )
    learned_orders = None
    if args.checkpoint:
        from functools import partial

        from hps.collective.agent.checkpoint import checkpoint_orders

        learned_orders = partial(checkpoint_orders, args.checkpoint)
    options = ExecuteOptions(
        steps=args.steps,
        micro_batches=args.micro_batches,
        policy=args.policy,
        learned_orders=learned_orders,
        devices=args.devices,
        learning_rate=args.lr,
        seed=args.seed,
        check=args.check,
        replicas=parse_replicas(args.replicas),
        tensor=parse_replicas(args.tensor, "--tensor"),
    )
    with output_file(out, args.argv) if out else contextlib.nullcontext() as produced:
        try:
            report = execute_plan(model, problem, plan, options)
        except RuntimeError as error:  # across processes: a collective whose peer went away
            if group is None:
                raise
            raise peer_lost(group, error) from None
        if not primary:
            return 0
        if shrunk is not None:
            report = {**report, "shrunk": list(shrunk.changes)}
        if args.json:  # printed before the file is written: a failed write loses no measurement
            print_json(report)
        else:
            print(
                f"{workload.name} on {catalog.name}: {','.join(report['schedule'])}; batch {report['batch']}, "
                f"{args.steps} steps, {report['collective_policy']} All-Reduce"
            )
            if shrunk is not None:
                print("\n".join(["shrunk to run here (--shrink):", *(f"  {line}" for line in shrunk.changes)]))
            print(format_execution(report))
        if out:
            write_json(out, {**report, "produced_by": produced})
    return 0


def plan_format(path: str) -> str | None:
    """The "format" a JSON file names (plan files: "hps-plan/3" or "hps-plan/2"), None where it names none (a
    schedule plan of `hps plan --out`); ConfigError naming the file when it is not JSON."""
    from hps.config.planfile import load_json_value

    value = load_json_value(path, path)
    return value.get("format") if isinstance(value, dict) else None


def parse_replicas(text: str | None, flag: str = "--replicas") -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise ConfigError(flag, flag[2:], f"expected comma-separated integers, got {text!r}") from None


def parallel_plan_instance(path: str, args: Namespace):
    """(args with the parallel plan file's workload and catalogue filled in where the flags left
    them unset, the PlanFile)."""
    from hps.config.planfile import check_recorded_data, read_plan_file

    plan = read_plan_file(path)
    check_recorded_data(plan, path)
    if plan.version != "hps-plan/2":
        for key in ("collective", "chunks"):
            if getattr(args, key, None) is not None:
                flag = f"--{key}"
                raise ConfigError(flag, key, f"the plan file {path} records its own {key}; give it there, not here")
    merged = vars(args).copy()
    for key, value in (("workload", plan.workload), ("catalog", plan.catalog)):
        if merged.get(key) is None:
            merged[key] = value
    return Namespace(**merged), plan


def check_model_matches(model, workload) -> None:
    """ConfigError unless the model's layers carry the table's parameter bytes (a table file
    profiled with other hyperparameters than the model has would mislead every prediction)."""
    from hps.models.base import parameter_bytes

    if len(model.layers) != len(workload.layers):
        raise ConfigError(
            "--workload",
            workload.name,
            f"the model has {len(model.layers)} layers, the table {len(workload.layers)}; "
            "was the table made with other hyperparameters (--set)?",
        )
    for layer, row in zip(model.layers, workload.layers):
        dense, sparse = parameter_bytes(layer)
        if (dense, sparse) != (row.dense_param_bytes, row.sparse_param_bytes):
            raise ConfigError(
                "--workload",
                f"{workload.name}.{row.name}",
                f"the table says {row.dense_param_bytes:g} dense + {row.sparse_param_bytes:g} sparse parameter "
                f"bytes but the model has {dense:g} + {sparse:g}; "
                "was the table made with other hyperparameters (--set)?",
            )


def shrunk_run(args: Namespace, workload, catalog, job, parallel):
    """(Shrunk, model, its layer table, job, plan file with the shrunk stages) of `--shrink`: the
    parallel plan's stages on this machine's device pools, a narrower model of its family."""
    from hps.executor.devices import device_pools
    from hps.executor.shrink import shrink_plan
    from hps.models.registry import build_model_and_workload

    if parallel is None:
        raise ConfigError("--shrink", "shrink", "needs a parallel plan file (PLAN.json of hps search --out)")
    for flag in ("overrides", "tensor", "replicas"):
        if getattr(args, flag):
            name = "--set" if flag == "overrides" else f"--{flag}"
            raise ConfigError(name, flag, "--shrink chooses the model and the degrees; give one or the other")
    names = [stage.type for stage in parallel.stages]
    pools = device_pools(catalog, names, args.devices)
    networks = [catalog.resources[catalog.index(name)].network for name in names]
    shrunk = shrink_plan(workload.name, workload, parallel.stages, job.batch, job.micro_batch, pools, networks)
    model, table = build_model_and_workload(shrunk.workload, shrunk.hyperparameters, seed=args.seed)
    job = dataclasses.replace(job, batch=float(shrunk.batch), micro_batch=float(shrunk.micro_batch))
    return shrunk, model, table, job, dataclasses.replace(parallel, stages=shrunk.stages, job=job)
