"""`hps sweep --maximize throughput --budgets ...`: the most throughput each budget (dollars per
hour) buys at each price scale, every point solved by the exact solver's dual within
--point-seconds, its stage tables built once and re-priced for every point."""

from __future__ import annotations

import dataclasses
import signal
import sys
import time

from hps.cli.common import print_json
from hps.config.ranges import check_in_range
from hps.report.tables import finite


def check_budgets(budgets: list[float]) -> list[float]:
    """The distinct budgets ($/hour) in the order given; ConfigError naming --budgets and the
    index (from 0) of the first outside RANGES["budget_per_hour"]."""
    for i, budget in enumerate(budgets):
        check_in_range(budget, "budget_per_hour", "--budgets", f"budgets[{i}]")
    return list(dict.fromkeys(budgets))


def _row(budget: float, scale: float, result) -> dict:
    """A point's row of the `--json` document."""
    plan = result.plan if result.feasible else None
    stages = None if plan is None else [dataclasses.asdict(s) for s in plan.stages]
    return {
        "budget_per_hour": budget,
        "price_scale": scale,
        "throughput": result.throughput if result.feasible else None,
        "dollars_per_hour": result.score.dollars_per_hour if result.feasible else None,
        "feasible": result.feasible,
        "status": result.status,
        "bound": finite(result.bound),
        "gap": result.gap,
        "seconds": result.seconds,
        "plan": None if plan is None else {"micro_batch": plan.micro_batch, "stages": stages},
    }


def run_budgets(args, base, scaled, total: int, plot) -> int:
    """Solve every (budget, price scale) point of `base` (the job's floor kept where --throughput
    gave one) in order, each within --point-seconds; print or write the document. A signal
    (SIGINT, SIGTERM, SIGHUP) keeps the points finished and reports the rest as not planned."""
    from tqdm import tqdm

    from hps.io.runfolder import stop
    from hps.methods.exact_parallel.dual import solve_max_throughput
    from hps.methods.exact_parallel.reach import max_throughput
    from hps.methods.exact_parallel.table import SharedTables
    from hps.methods.sequence.sweep import point_problem

    started, rows, tables = time.perf_counter(), [], SharedTables()
    reach = max_throughput(base)
    bar = tqdm(total=total, desc="sweep", unit="point", file=sys.stderr, disable=args.json, leave=False, mininterval=0)
    document = {"objective": "throughput", "points": rows, "max_throughput": finite(reach)}
    try:
        for scale in args.price_scale:
            for budget in args.budgets:
                problem = point_problem(base, base.job.throughput, scale, scaled, budget)
                result = solve_max_throughput(problem, seconds=args.point_seconds, tables=tables)
                rows.append(_row(budget, scale, result))
                bar.update(1)
    except KeyboardInterrupt as error:
        bar.close()
        document.update(seconds=time.perf_counter() - started, points_total=total)
        document["interrupted"] = signal.Signals(getattr(error, "signum", signal.SIGINT)).name
        _output(document, args, base, plot=None)
        raise
    finally:
        bar.close()
    document["seconds"] = time.perf_counter() - started
    if plot is not None:
        from hps.report.sweep import save_budget_sweep

        save_budget_sweep(plot, f"{base.workload.name} on {base.catalog.name}: the most throughput a budget buys", rows)
    with stop.deferred():  # a signal now waits until the document is out whole
        _output(document, args, base, plot)
    return 0


def _output(document: dict, args, base, plot) -> None:
    if args.json:
        print_json(document)
        return
    from hps.report.tables import format_table

    rows = document["points"]
    headers = ["budget_$/h", "price_x", "status", "samples/s", "$/hour", "bound", "stages", "micro_batch", "seconds"]
    table = []
    for r in rows:
        types = None if r["plan"] is None else ",".join(dict.fromkeys(s["type"] for s in r["plan"]["stages"]))
        table.append([r["budget_per_hour"], r["price_scale"], r["status"], r["throughput"], r["dollars_per_hour"],
                      r["bound"], types, r["plan"] and r["plan"]["micro_batch"], r["seconds"]])  # fmt: skip
    print(f"{base.workload.name} on {base.catalog.name}: {len(rows)} budgets planned in {document['seconds']:.1f} s")
    print(format_table(headers, table))
    if document.get("interrupted"):
        print(f"interrupted by {document['interrupted']}: {len(rows)} of {document['points_total']} "
              "points finished (shown above)")  # fmt: skip
    if plot is not None:
        print(f"wrote {plot}")
