"""Reports of parallel plans: the JSON document of a scored plan and its text table."""

from __future__ import annotations

from hps.contract.types import PlanScore
from hps.report.tables import dollars, finite, format_table

GIB = 2.0**30


def parallel_report(score: PlanScore) -> dict:
    """The JSON document of a scored plan: feasible, reason (null when feasible), detail,
    micro_batch, micro_batches, iteration_s, throughput (samples/s), dollars_per_hour,
    egress_dollars, cost ($, null when infeasible), mfu, throughput_range ([low, high] samples/s
    the prediction stands for by the clock's held-out errors), clock, and per stage type, site, first, last,
    tp, dp, units, replica_micro_batch, time_per_microbatch_s, tail_s, memory_per_device_bytes,
    memory_limit_bytes, time_source (what its layer times come from: measured, interpolated between
    measured micro-batch sizes, or the roofline). A figure the plan does not reach (the iteration
    time, throughput, MFU and tail of a plan with a stage past its type's network) is null."""
    return {
        "feasible": score.feasible,
        "reason": score.reason,
        "detail": score.detail,
        "micro_batch": score.micro_batch,
        "micro_batches": score.micro_batches,
        "iteration_s": finite(score.iteration_s),
        "throughput": finite(score.throughput),
        "throughput_range": None
        if score.throughput_range is None or finite(score.throughput) is None
        else [finite(x) for x in score.throughput_range],
        "clock": score.clock,
        "dollars_per_hour": score.dollars_per_hour,
        "egress_dollars": score.egress_dollars,
        "cost": finite(score.cost),
        "mfu": finite(score.mfu),
        "stages": [
            {
                "type": s.stage.type,
                "site": s.site,
                "first": s.stage.first,
                "last": s.stage.last,
                "tp": s.stage.tp,
                "dp": s.stage.dp,
                "units": s.units,
                "replica_micro_batch": s.replica_micro_batch,
                "time_per_microbatch_s": s.time_per_microbatch_s,
                "tail_s": finite(s.tail_s),
                "memory_per_device_bytes": s.memory_per_device_bytes,
                "memory_limit_bytes": s.memory_limit_bytes,
                "time_source": s.time_source,
            }
            for s in score.stages
        ],
    }


def _figure(value: float | None, spec: str, unit: str = "") -> str:
    """`value` in format `spec` with its unit, or "not reached" where it is None."""
    return "not reached" if value is None else f"{value:{spec}}{unit}"


def format_parallel(report: dict) -> str:
    """The stage table and the plan's figures as text."""
    headers = ["stage", "type", "site", "layers", "tp", "dp", "units", "mb/replica", "s/microbatch", "GiB/device",
               "times"]  # fmt: skip
    rows = [
        [j, s["type"], s["site"] or "-", f"{s['first']}-{s['last']}", s["tp"], s["dp"], s["units"],
         s["replica_micro_batch"], s["time_per_microbatch_s"],
         f"{s['memory_per_device_bytes'] / GIB:.1f}/{s['memory_limit_bytes'] / GIB:.0f}", s.get("time_source", "-")]
        for j, s in enumerate(report["stages"])
    ]  # fmt: skip
    lines = [format_table(headers, rows), ""]
    lines.append("feasible" if report["feasible"] else f"infeasible ({report['reason']}): {report['detail']}")
    lines.append(f"micro-batch {report['micro_batch']} ({report['micro_batches']} per iteration)")
    lines.append(f"iteration   {_figure(report['iteration_s'], '.4g', ' s')}")
    band = report.get("throughput_range")
    within = "" if not band else f" (true: {band[0]:,.2f} to {band[1]:,.2f} by the {report['clock']} clock's errors)"
    lines.append(f"throughput  {_figure(report['throughput'], ',.2f', ' samples/s')}{within}")
    lines.append(f"MFU         {_figure(report['mfu'], '.1%')}")
    lines.append(f"price       {dollars(report['dollars_per_hour'], 2)}/hour")
    if report["egress_dollars"]:
        lines.append(f"egress      {dollars(report['egress_dollars'])}")
    if report["cost"] is not None:
        lines.append(f"cost        {dollars(report['cost'])}")
    return "\n".join(lines)
