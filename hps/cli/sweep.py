"""`hps sweep`: one workload and catalogue planned at every (throughput floor, price scale)
point in the parallel-plan model (`hps.methods.sequence.sweep`), with a Pareto figure; `--certify K`
checks K points drawn at random with the exact solver and shows the plan's cost over each
proven optimum."""

from __future__ import annotations

import dataclasses
import math
import signal
import sys
import time

from hps.cli.common import add_instance_args, add_seed_arg, figure_path, float_range, int_range, print_json
from hps.cli.parallel import add_clock_arg
from hps.config.ranges import RANGES, check_in_range
from hps.errors import ConfigError
from hps.report.tables import finite

CERTIFY_SECONDS = 60.0
LARGE_SWEEP_SECONDS = 60.0
"""A sweep that may take this long (seconds, `estimate_seconds`) or longer says so on standard
error before it starts."""


def _numbers(flag: str):
    def parse(text: str) -> list[float]:
        import argparse

        try:
            values = [float(x) for x in text.split(",") if x.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be comma-separated numbers, got {text!r}") from None
        if not values or not all(math.isfinite(v) and v > 0 for v in values):
            raise argparse.ArgumentTypeError(f"must be positive finite numbers, got {text!r}")
        return values  # repeats are dropped after the range checks, which name each value's index

    return parse


def register(subparsers) -> None:
    parser = subparsers.add_parser("sweep", help="plan a workload at many throughput floors and price scales")
    add_instance_args(parser)
    parser.add_argument(
        "--floors",
        type=_numbers("--floors"),
        help=f"throughput floors, each {RANGES['throughput'].text()}: 400,500,... (unless --maximize throughput)",
    )
    parser.add_argument(
        "--maximize",
        choices=("cost", "throughput"),
        default="cost",
        help="cost (default): the cheapest plan at each floor; throughput: the most samples/s at each of --budgets "
        "(the exact solver's dual, within --point-seconds a point)",
    )
    parser.add_argument(
        "--budgets",
        type=_numbers("--budgets"),
        help=f"with --maximize throughput: dollars per hour, each {RANGES['budget_per_hour'].text()}: 1000,2000,...",
    )
    parser.add_argument(
        "--price-scale",
        type=_numbers("--price-scale"),
        default=[1.0],
        help=f"price multipliers: 0.5,1,2 (default: 1); each scaled price must stay {RANGES['price_per_hour'].text()}",
    )
    parser.add_argument(
        "--scale-types",
        help="comma-separated resource types whose prices --price-scale multiplies (default: every type)",
    )
    parser.add_argument(
        "--checkpoint", help="a trained placement or parallel policy (hps train --out): its sequences are tried first"
    )
    parser.add_argument(
        "--certify",
        type=int_range(0, 10_000),
        default=0,
        help="check this many points, drawn at random, with the exact solver (default: none)",
    )
    parser.add_argument(
        "--certify-seconds",
        type=float_range(0.01, 86_400.0),
        default=CERTIFY_SECONDS,
        help="the exact solver's time limit per checked point (default: %(default)s)",
    )
    parser.add_argument(
        "--point-seconds",
        type=float_range(0.01, 86_400.0),
        default=5.0,
        help="search time per point (default: %(default)s; the first point with a plan gets six times as much)",
    )
    parser.add_argument("--plot", help="write the Pareto figure (cost against floor, a curve per price scale) here")
    add_seed_arg(parser)
    add_clock_arg(parser)
    parser.set_defaults(run=run)


def _proposals(args, workload, catalog, job, sweep) -> list:
    if args.checkpoint is None:
        return []
    from hps.placement.agent.policy_planner import policy_proposals

    return policy_proposals(args.checkpoint, sweep.base, sweep.segments, seed=args.seed)[0]


def _stages(point) -> list[dict] | None:
    if point.plan is None:
        return None
    return [{"type": s.type, "first": s.first, "last": s.last, "tp": s.tp, "dp": s.dp} for s in point.plan.stages]


def _row(p, reach: float) -> dict:
    """A point's row of the `--json` document: its status is optimal or feasible with a plan,
    infeasible where the floor lies above `reach` (or the point's search proved none), else
    unknown."""
    status = p.result.status
    if not p.feasible and p.floor > reach * (1 + 1e-9):
        status = "infeasible"
    return {
        "floor": p.floor,
        "price_scale": p.price_scale,
        "cost": p.cost if p.feasible else None,
        "feasible": p.feasible,
        "status": status,
        "plan": None if p.plan is None else {"micro_batch": p.plan.micro_batch, "stages": _stages(p)},
    }


def check_floors(floors: list[float]) -> list[float]:
    """The distinct floors (samples/s) in the order given; ConfigError naming --floors and the
    index (from 0) of the first outside RANGES["throughput"]."""
    for i, floor in enumerate(floors):
        check_in_range(floor, "throughput", "--floors", f"floors[{i}]")
    return list(dict.fromkeys(floors))


def check_price_scales(scales: list[float], catalog, scaled: tuple[str, ...] | None) -> list[float]:
    """The distinct price scales in the order given; ConfigError naming --price-scale and the
    index (from 0) of the first that takes a scaled type's $/unit-hour outside
    RANGES["price_per_hour"], where a plan's cost would overflow to inf or round to $0."""
    allowed = RANGES["price_per_hour"]
    for i, scale in enumerate(scales):
        for resource in catalog.resources:
            price = resource.price_per_hour * scale
            if (scaled is None or resource.name in scaled) and not allowed.contains(price):
                raise ConfigError(
                    "--price-scale",
                    f"price_scale[{i}]",
                    f"{scale:g} takes {resource.name}'s ${resource.price_per_hour:g}/unit-hour to ${price:g}; "
                    f"a scaled price must be {allowed.text()}",
                )
    return list(dict.fromkeys(scales))


def check_points(floors: int, scales: int) -> int:
    """The sweep's points (floors x price scales); ConfigError naming the flag with more values
    past MAX_SWEEP_POINTS, before any work."""
    from hps.config.limits import MAX_SWEEP_POINTS

    points = floors * scales
    if points > MAX_SWEEP_POINTS:
        flag, field = ("--floors", "floors") if floors >= scales else ("--price-scale", "price_scale")
        size = f"{_count(floors, 'floor')} x {_count(scales, 'price scale')} = {points:,} points"
        raise ConfigError(
            flag, field, f"{size}; a sweep plans at most {MAX_SWEEP_POINTS:,} (split it into several sweeps)"
        )
    return points


def estimate_seconds(points: int, args) -> float:
    """The most seconds the sweep's search takes, about: each point within --point-seconds, the
    first within six times that and planned once more; then each checked point's exact solve
    (--certify x --certify-seconds). A point left without a plan may be planned once more."""
    return (points + 6) * args.point_seconds + min(args.certify, points) * args.certify_seconds


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def run(args) -> int:
    from tqdm import tqdm

    from hps.api.planning import Problem
    from hps.cli.common import resolve_instance
    from hps.cli.parallel import parallel_job
    from hps.cli.search_parallel import MAXIMIZE_FLOOR, check_whole_samples
    from hps.io.runfolder import stop
    from hps.methods.sequence.sweep import Sweep

    budgets = args.maximize == "throughput"
    if budgets != (args.budgets is not None):
        flag, field = ("--maximize", "maximize") if budgets else ("--budgets", "budgets")
        raise ConfigError(flag, field, "--maximize throughput and --budgets go together")
    if budgets and args.floors is not None:
        raise ConfigError("--floors", "floors", "sweeps costs; --maximize throughput sweeps --budgets")
    for flag, given in (("--certify", args.certify), ("--checkpoint", args.checkpoint)):
        if budgets and given:
            field = flag.removeprefix("--")
            raise ConfigError(flag, field, "applies to cost sweeps; each --budgets point is solved exactly")
    if not budgets and args.floors is None:
        raise ConfigError("--floors", "floors", "required (or --maximize throughput with --budgets)")
    if budgets:
        from hps.cli.sweep_budgets import check_budgets

        args.budgets = check_budgets(args.budgets)
    else:
        args.floors = check_floors(args.floors)
    total = check_points(len(args.budgets if budgets else args.floors), len(dict.fromkeys(args.price_scale)))
    plot = figure_path(args.plot)
    started = time.perf_counter()
    workload, catalog, job = resolve_instance(args)
    job = parallel_job(args, workload, job)
    check_whole_samples(args, job)
    scaled = None
    if args.scale_types:
        scaled = tuple(name.strip() for name in args.scale_types.split(",") if name.strip())
        unknown = [name for name in scaled if name not in catalog.names]
        if unknown or not scaled:
            name = unknown[0] if unknown else ""
            choices = ", ".join(catalog.names)
            raise ConfigError("--scale-types", "scale_types", f"unknown resource type {name!r}; choose among {choices}")
    args.price_scale = check_price_scales(args.price_scale, catalog, scaled)
    from hps.methods.exact_parallel.reach import max_throughput

    if budgets:
        from hps.cli.sweep_budgets import run_budgets

        floor = job.throughput if args.throughput is not None else MAXIMIZE_FLOOR
        job = dataclasses.replace(job, throughput=floor)
        base = Problem(workload, catalog, job, parallel=True, clock=args.clock).parallel_problem
        return run_budgets(args, base, scaled, total, plot)
    base = Problem(workload, catalog, job, parallel=True, clock=args.clock).parallel_problem
    reach = max_throughput(base)  # the floors a price scale cannot move: the caps bound them all
    sweep = Sweep(base, scaled, point_seconds=args.point_seconds, first_seconds=6 * args.point_seconds)
    most = estimate_seconds(total, args)
    if most >= LARGE_SWEEP_SECONDS:
        size = f"{_count(len(args.floors), 'floor')} x {_count(len(args.price_scale), 'price scale')}"
        checked = f", {args.certify_seconds:g} s a checked point" if args.certify else ""
        print(f"hps sweep: {total:,} points ({size}), at most about {_duration(most)} ({args.point_seconds:g} s a "
              f"point{checked})", file=sys.stderr)  # fmt: skip
    done: dict = {}
    bar = tqdm(total=total, desc="sweep", unit="point", file=sys.stderr, disable=args.json, leave=False, mininterval=0)

    def finished(point) -> None:
        key = (point.floor, point.price_scale)
        new, done[key] = key not in done, point
        bar.update(new)

    rows = None
    try:
        proposals = _proposals(args, workload, catalog, job, sweep)
        points = sweep.run(args.floors, args.price_scale, proposals, on_point=finished)
        planned = time.perf_counter() - started
        rows = [_row(p, reach) for p in points]
        if args.certify:
            _certify(args, base, scaled, points, rows)
    except KeyboardInterrupt as error:  # SIGINT, SIGTERM, SIGHUP: what is finished is kept
        bar.close()
        if rows is None:
            planned = time.perf_counter() - started
            keys = ((f, s) for s in args.price_scale for f in args.floors)
            rows = [_row(done[key], reach) for key in keys if key in done]
        signum = getattr(error, "signum", signal.SIGINT)
        document = {"points": rows, "seconds": planned, "max_throughput": finite(reach)}
        document["interrupted"] = signal.Signals(signum).name
        document["points_total"] = total
        _output(document, args, workload, catalog, planned, None)
        raise
    finally:
        bar.close()
    document = {"points": rows, "seconds": planned, "max_throughput": finite(reach)}
    if args.certify:
        document["certify_seconds"] = time.perf_counter() - started - planned
    if plot is not None:
        from hps.report.sweep import save_sweep

        save_sweep(plot, f"{workload.name} on {catalog.name}: cost of each point's plan", rows)
    with stop.deferred():  # a signal now waits until the document is out whole
        _output(document, args, workload, catalog, planned, plot)
    return 0


def _certify(args, base, scaled, points, rows) -> None:
    """--certify: that many points drawn at random solved by the exact solver, warm-started with
    the point's plan; each row gets certify_seconds, certified_bound and (where proven)
    proven_optimum."""
    import numpy as np

    from hps.methods.sequence.sweep import certify

    rng = np.random.default_rng(args.seed)
    for i in sorted(rng.choice(len(points), size=min(args.certify, len(points)), replace=False).tolist()):
        found = certify(base, points[i], scaled, args.certify_seconds)
        rows[i]["certify_seconds"] = found.seconds
        rows[i]["certified_bound"] = finite(found.bound)
        if found.gap == 0.0:
            rows[i]["proven_optimum"] = finite(found.cost)
            rows[i]["status"] = found.status


def _output(document, args, workload, catalog, planned, plot) -> None:
    """The document on standard output (--json), else its table; an interrupted sweep's says
    how many of its points were finished."""
    if args.json:
        print_json(document)
        return
    _print(document["points"], workload, catalog, planned, args, plot)
    if document.get("interrupted"):
        print(f"interrupted by {document['interrupted']}: {len(document['points'])} of {document['points_total']} "
              "points finished (shown above)")  # fmt: skip


def _print(rows, workload, catalog, planned, args, plot) -> None:
    import numpy as np

    from hps.report.tables import format_table

    headers = ["floor", "price_x", "status", "cost_$", "stages", "micro_batch", "proven_optimum_$", "x_optimum"]
    table = []
    for r in rows:
        optimum = r.get("proven_optimum")
        ratio = r["cost"] / optimum if optimum and r["cost"] is not None else None
        types = None if r["plan"] is None else ",".join(dict.fromkeys(s["type"] for s in r["plan"]["stages"]))
        table.append([r["floor"], r["price_scale"], r["status"], r["cost"], types,
                      r["plan"] and r["plan"]["micro_batch"], optimum, ratio])  # fmt: skip
    print(f"{workload.name} on {catalog.name}: {len(rows)} points planned in {planned:.1f} s")
    print(format_table(headers, table))
    ratios = [t[-1] for t in table if t[-1] is not None]
    if args.certify:
        checked = [r for r in rows if "certify_seconds" in r]
        line = (
            f"certified {len(ratios)} of {len(checked)} checked points (exact solver, {args.certify_seconds:g} s each)"
        )
        if ratios:
            line += f": mean {np.mean(ratios):.4f}x, worst {max(ratios):.4f}x the proven optimum"
        print(line)
    if plot is not None:
        print(f"wrote {plot}")
