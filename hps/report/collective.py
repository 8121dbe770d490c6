"""Text tables of collective studies."""

from __future__ import annotations

from hps.report.tables import format_table


def format_suite(payload: dict) -> str:
    """Utilization per network and policy, with the mean row."""
    columns = payload["columns"]
    rows = [[r["network"], *(f"{r[c]:.1%}" for c in columns)] for r in payload["networks"]]
    rows.append(["mean", *(f"{payload['mean'][c]:.1%}" for c in columns)])
    head = f"bandwidth utilization, All-Reduce of {payload['size']:,.0f} bytes in {payload['chunks']} chunks"
    return head + "\n" + format_table(["network", *columns], rows)


def format_iteration(payload: dict) -> str:
    """Per-policy iteration breakdown and the end-to-end speed-up."""
    rows = [
        [name, r["forward"], r["backward"], r["comm_end"], r["exposed_comm"], r["iteration"]]
        for name, r in payload["policies"].items()
    ]
    head = (
        f"{payload['workload']} data-parallel on {payload['network']} ({payload['resource']}, "
        f"{payload['batch_per_npu']:g} samples per NPU); seconds"
    )
    table = format_table(["policy", "forward", "backward", "comm_end", "exposed_comm", "iteration"], rows)
    return f"{head}\n{table}\n\nend-to-end speed-up over baseline: {payload['speedup']:.3f}x"
