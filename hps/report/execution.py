"""Human-readable tables of `hps execute` and `hps profile` reports."""

from __future__ import annotations

from hps.report.tables import format_table


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.2f}"


def format_execution(report: dict) -> str:
    """Per stage: replicas run (planned), measured and predicted ms per iteration by term, error;
    then throughput and, when checked, equivalence with single-device training."""
    rows = []
    for s in report["stages"]:
        measured = s["measured"]
        rows.append(
            [
                s["type"],
                f"{s['first_layer']}-{s['last_layer']}",
                f"{s['replicas']} ({s['planned_replicas']})",
                "x".join(str(n) for n in s["mesh"].values()),
                _ms(measured["compute"]),
                _ms(measured["transfer"]),
                _ms(measured["sync"]),
                _ms(s["measured_time"]),
                _ms(s["predicted_time"]),
                "-" if s["error"] is None else f"{s['error']:+.0%}",
            ]
        )
    headers = [
        "type",
        "layers",
        "replicas (plan)",
        "mesh",
        "compute ms",
        "transfer ms",
        "sync ms",
        "measured ms",
        "predicted ms",
        "error",
    ]
    lines = [
        format_table(headers, rows),
        f"throughput: measured {report['measured_throughput']:,.0f} samples/s "
        f"(step {_ms(report['measured_step_time'])} ms, {report['micro_batches']} micro-batches), "
        "predicted "
        + (
            "- (a stage lies beyond its network)"
            if report["predicted_throughput"] is None
            else f"{report['predicted_throughput']:,.0f} samples/s on the {report['clock']} clock"
        ),
        f"losses: {', '.join(f'{x:.4f}' for x in report['losses'])}",
    ]
    if report["equivalent"] is not None:
        verdict = "equal" if report["equivalent"] else "NOT equal"
        lines.append(
            f"single-device training on {report['reference_device']} (matmul precision "
            f"{report['matmul_precision']}): parameters {verdict} (max relative difference "
            f"{report['max_param_rel_diff']:.2e} and max absolute difference {report['max_param_abs_diff']:.2e}, "
            f"in {report['worst_parameter']}; losses {report['max_loss_rel_diff']:.2e})"
        )
    return "\n".join(lines)


def format_profile(names: list[str], times: dict[str, list[float]], measured: dict[str, dict] | None = None) -> str:
    """Per layer: measured µs per sample on each profiled type and, where `measured` gives them
    ({type: {"micro_batch": m, "forward_s": [...], "backward_s": [...]}}, or a list of those, one
    per measured size), the forward and backward ms per micro-batch of m samples on one device."""
    entries = [(t, m) for t, ms in (measured or {}).items() for m in (ms if isinstance(ms, list) else [ms])]
    headers = ["layer", *(f"{t} us/sample" for t in times)]
    for t, m in entries:
        at = f"m={m['micro_batch']}" + (f", tp={m['tp']}" if m.get("tp", 1) > 1 else "")
        headers += [f"{t} fwd ms ({at})", f"{t} bwd ms ({at})"]
    rows = []
    for i, name in enumerate(names):
        row = [name, *(f"{times[t][i] * 1e6:.3f}" for t in times)]
        for _, m in entries:
            row += [f"{m['forward_s'][i] * 1e3:.3f}", f"{m['backward_s'][i] * 1e3:.3f}"]
        rows.append(row)
    return format_table(headers, rows)
