"""Text form of a plan's cost sensitivity (`hps.costmodel.schedule.sensitivity.sensitivity`)."""

from __future__ import annotations

from hps.report.tables import dollars, format_table

TOP = 3


def _label(row: dict) -> str:
    dimension = "" if row["dimension"] is None else f" (dim {row['dimension']})"
    return f"{row['type']} {row['figure']}{dimension}"


def format_sensitivity(payload: dict) -> str:
    """A table of the figures of the types the plan uses (the others have zero gradient; the
    JSON output lists them too) and the figures with the largest |elasticity|."""
    rows = [r for r in payload["figures"] if r["in_plan"]]
    table = format_table(
        ["type", "figure", "dim", "value", "unit", "d_cost_$_per_unit", "elasticity"],
        [
            [
                r["type"],
                r["figure"],
                r["dimension"],
                f"{r['value']:.4g}",
                r["unit"],
                f"{r['d_cost'] + 0.0:.4g}",  # + 0.0 prints −0 as 0
                f"{r['elasticity'] + 0.0:+.4f}",
            ]
            for r in rows
        ],
    )
    ranked = sorted((r for r in rows if r["elasticity"] != 0.0), key=lambda r: -abs(r["elasticity"]))
    named = ", ".join(f"{_label(r)} {r['elasticity']:+.3f}" for r in ranked[:TOP])
    return (
        f"sensitivity of cost {dollars(payload['cost'], 2)}, each stage's replicas and chunk orders held fixed\n"
        f"(elasticity: % change of cost per +1 % of the figure)\n{table}\n\nlargest elasticities: {named or '-'}"
    )
